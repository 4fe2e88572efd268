//! Message content on spans, for teams that opt in (`telemetry.content`
//! or `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`): the
//! GenAI conventions' `gen_ai.input.messages`, `gen_ai.output.messages`,
//! `gen_ai.system_instructions` and the tool call's arguments and result.
//! Events reach sinks with secrets already masked; each value is capped so
//! a long file read cannot make a span the collector refuses.

use serde_json::{Value, json};

use crate::event::{ModelResponse, SentDelta};
use crate::provider::Message;

/// Longest value of a content attribute, in bytes.
pub(super) const MAX_CONTENT: usize = 16 * 1024;

/// `text` cut to [`MAX_CONTENT`], saying how much went.
pub(super) fn capped(text: &str) -> String {
    crate::inert::cut_bytes(text, MAX_CONTENT)
}

/// The system prompt and the messages a request added to the
/// conversation (the earlier ones are on the earlier `chat` spans), as the
/// conventions' JSON: `[{role, parts: [{type, …}]}]`.
pub(super) fn input_messages(sent: &SentDelta) -> (Option<String>, String) {
    let mut system = Vec::new();
    let mut messages = Vec::new();
    for message in &sent.messages_added {
        match message {
            Message::System { content } => system.push(json!({"type": "text", "content": content})),
            Message::User { content } => messages.push(json!({
                "role": "user",
                "parts": [{"type": "text", "content": content}],
            })),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let mut parts: Vec<Value> = content
                    .iter()
                    .map(|text| json!({"type": "text", "content": text}))
                    .collect();
                parts.extend(tool_calls.iter().map(|call| {
                    let arguments = serde_json::from_str::<Value>(&call.arguments)
                        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                    json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
                }));
                messages.push(json!({"role": "assistant", "parts": parts}));
            }
            Message::Tool {
                tool_call_id,
                content,
            } => messages.push(json!({
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": tool_call_id, "response": content}],
            })),
        }
    }
    let system = (!system.is_empty()).then(|| capped(&Value::Array(system).to_string()));
    (system, capped(&Value::Array(messages).to_string()))
}

/// What the model answered, as the conventions' output message.
pub(super) fn output_messages(response: &ModelResponse) -> String {
    let mut parts: Vec<Value> = response
        .text
        .iter()
        .map(|text| json!({"type": "text", "content": text}))
        .collect();
    parts.extend(
        response
            .tool_calls
            .iter()
            .map(|call| json!({"type": "tool_call", "id": call.id, "name": call.name})),
    );
    let message = json!([{
        "role": "assistant",
        "parts": parts,
        "finish_reason": response.finish_reason,
    }]);
    capped(&message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_content_is_cut_at_a_character_boundary_and_says_how_much_went() {
        let text = "é".repeat(MAX_CONTENT);
        let cut = capped(&text);
        assert!(cut.len() < text.len());
        assert!(cut.ends_with(&format!("\n[truncated {MAX_CONTENT} bytes]")));
        assert_eq!(capped("short"), "short");
    }
}
