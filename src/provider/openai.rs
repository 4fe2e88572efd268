//! The OpenAI Chat Completions provider: any OpenAI-compatible server
//! (OpenAI, vLLM, Ollama, llama.cpp, OpenRouter…).
//!
//! This module owns the wire format: it turns a neutral [`ChatRequest`] into
//! a `POST {base_url}/chat/completions` body with tool definitions, and the
//! answer back into a [`ChatResponse`], read whole or, with `stream`, from
//! server-sent events (text deltas go to the observer as they arrive,
//! tool-call arguments are assembled from their pieces). Every failure
//! becomes a one-line [`ProviderError`] that says what to fix. It does not
//! retry (see [`super::retry`]) and never lets the API key reach an error
//! message or `Debug` output.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::AUTHORIZATION;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::http::{HttpTarget, StreamDecoder, StreamFailure};
use super::sse::SseEvent;
use super::{
    ChatRequest, ChatResponse, Message, ModelProvider, ProviderError, ProviderObserver, ToolCall,
    ToolChoice, Unobserved,
};
use crate::provider::{ModelInfo, Usage};
use futures_util::future::BoxFuture;

const PROVIDER: &str = "openai";
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
/// What an assistant turn with neither text nor tool calls is sent back as.
const EMPTY_ANSWER: &str = "(no answer)";

/// What an [`OpenAiProvider`] is built from; mirrors the job file's `model:` block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpenAiConfig {
    /// The model name, as sent in requests and shown in the trace.
    pub name: String,
    /// Defaults to `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    /// The environment variable holding the key; defaults to `OPENAI_API_KEY`.
    pub api_key_env: Option<String>,
    /// Time allowed for one whole request, connect to last byte.
    pub request_timeout: Duration,
    /// Ask for server-sent events and read the answer as it arrives.
    pub stream: bool,
}

/// A Chat Completions client, configured once and reused for every request.
#[derive(Debug)]
pub struct OpenAiProvider {
    model: String,
    target: HttpTarget,
    stream: bool,
    /// Caps the answer's length (a sampling request's `maxTokens`).
    max_output_tokens: Option<u32>,
}

impl OpenAiProvider {
    /// The same provider, asking for answers of at most `max` tokens (the
    /// `maxTokens` of an MCP server's sampling request).
    pub fn with_max_output_tokens(mut self, max: u32) -> Self {
        self.max_output_tokens = Some(max);
        self
    }

    /// Builds the provider, reading the key from `config.api_key_env`.
    ///
    /// A server on the loopback interface may run without a key, since local
    /// servers (llama.cpp, Ollama, vLLM) usually do not check one.
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let env = config
            .api_key_env
            .clone()
            .unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_string());
        let key = std::env::var(&env).ok().filter(|key| !key.is_empty());
        Self::with_api_key(config, key)
    }

    /// Builds the provider with a key the caller already has (or none).
    ///
    /// [`OpenAiProvider::new`] is the usual entry point; this one exists so
    /// callers and tests need not go through the process environment.
    pub fn with_api_key(
        config: OpenAiConfig,
        api_key: Option<String>,
    ) -> Result<Self, ProviderError> {
        let api_key_env = config
            .api_key_env
            .unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_string());
        let base_url = config
            .base_url
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let target = HttpTarget::new(
            PROVIDER,
            &base_url,
            "chat/completions",
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

    /// Sends one request, once. A retry policy wraps this: every error it
    /// returns is final for this attempt and says whether the server answered.
    pub async fn send(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.send_observed(request, &Unobserved).await
    }

    /// [`send`](Self::send), with partial text going to `observer`.
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
            body.max_completion_tokens = Some(max);
        }
        let mut builder = self.target.client.post(&self.target.endpoint).json(&body);
        if let Some((name, value)) = self.target.key_header(AUTHORIZATION, true)? {
            builder = builder.header(name, value);
        }
        let response = self
            .target
            .send(builder, body.model, is_context_length_error)
            .await?;
        self.target
            .read_answer(response, ChunkDecoder::default(), parse_response, observer)
            .await
    }
}

impl ModelProvider for OpenAiProvider {
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

/// OpenAI's `context_length_exceeded`, and the wording of servers that
/// copy its message but not its code (vLLM, llama.cpp).
fn is_context_length_error(status: u16, body: &str) -> bool {
    if status != 400 && status != 413 {
        return false;
    }
    let code = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|json| json.pointer("/error/code").cloned());
    code.as_ref().and_then(Value::as_str) == Some("context_length_exceeded")
        || body.contains("maximum context length")
        || body.contains("context length exceeded")
        || body.contains("exceeds the context window")
}

/// Reads a streamed body, as [`OpenAiProvider`] does, from any byte stream.
/// Public for benchmarks and tests; the event format stays private.
pub async fn decode_stream<S, B, E>(
    body: S,
    observer: &dyn ProviderObserver,
) -> Result<ChatResponse, StreamFailure>
where
    S: futures_util::Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    super::http::decode_stream(body, ChunkDecoder::default(), observer).await
}

// ---- wire format: private to this module ----

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    /// OpenAI rejects an empty `tools` array, so it is left out instead.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    /// `"none"` on a turn that must answer in text; only sent with `tools`,
    /// since the API refuses `tool_choice` without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<WireStreamOptions>,
    /// Only sent when capped; the API's default is the model's maximum.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
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
fn wire_request<'a>(
    request: &'a ChatRequest,
    configured_model: &'a str,
    stream: bool,
) -> WireRequest<'a> {
    let model = if request.model.is_empty() {
        configured_model
    } else {
        &request.model
    };
    WireRequest {
        model,
        messages: merged_system(request.messages.iter().map(wire_message)),
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
        tool_choice: (request.tool_choice == ToolChoice::None && !request.tools.is_empty())
            .then_some("none"),
        stream,
        stream_options: stream.then_some(WireStreamOptions {
            include_usage: true,
        }),
        max_completion_tokens: None,
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

fn wire_message(message: &Message) -> WireMessage<'_> {
    match message {
        Message::System { content } => WireMessage::System {
            content: content.into(),
        },
        Message::User { content } => WireMessage::User { content },
        Message::Assistant {
            content,
            tool_calls,
        } => WireMessage::Assistant {
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
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
}

impl WireUsage {
    /// `prompt_tokens` already counts the cached ones, as [`Usage`] does.
    fn neutral(self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            cache_read_tokens: self
                .prompt_tokens_details
                .and_then(|details| details.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}

#[derive(Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Parses a success body; the error says what was wrong with it.
fn parse_response(body: &str) -> Result<ChatResponse, String> {
    let wire: WireResponse = serde_json::from_str(body)
        .map_err(|err| format!("a body that is not Chat Completions JSON ({err})"))?;
    let Some(choice) = wire.choices.into_iter().next() else {
        return Err("no choices".to_string());
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
        text: choice.message.content.filter(|text| !text.is_empty()),
        tool_calls,
        usage,
        finish_reason: choice.finish_reason,
    })
}

// ---- streaming: `chat.completion.chunk` events ----

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Vec<WireChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Some servers report a failure inside the stream.
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChunkChoice {
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallDelta>>,
}

#[derive(Deserialize)]
struct WireToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionDelta>,
}

#[derive(Deserialize)]
struct WireFunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// A tool call being assembled from its deltas.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a streamed answer: text and tool-call pieces keyed by their
/// `index`, the finish reason, and usage from the last chunk.
#[derive(Default)]
struct ChunkDecoder {
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl StreamDecoder for ChunkDecoder {
    fn event(&mut self, event: &SseEvent, observer: &dyn ProviderObserver) -> Result<bool, String> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: WireChunk = serde_json::from_str(data)
            .map_err(|err| format!("a chunk that is not Chat Completions JSON ({err})"))?;
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(format!("the server reported an error: {message}"));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.neutral());
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                    observer.partial_text(&text);
                    self.text.push_str(&text);
                }
                for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate()
                {
                    let slot = self
                        .calls
                        .entry(call.index.unwrap_or(position))
                        .or_default();
                    if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                        slot.id = id;
                    }
                    if let Some(function) = call.function {
                        if let Some(name) = function.name {
                            slot.name.push_str(&name);
                        }
                        if let Some(arguments) = function.arguments {
                            slot.arguments.push_str(&arguments);
                        }
                    }
                }
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(false)
    }

    fn finish(self) -> Result<ChatResponse, String> {
        let tool_calls = self
            .calls
            .into_values()
            .enumerate()
            .map(|(index, call)| ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{}", index + 1)
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        Ok(ChatResponse {
            text: (!self.text.is_empty()).then_some(self.text),
            tool_calls,
            usage: self.usage.unwrap_or_default(),
            finish_reason: self.finish_reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base_url: &str) -> OpenAiConfig {
        OpenAiConfig {
            name: "gpt-test".to_string(),
            base_url: Some(base_url.to_string()),
            api_key_env: Some("AGENTCI_UNIT_TEST_UNSET_KEY".to_string()),
            request_timeout: Duration::from_secs(5),
            stream: false,
        }
    }

    #[test]
    fn loopback_hosts_need_no_key() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost/v1",
            "http://[::1]:1/v1",
        ] {
            assert!(
                OpenAiProvider::with_api_key(config(url), None).is_ok(),
                "{url}"
            );
        }
        let err = OpenAiProvider::with_api_key(config("http://10.0.0.1/v1"), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("AGENTCI_UNIT_TEST_UNSET_KEY is not set"),
            "{err}"
        );
    }

    #[test]
    fn debug_output_hides_the_key() {
        let provider = OpenAiProvider::with_api_key(
            config("https://example.invalid/v1"),
            Some("sk-secret-123".into()),
        )
        .unwrap();
        let debug = format!("{provider:?}");
        assert!(!debug.contains("sk-secret-123"), "{debug}");
        assert!(debug.contains("<redacted>"), "{debug}");
    }

    #[test]
    fn bad_base_url_is_a_config_error() {
        let err = OpenAiProvider::with_api_key(config("not a url"), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("model.base_url \"not a url\" is not a valid URL"),
            "{err}"
        );
        let err = OpenAiProvider::with_api_key(config("ftp://127.0.0.1/v1"), None).unwrap_err();
        assert!(err.to_string().contains("must start with http"), "{err}");
    }

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
            parse_response(r#"{"choices":[]}"#).unwrap_err(),
            "no choices"
        );
    }

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

    const STREAM: &str = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Looking \"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"around.\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"pa\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\":\\\"a.txt\\\"}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":10}}}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn stream_assembles_text_and_interleaved_tool_calls() {
        for chunk in [1, 7, 64, STREAM.len()] {
            let (result, seen) = decode(STREAM, chunk);
            let response = result.unwrap();
            assert_eq!(response.text.as_deref(), Some("Looking around."));
            assert_eq!(seen, "Looking around.", "chunk size {chunk}");
            assert_eq!(response.tool_calls.len(), 2);
            assert_eq!(response.tool_calls[0].id, "call_a");
            assert_eq!(response.tool_calls[0].name, "read");
            assert_eq!(response.tool_calls[0].arguments, r#"{"path":"a.txt"}"#);
            assert_eq!(response.tool_calls[1].name, "ls");
            assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
            assert_eq!(
                (
                    response.usage.input_tokens,
                    response.usage.output_tokens,
                    response.usage.cache_read_tokens
                ),
                (50, 7, 10)
            );
        }
    }

    #[test]
    fn a_stream_without_done_is_incomplete() {
        let cut = &STREAM[..STREAM.find("data: {\"choices\":[],").unwrap()];
        let (result, _) = decode(cut, 16);
        assert_eq!(result.unwrap_err(), StreamFailure::Incomplete { events: 8 });
    }

    #[test]
    fn garbage_and_in_stream_errors_are_failures() {
        let (result, _) = decode("data: {not json\n\n", 4);
        assert!(
            matches!(result, Err(StreamFailure::Malformed(m)) if m.contains("not Chat Completions JSON"))
        );
        let (result, _) = decode("data: {\"error\":{\"message\":\"overloaded\"}}\n\n", 100);
        assert!(matches!(result, Err(StreamFailure::Malformed(m)) if m.contains("overloaded")));
    }

    #[test]
    fn tool_choice_none_goes_out_only_with_tools() {
        let mut request = ChatRequest {
            model: String::new(),
            messages: vec![Message::User {
                content: "report".into(),
            }],
            tools: Vec::new(),
            tool_choice: ToolChoice::None,
        };
        let body = serde_json::to_value(wire_request(&request, "gpt-test", false)).unwrap();
        // OpenAI refuses `tool_choice` without `tools`.
        assert_eq!(body.get("tool_choice"), None);
        request.tools.push(crate::provider::ToolDefinition {
            name: "read".into(),
            description: "read a file".into(),
            parameters: serde_json::json!({"type": "object"}),
        });
        let body = serde_json::to_value(wire_request(&request, "gpt-test", false)).unwrap();
        assert_eq!(body["tool_choice"], "none");
        request.tool_choice = ToolChoice::Auto;
        let body = serde_json::to_value(wire_request(&request, "gpt-test", false)).unwrap();
        assert_eq!(body.get("tool_choice"), None);
    }

    #[test]
    fn an_empty_answer_goes_back_with_text_and_tool_calls_with_null() {
        // An empty answer (no text, no calls) was sent back as
        // `"content": null`, which OpenAI refuses with a 400 on the next turn.
        let request = ChatRequest {
            model: String::new(),
            messages: vec![
                Message::User {
                    content: "plan".into(),
                },
                Message::Assistant {
                    content: None,
                    tool_calls: Vec::new(),
                },
                Message::Assistant {
                    content: Some(String::new()),
                    tool_calls: Vec::new(),
                },
                Message::Assistant {
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
        let body = serde_json::to_value(wire_request(&request, "gpt-test", false)).unwrap();
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[1]["content"], EMPTY_ANSWER);
        assert_eq!(messages[2]["content"], EMPTY_ANSWER);
        assert_eq!(messages[3]["content"], Value::Null);
        assert_eq!(messages[3]["tool_calls"][0]["function"]["name"], "ls");
    }

    #[test]
    fn context_length_errors_are_recognised() {
        let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert!(is_context_length_error(400, body));
        assert!(is_context_length_error(
            400,
            r#"{"error":{"message":"maximum context length is 4096"}}"#
        ));
        assert!(!is_context_length_error(
            400,
            r#"{"error":{"message":"bad model"}}"#
        ));
        assert!(!is_context_length_error(500, body));
    }
}
