//! A whole (not streamed) Messages answer: its content blocks become the
//! neutral reasoning (thinking and redacted thinking, in order, signatures
//! kept), text and tool calls, its usage the neutral token counts (the
//! usage type is shared with the stream, whose events carry it in pieces).

use serde::Deserialize;
use serde_json::Value;

use crate::provider::Usage;
use crate::provider::answer_error::AnswerError;
use crate::provider::{ChatResponse, Reasoning, ToolCall};

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    content: Vec<WireBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Clone, Copy, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Later figures (a stream's `message_delta`) replace earlier ones.
    pub(super) fn merge(&mut self, later: WireUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }

    /// Anthropic's `input_tokens` leaves out cache reads and writes;
    /// [`Usage::input_tokens`] counts every input token, so they are added.
    pub(super) fn neutral(self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0) + read + write,
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_write_tokens: write,
            reasoning_tokens: 0,
        }
    }
}

pub(super) fn arguments_text(input: Value) -> String {
    match input {
        // Sent as a string by some proxies; kept verbatim, even if malformed.
        Value::String(text) => text,
        Value::Null => "{}".to_string(),
        other => other.to_string(),
    }
}

pub(super) fn parse_response(body: &str) -> Result<ChatResponse, AnswerError> {
    let wire: WireResponse = serde_json::from_str(body).map_err(|source| AnswerError::NotJson {
        what: "a body",
        format: "Messages",
        source,
    })?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut reasoning = Vec::new();
    for block in wire.content {
        match block {
            WireBlock::Text { text: part } => text.push_str(&part),
            WireBlock::Thinking {
                thinking,
                signature,
            } => reasoning.push(Reasoning::Thinking {
                text: thinking,
                signature,
            }),
            WireBlock::RedactedThinking { data } => reasoning.push(Reasoning::Redacted { data }),
            WireBlock::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                id,
                name,
                arguments: arguments_text(input),
            }),
            WireBlock::Other => {}
        }
    }
    Ok(ChatResponse {
        reasoning,
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        usage: wire.usage.unwrap_or_default().neutral(),
        finish_reason: wire.stop_reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_blocks_become_text_and_calls() {
        let body = r#"{"id":"msg_1","type":"message","role":"assistant","content":[
            {"type":"text","text":"Reading."},
            {"type":"tool_use","id":"toolu_9","name":"read","input":{"path":"a.txt"}}],
            "stop_reason":"tool_use",
            "usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":20}}"#;
        let response = parse_response(body).unwrap();
        assert_eq!(response.text.as_deref(), Some("Reading."));
        assert_eq!(response.tool_calls[0].id, "toolu_9");
        assert_eq!(response.tool_calls[0].arguments, r#"{"path":"a.txt"}"#);
        assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            response.usage,
            Usage {
                reasoning_tokens: 0,
                input_tokens: 130,
                output_tokens: 5,
                cache_read_tokens: 100,
                cache_write_tokens: 20
            }
        );
    }

    #[test]
    fn thinking_blocks_become_reasoning_in_order_and_stay_out_of_the_text() {
        let body = r#"{"id":"msg_2","type":"message","role":"assistant","content":[
            {"type":"thinking","thinking":"Check the file.","signature":"EqQBCkYIBxgCKkB"},
            {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"},
            {"type":"text","text":"Reading."},
            {"type":"tool_use","id":"toolu_9","name":"read","input":{"path":"a.txt"}}],
            "stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":50}}"#;
        let response = parse_response(body).unwrap();
        assert_eq!(
            response.reasoning,
            vec![
                Reasoning::Thinking {
                    text: "Check the file.".into(),
                    signature: "EqQBCkYIBxgCKkB".into()
                },
                Reasoning::Redacted {
                    data: "EmwKAhgBEgy3va3pzix".into()
                },
            ]
        );
        assert_eq!(response.text.as_deref(), Some("Reading."));
        assert_eq!(response.tool_calls.len(), 1);
    }
}
