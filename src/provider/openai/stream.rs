//! A streamed Chat Completions answer, `chat.completion.chunk` events up to
//! `[DONE]`: text deltas go to the observer as they arrive, tool calls are
//! assembled from pieces keyed by their index (they may interleave), and the
//! usage comes from the last chunk. `reasoning_content` pieces are kept
//! apart from the text. A stream without `[DONE]` is incomplete.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::response::WireUsage;
use crate::provider::Usage;
use crate::provider::answer_error::AnswerError;
use crate::provider::http::StreamDecoder;
use crate::provider::sse::SseEvent;
use crate::provider::{ChatResponse, ProviderObserver, ToolCall};

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Vec<WireChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Some servers report a failure inside the stream.
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChunkChoice {
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallDelta>>,
}

#[derive(Deserialize)]
struct WireToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionDelta>,
}

#[derive(Deserialize)]
struct WireFunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// A tool call being assembled from its deltas.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a streamed answer: text and tool-call pieces keyed by their
/// `index`, the finish reason, and usage from the last chunk.
#[derive(Default)]
pub(super) struct ChunkDecoder {
    /// `reasoning_content` pieces; not shown as the answer's text.
    reasoning: String,
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl StreamDecoder for ChunkDecoder {
    fn event(
        &mut self,
        event: &SseEvent,
        observer: &dyn ProviderObserver,
    ) -> Result<bool, AnswerError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: WireChunk =
            serde_json::from_str(data).map_err(|source| AnswerError::NotJson {
                what: "a chunk",
                format: "Chat Completions",
                source,
            })?;
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(AnswerError::Reported { message });
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.neutral());
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(piece) = delta.reasoning_content {
                    self.reasoning.push_str(&piece);
                }
                if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                    observer.partial_text(&text);
                    self.text.push_str(&text);
                }
                for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate()
                {
                    let slot = self
                        .calls
                        .entry(call.index.unwrap_or(position))
                        .or_default();
                    if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                        slot.id = id;
                    }
                    if let Some(function) = call.function {
                        if let Some(name) = function.name {
                            slot.name.push_str(&name);
                        }
                        if let Some(arguments) = function.arguments {
                            slot.arguments.push_str(&arguments);
                        }
                    }
                }
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(false)
    }

    fn finish(self) -> Result<ChatResponse, AnswerError> {
        let tool_calls = self
            .calls
            .into_values()
            .enumerate()
            .map(|(index, call)| ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{}", index + 1)
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        Ok(ChatResponse {
            reasoning: super::response::reasoning_of(Some(self.reasoning)),
            text: (!self.text.is_empty()).then_some(self.text),
            tool_calls,
            usage: self.usage.unwrap_or_default(),
            finish_reason: self.finish_reason,
        })
    }
}
