//! The Messages request body: the neutral conversation as Anthropic wants
//! it, with the system prompt at the top level, roles alternating (one
//! role's consecutive messages merged), tool results as `tool_result` blocks
//! in user turns, and the prompt-cache breakpoints. Reading the answer is in
//! the sibling modules.

use serde::Serialize;
use serde_json::{Value, json};

use crate::provider::{ChatRequest, Message, ToolChoice};

/// `max_tokens` is required by the API; enough for a long tool call.
const MAX_OUTPUT_TOKENS: u32 = 8192;
/// Claude 3 (not 3.5 and later) models allow at most 4096 output tokens.
const MAX_OUTPUT_TOKENS_CLAUDE_3: u32 = 4096;

#[derive(Serialize)]
pub(super) struct WireRequest {
    /// Empty for a cloud that names the model in its URL (Bedrock, Vertex AI).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) model: String,
    pub(super) max_tokens: u32,
    /// Text blocks, one per system message, so the stable part of the
    /// prompt (the first) can carry its own cache breakpoint.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Value>,
    messages: Vec<WireMessage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    /// `{"type": "none"}` on a turn that must answer in text; only sent
    /// with `tools` (the API refuses `tool_choice` without them).
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    /// Bedrock and Vertex AI take the API version in the body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) anthropic_version: Option<&'static str>,
}

/// Marks a block as the end of a cached prefix. The Messages API caches only
/// what a request marks, with at most four breakpoints per request
/// (https://docs.claude.com/en/docs/build-with-claude/prompt-caching); a run
/// uses three: the end of the tools, the end of the system prompt's stable
/// part (shared by every run of the job), and the newest message (so the
/// next turn of the run reads everything before it from the cache).
fn cache_breakpoint(block: &mut Value) {
    if let Some(object) = block.as_object_mut() {
        object.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

#[derive(Serialize)]
struct WireMessage {
    role: &'static str,
    content: Vec<Value>,
}

pub(super) fn max_output_tokens(model: &str) -> u32 {
    let claude_3 = ["claude-3-opus", "claude-3-sonnet", "claude-3-haiku"];
    if claude_3.iter().any(|prefix| model.starts_with(prefix)) {
        MAX_OUTPUT_TOKENS_CLAUDE_3
    } else {
        MAX_OUTPUT_TOKENS
    }
}

pub(super) fn wire_request(
    request: &ChatRequest,
    configured_model: &str,
    stream: bool,
) -> WireRequest {
    let model = if request.model.is_empty() {
        configured_model
    } else {
        &request.model
    };
    let mut system: Vec<Value> = request
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::System { content } => Some(text_block(content)),
            _ => None,
        })
        .collect();
    let mut messages = wire_messages(&request.messages);
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.parameters,
            })
        })
        .collect();
    for last in [
        tools.last_mut(),
        system.first_mut(),
        messages.last_mut().and_then(|m| m.content.last_mut()),
    ]
    .into_iter()
    .flatten()
    {
        cache_breakpoint(last);
    }
    WireRequest {
        model: model.to_string(),
        max_tokens: max_output_tokens(model),
        system,
        messages,
        tool_choice: (request.tool_choice == ToolChoice::None && !tools.is_empty())
            .then(|| json!({"type": "none"})),
        tools,
        stream,
        anthropic_version: None,
    }
}

/// The conversation without its system messages, one role's consecutive
/// messages merged into one turn, as the API wants roles to alternate.
fn wire_messages(messages: &[Message]) -> Vec<WireMessage> {
    let mut turns: Vec<WireMessage> = Vec::new();
    for (role, blocks) in messages.iter().filter_map(role_and_blocks) {
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    turns
}

/// The role and content blocks one message is sent as; `None` for a system
/// message, which goes in the request's top-level `system`.
fn role_and_blocks(message: &Message) -> Option<(&'static str, Vec<Value>)> {
    let turn = match message {
        Message::System { .. } => return None,
        Message::User { content } => ("user", vec![text_block(content)]),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut blocks: Vec<Value> = content
                .as_deref()
                .filter(|text| !text.trim().is_empty())
                .map(text_block)
                .into_iter()
                .collect();
            blocks.extend(tool_calls.iter().map(|call| {
                json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": tool_input(&call.arguments),
                })
            }));
            if blocks.is_empty() {
                // The API refuses an empty assistant turn.
                blocks.push(text_block("(no answer)"));
            }
            ("assistant", blocks)
        }
        Message::Tool {
            tool_call_id,
            content,
        } => (
            "user",
            vec![json!({
                "type": "tool_result",
                "tool_use_id": tool_call_id,
                "content": if content.is_empty() { "(no output)" } else { content },
                "is_error": content.starts_with("ERROR "),
            })],
        ),
    };
    Some(turn)
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A tool call's arguments as the object the API wants back. Arguments the
/// model wrote as malformed JSON were answered with an error result; the
/// call is echoed with an empty input so the conversation stays valid.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ToolCall, ToolDefinition};

    #[test]
    fn request_moves_system_out_and_merges_tool_results_into_user_turns() {
        let request = ChatRequest {
            model: String::new(),
            messages: vec![
                Message::System {
                    content: "be careful".into(),
                },
                Message::User {
                    content: "fix it".into(),
                },
                Message::Assistant {
                    reasoning: Vec::new(),
                    content: Some("Looking.".into()),
                    tool_calls: vec![
                        ToolCall {
                            id: "toolu_1".into(),
                            name: "read".into(),
                            arguments: r#"{"path":"a"}"#.into(),
                        },
                        ToolCall {
                            id: "toolu_2".into(),
                            name: "ls".into(),
                            arguments: "{broken".into(),
                        },
                    ],
                },
                Message::Tool {
                    tool_call_id: "toolu_1".into(),
                    content: "1: x".into(),
                },
                Message::Tool {
                    tool_call_id: "toolu_2".into(),
                    content: "ERROR INVALID_ARGUMENT: not JSON".into(),
                },
                Message::User {
                    content: "next step".into(),
                },
            ],
            tools: vec![ToolDefinition {
                name: "read".into(),
                description: "read a file".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::Auto,
        };
        let body = serde_json::to_value(wire_request(&request, "claude-sonnet-4-5", true)).unwrap();
        assert_eq!(body["model"], "claude-sonnet-4-5");
        assert_eq!(body["max_tokens"], MAX_OUTPUT_TOKENS);
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "be careful", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(body["stream"], true);
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["role"], "assistant");
        assert_eq!(messages[1]["content"][1]["input"], json!({"path": "a"}));
        assert_eq!(messages[1]["content"][2]["input"], json!({}));
        assert_eq!(messages[2]["role"], "user");
        let user = messages[2]["content"].as_array().unwrap();
        assert_eq!(user.len(), 3);
        assert_eq!(user[0]["type"], "tool_result");
        assert_eq!(user[0]["is_error"], false);
        assert_eq!(user[1]["is_error"], true);
        assert_eq!(
            user[2],
            json!({"type": "text", "text": "next step", "cache_control": {"type": "ephemeral"}})
        );
        assert_eq!(
            body["tools"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(body.get("tool_choice"), None);
        let summary_turn = ChatRequest {
            tool_choice: ToolChoice::None,
            ..request.clone()
        };
        let body = serde_json::to_value(wire_request(&summary_turn, "claude-x", false)).unwrap();
        assert_eq!(body["tool_choice"], json!({"type": "none"}));
        let without_tools = ChatRequest {
            tools: Vec::new(),
            ..summary_turn
        };
        let body = serde_json::to_value(wire_request(&without_tools, "claude-x", false)).unwrap();
        // The API refuses `tool_choice` without `tools`.
        assert_eq!(body.get("tool_choice"), None);
    }
}
