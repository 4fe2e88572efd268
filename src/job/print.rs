//! A validated job written back as a job file (`agentci run --print-job`),
//! so a job made from flags can be saved and versioned. What is written
//! loads back into the same [`JobSpec`]: vars already substituted, paths
//! absolute, defaults spelled out. Reading job files is [`super::load`]'s job.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::policy::DefaultDecision;
use crate::provider::replay::ReplayMatch;

use super::{
    CheckSpec, EnvValue, JobSpec, MemorySpec, ModelSpec, OutputsSpec, PriceSpec, RetrySpec,
    SkillRef,
};

/// The job could not be written as YAML.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the job: {0}")]
pub struct PrintError(#[from] serde_saphyr::SerializeError);

/// The job as YAML, valid input for `agentci run`.
pub fn job_yaml(job: &JobSpec) -> Result<String, PrintError> {
    Ok(serde_saphyr::to_string(&JobFile::from(job))?)
}

/// The job's keys that [`job_yaml`] does not write yet, where the job sets
/// them to anything but their defaults: the printed job runs without them,
/// so the caller says so.
pub fn unwritten_keys(job: &JobSpec) -> Vec<&'static str> {
    [
        (
            "mcp",
            !job.mcp.servers.is_empty() && Mcp::of(&job.mcp).is_none(),
        ),
        (
            "telemetry",
            job.telemetry != super::TelemetrySpec::default(),
        ),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect()
}

#[derive(Serialize)]
struct JobFile {
    version: u32,
    name: String,
    skill: Skill,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    skills: Vec<String>,
    goal: String,
    model: Model,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<String>>,
    permissions: Permissions,
    #[serde(skip_serializing_if = "Budget::is_empty")]
    budget: Budget,
    workspace: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    checks: Vec<Check>,
    #[serde(skip_serializing_if = "Outputs::is_empty")]
    outputs: Outputs,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    skills_path: Vec<String>,
    max_plan_turns: u32,
    #[serde(skip_serializing_if = "is_one")]
    checks_rounds: u32,
    max_parallel_tools: usize,
    tool_timeout: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    tool_timeouts: BTreeMap<String, String>,
    loop_guard: LoopGuard,
    task: Task,
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<Sandbox>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mcp: Option<Mcp>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    secrets: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    allow_dirty: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    untrusted_inputs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trust_workspace: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rules: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    rules_reminder: bool,
    /// Written inline: a file's schema is read when the job loads.
    #[serde(skip_serializing_if = "Option::is_none")]
    result_schema: Option<serde_json::Value>,
}

/// `sandbox:` as a mapping; keys at their defaults left out.
#[derive(Serialize)]
struct Sandbox {
    profile: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<Network>,
    /// Written only when false: true is the default.
    #[serde(skip_serializing_if = "Option::is_none")]
    require: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<Limits>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    writable: Vec<String>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Network {
    Open(bool),
    Hosts(Vec<String>),
}

/// Sizes in whole bytes, which the loader reads back exactly.
#[derive(Serialize)]
struct Limits {
    processes: u64,
    memory: u64,
    file_size: u64,
    open_files: u64,
}

impl Sandbox {
    /// `None` for the default sandbox, which a job need not write.
    fn of(spec: &crate::sandbox::SandboxSpec) -> Option<Sandbox> {
        if *spec == crate::sandbox::SandboxSpec::default() {
            return None;
        }
        let limits = &spec.limits;
        Some(Sandbox {
            profile: spec.profile.as_str(),
            network: match (&spec.hosts, spec.network) {
                (Some(hosts), _) => Some(Network::Hosts(hosts.written.clone())),
                (None, true) => Some(Network::Open(true)),
                (None, false) => None,
            },
            require: (!spec.require).then_some(false),
            limits: (*limits != crate::sandbox::ResourceLimits::default()).then_some(Limits {
                processes: limits.processes,
                memory: limits.memory,
                file_size: limits.file_size,
                open_files: limits.open_files,
            }),
            writable: spec.writable.iter().map(|r| r.path.to_string()).collect(),
        })
    }
}

/// `mcp:` with `${{ env.NAME }}` references kept as written.
#[derive(Serialize)]
struct Mcp {
    servers: BTreeMap<String, McpServer>,
}

#[derive(Serialize)]
struct McpServer {
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
    timeout: String,
    startup_timeout: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<String>>,
    required: bool,
    roots: bool,
    sampling: bool,
}

impl Mcp {
    /// `None` for a job without servers, and for one whose templates
    /// cannot be written back ([`super::EnvTemplate::written`]).
    fn of(spec: &super::McpSpec) -> Option<Mcp> {
        if spec.servers.is_empty() {
            return None;
        }
        let written = |pairs: &[(String, super::EnvTemplate)]| -> Option<BTreeMap<String, String>> {
            pairs
                .iter()
                .map(|(name, template)| Some((name.clone(), template.written()?)))
                .collect()
        };
        let mut servers = BTreeMap::new();
        for server in &spec.servers {
            let (command, args, env, cwd, url, headers) = match &server.transport {
                super::McpTransport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => (
                    Some(command.clone()),
                    args.clone(),
                    written(env)?,
                    cwd.as_deref().map(path),
                    None,
                    BTreeMap::new(),
                ),
                super::McpTransport::Http { url, headers } => (
                    None,
                    Vec::new(),
                    BTreeMap::new(),
                    None,
                    Some(url.clone()),
                    written(headers)?,
                ),
            };
            let entry = McpServer {
                command,
                args,
                env,
                cwd,
                url,
                headers,
                timeout: duration(server.timeout),
                startup_timeout: duration(server.startup_timeout),
                tools: server.tools.clone(),
                required: server.required,
                roots: server.roots,
                sampling: server.sampling,
            };
            servers.insert(server.name.clone(), entry);
        }
        Some(Mcp { servers })
    }
}

#[derive(Serialize)]
struct LoopGuard {
    repeats: u32,
}

#[derive(Serialize)]
struct Task {
    max_turns: u32,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Skill {
    Name(String),
    Path {
        path: String,
    },
    Git {
        git: String,
        rev: String,
        path: String,
    },
    Builtin {
        builtin: String,
    },
}

#[derive(Serialize)]
struct Model {
    provider: &'static str,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_key_env: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cassette: Option<String>,
    request_timeout: String,
    /// Whole bytes, shown when not the default.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_response_bytes: Option<u64>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<Retry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    price: Option<Price>,
    #[serde(skip_serializing_if = "Option::is_none")]
    replay: Option<Replay>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_window: Option<u64>,
    /// Shown when not the default 80%.
    #[serde(skip_serializing_if = "Option::is_none")]
    compact_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    compact_with: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning>,
}

/// `model.reasoning` in the job file's own words (`mode: adaptive`, not a flag).
#[derive(Serialize)]
struct Reasoning {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<&'static str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    interleaved: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    send_back: Option<bool>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    previous_response_id: bool,
}

impl Reasoning {
    fn of(settings: &crate::provider::ReasoningSettings) -> Option<Reasoning> {
        use crate::provider::reasoning::SummaryMode;
        settings.is_set().then(|| Reasoning {
            effort: settings.effort.map(|e| e.as_str()),
            budget_tokens: settings.budget_tokens,
            mode: settings.adaptive.then_some("adaptive"),
            interleaved: settings.interleaved,
            summary: settings.summary.map(|s| match s {
                SummaryMode::Auto => "auto",
                SummaryMode::None => "none",
            }),
            send_back: settings.send_back,
            previous_response_id: settings.previous_response_id,
        })
    }
}

#[derive(Serialize)]
struct Replay {
    #[serde(rename = "match")]
    match_mode: &'static str,
}

#[derive(Serialize)]
struct Retry {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_attempts_connect: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_attempts_status: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_backoff: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_backoff: Option<String>,
}

#[derive(Serialize)]
struct Price {
    input_per_mtok: f64,
    output_per_mtok: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_read_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_write_per_mtok: Option<f64>,
}

#[derive(Serialize)]
struct Permissions {
    default: &'static str,
    allow: Vec<String>,
    deny: Vec<String>,
}

#[derive(Serialize, Default)]
struct Budget {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_turns: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tool_calls: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<String>,
}

impl Budget {
    fn is_empty(&self) -> bool {
        self.max_turns.is_none()
            && self.max_tool_calls.is_none()
            && self.max_tokens.is_none()
            && self.max_cost_usd.is_none()
            && self.timeout.is_none()
    }
}

#[derive(Serialize)]
struct Check {
    name: String,
    run: String,
    timeout: String,
}

#[derive(Serialize, Default)]
struct Outputs {
    #[serde(skip_serializing_if = "Option::is_none")]
    dir: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    junit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<Commit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    push: Option<Push>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_file_size: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    include_binary: bool,
}

impl Outputs {
    fn is_empty(&self) -> bool {
        self.dir.is_none()
            && self.trace.is_none()
            && self.junit.is_none()
            && self.patch.is_none()
            && self.result.is_none()
            && self.commit.is_none()
            && self.max_file_size.is_none()
            && !self.include_binary
    }
}

#[derive(Serialize)]
struct Commit {
    branch: String,
    message: String,
    author: Author,
    on_failure: bool,
}

#[derive(Serialize)]
struct Author {
    name: String,
    email: String,
}

#[derive(Serialize)]
struct Push {
    remote: String,
    token_env: String,
}

/// A duration the job loader reads back exactly.
fn duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

fn path(p: &std::path::Path) -> String {
    p.display().to_string()
}

impl From<&JobSpec> for JobFile {
    fn from(job: &JobSpec) -> Self {
        JobFile {
            version: 1,
            name: job.name.clone(),
            skill: match &job.skill {
                SkillRef::Name(name) => Skill::Name(name.clone()),
                SkillRef::Path(dir) => Skill::Path { path: path(dir) },
                SkillRef::Git(git) => Skill::Git {
                    git: git.url.clone(),
                    rev: git.rev.clone(),
                    path: git.path.clone(),
                },
                SkillRef::Builtin(name) => Skill::Builtin {
                    builtin: name.clone(),
                },
            },
            skills: job.skills.iter().map(|s| s.name.clone()).collect(),
            goal: job.goal.clone(),
            model: Model::from(&job.model),
            tools: job.tools.clone(),
            permissions: Permissions {
                default: match job.permissions.default {
                    DefaultDecision::Allow => "allow",
                    DefaultDecision::Deny => "deny",
                },
                allow: job
                    .permissions
                    .allow
                    .iter()
                    .map(|p| p.as_str().to_string())
                    .collect(),
                deny: job
                    .permissions
                    .deny
                    .iter()
                    .map(|p| p.as_str().to_string())
                    .collect(),
            },
            budget: Budget {
                max_turns: job.budget.max_turns,
                max_tool_calls: job.budget.max_tool_calls,
                max_tokens: job.budget.max_tokens,
                max_cost_usd: job.budget.max_cost_usd,
                timeout: job.budget.timeout.map(duration),
            },
            workspace: path(&job.workspace),
            checks: job.checks.iter().map(Check::from).collect(),
            outputs: Outputs::from(&job.outputs),
            skills_path: job.skills_path.iter().map(|p| path(p)).collect(),
            max_plan_turns: job.max_plan_turns,
            checks_rounds: job.checks_rounds,
            max_parallel_tools: job.tool_loop.max_parallel_tools,
            tool_timeout: duration(job.tool_loop.tool_timeout),
            tool_timeouts: job
                .tool_loop
                .tool_timeouts
                .iter()
                .map(|(tool, d)| (tool.clone(), duration(*d)))
                .collect(),
            loop_guard: LoopGuard {
                repeats: job.tool_loop.loop_repeats,
            },
            task: Task {
                max_turns: job.tool_loop.task_max_turns,
            },
            sandbox: Sandbox::of(&job.sandbox),
            mcp: Mcp::of(&job.mcp),
            secrets: job.secrets.clone(),
            env: job
                .env
                .iter()
                .map(|var| {
                    let value = match &var.value {
                        EnvValue::Text(text) => text.clone(),
                        EnvValue::Secret(name) => format!("${{{{ secrets.{name} }}}}"),
                    };
                    (var.name.clone(), value)
                })
                .collect(),
            allow_dirty: job.allow_dirty,
            untrusted_inputs: job.untrusted_inputs.clone(),
            trust_workspace: job.trust_workspace,
            memory: job.guidance.memory.as_ref().map(|memory| match memory {
                MemorySpec::Auto => "auto".to_string(),
                MemorySpec::File(path) => path.clone(),
            }),
            rules: job.guidance.rules.clone(),
            rules_reminder: job.guidance.rules_reminder,
            result_schema: job.result_schema.clone(),
        }
    }
}

impl From<&ModelSpec> for Model {
    fn from(model: &ModelSpec) -> Self {
        let RetrySpec {
            max_attempts_connect,
            max_attempts_status,
            initial_backoff,
            max_backoff,
        } = model.retry;
        let retry = (model.retry != RetrySpec::default()).then(|| Retry {
            max_attempts_connect,
            max_attempts_status,
            initial_backoff: initial_backoff.map(duration),
            max_backoff: max_backoff.map(duration),
        });
        Model {
            provider: model.provider.as_str(),
            name: model.name.clone(),
            base_url: model.base_url.clone(),
            api_key_env: model.api_key_env.clone(),
            cassette: model.cassette.as_deref().map(path),
            request_timeout: duration(model.request_timeout),
            max_response_bytes: (model.max_response_bytes
                != crate::provider::answer_cap::DEFAULT_MAX_RESPONSE_BYTES)
                .then_some(model.max_response_bytes),
            stream: model.stream,
            retry,
            price: model.price.map(|p: PriceSpec| Price {
                input_per_mtok: p.input_per_mtok,
                output_per_mtok: p.output_per_mtok,
                cache_read_per_mtok: p.cache_read_per_mtok,
                cache_write_per_mtok: p.cache_write_per_mtok,
            }),
            replay: (model.replay_match != ReplayMatch::Strict).then(|| Replay {
                match_mode: model.replay_match.as_str(),
            }),
            context_window: model.context.window,
            #[expect(
                clippy::float_cmp,
                reason = "the default is a constant, never computed: only a value the job set differs"
            )]
            compact_at: (model.context.high_water != crate::job::ContextSpec::default().high_water)
                .then(|| format!("{}%", (model.context.high_water * 100.0).round())),
            compact_with: (model.context.method == crate::job::CompactWith::Digest)
                .then_some("digest"),
            reasoning: Reasoning::of(&model.reasoning),
        }
    }
}

impl From<&CheckSpec> for Check {
    fn from(check: &CheckSpec) -> Self {
        Check {
            name: check.name.clone(),
            run: check.run.clone(),
            timeout: duration(check.timeout),
        }
    }
}

impl From<&OutputsSpec> for Outputs {
    fn from(outputs: &OutputsSpec) -> Self {
        Outputs {
            dir: outputs.dir.as_deref().map(path),
            trace: outputs.trace.as_deref().map(path),
            junit: outputs.junit.as_deref().map(path),
            patch: outputs.patch.as_deref().map(path),
            result: outputs.result.as_deref().map(path),
            commit: outputs.commit.as_ref().map(|c| Commit {
                branch: c.branch.clone(),
                message: c.message.clone(),
                author: Author {
                    name: c.author_name.clone(),
                    email: c.author_email.clone(),
                },
                on_failure: c.on_failure,
            }),
            push: outputs.push.as_ref().map(|p| Push {
                remote: p.remote.clone(),
                token_env: p.token_env.clone(),
            }),
            max_file_size: outputs.max_file_size,
            include_binary: outputs.include_binary,
        }
    }
}

/// `checks_rounds: 1` is the default and goes unsaid.
fn is_one(n: &u32) -> bool {
    *n == 1
}
