//! Job files: parsed from YAML into private raw structs, then validated into
//! a [`JobSpec`] that cannot be invalid. Everything after this module trusts
//! the spec.
//!
//! Errors are [`Diagnostic`]s that name the file, line and column and say what
//! was expected; validation collects all of them in one pass.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::policy::ToolPattern;

mod check;
pub mod diagnostic;
pub mod duration;
pub mod load;
pub(crate) mod raw;
pub mod vars;

pub use diagnostic::{Diagnostic, Severity};
pub use load::{LoadOptions, LoadedJob, load_job, load_job_detailed};

/// A validated job.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// The job file this came from.
    pub path: PathBuf,
    pub name: String,
    pub skill: SkillRef,
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
}

#[derive(Clone, Debug, PartialEq)]
pub enum SkillRef {
    /// A skill found by name in the skills paths.
    Name(String),
    /// A skill folder given by path (relative paths resolved against the job file's folder).
    Path(PathBuf),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    OpenAi,
    Anthropic,
    Replay,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Replay => "replay",
        }
    }

    /// The environment variable the API key is read from by default.
    pub fn default_api_key_env(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some("OPENAI_API_KEY"),
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::Replay => None,
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
    /// Stream answers as server-sent events (`model.stream`, default true).
    pub stream: bool,
    /// `model.retry`: unset fields take the provider layer's defaults.
    pub retry: RetrySpec,
    /// `model.price`: overrides the built-in price of the model.
    pub price: Option<PriceSpec>,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultDecision {
    Allow,
    Deny,
}

#[derive(Clone, Debug)]
pub struct PermissionsSpec {
    pub default: DefaultDecision,
    pub allow: Vec<ToolPattern>,
    pub deny: Vec<ToolPattern>,
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
    /// A shell command, run with `sh -c` in the workspace.
    pub run: String,
    pub timeout: Duration,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutputsSpec {
    /// The run folder; `None` means `.agentci/runs/<run-id>/` in the workspace.
    pub dir: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    pub junit: Option<PathBuf>,
}
