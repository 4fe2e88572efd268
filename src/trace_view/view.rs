//! [`RunView`]: a run's events folded into what a person asks about it —
//! how it ended, the plan and each step's outcome, the timeline of model
//! turns and tool calls with their decisions, checks, tokens, cost and time
//! per phase. `--json` prints it as it is; [`super::render_text`] prints it
//! for people. It only reads events; it decides nothing about the run.
//!
//! This module holds the view's shape; how the events are folded into it
//! ([`RunView::new`]) is in `super::fold`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::event::{
    BudgetLimit, CheckCompleted, ContextTrimmed, Decision, ModelRetry, Phase, RunResumed,
    RunStarted, SentDelta, StepStatus, Totals,
};

/// The phase of the MCP servers' start-up in [`RunView::phases_ms`].
pub const MCP_STARTUP_PHASE: &str = "mcp_startup";

/// What to include beyond the outline.
#[derive(Clone, Copy, Debug, Default)]
pub struct ViewOptions {
    /// What the model was sent on each turn (the `sent` deltas).
    pub full: bool,
}

#[derive(Debug, Serialize)]
pub struct RunView {
    pub started: Option<RunStarted>,
    /// `passed`, `failed`, … as in `run.completed`; `interrupted` for a trace cut mid-run.
    pub status: String,
    pub reason: String,
    /// The exit code the run had; `None` when the trace was cut.
    pub exit_code: Option<u8>,
    /// The trace ends without `run.completed`.
    pub cut_short: bool,
    pub plan: Vec<StepView>,
    pub timeline: Vec<Entry>,
    pub checks: Vec<CheckCompleted>,
    /// From `run.completed`, or added up from the turns when the trace was cut.
    pub totals: Totals,
    /// Wall time spent in each phase, in milliseconds, from the events'
    /// times; the MCP servers' start-up (`MCP_STARTUP_PHASE`), before
    /// `run.started`, from its event.
    pub phases_ms: BTreeMap<String, u64>,
    pub summary: Option<String>,
    /// The structured result from `run.completed` (valid against the job's
    /// `result_schema`); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Each `agentci run --resume` the run went through, in order: from
    /// which turn, how the stopped run had ended, the budget it was given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<RunResumed>,
    /// Problems reading the trace and notes about it.
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct StepView {
    pub title: String,
    pub expected_outcome: String,
    /// `done`, `failed`, `blocked`, `not finished` or `not reached`.
    pub outcome: String,
    pub summary: Option<String>,
}

/// One thing that happened, in trace order.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    Plan {
        steps: usize,
        /// Set when an update replaced the steps from this index on.
        from_index: Option<usize>,
    },
    Step {
        index: usize,
        title: String,
    },
    StepDone {
        index: usize,
        status: StepStatus,
        summary: String,
    },
    Turn(Box<TurnView>),
    ToolCall(Box<CallView>),
    Warning {
        source: String,
        message: String,
    },
    Budget {
        limit: BudgetLimit,
        used: f64,
        max: f64,
    },
    Git {
        line: String,
    },
    /// A connection through the proxy of `sandbox.network: [hosts]`.
    Network {
        line: String,
    },
    /// How the job's MCP servers started.
    Mcp {
        line: String,
    },
    /// `agentci run --resume` went on with the run here; the full event
    /// is in the view's `resumed`.
    Resumed {
        line: String,
        /// Events the stopped run wrote after its checkpoint, dropped.
        events_dropped: u64,
    },
    /// An event shown as written: rounds, sub-agents, tool refreshes, and
    /// events this version does not know.
    Other {
        event: String,
        fields: Value,
    },
}

#[derive(Debug, Serialize)]
pub struct TurnView {
    pub call_id: String,
    pub turn: u32,
    pub phase: Phase,
    pub step: Option<usize>,
    pub messages: usize,
    /// What the model was sent (with `--full`, when the trace holds it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent: Option<SentDelta>,
    pub retries: Vec<ModelRetry>,
    pub trimmed: Option<ContextTrimmed>,
    /// What the model thought, as far as the API showed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    pub text: Option<String>,
    pub tool_calls: Vec<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of the output tokens, those spent reasoning.
    #[serde(skip_serializing_if = "crate::provider::is_zero")]
    pub reasoning_tokens: u64,
    pub cost_usd: Option<f64>,
    pub latency_ms: Option<u64>,
    /// The trace ends before the model answered.
    pub answered: bool,
}

#[derive(Debug, Serialize)]
pub struct CallView {
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
    pub decision: Option<Decision>,
    pub rule: Option<String>,
    /// `None` when the trace ends before the call's result.
    pub ok: Option<bool>,
    pub error_code: Option<String>,
    pub summary: Option<String>,
    pub duration_ms: Option<u64>,
}
