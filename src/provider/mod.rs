//! Model providers: the one place that knows a wire format.
//!
//! The agent speaks [`ChatRequest`] / [`ChatResponse`]; a provider turns them
//! into HTTP (OpenAI Chat Completions) or serves them from a recorded
//! cassette (replay). Providers do not emit events and do not know about
//! budgets; they report failures as [`ProviderError`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::Usage;
use crate::tools::BoxFuture;

pub mod cassette;
pub mod openai;
pub mod record;
pub mod replay;

/// One message of the conversation, provider-neutral.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments exactly as sent: a JSON object in a string, possibly malformed.
    pub arguments: String,
}

/// A tool as offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDefinition>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
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
    },
    /// A replayed run asked for something the cassette does not hold.
    #[error("{0}")]
    ReplayDiverged(String),
}

/// A chat model the agent can call.
pub trait ModelProvider: Send + Sync {
    /// `provider` and `name` as they appear in the trace.
    fn model_info(&self) -> crate::event::ModelInfo;
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;
}
