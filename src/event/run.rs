//! The payloads that open and close a run: what it started with (job,
//! skill, budget, permissions, sandbox, where its outputs go), where a
//! resumed run goes on from, the patch it produced, and how it ended.
//!
//! Data only, part of the trace's schema (see [`crate::event`]); what the
//! agent did in between lives in the sibling modules.

use serde::{Deserialize, Serialize};

use super::Exit;
use crate::provider::ModelInfo;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RunStarted {
    pub schema_version: u32,
    pub agentci_version: String,
    pub job_name: String,
    pub job_file: String,
    pub skill: String,
    pub goal: String,
    pub model: ModelInfo,
    pub workspace: String,
    /// The tools the model is offered, after builtin ∩ job ∩ skill.
    pub tools: Vec<String>,
    /// Where the trace and JUnit go, so every sink can reference them.
    pub outputs: OutputPaths,
    /// The sandbox every process of the run runs in, and what of it is
    /// enforced; boxed, as the budget and permissions are, to keep the
    /// event enum small.
    #[serde(default)]
    pub sandbox: Box<SandboxReport>,
    /// The budget the run holds to (absent in traces from before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Box<BudgetInEffect>>,
    /// The permission rules calls are decided by (absent in older traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Box<PermissionsInEffect>>,
}

/// The run's budget after the job and the skill are combined; `None`: no limit.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct BudgetInEffect {
    pub max_turns: u32,
    pub max_tool_calls: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub timeout_secs: Option<f64>,
}

/// The job's `permissions:`, rules as written.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct PermissionsInEffect {
    /// `allow` or `deny`: what a call no rule matches gets.
    pub default: String,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

/// A run's sandbox: the job's `sandbox:` and what this machine enforces of it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct SandboxReport {
    /// `workspace-write`, `read-only` or `off`.
    pub profile: String,
    /// `sandbox.network`: outgoing network allowed.
    pub network: bool,
    /// `sandbox.require` (true unless the job says false): a degraded
    /// sandbox stops the run before it starts.
    pub require: bool,
    /// Enforced by the kernel: `filesystem`, `processes`, `run_folder`,
    /// `checkpoint_key` (children read the checkpoint key empty), `network`.
    pub enforced: Vec<String>,
    /// Asked for and not enforceable here (same names).
    pub missing: Vec<String>,
    /// Folders beyond the workspace that children may write, from
    /// `sandbox.writable`, as resolved at run start; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<WritableFolder>,
    /// `sandbox.network: [hosts]` as written: the only hosts commands reach,
    /// through agentci's proxy; absent when the list is not used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
}

/// One folder of `sandbox.writable`, resolved.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct WritableFolder {
    /// The folder, absolute, symbolic links followed.
    pub path: String,
    /// The entry of `sandbox.writable` that named it (`preset:cargo`, `~/.cache/x`).
    pub entry: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct OutputPaths {
    pub dir: String,
    pub trace: Option<String>,
    pub junit: Option<String>,
    /// `outputs.patch`, where the agent's changes are written after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct SkillLoaded {
    pub name: String,
    pub path: String,
    pub description: String,
    /// Canonical tool patterns from `allowed-tools`; `None` when the skill does not restrict tools.
    pub allowed_tools: Option<Vec<String>>,
    pub warnings: Vec<String>,
    /// Where a skill from git came from, with the commit its revision resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SkillSource>,
}

/// The lock of a skill from git: what the job asked for and what it got.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct SkillSource {
    pub git: String,
    pub rev: String,
    /// The full commit id `rev` resolved to.
    pub commit: String,
    /// The skill's folder inside the repository; empty for the root.
    pub path: String,
}

/// The agent's changes written as a unified diff (`outputs.patch`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct GitPatch {
    pub path: String,
    pub files_changed: usize,
    pub insertions: usize,
    pub deletions: usize,
}

/// Where a resumed run goes on from, and what changed for it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RunResumed {
    /// Model turns taken before the checkpoint; the next one is `from_turn + 1`.
    pub from_turn: u32,
    /// The plan step the run goes on in (from 0); absent while planning.
    pub from_step: Option<usize>,
    /// The round of checks the agent works towards.
    pub round: u32,
    /// How the run had ended (its `run.completed`, dropped from the trace);
    /// absent when it was killed before it could say.
    pub previous_status: Option<RunStatus>,
    pub previous_reason: Option<String>,
    /// The budget before the resume, and the one in effect now.
    pub budget_before: BudgetInEffect,
    pub budget: BudgetInEffect,
    /// The limits the resume raised (or lowered), by key (`max_turns`, …).
    pub budget_changed: Vec<String>,
    /// Events the stopped run wrote after the checkpoint (the turn under
    /// way, its `run.completed`), dropped from the trace: that turn runs again.
    pub events_dropped: u64,
    /// The trace's last line was cut short by the kill and was dropped.
    pub torn_line_dropped: bool,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetLimit {
    MaxTurns,
    MaxToolCalls,
    MaxTokens,
    MaxCostUsd,
    Timeout,
}

impl BudgetLimit {
    pub fn key(self) -> &'static str {
        match self {
            BudgetLimit::MaxTurns => "max_turns",
            BudgetLimit::MaxToolCalls => "max_tool_calls",
            BudgetLimit::MaxTokens => "max_tokens",
            BudgetLimit::MaxCostUsd => "max_cost_usd",
            BudgetLimit::Timeout => "timeout",
        }
    }
}

#[derive(
    Clone,
    Copy,
    Debug,
    Serialize,
    Deserialize,
    PartialEq,
    Eq,
    schemars::JsonSchema,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Passed,
    Failed,
    BudgetExceeded,
    ProviderUnavailable,
    Error,
    Interrupted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Totals {
    pub turns: u32,
    pub tool_calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the provider's prompt cache (Anthropic).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Of `output_tokens`, those a reasoning model spent thinking (when the
    /// server reports them).
    #[serde(default, skip_serializing_if = "crate::provider::is_zero")]
    pub reasoning_tokens: u64,
    /// `None` when the price of the model is unknown; never reported as zero.
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RunCompleted {
    pub status: RunStatus,
    /// Why the run ended this way, in one line.
    pub reason: String,
    /// The agent's final summary, when it produced one.
    pub summary: Option<String>,
    pub totals: Totals,
    pub checks_passed: u32,
    pub checks_failed: u32,
    /// The structured result the model submitted, valid against the job's
    /// `result_schema`; absent without a schema or a valid result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// The signal that stopped an `interrupted` run (2 for SIGINT, 15 for
    /// SIGTERM); absent when no signal did (and in traces from before it
    /// was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

impl RunCompleted {
    /// How a run that ended this way exits: by its status and, when a
    /// signal stopped it, by that signal (SIGTERM 143 rather than SIGINT's 130).
    pub fn exit(&self) -> Exit {
        Exit::of_run(self.status, self.signal)
    }

    /// The documented exit code of [`RunCompleted::exit`].
    pub fn exit_code(&self) -> u8 {
        self.exit().code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signal_not_the_reason_decides_an_interrupted_exit() {
        let done = |status, reason: &str, signal| RunCompleted {
            status,
            reason: reason.into(),
            summary: None,
            totals: Totals::default(),
            checks_passed: 0,
            checks_failed: 0,
            result: None,
            signal,
        };
        let sigterm = Some(libc::SIGTERM);
        assert_eq!(
            done(RunStatus::Interrupted, "stopped", sigterm).exit_code(),
            143
        );
        assert_eq!(
            done(
                RunStatus::Interrupted,
                "interrupted by SIGINT",
                Some(libc::SIGINT)
            )
            .exit_code(),
            130
        );
        // The words in the reason are text, not data.
        assert_eq!(
            done(RunStatus::Interrupted, "interrupted by SIGTERM", None).exit_code(),
            130
        );
        assert_eq!(done(RunStatus::BudgetExceeded, "x", None).exit_code(), 3);
    }

    #[test]
    fn the_signal_is_optional_in_the_trace() {
        let old = serde_json::json!({
            "status": "interrupted", "reason": "interrupted by SIGTERM", "summary": null,
            "totals": Totals::default(), "checks_passed": 0, "checks_failed": 0,
        });
        let done: RunCompleted = serde_json::from_value(old).unwrap();
        assert_eq!(done.signal, None);
        let line = serde_json::to_value(&done).unwrap();
        assert!(line.get("signal").is_none(), "{line}");
        let stopped = RunCompleted {
            signal: Some(libc::SIGTERM),
            ..done
        };
        assert_eq!(serde_json::to_value(&stopped).unwrap()["signal"], 15);
    }
}
