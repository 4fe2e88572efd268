//! The Messages request body: the neutral conversation as Anthropic wants
//! it, with the system prompt at the top level, roles alternating (one
//! role's consecutive messages merged), tool results as `tool_result` blocks
//! in user turns, assistant turns led by the thinking blocks they came with,
//! and the prompt-cache breakpoints. What thinking a request asks for is
//! [`super::thinking`]'s; reading the answer is in the sibling modules.

use serde::Serialize;
use serde_json::{Value, json};

use super::thinking::{self, ANSWER_ROOM, Thinking};
use crate::provider::{ChatRequest, Message, Reasoning, ToolChoice};

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
    /// `{"type": "enabled", "budget_tokens": N}` or `{"type": "adaptive"}`;
    /// absent when the job asks for no thinking or the turn in progress
    /// started without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    /// `{"effort": …}` for adaptive thinking.
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<Value>,
    /// The `anthropic-beta` header this body needs (interleaved thinking).
    #[serde(skip)]
    pub(super) beta: Option<&'static str>,
    /// Bedrock and Vertex AI take the API version in the body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) anthropic_version: Option<&'static str>,
    /// Bedrock takes the betas in the body, where the others take a header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) anthropic_beta: Option<Vec<&'static str>>,
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
pub(super) struct WireMessage {
    pub(super) role: &'static str,
    pub(super) content: Vec<Value>,
}

/// The body for `request`; `thinking` is the job's, `answer` the tokens the
/// answer may take (a sampling request's `maxTokens`; otherwise
/// [`ANSWER_ROOM`]).
pub(super) fn wire_request(
    request: &ChatRequest,
    configured_model: &str,
    stream: bool,
    thinking: Thinking,
    answer: Option<u32>,
) -> WireRequest {
    let model = if request.model.is_empty() {
        configured_model
    } else {
        &request.model
    };
    wire_request_for(request, model, stream, thinking, answer)
}

/// [`wire_request`] for `model` whatever the request names: a cloud names
/// the model in its URL and passes Anthropic's name for the output limits.
pub(super) fn wire_request_for(
    request: &ChatRequest,
    model: &str,
    stream: bool,
    thinking: Thinking,
    answer: Option<u32>,
) -> WireRequest {
    let mut system: Vec<Value> = request
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::System { content } => Some(text_block(content)),
            _ => None,
        })
        .collect();
    let mut messages = wire_messages(&request.messages);
    // One thinking configuration per assistant turn: a turn that started
    // without thinking is finished without it.
    let thinking = match thinking {
        Thinking::Off => Thinking::Off,
        on if thinking::turn_allows_thinking(&messages) => on,
        _ => Thinking::Off,
    };
    if thinking == Thinking::Off {
        thinking::strip_current_turn(&mut messages);
    }
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
        // Thinking blocks cannot carry `cache_control`; they are cached
        // with the turn they belong to.
        if !thinking::is_thinking(last) {
            cache_breakpoint(last);
        }
    }
    WireRequest {
        model: model.to_string(),
        max_tokens: thinking.max_tokens(model, answer.unwrap_or(ANSWER_ROOM)),
        system,
        messages,
        // Thinking takes only `auto` and `none`, so a required tool goes
        // out as `auto` when thinking is on.
        tool_choice: match request.tool_choice {
            _ if tools.is_empty() => None,
            ToolChoice::Auto => None,
            ToolChoice::None => Some(json!({"type": "none"})),
            ToolChoice::Required if thinking.parameter().is_some() => None,
            ToolChoice::Required => Some(json!({"type": "any"})),
        },
        tools,
        stream,
        thinking: thinking.parameter(),
        output_config: thinking.output_config(),
        beta: thinking.beta(),
        anthropic_version: None,
        anthropic_beta: None,
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
            reasoning,
            content,
            tool_calls,
        } => {
            // Thinking first, verbatim and in order: the API checks each
            // block's signature and wants the turn to start with them.
            let mut blocks: Vec<Value> = reasoning.iter().filter_map(reasoning_block).collect();
            blocks.extend(
                content
                    .as_deref()
                    .filter(|text| !text.trim().is_empty())
                    .map(text_block),
            );
            blocks.extend(tool_calls.iter().map(|call| {
                json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": tool_input(&call.arguments),
                })
            }));
            if blocks.iter().all(thinking::is_thinking) {
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

/// A piece of reasoning as the Messages API gave it; `None` for the kinds
/// other APIs wrote, which Anthropic cannot read.
fn reasoning_block(reasoning: &Reasoning) -> Option<Value> {
    match reasoning {
        Reasoning::Thinking { text, signature } => Some(json!({
            "type": "thinking",
            "thinking": text,
            "signature": signature,
        })),
        Reasoning::Redacted { data } => Some(json!({"type": "redacted_thinking", "data": data})),
        Reasoning::Item { .. } | Reasoning::Text { .. } => None,
    }
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
            max_output_tokens: None,
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
        let body = serde_json::to_value(wire_request(
            &request,
            "claude-sonnet-4-5",
            true,
            Thinking::Off,
            None,
        ))
        .unwrap();
        assert_eq!(body["model"], "claude-sonnet-4-5");
        assert_eq!(body["max_tokens"], ANSWER_ROOM);
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
        let body = serde_json::to_value(wire_request(
            &summary_turn,
            "claude-x",
            false,
            Thinking::Off,
            None,
        ))
        .unwrap();
        assert_eq!(body["tool_choice"], json!({"type": "none"}));
        let without_tools = ChatRequest {
            tools: Vec::new(),
            ..summary_turn
        };
        let body = serde_json::to_value(wire_request(
            &without_tools,
            "claude-x",
            false,
            Thinking::Off,
            None,
        ))
        .unwrap();
        // The API refuses `tool_choice` without `tools`.
        assert_eq!(body.get("tool_choice"), None);
        // A judge's required tool is `any`, except with thinking, which refuses it.
        let judge = ChatRequest {
            tool_choice: ToolChoice::Required,
            messages: vec![Message::User {
                content: "grade this".into(),
            }],
            ..request.clone()
        };
        let body =
            serde_json::to_value(wire_request(&judge, "claude-x", false, Thinking::Off, None))
                .unwrap();
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        let thinking = Thinking::Manual {
            budget: 2048,
            interleaved: false,
        };
        let body =
            serde_json::to_value(wire_request(&judge, "claude-x", false, thinking, None)).unwrap();
        assert_eq!(body.get("tool_choice"), None);
    }

    fn thinking_turn() -> ChatRequest {
        ChatRequest {
            max_output_tokens: None,
            model: String::new(),
            messages: vec![
                Message::User {
                    content: "fix it".into(),
                },
                Message::Assistant {
                    reasoning: vec![
                        Reasoning::Thinking {
                            text: "Read the test first.".into(),
                            signature: "sig-1".into(),
                        },
                        Reasoning::Redacted {
                            data: "opaque".into(),
                        },
                        Reasoning::Item {
                            id: "rs_1".into(),
                            encrypted_content: Some("enc".into()),
                            summary: vec![],
                        },
                        Reasoning::Text {
                            text: "from another server".into(),
                        },
                    ],
                    content: Some("Reading.".into()),
                    tool_calls: vec![ToolCall {
                        id: "toolu_1".into(),
                        name: "read".into(),
                        arguments: r#"{"path":"a"}"#.into(),
                    }],
                },
                Message::Tool {
                    tool_call_id: "toolu_1".into(),
                    content: "1: x".into(),
                },
            ],
            tools: vec![ToolDefinition {
                name: "read".into(),
                description: "read a file".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::Auto,
        }
    }

    #[test]
    fn thinking_blocks_lead_the_assistant_turn_verbatim_and_in_order() {
        let manual = Thinking::Manual {
            budget: 2048,
            interleaved: true,
        };
        let wire = wire_request(&thinking_turn(), "claude-sonnet-4-5", false, manual, None);
        assert_eq!(wire.beta, Some(thinking::INTERLEAVED_BETA));
        let body = serde_json::to_value(wire).unwrap();
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(body["max_tokens"], 2048 + ANSWER_ROOM);
        assert_eq!(body.get("output_config"), None);
        let assistant = &body["messages"][1]["content"];
        assert_eq!(
            assistant[0],
            json!({"type": "thinking", "thinking": "Read the test first.", "signature": "sig-1"})
        );
        assert_eq!(
            assistant[1],
            json!({"type": "redacted_thinking", "data": "opaque"})
        );
        // Other APIs' reasoning is not sent to Anthropic.
        assert_eq!(assistant[2], json!({"type": "text", "text": "Reading."}));
        assert_eq!(assistant[3]["type"], "tool_use");
        assert_eq!(assistant.as_array().unwrap().len(), 4);

        // A sampling request's maxTokens is the answer's room above the budget.
        let body = serde_json::to_value(wire_request(
            &thinking_turn(),
            "claude-sonnet-4-5",
            false,
            manual,
            Some(200),
        ))
        .unwrap();
        assert_eq!(body["max_tokens"], 2248);

        let adaptive = Thinking::Adaptive {
            effort: Some(crate::provider::reasoning::Effort::High),
        };
        let body = serde_json::to_value(wire_request(
            &thinking_turn(),
            "claude-opus-4-6",
            false,
            adaptive,
            None,
        ))
        .unwrap();
        assert_eq!(body["thinking"], json!({"type": "adaptive"}));
        assert_eq!(body["output_config"], json!({"effort": "high"}));
    }

    #[test]
    fn a_turn_that_started_without_thinking_is_finished_without_it() {
        // The turn in progress was written without thinking (a resumed or
        // replayed conversation): thinking on would be refused with a 400
        // ("Expected `thinking` or `redacted_thinking`"), so it is off for
        // this request, and the turn carries no thinking blocks.
        let mut request = thinking_turn();
        if let Message::Assistant { reasoning, .. } = &mut request.messages[1] {
            reasoning.retain(|r| !matches!(r, Reasoning::Thinking { .. }));
            reasoning.insert(
                0,
                Reasoning::Text {
                    text: "not Anthropic's".into(),
                },
            );
        }
        let manual = Thinking::Manual {
            budget: 2048,
            interleaved: false,
        };
        let wire = wire_request(&request, "claude-sonnet-4-5", false, manual, None);
        assert_eq!(wire.beta, None);
        let body = serde_json::to_value(wire).unwrap();
        // Redacted thinking leads the turn: it counts as its thinking.
        assert_eq!(body["thinking"]["type"], "enabled");

        if let Message::Assistant { reasoning, .. } = &mut request.messages[1] {
            reasoning.clear();
        }
        let body = serde_json::to_value(wire_request(
            &request,
            "claude-sonnet-4-5",
            false,
            manual,
            None,
        ))
        .unwrap();
        assert_eq!(body.get("thinking"), None);
        assert_eq!(body["max_tokens"], ANSWER_ROOM);
        // The next user message starts a new turn, which thinks again.
        request.messages.push(Message::User {
            content: "next".into(),
        });
        request.messages.insert(
            3,
            Message::Assistant {
                reasoning: Vec::new(),
                content: Some("Done.".into()),
                tool_calls: Vec::new(),
            },
        );
        let body = serde_json::to_value(wire_request(
            &request,
            "claude-sonnet-4-5",
            false,
            manual,
            None,
        ))
        .unwrap();
        assert_eq!(body["thinking"]["type"], "enabled");
    }
}
