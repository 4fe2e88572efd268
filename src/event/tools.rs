//! The tool calls' payloads: how a call was decided (allow or deny, and by
//! which rule), its result, the batches calls run in, and the sub-agents
//! a `task` call starts.
//!
//! Data only, part of the trace's schema (see [`crate::event`]); running
//! the tools and deciding them is `tools` and `policy`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::provider::Usage;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ToolCallRef {
    pub id: String,
    pub name: String,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Deny,
}

/// What decided a tool call.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ToolBatchCompleted {
    pub batch: u64,
    pub call_ids: Vec<String>,
    /// Wall time of the whole batch: with parallel calls, less than the sum of theirs.
    pub duration_ms: u64,
    /// Calls stopped at their tool timeout.
    pub timed_out: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct SubagentStarted {
    /// `explore` or `general`.
    pub kind: String,
    /// The tools it was given.
    pub tools: Vec<String>,
    pub max_turns: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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
