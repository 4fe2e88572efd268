//! The Responses request body: the neutral conversation as Responses input
//! items, the tool definitions, and how reasoning is kept between turns.
//!
//! The system messages that open the conversation become `instructions`:
//! they are the stable head of every request, and with
//! `previous_response_id` the API does not carry a previous response's
//! instructions over, so sending them each time keeps the prompt-cache
//! prefix the same in both modes. A system message later in the
//! conversation stays where it is, as a `developer` message, so it never
//! changes that prefix. An assistant turn goes back as its reasoning items
//! first (with their encrypted content), then its text as a message, then
//! its tool calls as `function_call` items; a tool result is a
//! `function_call_output` paired by `call_id`. Reading the answer is in the
//! sibling modules.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::provider::reasoning::SummaryMode;
use crate::provider::{ChatRequest, Message, Reasoning, ReasoningSettings, ToolChoice};

/// What a request asks the server to keep or send back, besides the input.
#[derive(Clone, Copy, Debug)]
pub(super) struct Keeping<'a> {
    /// `store: true` and chain on `previous_response_id`, instead of
    /// carrying reasoning as encrypted content.
    pub chained: bool,
    /// The response this request continues, when chained.
    pub previous_response_id: Option<&'a str>,
}

#[derive(Serialize)]
pub(super) struct WireRequest<'a> {
    pub(super) model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<Cow<'a, str>>,
    input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    /// Only with tools: the API refuses `tool_choice` without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    /// `false` unless chained: nothing the run needs stays on the server.
    store: bool,
    /// `reasoning.encrypted_content` when not stored, so reasoning items
    /// can go back in the next request without server state.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_response_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<WireReasoning>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    /// Only sent when capped; the API's default is the model's maximum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_output_tokens: Option<u32>,
}

#[derive(Serialize)]
struct WireReasoning {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'static str>,
}

/// One input item. Every kind carries its `type`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum InputItem<'a> {
    Message {
        role: &'static str,
        content: &'a str,
    },
    Reasoning {
        id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<&'a str>,
        summary: Vec<SummaryText<'a>>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
}

#[derive(Serialize)]
pub(super) struct SummaryText<'a> {
    r#type: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    r#type: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    /// The Responses API makes function tools strict unless told otherwise,
    /// and strict mode rewrites or refuses schemas with optional fields.
    strict: bool,
}

/// The body for `request`. `skip` messages at the head of the
/// conversation are already in the chained response's state and are left
/// out of `input` (the leading system messages are `instructions` either way).
pub(super) fn wire_request<'a>(
    request: &'a ChatRequest,
    configured_model: &'a str,
    stream: bool,
    settings: &ReasoningSettings,
    keeping: Keeping<'a>,
    skip: usize,
) -> WireRequest<'a> {
    let model = if request.model.is_empty() {
        configured_model
    } else {
        &request.model
    };
    let head = request
        .messages
        .iter()
        .take_while(|m| matches!(m, Message::System { .. }))
        .count();
    let instructions = instructions(&request.messages[..head]);
    let mut input = Vec::with_capacity(request.messages.len() * 2);
    for message in request.messages.iter().skip(head.max(skip)) {
        push_items(&mut input, message);
    }
    WireRequest {
        model,
        instructions,
        input,
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool {
                r#type: "function",
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
                strict: false,
            })
            .collect(),
        tool_choice: (!request.tools.is_empty()).then_some(match request.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
            ToolChoice::Required => "required",
        }),
        store: keeping.chained,
        include: match keeping.chained {
            true => Vec::new(),
            false => vec!["reasoning.encrypted_content"],
        },
        previous_response_id: keeping.previous_response_id,
        reasoning: wire_reasoning(settings),
        stream,
        max_output_tokens: None,
    }
}

/// The leading system messages, joined as one text.
fn instructions<'a>(system: &'a [Message]) -> Option<Cow<'a, str>> {
    let mut texts = system.iter().filter_map(|m| match m {
        Message::System { content } => Some(content.as_str()),
        _ => None,
    });
    let first = texts.next()?;
    let mut joined = Cow::Borrowed(first);
    for text in texts {
        let owned = joined.to_mut();
        owned.push_str("\n\n");
        owned.push_str(text);
    }
    Some(joined)
}

fn wire_reasoning(settings: &ReasoningSettings) -> Option<WireReasoning> {
    let effort = settings.effort.map(|e| e.as_str());
    // The API's summary values are auto, concise and detailed; `none` is
    // asking for none, which is leaving it out.
    let summary = match settings.summary {
        Some(SummaryMode::Auto) => Some("auto"),
        Some(SummaryMode::None) | None => None,
    };
    (effort.is_some() || summary.is_some()).then_some(WireReasoning { effort, summary })
}

/// The items one neutral message becomes, in the order the API wants them.
pub(super) fn push_items<'a>(out: &mut Vec<InputItem<'a>>, message: &'a Message) {
    match message {
        Message::System { content } => out.push(InputItem::Message {
            role: "developer",
            content,
        }),
        Message::User { content } => out.push(InputItem::Message {
            role: "user",
            content,
        }),
        Message::Assistant {
            reasoning,
            content,
            tool_calls,
        } => {
            // Only the Responses API's own reasoning items go back; another
            // API's thinking (a conversation recorded elsewhere) means nothing
            // here. A reasoning item must be followed by the item it led to,
            // so an empty answer's reasoning stays out.
            let answered =
                content.as_deref().is_some_and(|t| !t.is_empty()) || !tool_calls.is_empty();
            for item in reasoning.iter().filter(|_| answered) {
                if let Reasoning::Item {
                    id,
                    encrypted_content,
                    summary,
                } = item
                {
                    out.push(InputItem::Reasoning {
                        id,
                        encrypted_content: encrypted_content.as_deref(),
                        summary: summary
                            .iter()
                            .map(|text| SummaryText {
                                r#type: "summary_text",
                                text,
                            })
                            .collect(),
                    });
                }
            }
            if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                out.push(InputItem::Message {
                    role: "assistant",
                    content: text,
                });
            }
            for call in tool_calls {
                out.push(InputItem::FunctionCall {
                    call_id: &call.id,
                    name: &call.name,
                    arguments: &call.arguments,
                });
            }
        }
        Message::Tool {
            tool_call_id,
            content,
        } => out.push(InputItem::FunctionCallOutput {
            call_id: tool_call_id,
            output: content,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::reasoning::Effort;
    use crate::provider::{ToolCall, ToolDefinition};
    use serde_json::json;

    fn conversation() -> ChatRequest {
        ChatRequest {
            max_output_tokens: None,
            model: String::new(),
            messages: vec![
                Message::System {
                    content: "skill".into(),
                },
                Message::System {
                    content: "run details".into(),
                },
                Message::User {
                    content: "goal".into(),
                },
                Message::Assistant {
                    reasoning: vec![
                        Reasoning::Thinking {
                            text: "not ours".into(),
                            signature: "sig".into(),
                        },
                        Reasoning::Item {
                            id: "rs_1".into(),
                            encrypted_content: Some("enc1".into()),
                            summary: vec!["Read first.".into()],
                        },
                    ],
                    content: Some("Reading.".into()),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "read".into(),
                        arguments: r#"{"path":"a"}"#.into(),
                    }],
                },
                Message::Tool {
                    tool_call_id: "call_1".into(),
                    content: "hello".into(),
                },
                Message::System {
                    content: "late note".into(),
                },
            ],
            tools: vec![ToolDefinition {
                name: "read".into(),
                description: "read a file".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::None,
        }
    }

    const STATELESS: Keeping<'static> = Keeping {
        chained: false,
        previous_response_id: None,
    };

    #[test]
    fn a_conversation_becomes_instructions_and_items_in_order() {
        let request = conversation();
        let settings = ReasoningSettings {
            effort: Some(Effort::High),
            summary: Some(SummaryMode::Auto),
            ..Default::default()
        };
        let body = serde_json::to_value(wire_request(
            &request, "gpt-test", true, &settings, STATELESS, 0,
        ))
        .unwrap();
        assert_eq!(
            body,
            json!({
                "model": "gpt-test",
                "instructions": "skill\n\nrun details",
                "input": [
                    {"type": "message", "role": "user", "content": "goal"},
                    {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc1",
                     "summary": [{"type": "summary_text", "text": "Read first."}]},
                    {"type": "message", "role": "assistant", "content": "Reading."},
                    {"type": "function_call", "call_id": "call_1", "name": "read",
                     "arguments": "{\"path\":\"a\"}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "hello"},
                    {"type": "message", "role": "developer", "content": "late note"},
                ],
                "tools": [{"type": "function", "name": "read", "description": "read a file",
                           "parameters": {"type": "object"}, "strict": false}],
                "tool_choice": "none",
                "store": false,
                "include": ["reasoning.encrypted_content"],
                "reasoning": {"effort": "high", "summary": "auto"},
                "stream": true,
            })
        );
    }

    #[test]
    fn a_chained_request_is_stored_and_sends_only_new_items() {
        let request = conversation();
        let keeping = Keeping {
            chained: true,
            previous_response_id: Some("resp_1"),
        };
        let body = serde_json::to_value(wire_request(
            &request,
            "gpt-test",
            false,
            &ReasoningSettings::default(),
            keeping,
            4,
        ))
        .unwrap();
        assert_eq!(body["store"], true);
        assert_eq!(body["previous_response_id"], "resp_1");
        assert_eq!(body.get("include"), None);
        assert_eq!(body.get("reasoning"), None);
        assert_eq!(body["instructions"], "skill\n\nrun details");
        let input = body["input"].as_array().unwrap();
        assert_eq!(input.len(), 2);
        assert_eq!(input[0]["type"], "function_call_output");
        assert_eq!(input[1]["role"], "developer");
    }

    #[test]
    fn no_tools_means_no_tool_choice_and_summary_none_is_left_out() {
        let mut request = conversation();
        request.tools.clear();
        let settings = ReasoningSettings {
            summary: Some(SummaryMode::None),
            ..Default::default()
        };
        let body = serde_json::to_value(wire_request(
            &request, "gpt-test", false, &settings, STATELESS, 0,
        ))
        .unwrap();
        assert_eq!(body.get("tool_choice"), None);
        assert_eq!(body.get("tools"), None);
        assert_eq!(body.get("reasoning"), None);
    }
}
