//! A streamed Messages answer, `message_start` to `message_stop`: text
//! deltas go to the observer as they arrive, `input_json_delta` pieces are
//! assembled into each tool call's arguments, `thinking_delta` and
//! `signature_delta` pieces into thinking blocks (which are reasoning, not
//! answer text, so the observer does not hear them), and usage is merged
//! from the start and delta events. A stream that stops before `message_stop` is
//! incomplete, an `error` event a failure.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::response::{WireBlock, WireUsage, arguments_text};
use crate::provider::answer_error::AnswerError;
use crate::provider::http::StreamDecoder;
use crate::provider::sse::SseEvent;
use crate::provider::{ChatResponse, ProviderObserver, Reasoning, ToolCall};

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireStartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    ContentBlockStop {},
    MessageDelta {
        #[serde(default)]
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop {},
    Ping {},
    Error {
        #[serde(default)]
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct WireStartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Default, Deserialize)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

enum PartialBlock {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        /// `input` from the start event, used when no deltas follow.
        start_input: Value,
        json: String,
    },
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    Other,
}

/// Assembles a streamed answer from content blocks keyed by `index`.
#[derive(Default)]
pub(super) struct EventDecoder {
    blocks: BTreeMap<usize, PartialBlock>,
    stop_reason: Option<String>,
    usage: WireUsage,
}

impl StreamDecoder for EventDecoder {
    fn event(
        &mut self,
        event: &SseEvent,
        observer: &dyn ProviderObserver,
    ) -> Result<bool, AnswerError> {
        if event.data.trim().is_empty() {
            return Ok(false);
        }
        let wire: WireEvent =
            serde_json::from_str(&event.data).map_err(|source| AnswerError::NotJson {
                what: "an event",
                format: "Messages",
                source,
            })?;
        match wire {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage.merge(usage);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    WireBlock::Text { text } => {
                        if !text.is_empty() {
                            observer.partial_text(&text);
                        }
                        PartialBlock::Text(text)
                    }
                    WireBlock::ToolUse { id, name, input } => PartialBlock::ToolUse {
                        id,
                        name,
                        start_input: input,
                        json: String::new(),
                    },
                    WireBlock::Thinking {
                        thinking,
                        signature,
                    } => PartialBlock::Thinking {
                        text: thinking,
                        signature,
                    },
                    WireBlock::RedactedThinking { data } => PartialBlock::Redacted(data),
                    WireBlock::Other => PartialBlock::Other,
                };
                self.blocks.insert(index, block);
            }
            WireEvent::ContentBlockDelta { index, delta } => {
                match (self.blocks.get_mut(&index), delta) {
                    (Some(PartialBlock::Text(text)), WireDelta::TextDelta { text: part }) => {
                        observer.partial_text(&part);
                        text.push_str(&part);
                    }
                    (
                        Some(PartialBlock::ToolUse { json, .. }),
                        WireDelta::InputJsonDelta { partial_json },
                    ) => json.push_str(&partial_json),
                    (
                        Some(PartialBlock::Thinking { text, .. }),
                        WireDelta::ThinkingDelta { thinking },
                    ) => text.push_str(&thinking),
                    (
                        Some(PartialBlock::Thinking { signature, .. }),
                        WireDelta::SignatureDelta { signature: part },
                    ) => signature.push_str(&part),
                    (None, _) => {
                        return Err(AnswerError::UnstartedBlock { index });
                    }
                    _ => {}
                }
            }
            WireEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(usage) = usage {
                    self.usage.merge(usage);
                }
            }
            WireEvent::MessageStop {} => return Ok(true),
            WireEvent::Error { error } => {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| error.to_string(), str::to_string);
                return Err(AnswerError::Reported { message });
            }
            WireEvent::ContentBlockStop {} | WireEvent::Ping {} | WireEvent::Unknown => {}
        }
        Ok(false)
    }

    fn finish(self) -> Result<ChatResponse, AnswerError> {
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        let mut reasoning = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                PartialBlock::Text(part) => text.push_str(&part),
                PartialBlock::Thinking { text, signature } => {
                    reasoning.push(Reasoning::Thinking { text, signature });
                }
                PartialBlock::Redacted(data) => reasoning.push(Reasoning::Redacted { data }),
                PartialBlock::ToolUse {
                    id,
                    name,
                    start_input,
                    json,
                } => tool_calls.push(ToolCall {
                    id,
                    name,
                    // Kept verbatim: malformed JSON is the agent's to answer.
                    arguments: if json.is_empty() {
                        arguments_text(start_input)
                    } else {
                        json
                    },
                }),
                PartialBlock::Other => {}
            }
        }
        Ok(ChatResponse {
            reasoning,
            text: (!text.is_empty()).then_some(text),
            tool_calls,
            usage: self.usage.neutral(),
            finish_reason: self.stop_reason,
        })
    }
}
