//! The OpenAI Chat Completions provider: any OpenAI-compatible server
//! (OpenAI, vLLM, Ollama, llama.cpp, OpenRouter…).
//!
//! This module owns the wire format: it turns a neutral [`ChatRequest`] into
//! a `POST {base_url}/chat/completions` body with tool definitions, and the
//! answer back into a [`ChatResponse`]. Every failure becomes a one-line
//! [`ProviderError`] that says what to fix. It does not retry (a policy can
//! wrap [`OpenAiProvider::send`]), does not stream, and never lets the API key
//! reach an error message or `Debug` output.

use std::fmt;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ChatRequest, ChatResponse, Message, ModelProvider, ProviderError, ToolCall};
use crate::event::{ModelInfo, Usage};
use crate::tools::BoxFuture;

const PROVIDER: &str = "openai";
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
/// How much of an unparseable body an error message quotes.
const BODY_EXCERPT_CHARS: usize = 200;

/// What an [`OpenAiProvider`] is built from; mirrors the job file's `model:` block.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenAiConfig {
    /// The model name, as sent in requests and shown in the trace.
    pub name: String,
    /// Defaults to `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    /// The environment variable holding the key; defaults to `OPENAI_API_KEY`.
    pub api_key_env: Option<String>,
    /// Time allowed for one whole request, connect to last byte.
    pub request_timeout: Duration,
}

/// An API key that never shows itself in `Debug` output.
#[derive(Clone)]
struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// A Chat Completions client, configured once and reused for every request.
#[derive(Debug)]
pub struct OpenAiProvider {
    model: String,
    /// `{base_url}/chat/completions`.
    endpoint: String,
    api_key_env: String,
    api_key: Option<ApiKey>,
    request_timeout: Duration,
    client: reqwest::Client,
}

impl OpenAiProvider {
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
        let parsed = reqwest::Url::parse(&base_url).map_err(|err| {
            ProviderError::Config(format!(
                "model.base_url {base_url:?} is not a valid URL: {err}; write it like https://api.openai.com/v1"
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ProviderError::Config(format!(
                "model.base_url {base_url:?} must start with http:// or https://"
            )));
        }
        let api_key = api_key.filter(|key| !key.is_empty()).map(ApiKey);
        if api_key.is_none() && !is_loopback(&parsed) {
            return Err(ProviderError::Config(format!(
                "environment variable {api_key_env} is not set; set it to your API key, or set model.api_key_env to the variable that holds it"
            )));
        }
        let client = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.request_timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|err| {
                ProviderError::Config(format!("cannot set up the HTTP client: {err}"))
            })?;
        Ok(Self {
            model: config.name,
            endpoint: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            api_key_env,
            api_key,
            request_timeout: config.request_timeout,
            client,
        })
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Sends one request, once. A retry policy wraps this: every error it
    /// returns is final for this attempt and says whether the server answered.
    pub async fn send(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let body = wire_request(request, &self.model);
        let mut builder = self.client.post(&self.endpoint).json(&body);
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.0)).map_err(|_| {
                ProviderError::Config(format!(
                    "the API key in {} contains characters that cannot go in an HTTP header",
                    self.api_key_env
                ))
            })?;
            value.set_sensitive(true);
            builder = builder.header(AUTHORIZATION, value);
        }
        let response = builder
            .send()
            .await
            .map_err(|err| self.transport_error(&err))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|err| self.transport_error(&err))?;
        if !status.is_success() {
            return Err(self.http_error(status, &text, body.model));
        }
        parse_response(&text).map_err(|reason| {
            ProviderError::Unavailable(format!(
                "the model server at {} answered with {reason}; body starts with {:?}",
                self.endpoint,
                excerpt(&text)
            ))
        })
    }

    fn transport_error(&self, err: &reqwest::Error) -> ProviderError {
        if err.is_timeout() {
            return ProviderError::Unavailable(format!(
                "the model server at {} did not answer within {}; raise model.request_timeout or check the server",
                self.endpoint,
                format_duration(self.request_timeout)
            ));
        }
        let cause = root_cause(err);
        if err.is_connect() {
            return ProviderError::Unavailable(format!(
                "cannot reach the model server at {}: {cause}; is the server running and model.base_url right?",
                self.endpoint
            ));
        }
        ProviderError::Unavailable(format!(
            "the request to the model server at {} failed: {cause}",
            self.endpoint
        ))
    }

    fn http_error(&self, status: reqwest::StatusCode, body: &str, model: &str) -> ProviderError {
        let mut message = server_message(body).unwrap_or_else(|| {
            status
                .canonical_reason()
                .unwrap_or("no message")
                .to_string()
        });
        if let Some(key) = &self.api_key {
            // Some servers echo the key they rejected.
            message = message.replace(&key.0, "<redacted>");
        }
        let hint = match status.as_u16() {
            401 | 403 => format!("; check the API key in {}", self.api_key_env),
            404 => format!("; check model.base_url and the model name {model:?}"),
            _ => String::new(),
        };
        ProviderError::Http {
            provider: PROVIDER.to_string(),
            status: status.as_u16(),
            url: self.endpoint.clone(),
            message: format!("{message}{hint}"),
        }
    }
}

impl ModelProvider for OpenAiProvider {
    fn model_info(&self) -> ModelInfo {
        ModelInfo {
            provider: PROVIDER.to_string(),
            name: self.model.clone(),
        }
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(self.send(request))
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host_str() {
        Some(host) if host.eq_ignore_ascii_case("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// The innermost error's text, which names the real cause ("connection
/// refused", "dns error: …") where reqwest's own text only names the URL.
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    if let Some(io) = current.downcast_ref::<std::io::Error>()
        && io.kind() == std::io::ErrorKind::ConnectionRefused
    {
        return "connection refused".to_string();
    }
    lowercase_first(&current.to_string())
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `error.message` (OpenAI, vLLM) or `error` as a string (Ollama); else the
/// body itself when it is short text.
fn server_message(body: &str) -> Option<String> {
    let message = match serde_json::from_str::<Value>(body) {
        Ok(json) => match json.get("error") {
            Some(Value::Object(error)) => error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string),
            Some(Value::String(error)) => Some(error.clone()),
            _ => json
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string),
        },
        Err(_) => Some(excerpt(body)),
    }?;
    let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    (!one_line.is_empty()).then_some(one_line)
}

fn excerpt(text: &str) -> String {
    let mut cut: String = text.chars().take(BODY_EXCERPT_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}

// ---- wire format: private to this module ----

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    /// OpenAI rejects an empty `tools` array, so it is left out instead.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum WireMessage<'a> {
    System {
        content: &'a str,
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
fn wire_request<'a>(request: &'a ChatRequest, configured_model: &'a str) -> WireRequest<'a> {
    let model = if request.model.is_empty() {
        configured_model
    } else {
        &request.model
    };
    WireRequest {
        model,
        messages: request.messages.iter().map(wire_message).collect(),
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
    }
}

fn wire_message(message: &Message) -> WireMessage<'_> {
    match message {
        Message::System { content } => WireMessage::System { content },
        Message::User { content } => WireMessage::User { content },
        Message::Assistant {
            content,
            tool_calls,
        } => WireMessage::Assistant {
            content: content.as_deref(),
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
    let usage = wire.usage.map_or_else(Usage::default, |usage| Usage {
        input_tokens: usage.prompt_tokens,
        output_tokens: usage.completion_tokens,
        cache_read_tokens: usage
            .prompt_tokens_details
            .and_then(|details| details.cached_tokens)
            .unwrap_or(0),
    });
    Ok(ChatResponse {
        text: choice.message.content.filter(|text| !text.is_empty()),
        tool_calls,
        usage,
        finish_reason: choice.finish_reason,
    })
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
    fn server_message_reads_the_common_shapes() {
        assert_eq!(
            server_message(r#"{"error":{"message":"bad key\nreally"}}"#).as_deref(),
            Some("bad key really")
        );
        assert_eq!(
            server_message(r#"{"error":"model not found"}"#).as_deref(),
            Some("model not found")
        );
        assert_eq!(
            server_message("<html>oops</html>").as_deref(),
            Some("<html>oops</html>")
        );
        assert_eq!(server_message(""), None);
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

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(Duration::from_secs(30)), "30s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
    }
}
