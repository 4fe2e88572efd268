//! The events of a run: the single contract between the agent and everything
//! that observes it.
//!
//! The agent emits [`EventKind`]s through the [`EventBus`](bus::EventBus)
//! (in [`bus`], next to the events, so the agent names no sink), which
//! stamps each with a gapless
//! `seq`, an RFC 3339 `ts` and the `run_id`, and hands the finished [`Event`]
//! to every sink in order. What a model call cost and which model answered
//! are the provider's words ([`Usage`], [`ModelInfo`]), carried as they are.
//! The JSONL trace is the serialized form of these types, so renaming a
//! field here (or in those provider types) is a schema change: bump
//! [`SCHEMA_VERSION`] and update `docs/trace-schema.json`.
//!
//! This module holds the envelope ([`Event`]) and the list of kinds
//! ([`EventKind`]); the larger payloads live by area in submodules (the
//! run's start and end, the plan, model calls, tool calls, checks) and are
//! re-exported here, so `crate::event::X` is the one path to each of them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::provider::replay_drift::ReplayDrift;
#[cfg(doc)]
use crate::provider::{ModelInfo, Usage};

pub mod bus;
mod checks;
mod exit;
mod mcp;
mod model;
mod plan;
mod run;
pub mod schema;
mod tools;

/// Gives the events a part of the run still has to report when it ends
/// (a job's MCP servers, the telemetry export), delivered just before
/// `run.completed` by whoever completes the run.
pub type CompletionHook = Box<dyn FnOnce() -> Vec<EventKind> + Send>;

pub use checks::{CheckCompleted, CheckOutcome};
pub use exit::{EXIT_BAD_INPUT, Exit};
pub use mcp::{McpServerStartup, McpStartOutcome, McpStartup};
pub use model::{
    ContextCompacted, ContextTrimmed, ModelRequest, ModelResponse, ModelRetry, SentDelta,
};
pub use plan::{Phase, PlanStep, StepStatus};
pub use run::{
    BudgetInEffect, BudgetLimit, GitPatch, OutputPaths, PermissionsInEffect, RunCompleted,
    RunResumed, RunStarted, RunStatus, SandboxReport, SkillLoaded, SkillSource, Totals,
    WritableFolder,
};
pub use tools::{
    Decision, RuleSource, SubagentCompleted, SubagentStarted, ToolBatchCompleted, ToolBatchStarted,
    ToolCallRef, ToolResultEvent,
};

/// Version of the trace format, written in `run.started`.
pub const SCHEMA_VERSION: u32 = 1;

/// One line of the trace.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct AgentTag {
    /// `task-1`, `task-2`, … counted over the run.
    pub id: String,
    /// The parent's `task` call that started it.
    pub parent_call: String,
}

/// What happened. Serialized with a dotted `type` tag (`tool.call`, …).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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
    /// A connection a command made through the proxy of
    /// `sandbox.network: [hosts]`, allowed or refused, reported when it ends.
    #[serde(rename = "network.request")]
    NetworkRequest(crate::netproxy::NetworkRecord),
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
    /// A `step_done` came with calls and one of them failed: it was not
    /// applied, and the step went on.
    #[serde(rename = "step.done_declined")]
    StepDoneDeclined {
        index: usize,
        /// The `step_done` call.
        call_id: String,
        /// The first call of the response that failed.
        failed_call_id: String,
        failed_tool: String,
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
    /// The job's MCP servers started (or did not) before the agent's first
    /// turn; emitted right after the run's start. The time is the run's.
    #[serde(rename = "mcp.startup")]
    McpStartup(McpStartup),
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
