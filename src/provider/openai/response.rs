//! A whole (not streamed) Chat Completions answer: the first choice's text
//! and tool calls (arguments as a string or an object, ids made up when a
//! server leaves them out) and the usage as neutral token counts.

use serde::Deserialize;
use serde_json::Value;

use crate::provider::Usage;
use crate::provider::answer_error::AnswerError;
use crate::provider::{ChatResponse, Reasoning, ToolCall};

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireResponseMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireResponseMessage {
    /// What the model thought, from servers of open reasoning models
    /// (vLLM, SGLang, llama.cpp, DeepSeek); some name it `reasoning`.
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireResponseToolCall>>,
}

#[derive(Deserialize)]
struct WireResponseToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireResponseFunction,
}

#[derive(Deserialize)]
struct WireResponseFunction {
    name: String,
    /// A string per the API; some servers send the object itself.
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<WireCompletionDetails>,
}

#[derive(Deserialize)]
struct WireCompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// `prompt_tokens` already counts the cached ones, as [`Usage`] does.
    pub(super) fn neutral(self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            cache_read_tokens: self
                .prompt_tokens_details
                .and_then(|details| details.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
            reasoning_tokens: self
                .completion_tokens_details
                .and_then(|details| details.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

#[derive(Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Parses a success body; the error says what was wrong with it.
pub(super) fn parse_response(body: &str) -> Result<ChatResponse, AnswerError> {
    let wire: WireResponse = serde_json::from_str(body).map_err(|source| AnswerError::NotJson {
        what: "a body",
        format: "Chat Completions",
        source,
    })?;
    let Some(choice) = wire.choices.into_iter().next() else {
        return Err(AnswerError::NoChoices);
    };
    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, call)| ToolCall {
            // Some local servers omit ids; the agent needs one to pair results.
            id: call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{}", index + 1)),
            name: call.function.name,
            arguments: match call.function.arguments {
                Value::String(text) => text,
                Value::Null => String::new(),
                other => other.to_string(),
            },
        })
        .collect();
    let usage = wire.usage.map_or_else(Usage::default, WireUsage::neutral);
    Ok(ChatResponse {
        reasoning: reasoning_of(choice.message.reasoning_content),
        text: choice.message.content.filter(|text| !text.is_empty()),
        tool_calls,
        usage,
        finish_reason: choice.finish_reason,
    })
}

/// A server's reasoning text as the neutral reasoning; none when empty.
pub(super) fn reasoning_of(text: Option<String>) -> Vec<Reasoning> {
    text.filter(|text| !text.is_empty())
        .map(|text| Reasoning::Text { text })
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_accepts_object_arguments_and_missing_ids() {
        let body = r#"{"choices":[{"message":{"content":"","tool_calls":[
            {"function":{"name":"ls","arguments":{"path":"."}}}]},"finish_reason":"tool_calls"}]}"#;
        let response = parse_response(body).unwrap();
        assert_eq!(response.text, None);
        assert_eq!(response.tool_calls[0].id, "call_1");
        assert_eq!(response.tool_calls[0].arguments, r#"{"path":"."}"#);
        assert_eq!(response.usage, Usage::default());
        assert_eq!(
            parse_response(r#"{"choices":[]}"#).unwrap_err().to_string(),
            "no choices"
        );
    }
}
