//! Model providers: the one place that knows a wire format.
//!
//! The agent speaks [`ChatRequest`] / [`ChatResponse`]; a provider turns them
//! into HTTP (OpenAI Chat Completions, also as Azure OpenAI serves it, OpenAI
//! Responses, Anthropic Messages, plain or streamed)
//! or serves them from a recorded cassette (replay). Providers do not emit
//! events and do not know about budgets; they report failures as
//! [`ProviderError`], and retries and partial text to a [`ProviderObserver`]
//! the caller passes in, which the agent connects to its event stream.

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod answer_cap;
mod answer_error;
pub mod anthropic;
pub mod azure;
pub mod bedrock;
pub mod cassette;
mod http;
pub use http::{is_loopback, root_cause};
pub mod openai;
pub mod openai_responses;
pub mod pricing;
pub mod reasoning;
pub mod record;
pub mod replay;
pub mod replay_drift;
mod replay_state;
pub mod retry;
pub mod sse;
mod usage;
pub mod vertex;

pub use reasoning::{Reasoning, ReasoningSettings};
pub use usage::{ModelInfo, Usage, is_zero};

/// What a provider reached with an API key is built from (OpenAI's Chat
/// Completions and Responses APIs, Anthropic's Messages API); mirrors the
/// job file's `model:` block. Each provider says its own defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApiConfig {
    /// The model name, as sent in requests and shown in the trace.
    pub name: String,
    /// The API's address; `None` is the provider's own.
    pub base_url: Option<String>,
    /// The environment variable holding the key; `None` is the provider's own.
    pub api_key_env: Option<String>,
    /// Time allowed for one whole request, connect to last byte.
    pub request_timeout: std::time::Duration,
    /// Ask for server-sent events and read the answer as it arrives.
    pub stream: bool,
    /// `model.reasoning`: how the model thinks and how its reasoning is kept.
    pub reasoning: ReasoningSettings,
}

/// One message of the conversation, provider-neutral.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        /// What the model thought before it answered, kept to be sent back
        /// unmodified with the tool calls it led to.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<Reasoning>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A tool call as the model wrote it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments exactly as sent: a JSON object in a string, possibly malformed.
    pub arguments: String,
}

/// A tool as offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDefinition>,
    /// Whether the model may call the offered tools on this turn.
    #[serde(default, skip_serializing_if = "ToolChoice::is_auto")]
    pub tool_choice: ToolChoice,
    /// Caps the answer's length (an MCP server's sampling `maxTokens`);
    /// `None` leaves the provider's usual room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

/// Whether the model may call tools on a turn. The tool list stays the same
/// on every turn of a run (it is part of the cached prompt prefix, and the
/// Messages API refuses tool blocks in a request without tools); a turn that
/// must answer in text says `None` instead of dropping the tools.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must answer without calling a tool.
    None,
    /// The model must call one of the offered tools (a judge answering
    /// through its one tool). Anthropic with thinking on takes only `auto`
    /// and `none`, so there it goes out as `auto`.
    Required,
}

impl ToolChoice {
    pub fn is_auto(&self) -> bool {
        *self == ToolChoice::Auto
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatResponse {
    /// The model's reasoning, in order, as its API gave it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<Reasoning>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub usage: Usage,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// Why a model call failed. Every variant's message is one line that says
/// which part to fix.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// Configuration the user must fix: missing API key, bad base URL, missing cassette.
    #[error("{0}")]
    Config(String),
    /// The server could not be reached or did not answer usably.
    #[error("{0}")]
    Unavailable(String),
    /// The server answered with an HTTP error.
    #[error("{provider} returned HTTP {status} from {url}: {message}")]
    Http {
        provider: String,
        status: u16,
        url: String,
        message: String,
        /// What the server's `Retry-After` header asked for, if anything.
        retry_after: Option<std::time::Duration>,
    },
    /// The conversation does not fit the model's context window; the agent
    /// may trim it and try again.
    #[error("{0}")]
    ContextTooLong(String),
    /// A replayed run asked for something the cassette does not hold.
    #[error("{0}")]
    ReplayDiverged(String),
    /// The answer passed `model.max_response_bytes` on the wire; not
    /// retried, since the same request would bring the same answer.
    #[error("{0}")]
    AnswerTooLarge(String),
}

/// One retry the provider layer is about to make, reported before it waits.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryNotice {
    /// The attempt that failed, 1-based.
    pub attempt: u32,
    /// How many attempts this kind of failure is allowed.
    pub max_attempts: u32,
    /// The failure, one line.
    pub reason: String,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// How long it waits before the next attempt.
    pub wait: std::time::Duration,
}

/// Hears what happens inside one model call while it runs: partial text of a
/// streamed answer and retries. The provider layer reports; the caller
/// decides what to show or record (the agent turns these into events), so
/// providers never depend on the event bus.
pub trait ProviderObserver: Send + Sync {
    /// A piece of the answer's text, as it arrives. A retried call starts
    /// over, so text seen before a retry is not part of the answer.
    fn partial_text(&self, _delta: &str) {}
    /// The call failed and will be tried again after `notice.wait`.
    fn retrying(&self, _notice: &RetryNotice) {}
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unobserved;

impl ProviderObserver for Unobserved {}

/// A chat model the agent can call.
pub trait ModelProvider: Send + Sync {
    /// `provider` and `name` as they appear in the trace.
    fn model_info(&self) -> ModelInfo;
    /// Answer `request`, telling `observer` about partial text and retries.
    /// The one method a provider implements; wrappers forward the observer.
    fn complete_observed<'a>(
        &'a self,
        request: &'a ChatRequest,
        observer: &'a dyn ProviderObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;
    /// How far the requests so far drifted from a recording: only a replay
    /// in `sequence` mode knows.
    fn replay_drift(&self) -> Option<replay_drift::ReplayDrift> {
        None
    }
    /// [`complete_observed`](Self::complete_observed) with nobody listening.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        self.complete_observed(request, &Unobserved)
    }
}
