//! A whole (not streamed) Responses answer, and the output items both ways
//! of reading end in: reasoning items (id, encrypted content, summary
//! texts), the assistant's text from its message items, `function_call`
//! items as tool calls, and the usage with cached and reasoning tokens.

use serde::Deserialize;
use serde_json::Value;

use crate::provider::answer_error::AnswerError;
use crate::provider::{ChatResponse, Reasoning, ToolCall, Usage};

/// A response object, as the create call returns it and as
/// `response.completed` carries it.
#[derive(Deserialize)]
pub(super) struct WireResponse {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) status: Option<String>,
    #[serde(default)]
    pub(super) output: Vec<WireItem>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) incomplete_details: Option<WireIncomplete>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct WireIncomplete {
    #[serde(default)]
    pub(super) reason: Option<String>,
}

/// One output item; kinds agentci does not use (web searches, images…) are `Other`.
#[derive(Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireItem {
    Reasoning {
        id: String,
        #[serde(default)]
        encrypted_content: Option<String>,
        #[serde(default)]
        summary: Vec<WireSummary>,
    },
    Message {
        #[serde(default)]
        content: Vec<WireContent>,
    },
    FunctionCall {
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Clone, Deserialize)]
pub(super) struct WireSummary {
    #[serde(default)]
    text: String,
}

#[derive(Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireContent {
    OutputText {
        text: String,
    },
    Refusal {
        refusal: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<WireInputDetails>,
    #[serde(default)]
    output_tokens_details: Option<WireOutputDetails>,
}

#[derive(Deserialize)]
struct WireInputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireOutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// `input_tokens` already counts the cached ones and `output_tokens`
    /// the reasoning ones, as [`Usage`] does.
    pub(super) fn neutral(self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: self
                .output_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            cache_read_tokens: self
                .input_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}

/// The answer and the id of the response that gave it (what a chained
/// request names as `previous_response_id`).
pub(super) struct Answer {
    pub response: ChatResponse,
    pub id: Option<String>,
}

/// Parses a success body; the error says what was wrong with it.
pub(super) fn parse_response(body: &str) -> Result<Answer, AnswerError> {
    let wire: WireResponse = serde_json::from_str(body).map_err(|source| AnswerError::NotJson {
        what: "a body",
        format: "Responses",
        source,
    })?;
    if wire.status.as_deref() == Some("failed") {
        return Err(failure(wire.error.as_ref()));
    }
    let finish = finish_reason(&wire);
    Ok(Answer {
        id: wire.id,
        response: answer(
            wire.output,
            wire.usage.map_or_else(Usage::default, WireUsage::neutral),
            finish,
        ),
    })
}

/// A failed response's `error` as an answer error.
pub(super) fn failure(error: Option<&Value>) -> AnswerError {
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map_or_else(
            || "the response failed without saying why".to_string(),
            str::to_string,
        );
    AnswerError::Reported { message }
}

/// `incomplete` with its reason (`max_output_tokens` reads as `length`,
/// as Chat Completions says it); otherwise `None`, decided by the items.
pub(super) fn finish_reason(wire: &WireResponse) -> Option<String> {
    if wire.status.as_deref() != Some("incomplete") {
        return None;
    }
    let reason = wire
        .incomplete_details
        .as_ref()
        .and_then(|d| d.reason.as_deref())
        .unwrap_or("incomplete");
    Some(match reason {
        "max_output_tokens" => "length".to_string(),
        other => other.to_string(),
    })
}

/// The neutral answer from output items in order.
pub(super) fn answer(items: Vec<WireItem>, usage: Usage, finish: Option<String>) -> ChatResponse {
    let mut reasoning = Vec::new();
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for item in items {
        match item {
            WireItem::Reasoning {
                id,
                encrypted_content,
                summary,
            } => reasoning.push(Reasoning::Item {
                id,
                encrypted_content,
                summary: summary.into_iter().map(|s| s.text).collect(),
            }),
            WireItem::Message { content } => {
                for part in content {
                    match part {
                        WireContent::OutputText { text: piece }
                        | WireContent::Refusal { refusal: piece } => text.push_str(&piece),
                        WireContent::Other => {}
                    }
                }
            }
            WireItem::FunctionCall {
                call_id,
                name,
                arguments,
            } => tool_calls.push(ToolCall {
                id: call_id,
                name,
                arguments,
            }),
            WireItem::Other => {}
        }
    }
    let finish_reason = finish.or_else(|| {
        Some(match tool_calls.is_empty() {
            true => "stop".to_string(),
            false => "tool_calls".to_string(),
        })
    });
    ChatResponse {
        reasoning,
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        usage,
        finish_reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_gives_reasoning_text_calls_and_usage() {
        let body = r#"{"id":"resp_1","object":"response","status":"completed","output":[
            {"type":"reasoning","id":"rs_1","encrypted_content":"gAAA","summary":[{"type":"summary_text","text":"Look first."}]},
            {"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Reading.","annotations":[]}]},
            {"type":"function_call","id":"fc_1","call_id":"call_1","name":"read","arguments":"{\"path\":\"a\"}","status":"completed"},
            {"type":"web_search_call","id":"ws_1","status":"completed"}],
            "usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":64},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":150}}"#;
        let Answer { response, id } = parse_response(body).unwrap();
        assert_eq!(id.as_deref(), Some("resp_1"));
        assert_eq!(
            response.reasoning,
            vec![Reasoning::Item {
                id: "rs_1".into(),
                encrypted_content: Some("gAAA".into()),
                summary: vec!["Look first.".into()],
            }]
        );
        assert_eq!(response.text.as_deref(), Some("Reading."));
        assert_eq!(response.tool_calls[0].id, "call_1");
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 120,
                output_tokens: 30,
                reasoning_tokens: 12,
                cache_read_tokens: 64,
                cache_write_tokens: 0,
            }
        );
    }

    #[test]
    fn incomplete_and_failed_responses() {
        let body = r#"{"id":"resp_2","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}"#;
        let answer = parse_response(body).unwrap();
        assert_eq!(answer.response.finish_reason.as_deref(), Some("length"));
        let body = r#"{"id":"resp_3","status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}"#;
        let err = parse_response(body).err().unwrap();
        assert!(err.to_string().contains("The model failed."), "{err}");
        assert!(parse_response("{not json").is_err());
    }
}
