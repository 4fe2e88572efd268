//! `sampling/createMessage` from a server, in agentci's terms: the text
//! conversation a server asks the model to continue, and the [`Sampler`]
//! that answers it with one completion when the job lets that server
//! sample (`mcp.servers.NAME.sampling: true`).
//!
//! Which model answers, and what the call costs, is the caller's (the run
//! gives its own model provider); this module only turns the MCP request
//! into a [`SamplingRequest`] and refuses what a text completion cannot
//! answer (images, audio, tool use in the conversation).
#![expect(
    deprecated,
    reason = "sampling is deprecated for protocol 2026-07-28 (SEP-2577), but the 2025-11-25 \
              servers this client speaks to still send it"
)]

use rmcp::model::{CreateMessageRequestParams, Role, SamplingMessageContentBlock};

use futures_util::future::BoxFuture;

/// Longest `maxTokens` passed on: a server cannot make one answer cost
/// more than a long model turn of the run.
pub const MAX_SAMPLING_TOKENS: u32 = 8_192;

/// A server's request for one completion, text only, without tools.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingRequest {
    /// The server that asked.
    pub server: String,
    /// The request's `systemPrompt`.
    pub system_prompt: Option<String>,
    /// The conversation, oldest first.
    pub messages: Vec<SamplingTurn>,
    /// The request's `maxTokens`, at most [`MAX_SAMPLING_TOKENS`].
    pub max_tokens: u32,
}

/// One message of the conversation a server sends.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingTurn {
    /// Written by the assistant (otherwise by the user).
    pub assistant: bool,
    pub text: String,
}

/// The completion the model gave.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingAnswer {
    /// The model that answered, as the server is told.
    pub model: String,
    pub text: String,
    /// `endTurn` or `maxTokens`, in MCP's words.
    pub stop_reason: Option<String>,
    /// What to record in the trace about the call (tokens used).
    pub detail: String,
}

/// Answers sampling requests; `Err` is the reason given to the server.
pub trait Sampler: Send + Sync {
    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<SamplingAnswer, String>>;
}

/// The request as a text conversation, or why agentci cannot answer it.
pub(super) fn sampling_request(
    server: &str,
    params: &CreateMessageRequestParams,
) -> Result<SamplingRequest, String> {
    if params.messages.is_empty() {
        return Err("the request has no messages".to_string());
    }
    let mut messages = Vec::new();
    for message in &params.messages {
        let mut text = Vec::new();
        for block in message.content.clone().into_vec() {
            match block {
                SamplingMessageContentBlock::Text(t) => text.push(t.text),
                _ => {
                    return Err(
                        "agentci answers sampling with text only; the request holds \
                                images, audio or tool use"
                            .to_string(),
                    );
                }
            }
        }
        messages.push(SamplingTurn {
            assistant: message.role == Role::Assistant,
            text: text.join("\n"),
        });
    }
    if params.max_tokens == 0 {
        return Err("`maxTokens` is 0".to_string());
    }
    // Both model APIs refuse a request without a message.
    if messages.is_empty() {
        return Err("the request holds no messages to answer".to_string());
    }
    Ok(SamplingRequest {
        server: server.to_string(),
        system_prompt: params.system_prompt.clone(),
        messages,
        max_tokens: params.max_tokens.min(MAX_SAMPLING_TOKENS),
    })
}
