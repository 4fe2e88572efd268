//! The model calls' payloads: what each request sent (as a delta on the
//! one before), what came back, retries, and how the context was trimmed
//! or compacted to fit.
//!
//! Data only, part of the trace's schema (see [`crate::event`]); the
//! provider's own words (usage, model info) are carried as they are.

use serde::{Deserialize, Serialize};

use super::{Phase, ToolCallRef};
use crate::provider::Usage;

/// What a model request sent that the request before it did not: with the
/// previous request's messages, enough to rebuild exactly what the model
/// was sent without storing the whole conversation on every turn.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ModelResponse {
    pub call_id: String,
    pub latency_ms: u64,
    pub usage: Usage,
    pub finish_reason: Option<String>,
    /// What the model thought, as far as the API shows it: Anthropic's
    /// thinking text, a Responses reasoning summary, `reasoning_content`.
    /// Left out when the model did not reason or the API keeps it hidden
    /// (redacted or encrypted only); `usage.reasoning_tokens` still counts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    pub text: Option<String>,
    /// `(id, name)` of each tool call the model asked for, in order.
    pub tool_calls: Vec<ToolCallRef>,
    /// What this call cost in US dollars; `None` when the model's price is unknown.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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
