//! Job files: parsed from YAML into private raw structs, then validated into
//! a [`JobSpec`] that cannot be invalid. Everything after this module trusts
//! the spec.
//!
//! Errors are [`Diagnostic`]s that name the file, line and column and say what
//! was expected; validation collects all of them in one pass.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::policy::{DefaultDecision, PermissionRules, ToolPattern};
use crate::provider::replay::ReplayMatch;
use crate::sandbox::SandboxSpec;

mod check;
pub mod diagnostic;
pub mod duration;
pub mod load;
pub mod mcp;
mod overrides;
pub mod print;
pub(crate) mod raw;
mod raw_mcp;
pub(crate) mod recover;
pub mod schema;
mod size;
pub mod suggest;
pub mod vars;
pub(crate) mod yaml_syntax;

pub(crate) use check::schema_file_problem;
pub use diagnostic::{Diagnostic, Severity};
pub use load::{
    COMMAND_LINE_JOB, LoadOptions, LoadedJob, load_job, load_job_detailed, load_job_with_problems,
};
pub use mcp::{EnvTemplate, McpServerSpec, McpSpec, McpTransport};
pub(crate) use overrides::Given;
pub use overrides::{AD_HOC_SKILL, Overrides};

/// A validated job.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// The job file this came from.
    pub path: PathBuf,
    pub name: String,
    pub skill: SkillRef,
    /// `skills`: further skills, found by name like the main one; the model
    /// is told their names, descriptions and folders, not their bodies.
    pub skills: Vec<FurtherSkill>,
    /// The goal with `${{ vars.NAME }}` substituted.
    pub goal: String,
    pub vars: BTreeMap<String, String>,
    pub model: ModelSpec,
    /// The job's `tools`, canonical names; `None` means every builtin tool.
    pub tools: Option<Vec<String>>,
    pub permissions: PermissionsSpec,
    pub budget: BudgetSpec,
    /// Absolute workspace directory (resolved against the current directory).
    pub workspace: PathBuf,
    pub checks: Vec<CheckSpec>,
    pub outputs: OutputsSpec,
    /// Extra folders to look for skills in, absolute.
    pub skills_path: Vec<PathBuf>,
    /// Planning turns allowed before a plan must be submitted.
    pub max_plan_turns: u32,
    /// Rounds of checks: while checks fail and rounds remain, the failures
    /// go back to the agent (1: the checks run once).
    pub checks_rounds: u32,
    /// Names of environment variables whose values are masked everywhere.
    pub secrets: Vec<String>,
    /// Variables `exec` and the checks get on top of the scrubbed environment.
    pub env: Vec<EnvVar>,
    /// Run even when the workspace has uncommitted changes (`allow_dirty`).
    pub allow_dirty: bool,
    /// Paths or globs relative to the workspace whose contents the model
    /// gets as untrusted input (`untrusted_inputs`).
    pub untrusted_inputs: Vec<String>,
    /// `trust_workspace`: may skills found in the workspace load? `None`:
    /// yes, unless the run was started by a pull request event.
    pub trust_workspace: Option<bool>,
    /// The kernel sandbox around every process the run starts.
    pub sandbox: SandboxSpec,
    /// The MCP servers the job brings (`mcp.servers`).
    pub mcp: McpSpec,
    /// How one turn's tool calls run: concurrency, timeouts, the loop guard.
    pub tool_loop: ToolLoopSpec,
    /// `memory`, `rules` and `rules_reminder`.
    pub guidance: GuidanceSpec,
    /// `result_schema` (or `--result-schema`): the JSON Schema the run's
    /// structured result must match, already checked to compile.
    pub result_schema: Option<serde_json::Value>,
    /// `telemetry:` as written in the job; the `OTEL_EXPORTER_OTLP_*`
    /// variables are read when the run starts.
    pub telemetry: TelemetrySpec,
}

/// `telemetry:`: where the run's spans go besides the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TelemetrySpec {
    /// `telemetry.otlp`; `None`: only the environment may turn export on.
    pub otlp: Option<OtlpSpec>,
    /// `telemetry.content`: export message content and tool arguments and results.
    pub content: bool,
}

/// `telemetry.otlp`, checked: an http(s) URL and headers, protocol `http/protobuf`.
#[derive(Clone, PartialEq, Eq)]
pub struct OtlpSpec {
    /// The collector's base URL (spans go to `/v1/traces` under it).
    pub endpoint: Option<String>,
    /// Sent with every export; values may be API keys, so never shown.
    pub headers: BTreeMap<String, String>,
    pub protocol: OtlpProtocol,
}

/// How spans and metrics travel to the collector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// Protobuf over HTTP (port 4318), to `/v1/traces` and `/v1/metrics`.
    #[default]
    HttpProtobuf,
    /// OTLP/gRPC (port 4317): the endpoint is the collector's address as it is.
    Grpc,
}

impl OtlpProtocol {
    /// `http/protobuf` or `grpc`, as `OTEL_EXPORTER_OTLP_PROTOCOL` spells them.
    pub fn parse(text: &str) -> Option<OtlpProtocol> {
        match text.trim() {
            "http/protobuf" => Some(OtlpProtocol::HttpProtobuf),
            "grpc" => Some(OtlpProtocol::Grpc),
            _ => None,
        }
    }
}

impl std::fmt::Debug for OtlpSpec {
    /// Header values are credentials: only their names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpSpec")
            .field("endpoint", &self.endpoint)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("protocol", &self.protocol)
            .finish()
    }
}

/// Standing guidance the system prompt carries: the memory file and the
/// job's rules (`memory`, `rules`, `rules_reminder`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GuidanceSpec {
    pub memory: Option<MemorySpec>,
    pub rules: Vec<String>,
    /// A one-line reminder of the rules follows each tool batch.
    pub rules_reminder: bool,
}

/// Where the memory file is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemorySpec {
    /// `memory: auto`: `AGENTS.md` at the workspace root, when there is one.
    Auto,
    /// A file relative to the workspace, checked to exist when the job loaded.
    File(String),
}

/// `max_parallel_tools`, `tool_timeout`, `tool_timeouts`, `loop_guard` and `task`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolLoopSpec {
    /// Read-only calls of one turn that run at the same time.
    pub max_parallel_tools: usize,
    /// Time one tool call may take before it gets a `TIMEOUT` result.
    pub tool_timeout: Duration,
    /// Per-tool overrides of `tool_timeout`, by canonical tool name.
    pub tool_timeouts: BTreeMap<String, Duration>,
    /// Identical calls in one step at which the model is warned (`loop_guard.repeats`).
    pub loop_repeats: u32,
    /// Model turns one sub-agent (a `task` call) may take (`task.max_turns`).
    pub task_max_turns: u32,
}

impl Default for ToolLoopSpec {
    fn default() -> Self {
        ToolLoopSpec {
            max_parallel_tools: 8,
            tool_timeout: Duration::from_secs(120),
            tool_timeouts: BTreeMap::new(),
            loop_repeats: 3,
            task_max_turns: 20,
        }
    }
}

impl ToolLoopSpec {
    /// The timeout of `tool`, and whether the job set it for that tool by name.
    pub fn timeout_of(&self, tool: &str) -> (Duration, bool) {
        match self.tool_timeouts.get(tool) {
            Some(t) => (*t, true),
            None => (self.tool_timeout, false),
        }
    }
}

/// One `env` entry of a job.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvVar {
    pub name: String,
    pub value: EnvValue,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EnvValue {
    /// The value as written, vars substituted.
    Text(String),
    /// `${{ secrets.NAME }}`: the value of the environment variable NAME when the run starts.
    Secret(String),
}

impl JobSpec {
    /// The job's `env` with secret references looked up with `lookup`;
    /// also the names of referenced secrets that are not set (left out).
    pub fn resolve_env(
        &self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> (Vec<(String, String)>, Vec<String>) {
        let mut env = Vec::new();
        let mut missing = Vec::new();
        for var in &self.env {
            match &var.value {
                EnvValue::Text(text) => env.push((var.name.clone(), text.clone())),
                EnvValue::Secret(name) => match lookup(name) {
                    Some(value) => env.push((var.name.clone(), value)),
                    None => missing.push(name.clone()),
                },
            }
        }
        (env, missing)
    }

    /// What the `sandbox.writable` folders must keep clear of, as far as
    /// the job tells: its workspace, the workspace's `.git` and `.agentci`,
    /// its outputs. A run adds what it finds at start.
    pub fn writable_kept_paths(&self) -> crate::sandbox::writable::KeptPaths {
        check::kept_paths(&self.workspace, &self.outputs)
    }
}

/// One entry of the job's `skills` list, with where it is written.
#[derive(Clone, Debug, PartialEq)]
pub struct FurtherSkill {
    pub name: String,
    pub line: u32,
    pub column: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SkillRef {
    /// A skill found by name in the skills paths.
    Name(String),
    /// A skill folder given by path (relative paths resolved against the job file's folder).
    Path(PathBuf),
    /// A skill folder inside a git repository at a pinned revision.
    Git(GitSkillRef),
    /// A skill built into agentci (`{builtin: general}`), by a known name.
    Builtin(String),
}

/// `skill: {git: URL, rev: REV, path: DIR}`.
#[derive(Clone, Debug, PartialEq)]
pub struct GitSkillRef {
    /// The repository: a URL, or a local path made absolute against the job file's folder.
    pub url: String,
    /// A commit id, tag or branch name.
    pub rev: String,
    /// The skill's folder inside the repository, relative, `/`-separated; empty for the root.
    pub path: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum ProviderKind {
    /// Chat Completions, from OpenAI or any compatible server.
    #[strum(serialize = "openai")]
    OpenAi,
    /// OpenAI's Responses API.
    #[strum(serialize = "openai-responses")]
    OpenAiResponses,
    /// Azure OpenAI deployments.
    #[strum(serialize = "azure-openai")]
    AzureOpenAi,
    Anthropic,
    /// Anthropic models on Amazon Bedrock.
    Bedrock,
    /// Anthropic models on Google Vertex AI.
    Vertex,
    Replay,
}

impl ProviderKind {
    /// Every provider a job can name, in the order messages list them.
    pub const ALL: [ProviderKind; 7] = [
        ProviderKind::OpenAi,
        ProviderKind::OpenAiResponses,
        ProviderKind::AzureOpenAi,
        ProviderKind::Anthropic,
        ProviderKind::Bedrock,
        ProviderKind::Vertex,
        ProviderKind::Replay,
    ];

    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The provider a job or flag names, by its name.
    pub fn parse(name: &str) -> Option<ProviderKind> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// Whether the model speaks Anthropic's Messages format (directly or
    /// through a cloud), so thinking settings apply.
    pub fn speaks_messages(self) -> bool {
        matches!(
            self,
            ProviderKind::Anthropic | ProviderKind::Bedrock | ProviderKind::Vertex
        )
    }

    /// The environment variable the API key is read from by default; the
    /// clouds sign with their own credentials instead.
    pub fn default_api_key_env(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => Some("OPENAI_API_KEY"),
            ProviderKind::AzureOpenAi => Some("AZURE_OPENAI_API_KEY"),
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::Bedrock | ProviderKind::Vertex | ProviderKind::Replay => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    pub provider: ProviderKind,
    pub name: String,
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (never the key).
    pub api_key_env: Option<String>,
    /// For `replay`: the cassette to serve, absolute.
    pub cassette: Option<PathBuf>,
    /// Time allowed for one model request.
    pub request_timeout: Duration,
    /// `model.max_response_bytes`: the most bytes one answer may take on the
    /// wire, streamed or not.
    pub max_response_bytes: u64,
    /// Stream answers as server-sent events (`model.stream`, default true).
    pub stream: bool,
    /// `model.retry`: unset fields take the provider layer's defaults.
    pub retry: RetrySpec,
    /// `model.price`: overrides the built-in price of the model.
    pub price: Option<PriceSpec>,
    /// `model.replay.match` (or `--replay-match`): how a replay matches requests.
    pub replay_match: ReplayMatch,
    /// `model.context_window`, `model.compact_at`, `model.compact_with`.
    pub context: ContextSpec,
    /// `model.reasoning` with `--reasoning-effort`/`--thinking-budget` over it.
    pub reasoning: crate::provider::ReasoningSettings,
    /// `model.api_version` (azure-openai): the `api-version` query; `None`
    /// takes the provider's default.
    pub api_version: Option<String>,
    /// `model.region`: the Bedrock or Vertex AI region (else the environment's).
    pub region: Option<String>,
    /// `model.project`: the Google Cloud project of a Vertex AI model (else the environment's).
    pub project: Option<String>,
}

/// How the conversation is kept inside the model's context window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContextSpec {
    /// `model.context_window` in tokens; `None`: the built-in table's entry
    /// for the model, or a conservative default.
    pub window: Option<u64>,
    /// `model.compact_at`: the share of the window above which older turns
    /// are compacted before a model call (default 0.8).
    pub high_water: f64,
    /// `model.compact_with`: how older turns are replaced.
    pub method: CompactWith,
}

impl Default for ContextSpec {
    fn default() -> Self {
        ContextSpec {
            window: None,
            high_water: 0.8,
            method: CompactWith::Summary,
        }
    }
}

/// How compaction replaces older turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactWith {
    /// A summary written by the model in one extra call, when the budget
    /// and the window allow it; otherwise a digest.
    Summary,
    /// Always the deterministic digest: no extra model call.
    Digest,
}

/// `model.retry` as written; `None` means the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetrySpec {
    pub max_attempts_connect: Option<u32>,
    pub max_attempts_status: Option<u32>,
    pub initial_backoff: Option<Duration>,
    pub max_backoff: Option<Duration>,
}

/// `model.price`: US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriceSpec {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    pub cache_read_per_mtok: Option<f64>,
    pub cache_write_per_mtok: Option<f64>,
}

#[derive(Clone, Debug)]
pub struct PermissionsSpec {
    pub default: DefaultDecision,
    pub allow: Vec<ToolPattern>,
    pub deny: Vec<ToolPattern>,
    /// `read`, `grep` and `edit` may show files with other hard links.
    pub allow_hard_links: bool,
}

impl PermissionsSpec {
    /// The rules the run's [`PermissionPolicy`](crate::policy::PermissionPolicy) is built from.
    pub fn rules(&self) -> PermissionRules {
        PermissionRules {
            default: self.default,
            allow: self.allow.clone(),
            deny: self.deny.clone(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BudgetSpec {
    pub max_turns: Option<u32>,
    pub max_tool_calls: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub timeout: Option<Duration>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CheckSpec {
    pub name: String,
    /// A shell command, run with `bash -c` in the workspace.
    pub run: String,
    pub timeout: Duration,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutputsSpec {
    /// The run folder; `None` means `.agentci/runs/<run-id>/` in the workspace.
    pub dir: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    /// Write the agent's changes as a unified diff here.
    pub patch: Option<PathBuf>,
    /// Where the structured result goes (with `result_schema`); `None`:
    /// `result.json` in the run folder.
    pub result: Option<PathBuf>,
    /// Commit the agent's changes on a new branch.
    pub commit: Option<CommitSpec>,
    /// Push the commit's branch (only with `commit`).
    pub push: Option<PushSpec>,
    /// Changed files larger than this (bytes) stay out of the patch and
    /// commit; `None` means [`DEFAULT_MAX_FILE_SIZE`].
    pub max_file_size: Option<u64>,
    /// Binary files go into the patch and commit too.
    pub include_binary: bool,
}

/// `outputs.max_file_size` when the job does not say: 1 MB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 1_000_000;

#[derive(Clone, Debug, PartialEq)]
pub struct CommitSpec {
    /// The new branch, created from HEAD; it must not exist yet.
    pub branch: String,
    /// The first lines of the message; agentci adds trailers naming job, skill and model.
    pub message: String,
    pub author_name: String,
    pub author_email: String,
    /// Commit even when the run did not pass.
    pub on_failure: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PushSpec {
    /// A remote name (`origin`) or a URL.
    pub remote: String,
    /// The environment variable holding the token for https remotes.
    pub token_env: String,
}
