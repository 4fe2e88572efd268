//! The Chat Completions request body: the neutral conversation as OpenAI
//! messages (consecutive system messages merged, an empty answer sent back
//! as text, a server's `reasoning_content` sent back when the job or the
//! model family wants it), the tool definitions, `tool_choice` only with
//! tools, and `reasoning_effort`. Reading the answer is in the sibling modules.

use serde::Serialize;
use serde_json::Value;

use crate::provider::reasoning::{Reasoning, ReasoningSettings, sends_back_by_default};
use crate::provider::{ChatRequest, Message, ToolChoice};

/// What an assistant turn with neither text nor tool calls is sent back as.
const EMPTY_ANSWER: &str = "(no answer)";

#[derive(Serialize)]
pub(super) struct WireRequest<'a> {
    pub(super) model: &'a str,
    messages: Vec<WireMessage<'a>>,
    /// OpenAI rejects an empty `tools` array, so it is left out instead.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    /// `"none"` on a turn that must answer in text, `"required"` when a
    /// tool must be called; only sent with `tools`,
    /// since the API refuses `tool_choice` without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<WireStreamOptions>,
    /// Only sent when capped; the API's default is the model's maximum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_completion_tokens: Option<u32>,
    /// `model.reasoning.effort` for reasoning models (`minimal` … `high`).
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
}

#[derive(Serialize)]
struct WireStreamOptions {
    /// Usage comes in a last chunk only when asked for.
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum WireMessage<'a> {
    System {
        content: std::borrow::Cow<'a, str>,
    },
    User {
        content: &'a str,
    },
    Assistant {
        /// What the server's reasoning model thought before this turn, sent
        /// back so a chat template that interleaves thinking sees it (vLLM,
        /// SGLang, llama.cpp, DeepSeek read this field).
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        /// `null` when the turn was only tool calls, as the API expects.
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    r#type: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The request's model wins; the configured one fills in when it is empty.
pub(super) fn wire_request<'a>(
    request: &'a ChatRequest,
    configured_model: &'a str,
    stream: bool,
    reasoning: &ReasoningSettings,
) -> WireRequest<'a> {
    let model = if request.model.is_empty() {
        configured_model
    } else {
        &request.model
    };
    let send_back = reasoning
        .send_back
        .unwrap_or_else(|| sends_back_by_default(model));
    WireRequest {
        model,
        messages: merged_system(
            request
                .messages
                .iter()
                .map(|message| wire_message(message, send_back)),
        ),
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool {
                r#type: "function",
                function: WireFunction {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.parameters,
                },
            })
            .collect(),
        tool_choice: match request.tool_choice {
            _ if request.tools.is_empty() => None,
            ToolChoice::Auto => None,
            ToolChoice::None => Some("none"),
            ToolChoice::Required => Some("required"),
        },
        stream,
        stream_options: stream.then_some(WireStreamOptions {
            include_usage: true,
        }),
        max_completion_tokens: None,
        reasoning_effort: reasoning.effort.map(|effort| effort.as_str()),
    }
}

/// Consecutive system messages (the prompt's stable part and the run's
/// details) go out as one: some OpenAI-compatible servers' chat templates
/// refuse more than one system message.
fn merged_system<'a>(messages: impl Iterator<Item = WireMessage<'a>>) -> Vec<WireMessage<'a>> {
    let mut out: Vec<WireMessage<'a>> = Vec::new();
    for message in messages {
        match (out.last_mut(), message) {
            (Some(WireMessage::System { content: joined }), WireMessage::System { content }) => {
                let joined = joined.to_mut();
                joined.push_str("\n\n");
                joined.push_str(&content);
            }
            (_, message) => out.push(message),
        }
    }
    out
}

/// `send_back`: whether an assistant turn's `reasoning_content` goes with it.
fn wire_message(message: &Message, send_back: bool) -> WireMessage<'_> {
    match message {
        Message::System { content } => WireMessage::System {
            content: content.into(),
        },
        Message::User { content } => WireMessage::User { content },
        Message::Assistant {
            reasoning,
            content,
            tool_calls,
        } => WireMessage::Assistant {
            reasoning_content: send_back.then(|| reasoning_text(reasoning)).flatten(),
            // `content` may be null only beside tool calls: an empty answer
            // sent back as null is a 400 from OpenAI, and some servers also
            // refuse an empty string, so it goes back as a placeholder.
            content: match content.as_deref() {
                Some(text) if !text.is_empty() => Some(text),
                _ if tool_calls.is_empty() => Some(EMPTY_ANSWER),
                _ => None,
            },
            tool_calls: tool_calls
                .iter()
                .map(|call| WireToolCall {
                    id: &call.id,
                    r#type: "function",
                    function: WireFunctionCall {
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                })
                .collect(),
        },
        Message::Tool {
            tool_call_id,
            content,
        } => WireMessage::Tool {
            tool_call_id,
            content,
        },
    }
}

/// The `reasoning_content` a turn came with; other APIs' reasoning (a
/// thinking block, an encrypted item) means nothing to this one.
fn reasoning_text(reasoning: &[Reasoning]) -> Option<String> {
    let parts: Vec<&str> = reasoning
        .iter()
        .filter_map(|r| match r {
            Reasoning::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.concat())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    #[test]
    fn tool_choice_none_goes_out_only_with_tools() {
        let mut request = ChatRequest {
            max_output_tokens: None,
            model: String::new(),
            messages: vec![Message::User {
                content: "report".into(),
            }],
            tools: Vec::new(),
            tool_choice: ToolChoice::None,
        };
        let body = serde_json::to_value(wire_request(
            &request,
            "gpt-test",
            false,
            &ReasoningSettings::default(),
        ))
        .unwrap();
        // OpenAI refuses `tool_choice` without `tools`.
        assert_eq!(body.get("tool_choice"), None);
        request.tools.push(crate::provider::ToolDefinition {
            name: "read".into(),
            description: "read a file".into(),
            parameters: serde_json::json!({"type": "object"}),
        });
        let body = serde_json::to_value(wire_request(
            &request,
            "gpt-test",
            false,
            &ReasoningSettings::default(),
        ))
        .unwrap();
        assert_eq!(body["tool_choice"], "none");
        request.tool_choice = ToolChoice::Auto;
        let body = serde_json::to_value(wire_request(
            &request,
            "gpt-test",
            false,
            &ReasoningSettings::default(),
        ))
        .unwrap();
        assert_eq!(body.get("tool_choice"), None);
        // A judge must call its tool.
        request.tool_choice = ToolChoice::Required;
        let body = serde_json::to_value(wire_request(
            &request,
            "gpt-test",
            false,
            &ReasoningSettings::default(),
        ))
        .unwrap();
        assert_eq!(body["tool_choice"], "required");
    }

    #[test]
    fn an_empty_answer_goes_back_with_text_and_tool_calls_with_null() {
        // An empty answer (no text, no calls) was sent back as
        // `"content": null`, which OpenAI refuses with a 400 on the next turn.
        let request = ChatRequest {
            max_output_tokens: None,
            model: String::new(),
            messages: vec![
                Message::User {
                    content: "plan".into(),
                },
                Message::Assistant {
                    reasoning: Vec::new(),
                    content: None,
                    tool_calls: Vec::new(),
                },
                Message::Assistant {
                    reasoning: Vec::new(),
                    content: Some(String::new()),
                    tool_calls: Vec::new(),
                },
                Message::Assistant {
                    reasoning: Vec::new(),
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "ls".into(),
                        arguments: "{}".into(),
                    }],
                },
            ],
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
        };
        let body = serde_json::to_value(wire_request(
            &request,
            "gpt-test",
            false,
            &ReasoningSettings::default(),
        ))
        .unwrap();
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[1]["content"], EMPTY_ANSWER);
        assert_eq!(messages[2]["content"], EMPTY_ANSWER);
        assert_eq!(messages[3]["content"], Value::Null);
        assert_eq!(messages[3]["tool_calls"][0]["function"]["name"], "ls");
    }
}
