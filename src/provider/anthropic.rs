//! The Anthropic Messages provider.
//!
//! This module owns the Messages wire format: the neutral conversation
//! becomes a `POST {base_url}/messages` body with a top-level `system`
//! prompt, `tool_use` blocks in assistant turns and `tool_result` blocks in
//! user turns (consecutive messages of one role merged, as the API wants
//! roles to alternate); the answer comes back whole or, with `stream`, as
//! server-sent events whose text deltas go to the observer as they arrive
//! and whose `input_json_delta` pieces are assembled into tool-call
//! arguments. With `model.reasoning`, the model thinks (manual, adaptive or
//! interleaved; see `thinking`) and its thinking blocks come back in
//! order with their signatures, to be sent back verbatim in the assistant
//! turn they led. Authentication is `x-api-key` plus an `anthropic-version`
//! header. It does not retry (see [`super::retry`]) and never lets the key
//! reach an error message or `Debug` output.

use reqwest::header::HeaderName;

use super::http::{HttpTarget, StreamFailure};
use super::{ChatRequest, ChatResponse, ModelProvider, ProviderError, ProviderObserver};
use crate::provider::ModelInfo;
use futures_util::future::BoxFuture;

mod request;
mod response;
mod stream;
mod thinking;

use request::wire_request;
use response::parse_response;
use stream::EventDecoder;
use thinking::Thinking;

const PROVIDER: &str = "anthropic";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// Why `model` cannot think as `settings` ask, in one line that names the
/// setting and the fix (a manual budget the model's output limit cannot
/// hold); `None` when it can. Checked when the job is loaded, so `validate`
/// says it before any request.
pub fn reasoning_problem(
    settings: &crate::provider::ReasoningSettings,
    model: &str,
) -> Option<String> {
    Thinking::of(settings).problem(model)
}

/// The API's base URL for a job's `base_url` (the default without one); a
/// URL without a path (`https://api.anthropic.com`, as Anthropic's SDKs
/// write it) gets `/v1`.
pub fn base_url(configured: Option<&str>) -> String {
    let base_url = configured.unwrap_or(DEFAULT_BASE_URL);
    match reqwest::Url::parse(base_url).is_ok_and(|url| url.path() == "/") {
        true => format!("{}/v1", base_url.trim_end_matches('/')),
        false => base_url.to_string(),
    }
}
const DEFAULT_API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// The API version this module's wire format follows.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// What an [`AnthropicProvider`] is built from: the base URL defaults to
/// `https://api.anthropic.com/v1` (a URL without a path, as Anthropic's
/// SDKs write it, gets `/v1`), the key's variable to `ANTHROPIC_API_KEY`.
pub type AnthropicConfig = crate::provider::ApiConfig;

#[derive(Debug)]
pub struct AnthropicProvider {
    model: String,
    target: HttpTarget,
    stream: bool,
    thinking: Thinking,
}

impl AnthropicProvider {
    /// Builds the provider, reading the key from `config.api_key_env`; a
    /// server on loopback may run without one.
    pub fn new(
        config: AnthropicConfig,
        env: &crate::run_env::RunEnv,
    ) -> Result<Self, ProviderError> {
        let key =
            super::http::api_key_from_env(env, config.api_key_env.as_deref(), DEFAULT_API_KEY_ENV);
        Self::with_api_key(config, key)
    }

    pub fn with_api_key(
        config: AnthropicConfig,
        api_key: Option<String>,
    ) -> Result<Self, ProviderError> {
        let api_key_env = config
            .api_key_env
            .unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_string());
        let base_url = base_url(config.base_url.as_deref());
        let thinking = Thinking::of(&config.reasoning);
        if let Some(problem) = thinking.problem(&config.name) {
            return Err(ProviderError::Config(problem));
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
            thinking,
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
        let body = wire_request(
            request,
            &self.model,
            self.stream,
            self.thinking,
            request.max_output_tokens,
        );
        let mut builder = self
            .target
            .client
            .post(&self.target.endpoint)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&body);
        if let Some(beta) = body.beta {
            builder = builder.header("anthropic-beta", beta);
        }
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
pub(super) fn is_prompt_too_long(status: u16, body: &str) -> bool {
    (status == 400 || status == 413)
        && (body.contains("prompt is too long")
            || body.contains("exceed context limit")
            || body.contains("context window")
            || body.contains("request_too_large"))
}

/// Where a cloud takes the betas a body needs (interleaved thinking).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BetaIn {
    /// Amazon Bedrock: `anthropic_beta: [...]` in the body.
    Body,
    /// Google Vertex AI: the `anthropic-beta` header, as Anthropic's own API.
    Header,
}

/// A cloud's Messages body, and the `anthropic-beta` header it needs when
/// the cloud takes betas as a header.
pub(super) struct CloudBody {
    pub bytes: Vec<u8>,
    pub beta_header: Option<&'static str>,
}

/// The Messages body for a cloud that names the model in its URL (Amazon
/// Bedrock, Google Vertex AI): no `model`, the cloud's `anthropic_version`
/// in the body (where Anthropic takes a header), `stream: true` only where
/// the cloud reads it from the body (`stream: None`: Bedrock, which streams
/// by endpoint), and the job's thinking as Anthropic's own API gets it.
/// `anthropic_name` is the model as Anthropic names it, for the output limit.
pub(super) fn cloud_body(
    request: &ChatRequest,
    anthropic_name: &str,
    stream: Option<bool>,
    (anthropic_version, beta_in): (&'static str, BetaIn),
    reasoning: &crate::provider::ReasoningSettings,
) -> Result<CloudBody, ProviderError> {
    let mut body = request::wire_request_for(
        request,
        anthropic_name,
        stream.unwrap_or(false),
        Thinking::of(reasoning),
        request.max_output_tokens,
    );
    body.model = String::new();
    body.anthropic_version = Some(anthropic_version);
    let beta_header = match beta_in {
        BetaIn::Body => {
            body.anthropic_beta = body.beta.map(|beta| vec![beta]);
            None
        }
        BetaIn::Header => body.beta,
    };
    let bytes = serde_json::to_vec(&body)
        .map_err(|err| ProviderError::Config(format!("cannot write the request: {err}")))?;
    Ok(CloudBody { bytes, beta_header })
}

/// A whole Messages answer, as a cloud passes it on.
pub(super) fn parse_cloud_answer(
    body: &str,
) -> Result<ChatResponse, super::answer_error::AnswerError> {
    parse_response(body)
}

/// The reader of Messages stream events, for a cloud that carries them in
/// its own framing.
pub(super) fn cloud_stream_decoder() -> impl super::http::StreamDecoder {
    EventDecoder::default()
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
    super::http::decode_stream(
        body,
        EventDecoder::default(),
        observer,
        super::answer_cap::DEFAULT_MAX_RESPONSE_BYTES,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base_url: &str) -> AnthropicConfig {
        AnthropicConfig {
            reasoning: Default::default(),
            name: "claude-test".to_string(),
            base_url: Some(base_url.to_string()),
            api_key_env: Some("AGENTCI_UNIT_TEST_UNSET_KEY".to_string()),
            request_timeout: std::time::Duration::from_secs(5),
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

    const THINKING_STREAM: &str = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":40,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"The test \"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"reads a.txt.\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCkYI\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgB\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Reading.\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a.txt\\\"}\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":90}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );

    #[test]
    fn stream_assembles_thinking_with_its_signature_and_keeps_it_out_of_the_text() {
        for chunk in [1, 17, THINKING_STREAM.len()] {
            let (result, seen) = decode(THINKING_STREAM, chunk);
            let response = result.unwrap();
            // Thinking is not answer text: the live view does not show it as such.
            assert_eq!(seen, "Reading.");
            assert_eq!(response.text.as_deref(), Some("Reading."));
            assert_eq!(
                response.reasoning,
                vec![
                    crate::provider::Reasoning::Thinking {
                        text: "The test reads a.txt.".into(),
                        signature: "EqQBCkYI".into(),
                    },
                    crate::provider::Reasoning::Redacted {
                        data: "EmwKAhgB".into()
                    },
                ]
            );
            assert_eq!(response.tool_calls[0].arguments, r#"{"path": "a.txt"}"#);
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
