//! The job file as written: private structs that serde fills from YAML.
//!
//! They only fix the shape (which keys exist, which are lists or mappings);
//! every value that needs a semantic check is `Spanned` so the loader can
//! point at it. Numbers and durations arrive as [`Scalar`] so that a wrong
//! value is reported with the other semantic problems instead of stopping
//! the parse. Unknown keys stop the parse with the list of valid keys.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_saphyr::Spanned;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Job")]
pub(super) struct RawJob {
    /// The job file format's version; only `1` exists.
    #[schemars(with = "Option<super::schema::Version>")]
    pub version: Option<Spanned<Scalar>>,
    /// The job's name, shown in summaries, JUnit and traces.
    #[schemars(with = "Option<String>")]
    pub name: Option<Spanned<String>>,
    /// The skill the agent follows: a name found in a skills path, `{path: DIR}`, or `{git: URL, rev: SHA, path: DIR}`.
    #[schemars(with = "Option<RawSkill>")]
    pub skill: Option<Spanned<RawSkill>>,
    /// What the agent must achieve; `${{ vars.NAME }}` is substituted.
    #[schemars(with = "Option<String>")]
    pub goal: Option<Spanned<String>>,
    /// Values for `${{ vars.NAME }}` in the goal, checks and other texts; `--var K=V` overrides them.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Scalar>")]
    pub vars: BTreeMap<String, Spanned<Scalar>>,
    /// The model: `provider` (openai, anthropic, bedrock, …, replay), `name`, and optional server, key, retry, price and context settings.
    #[schemars(with = "Option<RawModel>")]
    pub model: Option<Spanned<RawModel>>,
    /// The tools the agent may use (read, grep, find, ls, edit, write, exec, …), intersected with the skill's allowed-tools.
    #[schemars(with = "Option<Vec<super::schema::ToolName>>")]
    pub tools: Option<Vec<Spanned<String>>>,
    /// Rules that decide every tool call without asking anyone: `default` (allow | deny), `allow` and `deny` patterns such as `exec(cargo test *)`; deny beats allow.
    pub permissions: Option<RawPermissions>,
    /// Limits that end the run: turns, tool calls, tokens, cost and time.
    pub budget: Option<RawBudget>,
    /// The folder the agent works in (relative to the job file); tools never reach outside it.
    #[schemars(with = "Option<String>")]
    pub workspace: Option<Spanned<String>>,
    /// Commands that decide success, each a JUnit testcase: `{name, run, timeout}`.
    #[schemars(with = "Option<Vec<RawCheck>>")]
    pub checks: Option<Vec<Spanned<RawCheck>>>,
    /// Where to write the trace, JUnit XML, patch and result, and whether to commit and push.
    pub outputs: Option<RawOutputs>,
    /// Extra folders to look for skills in, relative to the job file.
    #[schemars(with = "Option<Vec<String>>")]
    pub skills_path: Option<Vec<Spanned<String>>>,
    /// Further skills the model may read when it needs them.
    #[schemars(with = "Option<Vec<String>>")]
    pub skills: Option<Vec<Spanned<String>>>,
    /// Turns the planning phase may take (default 5).
    #[schemars(with = "Option<super::schema::Whole>")]
    pub max_plan_turns: Option<Spanned<Scalar>>,
    /// Environment variables whose values are masked everywhere (traces, outputs, the model's view).
    #[schemars(with = "Option<Vec<String>>")]
    pub secrets: Option<Vec<Spanned<String>>>,
    /// Environment variables for the commands the agent and the checks run.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Scalar>")]
    pub env: BTreeMap<String, Spanned<Scalar>>,
    /// Start even on uncommitted changes (they end up in the patch and commit); default `false`.
    #[schemars(with = "Option<super::schema::Flag>")]
    pub allow_dirty: Option<Spanned<Scalar>>,
    /// Files (paths or globs in the workspace) given to the model as untrusted data, not instructions.
    #[schemars(with = "Option<Vec<String>>")]
    pub untrusted_inputs: Option<Vec<Spanned<String>>>,
    /// Load skills found in the workspace (default `true`, except on pull request events).
    #[schemars(with = "Option<super::schema::Flag>")]
    pub trust_workspace: Option<Spanned<Scalar>>,
    /// How commands are confined: `workspace-write`, `read-only`, `off`, or a mapping with network, limits and writable folders.
    #[schemars(with = "Option<RawSandbox>")]
    pub sandbox: Option<Spanned<RawSandbox>>,
    /// MCP servers whose tools the agent may call.
    #[schemars(with = "Option<super::raw_mcp::RawMcp>")]
    pub mcp: Option<Spanned<super::raw_mcp::RawMcp>>,
    /// Read-only calls of one turn that run at once.
    #[schemars(with = "Option<super::schema::Whole>")]
    pub max_parallel_tools: Option<Spanned<Scalar>>,
    /// How long one tool call may take, e.g. `2m`.
    #[schemars(with = "Option<super::schema::DurationText>")]
    pub tool_timeout: Option<Spanned<Scalar>>,
    /// Per-tool time limits, e.g. `{exec: 10m}`.
    #[schemars(with = "Option<BTreeMap<String, super::schema::DurationText>>")]
    pub tool_timeouts: Option<BTreeMap<String, Spanned<Scalar>>>,
    /// `{repeats: N}`: identical calls in a step before the model is warned.
    pub loop_guard: Option<RawLoopGuard>,
    /// Settings for the sub-agents the `task` tool starts.
    pub task: Option<RawTask>,
    /// `auto` (AGENTS.md when present) or a file in the workspace whose text the model is given.
    #[schemars(with = "Option<String>")]
    pub memory: Option<Spanned<String>>,
    /// Rules added to the system prompt.
    #[schemars(with = "Option<Vec<String>>")]
    pub rules: Option<Vec<Spanned<String>>>,
    /// Append a one-line reminder of the rules after each tool batch.
    #[schemars(with = "Option<super::schema::Flag>")]
    pub rules_reminder: Option<Spanned<Scalar>>,
    /// While checks fail, give the failures back to the agent, up to this many rounds (default 1).
    #[schemars(with = "Option<super::schema::Whole>")]
    pub checks_rounds: Option<Spanned<Scalar>>,
    /// An inline JSON Schema (a mapping) or the path of a `.json` file holding one.
    #[schemars(with = "Option<serde_json::Value>")]
    pub result_schema: Option<Spanned<serde_json::Value>>,
    /// `{otlp: {endpoint, headers, protocol}, content}`: export the run as OpenTelemetry spans.
    pub telemetry: Option<RawTelemetry>,
}

/// `telemetry:`, where the run's spans are exported.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Telemetry")]
pub(super) struct RawTelemetry {
    /// An OTLP collector: the run is exported as one trace of spans.
    pub otlp: Option<RawOtlp>,
    /// Also export what the model was sent and answered and the tools' arguments
    /// and results (masked, capped); default false.
    #[schemars(with = "Option<super::schema::Flag>")]
    pub content: Option<Spanned<Scalar>>,
}

/// `telemetry.otlp:`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Otlp")]
pub(super) struct RawOtlp {
    /// The collector's base URL, like `OTEL_EXPORTER_OTLP_ENDPOINT`; spans go to `/v1/traces` under it.
    #[schemars(with = "Option<String>")]
    pub endpoint: Option<Spanned<String>>,
    /// HTTP headers sent with each export (an API key: `${{ vars.X }}` is substituted).
    #[schemars(with = "BTreeMap<String, String>")]
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<String>>,
    /// `http/protobuf` (default, port 4318) or `grpc` (port 4317).
    #[schemars(with = "Option<String>")]
    pub protocol: Option<Spanned<String>>,
}

/// `task:`, the sub-agents the `task` tool starts.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Task")]
pub(super) struct RawTask {
    #[schemars(with = "Option<super::schema::Whole>")]
    pub max_turns: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "LoopGuard")]
pub(super) struct RawLoopGuard {
    #[schemars(with = "Option<super::schema::Whole>")]
    pub repeats: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Model")]
pub(super) struct RawModel {
    /// `openai` (any OpenAI-compatible server), `openai-responses`, `azure-openai`, `anthropic`, `bedrock`, `vertex` or `replay` (see docs/providers.md).
    #[schemars(with = "Option<super::schema::ProviderName>")]
    pub provider: Option<Spanned<String>>,
    /// The model's name, e.g. `gpt-4.1-mini`.
    #[schemars(with = "Option<String>")]
    pub name: Option<Spanned<String>>,
    /// The server's URL, e.g. `http://127.0.0.1:11434/v1`.
    #[schemars(with = "Option<String>")]
    pub base_url: Option<Spanned<String>>,
    /// The environment variable holding the API key (the key itself never appears in files or traces).
    #[schemars(with = "Option<String>")]
    pub api_key_env: Option<Spanned<String>>,
    /// For `provider: replay`: the recorded session to play back.
    #[schemars(with = "Option<String>")]
    pub cassette: Option<Spanned<String>>,
    /// How long one model request may take.
    #[schemars(with = "Option<super::schema::DurationText>")]
    pub request_timeout: Option<Spanned<Scalar>>,
    /// The most bytes one answer may take on the wire, streamed or not, e.g. `32MiB` (default 16 MiB).
    #[schemars(with = "Option<super::schema::SizeText>")]
    pub max_response_bytes: Option<Spanned<Scalar>>,
    /// Stream responses from the server.
    #[schemars(with = "Option<super::schema::Flag>")]
    pub stream: Option<Spanned<Scalar>>,
    /// How often to retry failed connections and error statuses.
    #[schemars(with = "Option<RawRetry>")]
    pub retry: Option<Spanned<RawRetry>>,
    /// Prices in US dollars per million tokens, for `max_cost_usd`.
    #[schemars(with = "Option<RawPrice>")]
    pub price: Option<Spanned<RawPrice>>,
    #[schemars(with = "Option<RawReplay>")]
    pub replay: Option<Spanned<RawReplay>>,
    /// The model's context window in tokens.
    #[schemars(with = "Option<super::schema::Whole>")]
    pub context_window: Option<Spanned<Scalar>>,
    /// The share of the context window (e.g. `0.8`) at which the conversation is compacted.
    #[schemars(with = "Option<super::schema::Share>")]
    pub compact_at: Option<Spanned<Scalar>>,
    /// The model that writes compaction summaries.
    #[schemars(with = "Option<String>")]
    pub compact_with: Option<Spanned<String>>,
    /// How a reasoning model thinks, and how its reasoning is carried between turns.
    #[schemars(with = "Option<RawReasoning>")]
    pub reasoning: Option<Spanned<RawReasoning>>,
    /// Azure OpenAI: the `api-version` the requests name, e.g. `2024-10-21` (the default).
    #[schemars(with = "Option<String>")]
    pub api_version: Option<Spanned<String>>,
    /// `bedrock` and `vertex`: the cloud region, e.g. `us-east-1` or `us-east5` (else `AWS_REGION` / `CLOUD_ML_REGION`).
    #[schemars(with = "Option<String>")]
    pub region: Option<Spanned<String>>,
    /// `vertex`: the Google Cloud project (else `ANTHROPIC_VERTEX_PROJECT_ID` / `GOOGLE_CLOUD_PROJECT`).
    #[schemars(with = "Option<String>")]
    pub project: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Reasoning")]
pub(super) struct RawReasoning {
    /// `minimal`, `low`, `medium` or `high`, mapped to each API's own setting.
    #[schemars(with = "Option<String>")]
    pub effort: Option<Spanned<String>>,
    /// Anthropic manual thinking: the tokens the model may think for (at least 1024).
    #[schemars(with = "Option<super::schema::Whole>")]
    pub budget_tokens: Option<Spanned<Scalar>>,
    /// `adaptive` (Anthropic: the model decides how much to think) or `manual`.
    #[schemars(with = "Option<String>")]
    pub mode: Option<Spanned<String>>,
    /// Anthropic: think between tool calls, not only before the first.
    #[schemars(with = "Option<super::schema::Flag>")]
    pub interleaved: Option<Spanned<Scalar>>,
    /// Responses API: `auto` (a summary of the reasoning comes back) or `none`.
    #[schemars(with = "Option<String>")]
    pub summary: Option<Spanned<String>>,
    /// Chat Completions: send the server's `reasoning_content` back in later turns.
    #[schemars(with = "Option<super::schema::Flag>")]
    pub send_back: Option<Spanned<Scalar>>,
    /// Responses API: chain turns with `previous_response_id` (server-side state).
    #[schemars(with = "Option<super::schema::Flag>")]
    pub previous_response_id: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Replay")]
pub(super) struct RawReplay {
    #[serde(rename = "match")]
    #[schemars(with = "Option<String>")]
    pub match_mode: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Retry")]
pub(super) struct RawRetry {
    #[schemars(with = "Option<super::schema::Whole>")]
    pub max_attempts_connect: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::Whole>")]
    pub max_attempts_status: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::DurationText>")]
    pub initial_backoff: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::DurationText>")]
    pub max_backoff: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Price")]
pub(super) struct RawPrice {
    #[schemars(with = "Option<super::schema::Number>")]
    pub input_per_mtok: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::Number>")]
    pub output_per_mtok: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::Number>")]
    pub cache_read_per_mtok: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::Number>")]
    pub cache_write_per_mtok: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Permissions")]
pub(super) struct RawPermissions {
    /// `allow` or `deny`: what happens to calls no rule matches.
    #[schemars(with = "Option<String>")]
    pub default: Option<Spanned<String>>,
    /// Patterns of calls to allow, e.g. `exec(cargo test *)`, `edit(src/**)`.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub allow: Vec<Spanned<String>>,
    /// Patterns of calls to refuse; deny beats allow.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny: Vec<Spanned<String>>,
    /// Let read/grep/edit use files with several hard links.
    #[schemars(with = "Option<super::schema::Flag>")]
    pub allow_hard_links: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Budget")]
pub(crate) struct RawBudget {
    /// Model turns the run may take.
    #[schemars(with = "Option<super::schema::Whole>")]
    pub max_turns: Option<Spanned<Scalar>>,
    /// Tool calls the run may make.
    #[schemars(with = "Option<super::schema::Whole>")]
    pub max_tool_calls: Option<Spanned<Scalar>>,
    /// Tokens (input and output) the run may use.
    #[schemars(with = "Option<super::schema::Whole>")]
    pub max_tokens: Option<Spanned<Scalar>>,
    /// US dollars the run may cost (needs prices for the model).
    #[schemars(with = "Option<super::schema::Number>")]
    pub max_cost_usd: Option<Spanned<Scalar>>,
    /// Wall-clock time the run may take, e.g. `15m`.
    #[schemars(with = "Option<super::schema::DurationText>")]
    pub timeout: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Check")]
pub(super) struct RawCheck {
    /// The check's name (its JUnit testcase).
    #[schemars(with = "Option<String>")]
    pub name: Option<Spanned<String>>,
    /// The shell command; exit 0 passes.
    #[schemars(with = "Option<String>")]
    pub run: Option<Spanned<String>>,
    /// How long the command may take.
    #[schemars(with = "Option<super::schema::DurationText>")]
    pub timeout: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Outputs")]
pub(super) struct RawOutputs {
    /// A folder for every output not given a path of its own.
    #[schemars(with = "Option<String>")]
    pub dir: Option<Spanned<String>>,
    /// The JSONL trace's path.
    #[schemars(with = "Option<String>")]
    pub trace: Option<Spanned<String>>,
    /// The JUnit XML's path.
    #[schemars(with = "Option<String>")]
    pub junit: Option<Spanned<String>>,
    /// The patch of the agent's changes.
    #[schemars(with = "Option<String>")]
    pub patch: Option<Spanned<String>>,
    /// The JSON result's path (with `result_schema`).
    #[schemars(with = "Option<String>")]
    pub result: Option<Spanned<String>>,
    /// Commit the changes: `{branch, message, author, on_failure}`.
    #[schemars(with = "Option<RawCommit>")]
    pub commit: Option<Spanned<RawCommit>>,
    /// Push the commit: `true`, or `{remote, token_env}`.
    #[schemars(with = "Option<RawPush>")]
    pub push: Option<Spanned<RawPush>>,
    /// Changed files larger than this (bytes, default 1 MB) are left out of the patch and commit.
    #[schemars(with = "Option<super::schema::Whole>")]
    pub max_file_size: Option<Spanned<Scalar>>,
    /// Keep binary files in the patch and commit.
    #[schemars(with = "Option<super::schema::Flag>")]
    pub include_binary: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Commit")]
pub(super) struct RawCommit {
    #[schemars(with = "Option<String>")]
    pub branch: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub message: Option<Spanned<String>>,
    #[schemars(with = "Option<RawAuthor>")]
    pub author: Option<Spanned<RawAuthor>>,
    #[schemars(with = "Option<super::schema::Flag>")]
    pub on_failure: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Author")]
pub(super) struct RawAuthor {
    #[schemars(with = "Option<String>")]
    pub name: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub email: Option<Spanned<String>>,
}

/// `push: true` (origin, `GITHUB_TOKEN`), `push: false`, or `{remote, token_env}`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum RawPush {
    Enabled(bool),
    To {
        remote: Option<String>,
        token_env: Option<String>,
    },
}

const PUSH_KEYS: &[&str] = &["remote", "token_env"];

impl<'de> Deserialize<'de> for RawPush {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PushVisitor)
    }
}

struct PushVisitor;

impl<'de> Visitor<'de> for PushVisitor {
    type Value = RawPush;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`true` or a mapping `{remote: origin, token_env: GITHUB_TOKEN}`")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawPush, E> {
        Ok(RawPush::Enabled(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawPush, A::Error> {
        let (mut remote, mut token_env) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "remote" => remote = Some(map.next_value::<String>()?),
                "token_env" => token_env = Some(map.next_value::<String>()?),
                other => return Err(de::Error::unknown_field(other, PUSH_KEYS)),
            }
        }
        Ok(RawPush::To { remote, token_env })
    }
}

/// A scalar that is not the number or duration its key takes; the Display
/// text is the message for the value of `key`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("`{key}` must not be negative, found `{n}`")]
    Negative { key: String, n: i128 },
    #[error("`{key}`: {problem}")]
    Duration { key: String, problem: String },
    #[error("`{key}` must be a duration such as `90s`, `15m` or `1h30m`, found {kind} `{text}`")]
    NotDuration {
        key: String,
        kind: &'static str,
        text: String,
    },
    #[error("`{key}` must be more than zero")]
    Zero { key: String },
    #[error("`{key}` must be a positive number of US dollars such as 2.5, found {kind} `{text}`")]
    NotUsd {
        key: String,
        kind: &'static str,
        text: String,
    },
}

/// A YAML scalar of any type; the loader decides which types a key accepts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
}

impl Scalar {
    /// A positive duration written as `15m`, `1h30m`, `500ms` or whole
    /// seconds; `Err` is the message for the value of `key`.
    pub fn positive_duration(&self, key: &str) -> Result<std::time::Duration, ValueError> {
        let key = key.to_string();
        let parsed = match self {
            Scalar::Int(n) => u64::try_from(*n)
                .map(std::time::Duration::from_secs)
                .map_err(|_| ValueError::Negative {
                    key: key.clone(),
                    n: *n,
                }),
            Scalar::Str(text) => {
                super::duration::parse_duration(text).map_err(|e| ValueError::Duration {
                    key: key.clone(),
                    problem: e.to_string(),
                })
            }
            other => Err(ValueError::NotDuration {
                key: key.clone(),
                kind: other.kind(),
                text: other.text(),
            }),
        }?;
        if parsed.is_zero() {
            return Err(ValueError::Zero { key });
        }
        Ok(parsed)
    }

    /// A positive number of US dollars (`max_cost_usd`); `Err` is the message.
    pub fn positive_usd(&self, key: &str) -> Result<f64, ValueError> {
        let number = match self {
            Scalar::Int(n) => Some(*n as f64),
            Scalar::Float(f) => Some(*f),
            _ => None,
        };
        match number {
            Some(n) if n.is_finite() && n > 0.0 => Ok(n),
            _ => Err(ValueError::NotUsd {
                key: key.to_string(),
                kind: self.kind(),
                text: self.text(),
            }),
        }
    }

    /// A flag's value read as YAML would read it: a number when it is one.
    pub fn from_flag(text: &str) -> Scalar {
        if let Ok(n) = text.trim().parse::<i128>() {
            Scalar::Int(n)
        } else if let Ok(x) = text.trim().parse::<f64>() {
            Scalar::Float(x)
        } else {
            Scalar::Str(text.to_string())
        }
    }

    /// What the user wrote, for messages and for vars (`1` → "1", `true` → "true").
    pub fn text(&self) -> String {
        match self {
            Scalar::Null => String::new(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Str(s) => s.clone(),
        }
    }

    /// A short description of the type for "expected …, found …" messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Scalar::Null => "nothing",
            Scalar::Bool(_) => "a boolean",
            Scalar::Int(_) => "an integer",
            Scalar::Float(_) => "a decimal number",
            Scalar::Str(_) => "a string",
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, number or boolean")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }
}

/// `skill: NAME`, `skill: {path: DIR}` or `skill: {git: URL, rev: SHA, path: DIR}`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum RawSkill {
    Name(String),
    Path(String),
    /// A skill in a git repository; `rev` and `path` are checked by the loader.
    Git {
        url: String,
        rev: Option<String>,
        path: Option<String>,
    },
    /// `{builtin: NAME}`: a skill built into agentci; the name is checked by the loader.
    Builtin(String),
}

const SKILL_KEYS: &[&str] = &["path", "git", "rev", "builtin"];

impl<'de> Deserialize<'de> for RawSkill {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkillVisitor)
    }
}

struct SkillVisitor;

impl<'de> Visitor<'de> for SkillVisitor {
    type Value = RawSkill;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a skill name, a mapping `{path: DIR}`, `{git: URL, rev: SHA, path: DIR}` or \
             `{builtin: general}`",
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSkill, E> {
        Ok(RawSkill::Name(v.to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawSkill, A::Error> {
        let (mut path, mut git, mut rev, mut builtin) = (None, None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "path" => path = Some(map.next_value::<String>()?),
                "git" => git = Some(map.next_value::<String>()?),
                "rev" => rev = Some(map.next_value::<String>()?),
                "builtin" => builtin = Some(map.next_value::<String>()?),
                other => return Err(de::Error::unknown_field(other, SKILL_KEYS)),
            }
        }
        if let Some(name) = builtin {
            if git.is_some() || path.is_some() || rev.is_some() {
                return Err(de::Error::custom(
                    "`builtin` names a skill on its own; remove `path`, `git` and `rev`",
                ));
            }
            return Ok(RawSkill::Builtin(name));
        }
        match (git, path) {
            (Some(url), path) => Ok(RawSkill::Git { url, rev, path }),
            (None, _) if rev.is_some() => Err(de::Error::missing_field("git")),
            (None, Some(path)) => Ok(RawSkill::Path(path)),
            (None, None) => Err(de::Error::missing_field("path")),
        }
    }
}

/// `sandbox: PROFILE` or `sandbox: {profile, network, require, limits,
/// writable}`; values are checked by the loader.
#[derive(Debug, Default)]
pub(crate) struct RawSandbox {
    pub profile: Option<String>,
    pub network: Option<RawNetwork>,
    pub require: Option<Scalar>,
    pub limits: Option<RawLimits>,
    /// Folders, `~/` folders and presets, each where it was written.
    pub writable: Option<Vec<Spanned<Scalar>>>,
}

/// `sandbox.network`: `true`, `false`, or the hosts commands may reach
/// through agentci's proxy (each with its position, for errors).
#[derive(Debug)]
pub(crate) enum RawNetwork {
    Flag(Scalar),
    Hosts(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for RawNetwork {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NetworkVisitor)
    }
}

struct NetworkVisitor;

impl<'de> Visitor<'de> for NetworkVisitor {
    type Value = RawNetwork;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`true`, `false` or a list of hosts such as `[crates.io, preset:npm]`")
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawNetwork, A::Error> {
        let mut hosts = Vec::new();
        while let Some(host) = seq.next_element::<Spanned<String>>()? {
            hosts.push(host);
        }
        Ok(RawNetwork::Hosts(hosts))
    }
    fn visit_unit<E: de::Error>(self) -> Result<RawNetwork, E> {
        ScalarVisitor.visit_unit().map(RawNetwork::Flag)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Flag(Scalar::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Flag(Scalar::Int(v.into())))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Flag(Scalar::Int(v.into())))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Flag(Scalar::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Flag(Scalar::Str(v.to_string())))
    }
}

/// `sandbox.limits`: counts and sizes, checked by the loader.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Limits")]
pub(crate) struct RawLimits {
    #[schemars(with = "Option<super::schema::Whole>")]
    pub processes: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::SizeText>")]
    pub memory: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::SizeText>")]
    pub file_size: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::Whole>")]
    pub open_files: Option<Spanned<Scalar>>,
}

const SANDBOX_KEYS: &[&str] = &["profile", "network", "require", "limits", "writable"];

impl<'de> Deserialize<'de> for RawSandbox {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SandboxVisitor)
    }
}

struct SandboxVisitor;

impl<'de> Visitor<'de> for SandboxVisitor {
    type Value = RawSandbox;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a profile (`workspace-write`, `read-only`, `off`) or a mapping \
             `{profile: workspace-write, network: false, require: true}`",
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSandbox, E> {
        Ok(RawSandbox {
            profile: Some(v.to_string()),
            ..RawSandbox::default()
        })
    }

    /// YAML 1.1 reads an unquoted `off` as `false`: `sandbox: off` is meant.
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawSandbox, E> {
        if v {
            return Err(E::custom(
                "`sandbox: true` names no profile; use `workspace-write` or `read-only`",
            ));
        }
        self.visit_str("off")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawSandbox, A::Error> {
        let mut raw = RawSandbox::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "profile" => raw.profile = Some(map.next_value::<ProfileName>()?.0),
                "network" => raw.network = Some(map.next_value::<RawNetwork>()?),
                "require" => raw.require = Some(map.next_value::<Scalar>()?),
                "limits" => raw.limits = map.next_value::<Option<RawLimits>>()?,
                "writable" => raw.writable = map.next_value::<Option<Vec<Spanned<Scalar>>>>()?,
                other => return Err(de::Error::unknown_field(other, SANDBOX_KEYS)),
            }
        }
        Ok(raw)
    }
}

/// A profile name, with YAML 1.1's `off` (read as `false`) taken as `off`.
struct ProfileName(String);

impl<'de> Deserialize<'de> for ProfileName {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = deserializer.deserialize_any(SandboxVisitor)?;
        Ok(ProfileName(raw.profile.unwrap_or_default()))
    }
}
