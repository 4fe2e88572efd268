//! The events of a run: the single contract between the agent and everything
//! that observes it.
//!
//! Data only: the agent emits [`EventKind`]s through the
//! [`EventBus`](crate::sink::bus::EventBus), which stamps each with a gapless
//! `seq`, an RFC 3339 `ts` and the `run_id`, and hands the finished [`Event`]
//! to every sink in order. What a model call cost and which model answered
//! are the provider's words ([`Usage`], [`ModelInfo`]), carried as they are.
//! The JSONL trace is the serialized form of these types, so renaming a
//! field here (or in those provider types) is a schema change: bump
//! [`SCHEMA_VERSION`] and update `docs/trace-schema.json`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::provider::replay_drift::ReplayDrift;
use crate::provider::{ModelInfo, Usage};

/// Version of the trace format, written in `run.started`.
pub const SCHEMA_VERSION: u32 = 1;

/// One line of the trace.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Event {
    pub seq: u64,
    pub ts: String,
    pub run_id: String,
    /// The sub-agent the event belongs to; absent on the run's own events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentTag>,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Which sub-agent (a `task` call) an event comes from.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct AgentTag {
    /// `task-1`, `task-2`, … counted over the run.
    pub id: String,
    /// The parent's `task` call that started it.
    pub parent_call: String,
}

/// What happened. Serialized with a dotted `type` tag (`tool.call`, …).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type")]
pub enum EventKind {
    #[serde(rename = "run.started")]
    RunStarted(RunStarted),
    #[serde(rename = "skill.loaded")]
    SkillLoaded(SkillLoaded),
    #[serde(rename = "warning")]
    Warning { source: String, message: String },
    /// The kernel cannot enforce all of the job's `sandbox:`; emitted right
    /// after `run.started` (with a warning), and the run stops when `required`.
    #[serde(rename = "sandbox.degraded")]
    SandboxDegraded(SandboxReport),
    #[serde(rename = "plan.created")]
    PlanCreated { steps: Vec<PlanStep> },
    #[serde(rename = "plan.updated")]
    PlanUpdated {
        /// The whole plan after the update: completed steps unchanged, then the new remaining steps.
        steps: Vec<PlanStep>,
        /// Index of the first step that was replaced.
        from_index: usize,
    },
    #[serde(rename = "step.started")]
    StepStarted { index: usize, title: String },
    #[serde(rename = "step.completed")]
    StepCompleted {
        index: usize,
        title: String,
        summary: String,
        /// How the model said the step ended (`done` when it did not say).
        #[serde(default)]
        status: StepStatus,
    },
    #[serde(rename = "model.request")]
    ModelRequest(ModelRequest),
    #[serde(rename = "model.response")]
    ModelResponse(ModelResponse),
    /// A model call failed in a way worth retrying; it is tried again after `wait_ms`.
    #[serde(rename = "model.retry")]
    ModelRetry(ModelRetry),
    /// The conversation did not fit the model's context window and was cut.
    #[serde(rename = "context.trimmed")]
    ContextTrimmed(ContextTrimmed),
    /// Older turns were compacted before a model call, to stay under the high-water mark.
    #[serde(rename = "context.compacted")]
    ContextCompacted(ContextCompacted),
    #[serde(rename = "tool.call")]
    ToolCall {
        call_id: String,
        tool: String,
        arguments: Value,
    },
    #[serde(rename = "permission.decision")]
    PermissionDecision {
        call_id: String,
        tool: String,
        decision: Decision,
        /// The rule that decided, as written in the job (`exec(cargo test *)`),
        /// or `default` / `skill allowed-tools` / `tool set`.
        rule: String,
        /// Where the deciding rule comes from.
        source: RuleSource,
        /// The deciding patterns exactly as written (job rules, or the
        /// skill's `allowed-tools` for the tool); empty for `default`,
        /// `tool_set` and `phase`.
        patterns: Vec<String>,
    },
    #[serde(rename = "tool.result")]
    ToolResult(ToolResultEvent),
    /// Calls of one turn that start together: read-only neighbours run in
    /// parallel (up to `max_parallel_tools`), a mutating call alone.
    #[serde(rename = "tool.batch.started")]
    ToolBatchStarted(ToolBatchStarted),
    #[serde(rename = "tool.batch.completed")]
    ToolBatchCompleted(ToolBatchCompleted),
    /// A `task` call started a sub-agent; its own events carry `agent`.
    #[serde(rename = "subagent.started")]
    SubagentStarted(SubagentStarted),
    /// The sub-agent ended; its final text is the `task` call's result.
    #[serde(rename = "subagent.completed")]
    SubagentCompleted(SubagentCompleted),
    #[serde(rename = "budget.exceeded")]
    BudgetExceeded {
        limit: BudgetLimit,
        used: f64,
        max: f64,
    },
    #[serde(rename = "check.completed")]
    CheckCompleted(CheckCompleted),
    /// A round of work towards the checks begins (jobs with `checks_rounds`
    /// above 1 only); from round 2 on, the last round's failures went back
    /// to the agent.
    #[serde(rename = "round.started")]
    RoundStarted { round: u32, of: u32 },
    /// A round's checks ran: the `check.completed` events since
    /// `round.started` are its own.
    #[serde(rename = "round.completed")]
    RoundCompleted {
        round: u32,
        of: u32,
        checks_passed: u32,
        checks_failed: u32,
    },
    #[serde(rename = "git.patch")]
    GitPatch(GitPatch),
    #[serde(rename = "git.commit")]
    GitCommit { branch: String, sha: String },
    #[serde(rename = "git.push")]
    GitPush { remote: String, branch: String },
    /// A job's MCP server cannot be used (did not start, crashed, hung,
    /// broke the protocol); its tools answer with errors from now on.
    #[serde(rename = "mcp.server.down")]
    McpServerDown {
        server: String,
        reason: String,
        /// The last lines the server wrote to stderr.
        stderr: Vec<String>,
        /// The server is `required: true`, so the run stops.
        required: bool,
    },
    /// A server announced that its tools changed and was listed again
    /// before the next model turn; `tools` are the names the model sees now.
    #[serde(rename = "mcp.tools.refreshed")]
    McpToolsRefreshed { server: String, tools: Vec<String> },
    /// A job's MCP server sent agentci a request (`ping`, `roots/list`,
    /// `sampling/createMessage`, `elicitation/create`, …) and what agentci
    /// did with it. Emitted before the next model turn, or before
    /// `run.completed` for requests sent during the last tool calls.
    #[serde(rename = "mcp.server.request")]
    McpServerRequest {
        server: String,
        method: String,
        /// `answered`, `declined` or `failed`.
        outcome: String,
        /// What was answered, or why not.
        detail: String,
        /// The request's params as JSON, cut at 1,000 characters.
        params: String,
    },
    /// A replay in `sequence` mode served the recorded answers whatever the
    /// requests; how far the run's requests drifted from the recording.
    /// Emitted once, before `run.completed`.
    #[serde(rename = "replay.drift")]
    ReplayDrift(ReplayDrift),
    /// `agentci run --resume` went on with the run from its last
    /// checkpoint; right after the events the interrupted run wrote.
    #[serde(rename = "run.resumed")]
    RunResumed(Box<RunResumed>),
    #[serde(rename = "run.completed")]
    RunCompleted(RunCompleted),
}

/// Where a resumed run goes on from, and what changed for it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SubagentStarted {
    /// `explore` or `general`.
    pub kind: String,
    /// The tools it was given.
    pub tools: Vec<String>,
    pub max_turns: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SubagentCompleted {
    /// True when it answered with final text.
    pub ok: bool,
    /// Why it ended, in a line.
    pub reason: String,
    pub turns: u32,
    pub tool_calls: u32,
    /// Its own model usage (already counted in the run's totals).
    pub usage: Usage,
    pub duration_ms: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ToolBatchStarted {
    /// Counts the run's batches from 1.
    pub batch: u64,
    /// The calls that run together, in the order the model made them.
    pub call_ids: Vec<String>,
    pub tools: Vec<String>,
    /// True when the calls run concurrently (read-only), false for a mutating call.
    pub parallel: bool,
    /// How many of them may run at the same time.
    pub max_parallel: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ToolBatchCompleted {
    pub batch: u64,
    pub call_ids: Vec<String>,
    /// Wall time of the whole batch: with parallel calls, less than the sum of theirs.
    pub duration_ms: u64,
    /// Calls stopped at their tool timeout.
    pub timed_out: Vec<String>,
}

/// The agent's changes written as a unified diff (`outputs.patch`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct GitPatch {
    pub path: String,
    pub files_changed: usize,
    pub insertions: usize,
    pub deletions: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
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
    /// The sandbox every process of the run runs in, and what of it is enforced.
    #[serde(default)]
    pub sandbox: SandboxReport,
    /// The budget the run holds to (absent in traces from before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Box<BudgetInEffect>>,
    /// The permission rules calls are decided by (absent in older traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Box<PermissionsInEffect>>,
}

/// The run's budget after the job and the skill are combined; `None`: no limit.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct BudgetInEffect {
    pub max_turns: u32,
    pub max_tool_calls: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub timeout_secs: Option<f64>,
}

/// The job's `permissions:`, rules as written.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PermissionsInEffect {
    /// `allow` or `deny`: what a call no rule matches gets.
    pub default: String,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

/// What a model request sent that the request before it did not: with the
/// previous request's messages, enough to rebuild exactly what the model
/// was sent without storing the whole conversation on every turn.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SentDelta {
    /// This request starts with the previous request's first `kept` messages, unchanged.
    pub kept: usize,
    /// Messages of the previous request after `kept` that this one does not
    /// have: the conversation was trimmed or rewritten (0 when it only grew).
    pub messages_dropped: usize,
    /// This request's messages after the kept ones, as sent (secrets masked).
    pub messages_added: Vec<crate::provider::Message>,
    /// The tools offered, when they differ from the previous request's
    /// (so always on the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_offered: Option<Vec<crate::provider::ToolDefinition>>,
}

/// A run's sandbox: the job's `sandbox:` and what this machine enforces of it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SandboxReport {
    /// `workspace-write`, `read-only` or `off`.
    pub profile: String,
    /// `sandbox.network`: outgoing network allowed.
    pub network: bool,
    /// `sandbox.require`: a degraded sandbox stops the run.
    pub require: bool,
    /// Enforced by the kernel: `filesystem`, `processes`, `run_folder`, `network`.
    pub enforced: Vec<String>,
    /// Asked for and not enforceable here (same names).
    pub missing: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct OutputPaths {
    pub dir: String,
    pub trace: Option<String>,
    pub junit: Option<String>,
    /// `outputs.patch`, where the agent's changes are written after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
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
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SkillSource {
    pub git: String,
    pub rev: String,
    /// The full commit id `rev` resolved to.
    pub commit: String,
    /// The skill's folder inside the repository; empty for the root.
    pub path: String,
}

/// How a step ended, as the model reported it with `step_done`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// The expected outcome was reached.
    #[default]
    Done,
    /// Tried, and the expected outcome was not reached.
    Failed,
    /// Something outside the agent's control prevented it.
    Blocked,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Done => "done",
            StepStatus::Failed => "failed",
            StepStatus::Blocked => "blocked",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlanStep {
    pub title: String,
    pub expected_outcome: String,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Plan,
    Execute,
    Summary,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ModelRequest {
    pub call_id: String,
    pub phase: Phase,
    /// 1-based count of model calls in this run.
    pub turn: u32,
    /// Index of the plan step being executed, during `execute`.
    pub step: Option<usize>,
    pub messages: usize,
    pub tools: Vec<String>,
    /// What the model was sent, as a delta against the previous request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<SentDelta>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ModelResponse {
    pub call_id: String,
    pub latency_ms: u64,
    pub usage: Usage,
    pub finish_reason: Option<String>,
    pub text: Option<String>,
    /// `(id, name)` of each tool call the model asked for, in order.
    pub tool_calls: Vec<ToolCallRef>,
    /// What this call cost in US dollars; `None` when the model's price is unknown.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ModelRetry {
    /// The model call being retried (as in `model.request`).
    pub call_id: String,
    /// The attempt that failed, 1-based.
    pub attempt: u32,
    /// Attempts allowed for this kind of failure (`model.retry`).
    pub max_attempts: u32,
    /// What went wrong, one line.
    pub reason: String,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// How long the run waits before the next attempt.
    pub wait_ms: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ContextTrimmed {
    /// The model call that was too long; it is retried once with the trimmed conversation.
    pub call_id: String,
    /// The provider's words.
    pub reason: String,
    pub messages_before: usize,
    pub messages_after: usize,
    /// Rough token counts (characters / 4) of the conversation before and after.
    pub estimated_tokens_before: u64,
    pub estimated_tokens_after: u64,
    /// The retried request, as a delta against the one that was too long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<SentDelta>,
}

/// What a compaction replaced, and the request's size before and after.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ContextCompacted {
    /// The model call the conversation was compacted for.
    pub call_id: String,
    /// `summary` (written by the model) or `digest` (the calls made, no model call).
    pub method: String,
    /// The extra model call that wrote the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_call_id: Option<String>,
    /// Why a digest replaced the turns when the job asked for a summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
    pub messages_before: usize,
    pub messages_after: usize,
    /// How many messages the summary or digest replaced.
    pub replaced_messages: usize,
    /// The ids of the tool calls whose turns were replaced.
    pub replaced_tool_calls: Vec<String>,
    /// Tool outputs in the kept turns shortened to fit.
    pub shortened_outputs: usize,
    /// The request's estimated size in tokens before and after.
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// The model's context window and the high-water mark, in tokens.
    pub window: u64,
    pub high_water: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ToolCallRef {
    pub id: String,
    pub name: String,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Deny,
}

/// What decided a tool call.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RuleSource {
    /// The job's `permissions.allow`.
    Allow,
    /// The job's `permissions.deny`.
    Deny,
    /// `permissions.default`: no rule matched.
    Default,
    /// The skill's `allowed-tools` does not cover this call.
    Skill,
    /// The tool is not in this run's tool set.
    ToolSet,
    /// The tool is in the run but not usable in this phase (a mutating tool while planning).
    Phase,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ToolResultEvent {
    pub call_id: String,
    pub tool: String,
    pub ok: bool,
    /// Machine-readable error code (`INVALID_ARGUMENT`, `PERMISSION_DENIED`, …) when not ok.
    pub error_code: Option<String>,
    pub summary: String,
    pub data: Value,
    pub duration_ms: u64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CheckCompleted {
    pub name: String,
    pub command: String,
    pub outcome: CheckOutcome,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// Combined stdout and stderr, capped.
    pub output: String,
    /// The sandbox profile the check ran under.
    #[serde(default)]
    pub sandbox: String,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    Passed,
    Failed,
    TimedOut,
    /// Not run, because the agent did not finish (budget or provider failure).
    Skipped,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
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
    /// The documented exit code of a run that ended this way.
    pub fn exit_code(self) -> u8 {
        match self {
            RunStatus::Passed => 0,
            RunStatus::Failed => 1,
            RunStatus::Error => 2,
            RunStatus::BudgetExceeded => 3,
            RunStatus::ProviderUnavailable => 4,
            RunStatus::Interrupted => 130,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Passed => "passed",
            RunStatus::Failed => "failed",
            RunStatus::BudgetExceeded => "budget_exceeded",
            RunStatus::ProviderUnavailable => "provider_unavailable",
            RunStatus::Error => "error",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
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
    /// `None` when the price of the model is unknown; never reported as zero.
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
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
}

impl RunCompleted {
    /// The exit code of a run that ended this way: the status's, except that
    /// a run interrupted by SIGTERM exits 143 rather than SIGINT's 130.
    pub fn exit_code(&self) -> u8 {
        match self.status {
            RunStatus::Interrupted if self.reason.contains("SIGTERM") => 143,
            status => status.exit_code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupted_by_sigterm_exits_143() {
        let done = |status, reason: &str| RunCompleted {
            status,
            reason: reason.into(),
            summary: None,
            totals: Totals::default(),
            checks_passed: 0,
            checks_failed: 0,
            result: None,
        };
        assert_eq!(
            done(RunStatus::Interrupted, "interrupted by SIGTERM").exit_code(),
            143
        );
        assert_eq!(
            done(RunStatus::Interrupted, "interrupted by SIGINT").exit_code(),
            130
        );
        assert_eq!(done(RunStatus::BudgetExceeded, "x").exit_code(), 3);
    }
}
