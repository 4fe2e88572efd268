//! The Anthropic Messages provider.
//!
//! This module owns the Messages wire format: the neutral conversation
//! becomes a `POST {base_url}/messages` body with a top-level `system`
//! prompt, `tool_use` blocks in assistant turns and `tool_result` blocks in
//! user turns (consecutive messages of one role merged, as the API wants
//! roles to alternate); the answer comes back whole or, with `stream`, as
//! server-sent events whose text deltas go to the observer as they arrive
//! and whose `input_json_delta` pieces are assembled into tool-call
//! arguments. Authentication is `x-api-key` plus an `anthropic-version`
//! header. It does not retry (see [`super::retry`]) and never lets the key
//! reach an error message or `Debug` output.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::HeaderName;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::http::{HttpTarget, StreamDecoder, StreamFailure};
use super::sse::SseEvent;
use super::{
    ChatRequest, ChatResponse, Message, ModelProvider, ProviderError, ProviderObserver, ToolCall,
    ToolChoice,
};
use crate::provider::{ModelInfo, Usage};
use futures_util::future::BoxFuture;

const PROVIDER: &str = "anthropic";
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
const DEFAULT_API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// The API version this module's wire format follows.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; enough for a long tool call.
const MAX_OUTPUT_TOKENS: u32 = 8192;
/// Claude 3 (not 3.5 and later) models allow at most 4096 output tokens.
const MAX_OUTPUT_TOKENS_CLAUDE_3: u32 = 4096;

/// What an [`AnthropicProvider`] is built from; mirrors the job's `model:` block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnthropicConfig {
    pub name: String,
    /// Defaults to `https://api.anthropic.com/v1`; a URL without a path
    /// (`https://api.anthropic.com`, as Anthropic's SDKs write it) gets `/v1`.
    pub base_url: Option<String>,
    /// Defaults to `ANTHROPIC_API_KEY`.
    pub api_key_env: Option<String>,
    pub request_timeout: Duration,
    pub stream: bool,
}

#[derive(Debug)]
pub struct AnthropicProvider {
    model: String,
    target: HttpTarget,
    stream: bool,
    /// Caps the answer's length (a sampling request's `maxTokens`).
    max_output_tokens: Option<u32>,
}

impl AnthropicProvider {
    /// The same provider, asking for answers of at most `max` tokens (the
    /// `maxTokens` of an MCP server's sampling request).
    pub fn with_max_output_tokens(mut self, max: u32) -> Self {
        self.max_output_tokens = Some(max);
        self
    }

    /// Builds the provider, reading the key from `config.api_key_env`; a
    /// server on loopback may run without one.
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let env = config
            .api_key_env
            .clone()
            .unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_string());
        let key = std::env::var(&env).ok().filter(|key| !key.is_empty());
        Self::with_api_key(config, key)
    }

    pub fn with_api_key(
        config: AnthropicConfig,
        api_key: Option<String>,
    ) -> Result<Self, ProviderError> {
        let api_key_env = config
            .api_key_env
            .unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_string());
        let mut base_url = config
            .base_url
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        if reqwest::Url::parse(&base_url).is_ok_and(|url| url.path() == "/") {
            base_url = format!("{}/v1", base_url.trim_end_matches('/'));
        }
        let target = HttpTarget::new(
            PROVIDER,
            &base_url,
            "messages",
            api_key_env,
            api_key,
            config.request_timeout,
            DEFAULT_BASE_URL,
        )?;
        Ok(Self {
            model: config.name,
            target,
            stream: config.stream,
            max_output_tokens: None,
        })
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.target.endpoint
    }

    /// Sends one request, once, with partial text going to `observer`.
    pub async fn send_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn ProviderObserver,
    ) -> Result<ChatResponse, ProviderError> {
        self.target.attempt(self.exchange(request, observer)).await
    }

    async fn exchange(
        &self,
        request: &ChatRequest,
        observer: &dyn ProviderObserver,
    ) -> Result<ChatResponse, ProviderError> {
        let mut body = wire_request(request, &self.model, self.stream);
        if let Some(max) = self.max_output_tokens {
            body.max_tokens = max;
        }
        let mut builder = self
            .target
            .client
            .post(&self.target.endpoint)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&body);
        if let Some((name, value)) = self
            .target
            .key_header(HeaderName::from_static("x-api-key"), false)?
        {
            builder = builder.header(name, value);
        }
        let response = self
            .target
            .send(builder, &body.model, is_prompt_too_long)
            .await?;
        self.target
            .read_answer(response, EventDecoder::default(), parse_response, observer)
            .await
    }
}

impl ModelProvider for AnthropicProvider {
    fn model_info(&self) -> ModelInfo {
        ModelInfo {
            provider: PROVIDER.to_string(),
            name: self.model.clone(),
        }
    }

    fn complete_observed<'a>(
        &'a self,
        request: &'a ChatRequest,
        observer: &'a dyn ProviderObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(self.send_observed(request, observer))
    }
}

/// Anthropic answers an over-long prompt with a 400 `invalid_request_error`
/// saying "prompt is too long", and a request over its size limit (a
/// conversation full of large tool outputs) with a 413 `request_too_large`;
/// trimming helps with both.
fn is_prompt_too_long(status: u16, body: &str) -> bool {
    (status == 400 || status == 413)
        && (body.contains("prompt is too long")
            || body.contains("exceed context limit")
            || body.contains("context window")
            || body.contains("request_too_large"))
}

/// Reads a streamed Messages body from any byte stream, as
/// [`AnthropicProvider`] does. Public for benchmarks and tests.
pub async fn decode_stream<S, B, E>(
    body: S,
    observer: &dyn ProviderObserver,
) -> Result<ChatResponse, StreamFailure>
where
    S: futures_util::Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    super::http::decode_stream(body, EventDecoder::default(), observer).await
}

// ---- wire format: private to this module ----

#[derive(Serialize)]
struct WireRequest {
    model: String,
    max_tokens: u32,
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

fn max_output_tokens(model: &str) -> u32 {
    let claude_3 = ["claude-3-opus", "claude-3-sonnet", "claude-3-haiku"];
    if claude_3.iter().any(|prefix| model.starts_with(prefix)) {
        MAX_OUTPUT_TOKENS_CLAUDE_3
    } else {
        MAX_OUTPUT_TOKENS
    }
}

fn wire_request(request: &ChatRequest, configured_model: &str, stream: bool) -> WireRequest {
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
    let mut messages: Vec<WireMessage> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::System { .. } => continue,
            Message::User { content } => ("user", vec![text_block(content)]),
            Message::Assistant {
                content,
                tool_calls,
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
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => messages.push(WireMessage {
                role,
                content: blocks,
            }),
        }
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
enum WireBlock {
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
    #[serde(other)]
    Other,
}

#[derive(Clone, Copy, Default, Deserialize)]
struct WireUsage {
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
    fn merge(&mut self, later: WireUsage) {
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
    fn neutral(self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0) + read + write,
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }
}

fn arguments_text(input: Value) -> String {
    match input {
        // Sent as a string by some proxies; kept verbatim, even if malformed.
        Value::String(text) => text,
        Value::Null => "{}".to_string(),
        other => other.to_string(),
    }
}

fn parse_response(body: &str) -> Result<ChatResponse, String> {
    let wire: WireResponse = serde_json::from_str(body)
        .map_err(|err| format!("a body that is not Messages JSON ({err})"))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in wire.content {
        match block {
            WireBlock::Text { text: part } => text.push_str(&part),
            WireBlock::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                id,
                name,
                arguments: arguments_text(input),
            }),
            WireBlock::Other => {}
        }
    }
    Ok(ChatResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        usage: wire.usage.unwrap_or_default().neutral(),
        finish_reason: wire.stop_reason,
    })
}

// ---- streaming: message_start … message_stop ----

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
    Other,
}

/// Assembles a streamed answer from content blocks keyed by `index`.
#[derive(Default)]
struct EventDecoder {
    blocks: BTreeMap<usize, PartialBlock>,
    stop_reason: Option<String>,
    usage: WireUsage,
}

impl StreamDecoder for EventDecoder {
    fn event(&mut self, event: &SseEvent, observer: &dyn ProviderObserver) -> Result<bool, String> {
        if event.data.trim().is_empty() {
            return Ok(false);
        }
        let wire: WireEvent = serde_json::from_str(&event.data)
            .map_err(|err| format!("an event that is not Messages JSON ({err})"))?;
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
                    (None, _) => {
                        return Err(format!(
                            "a delta for content block {index}, which never started"
                        ));
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
                return Err(format!("the server reported an error: {message}"));
            }
            WireEvent::ContentBlockStop {} | WireEvent::Ping {} | WireEvent::Unknown => {}
        }
        Ok(false)
    }

    fn finish(self) -> Result<ChatResponse, String> {
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                PartialBlock::Text(part) => text.push_str(&part),
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
            text: (!text.is_empty()).then_some(text),
            tool_calls,
            usage: self.usage.neutral(),
            finish_reason: self.stop_reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolDefinition;

    fn config(base_url: &str) -> AnthropicConfig {
        AnthropicConfig {
            name: "claude-test".to_string(),
            base_url: Some(base_url.to_string()),
            api_key_env: Some("AGENTCI_UNIT_TEST_UNSET_KEY".to_string()),
            request_timeout: Duration::from_secs(5),
            stream: false,
        }
    }

    #[test]
    fn base_url_without_a_path_gets_v1() {
        let provider =
            AnthropicProvider::with_api_key(config("https://api.anthropic.com"), Some("k".into()))
                .unwrap();
        assert_eq!(provider.endpoint(), "https://api.anthropic.com/v1/messages");
        let provider =
            AnthropicProvider::with_api_key(config("http://127.0.0.1:9/v1/"), None).unwrap();
        assert_eq!(provider.endpoint(), "http://127.0.0.1:9/v1/messages");
        let err =
            AnthropicProvider::with_api_key(config("https://api.anthropic.com"), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("AGENTCI_UNIT_TEST_UNSET_KEY is not set")
        );
    }

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
                input_tokens: 130,
                output_tokens: 5,
                cache_read_tokens: 100,
                cache_write_tokens: 20
            }
        );
    }

    const STREAM: &str = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":40,\"output_tokens\":1,\"cache_read_input_tokens\":0}}}\n\n",
        "event: ping\ndata: {\"type\":\"ping\"}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me \"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"look.\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\".txt\\\"}\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":15}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );

    struct Collect(std::sync::Mutex<String>);
    impl ProviderObserver for Collect {
        fn partial_text(&self, delta: &str) {
            self.0.lock().unwrap().push_str(delta);
        }
    }

    fn decode(body: &str, chunk: usize) -> (Result<ChatResponse, StreamFailure>, String) {
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> = body
            .as_bytes()
            .chunks(chunk)
            .map(|c| Ok(c.to_vec()))
            .collect();
        let seen = Collect(std::sync::Mutex::new(String::new()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let result = runtime.block_on(decode_stream(futures_util::stream::iter(pieces), &seen));
        (result, seen.0.into_inner().unwrap())
    }

    #[test]
    fn stream_assembles_text_tool_input_and_usage() {
        for chunk in [1, 13, STREAM.len()] {
            let (result, seen) = decode(STREAM, chunk);
            let response = result.unwrap();
            assert_eq!(seen, "Let me look.");
            assert_eq!(response.text.as_deref(), Some("Let me look."));
            assert_eq!(response.tool_calls.len(), 1);
            assert_eq!(response.tool_calls[0].arguments, r#"{"path": "a.txt"}"#);
            assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
            assert_eq!(response.usage.input_tokens, 40);
            assert_eq!(response.usage.output_tokens, 15);
        }
    }

    #[test]
    fn stream_without_message_stop_is_incomplete_and_errors_fail() {
        let cut = &STREAM[..STREAM.find("event: message_delta").unwrap()];
        let (result, _) = decode(cut, 50);
        assert_eq!(
            result.unwrap_err(),
            StreamFailure::Incomplete { events: 10 }
        );
        let (result, _) = decode(
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            7,
        );
        assert!(matches!(result, Err(StreamFailure::Malformed(m)) if m.contains("Overloaded")));
    }

    #[test]
    fn prompt_too_long_is_recognised() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(is_prompt_too_long(400, body));
        assert!(!is_prompt_too_long(
            400,
            r#"{"type":"error","error":{"message":"max_tokens: bad"}}"#
        ));
        assert!(!is_prompt_too_long(529, body));
        // A request over the size limit was a plain HTTP 413 that ended the run.
        assert!(is_prompt_too_long(
            413,
            r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#
        ));
    }
}
