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

use reqwest::header::AUTHORIZATION;
use serde_json::Value;

use super::http::{HttpTarget, StreamFailure};
use super::{
    ChatRequest, ChatResponse, ModelProvider, ProviderError, ProviderObserver, Unobserved,
};
use crate::provider::ModelInfo;
use futures_util::future::BoxFuture;

mod request;
mod response;
mod stream;

use request::wire_request;
use response::parse_response;
use stream::ChunkDecoder;

const PROVIDER: &str = "openai";
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
/// What an [`OpenAiProvider`] is built from: the base URL defaults to
/// [`DEFAULT_BASE_URL`], the key's variable to `OPENAI_API_KEY`.
pub type OpenAiConfig = crate::provider::ApiConfig;

/// Where a Chat Completions server is and how it takes its key: OpenAI's
/// way by default (`{base_url}/chat/completions`, `Authorization: Bearer`);
/// Azure OpenAI's deployment URL and `api-key` header come from
/// [`super::azure`], so both share one wire format and one client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatEndpoint {
    /// The provider's name, as errors and the trace say it.
    pub provider: &'static str,
    pub base_url: String,
    /// What follows the base URL, query included.
    pub path: String,
    /// The variable the key came from, for messages.
    pub key_env: String,
    pub key_header: KeyHeader,
}

/// How the key goes in a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyHeader {
    /// `Authorization: Bearer KEY` (OpenAI, and Azure's Entra ID tokens).
    Bearer,
    /// `api-key: KEY` (an Azure OpenAI resource key).
    ApiKey,
}

/// A Chat Completions client, configured once and reused for every request.
#[derive(Debug)]
pub struct OpenAiProvider {
    provider: &'static str,
    model: String,
    target: HttpTarget,
    key_header: KeyHeader,
    stream: bool,
    /// `model.reasoning`: the effort asked for, and whether
    /// `reasoning_content` goes back.
    reasoning: crate::provider::ReasoningSettings,
}

impl OpenAiProvider {
    /// Builds the provider, reading the key from `config.api_key_env`.
    ///
    /// A server on the loopback interface may run without a key, since local
    /// servers (llama.cpp, Ollama, vLLM) usually do not check one.
    pub fn new(config: OpenAiConfig, env: &crate::run_env::RunEnv) -> Result<Self, ProviderError> {
        let key =
            super::http::api_key_from_env(env, config.api_key_env.as_deref(), DEFAULT_API_KEY_ENV);
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
        let endpoint = ChatEndpoint {
            provider: PROVIDER,
            base_url: config
                .base_url
                .clone()
                .unwrap_or_else(|| DEFAULT_BASE_URL.to_string()),
            path: "chat/completions".to_string(),
            key_env: config
                .api_key_env
                .clone()
                .unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_string()),
            key_header: KeyHeader::Bearer,
        };
        Self::at(config, endpoint, api_key)
    }

    /// Builds the provider for a server reached at `endpoint` (the URL
    /// and key header of `config` are ignored), with `api_key` or none.
    pub fn at(
        config: OpenAiConfig,
        endpoint: ChatEndpoint,
        api_key: Option<String>,
    ) -> Result<Self, ProviderError> {
        let target = HttpTarget::new(
            endpoint.provider,
            &endpoint.base_url,
            &endpoint.path,
            endpoint.key_env,
            api_key,
            config.request_timeout,
            DEFAULT_BASE_URL,
        )?;
        Ok(Self {
            provider: endpoint.provider,
            model: config.name,
            target,
            key_header: endpoint.key_header,
            stream: config.stream,
            reasoning: config.reasoning,
        })
    }

    /// The provider with answers capped at `bytes` on the wire
    /// (`model.max_response_bytes`; the default is
    /// [`DEFAULT_MAX_RESPONSE_BYTES`](super::answer_cap::DEFAULT_MAX_RESPONSE_BYTES)).
    pub fn with_max_response_bytes(mut self, bytes: u64) -> Self {
        self.target.max_response_bytes = bytes;
        self
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
        let mut body = wire_request(request, &self.model, self.stream, &self.reasoning);
        body.max_completion_tokens = request.max_output_tokens;
        let mut builder = self.target.client.post(&self.target.endpoint).json(&body);
        let header = match self.key_header {
            KeyHeader::Bearer => self.target.key_header(AUTHORIZATION, true)?,
            KeyHeader::ApiKey => self
                .target
                .key_header(reqwest::header::HeaderName::from_static("api-key"), false)?,
        };
        if let Some((name, value)) = header {
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
            provider: self.provider.to_string(),
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
pub(super) fn is_context_length_error(status: u16, body: &str) -> bool {
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
    super::http::decode_stream(
        body,
        ChunkDecoder::default(),
        observer,
        super::answer_cap::DEFAULT_MAX_RESPONSE_BYTES,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base_url: &str) -> OpenAiConfig {
        OpenAiConfig {
            reasoning: Default::default(),
            name: "gpt-test".to_string(),
            base_url: Some(base_url.to_string()),
            api_key_env: Some("AGENTCI_UNIT_TEST_UNSET_KEY".to_string()),
            request_timeout: std::time::Duration::from_secs(5),
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
