//! The OpenAI Responses provider: `POST {base_url}/responses`, the API
//! OpenAI's reasoning models keep their reasoning through between tool calls.
//!
//! By default nothing depends on server state: requests go with
//! `store: false` and ask for `reasoning.encrypted_content`, and every
//! reasoning item comes back in the next request with its encrypted
//! content, before the tool calls it led to. With
//! `model.reasoning.previous_response_id` the provider instead asks the
//! server to store each response and chains on it, sending only the items
//! that are new since the last answer; when the conversation no longer
//! continues that answer (compaction, trimming, another conversation on the
//! same provider) it starts a new chain with the whole conversation, and a
//! chain the server no longer knows is restarted once the same way.
//!
//! The wire format is private to the sibling modules; this one holds the
//! endpoint, the chain and the [`ModelProvider`] face. It does not retry
//! (see [`super::retry`]) and never lets the key reach an error message or
//! `Debug` output.

use std::sync::Mutex;

use futures_util::future::BoxFuture;
use reqwest::header::AUTHORIZATION;

use super::http::{HttpTarget, StreamFailure};
use super::openai::is_context_length_error;
use super::{
    ChatRequest, ChatResponse, Message, ModelInfo, ModelProvider, ProviderError, ProviderObserver,
    ReasoningSettings,
};

mod request;
mod response;
mod stream;

use request::{Keeping, wire_request};
use response::parse_response;
use stream::EventDecoder;

const PROVIDER: &str = "openai-responses";
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
/// `max_output_tokens`' floor (https://platform.openai.com/docs/api-reference/responses/create).
const MIN_OUTPUT_TOKENS: u32 = 16;

/// What a [`ResponsesProvider`] is built from: the base URL defaults to
/// `https://api.openai.com/v1`, the key's variable to `OPENAI_API_KEY`.
pub type ResponsesConfig = crate::provider::ApiConfig;

/// The stored response the next request may continue: its id, and the
/// conversation it ended (the request's messages and its own answer).
#[derive(Debug)]
struct Chain {
    response_id: String,
    messages: Vec<Message>,
}

/// A Responses client, configured once and reused for every request.
#[derive(Debug)]
pub struct ResponsesProvider {
    model: String,
    target: HttpTarget,
    stream: bool,
    reasoning: ReasoningSettings,
    chain: Mutex<Option<Chain>>,
}

impl ResponsesProvider {
    /// Builds the provider, reading the key from `config.api_key_env`.
    pub fn new(
        config: ResponsesConfig,
        env: &crate::run_env::RunEnv,
    ) -> Result<Self, ProviderError> {
        let key =
            super::http::api_key_from_env(env, config.api_key_env.as_deref(), DEFAULT_API_KEY_ENV);
        Self::with_api_key(config, key)
    }

    /// Builds the provider with a key the caller already has (or none; a
    /// server on loopback may run without one).
    pub fn with_api_key(
        config: ResponsesConfig,
        api_key: Option<String>,
    ) -> Result<Self, ProviderError> {
        let base_url = config
            .base_url
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let target = HttpTarget::new(
            PROVIDER,
            &base_url,
            "responses",
            config
                .api_key_env
                .unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_string()),
            api_key,
            config.request_timeout,
            DEFAULT_BASE_URL,
        )?;
        Ok(Self {
            model: config.name,
            target,
            stream: config.stream,
            reasoning: config.reasoning,
            chain: Mutex::new(None),
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

    /// Sends one request (twice when a chained request names a response
    /// the server no longer has). A retry policy wraps this.
    pub async fn send_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn ProviderObserver,
    ) -> Result<ChatResponse, ProviderError> {
        let first = self
            .target
            .attempt(self.exchange(request, observer, true))
            .await;
        match first {
            Err(ProviderError::Http {
                status: 400 | 404,
                message,
                ..
            }) if self.reasoning.previous_response_id
                && message.to_ascii_lowercase().contains("previous response") =>
            {
                self.forget_chain();
                self.target
                    .attempt(self.exchange(request, observer, false))
                    .await
            }
            other => other,
        }
    }

    async fn exchange(
        &self,
        request: &ChatRequest,
        observer: &dyn ProviderObserver,
        may_chain: bool,
    ) -> Result<ChatResponse, ProviderError> {
        let chained = self.reasoning.previous_response_id;
        let (previous, skip) = match chained && may_chain {
            true => self.continued(request),
            false => (None, 0),
        };
        let keeping = Keeping {
            chained,
            previous_response_id: previous.as_deref(),
        };
        let mut body = wire_request(
            request,
            &self.model,
            self.stream,
            &self.reasoning,
            keeping,
            skip,
        );
        // The API refuses `max_output_tokens` below 16; a smaller cap (an MCP
        // sampling request's) is raised to that floor.
        body.max_output_tokens = request
            .max_output_tokens
            .map(|max| max.max(MIN_OUTPUT_TOKENS));
        let mut builder = self.target.client.post(&self.target.endpoint).json(&body);
        if let Some((name, value)) = self.target.key_header(AUTHORIZATION, true)? {
            builder = builder.header(name, value);
        }
        let response = self
            .target
            .send(builder, body.model, is_context_length_error)
            .await?;
        let id = Mutex::new(None);
        let answer = self
            .target
            .read_answer(
                response,
                EventDecoder::new(&id),
                |text| {
                    parse_response(text).map(|answer| {
                        if let Ok(mut slot) = id.lock() {
                            *slot = answer.id;
                        }
                        answer.response
                    })
                },
                observer,
            )
            .await?;
        if chained {
            let response_id = id.into_inner().unwrap_or_else(|p| p.into_inner());
            self.remember(request, &answer, response_id);
        }
        Ok(answer)
    }

    /// The stored response `request` continues and how many of its
    /// messages that response already holds; `(None, 0)` starts a new chain.
    fn continued(&self, request: &ChatRequest) -> (Option<String>, usize) {
        let chain = self.chain.lock().unwrap_or_else(|p| p.into_inner());
        match chain.as_ref() {
            Some(chain)
                if request.messages.len() > chain.messages.len()
                    && request.messages.starts_with(&chain.messages) =>
            {
                (Some(chain.response_id.clone()), chain.messages.len())
            }
            _ => (None, 0),
        }
    }

    fn remember(&self, request: &ChatRequest, answer: &ChatResponse, id: Option<String>) {
        let mut chain = self.chain.lock().unwrap_or_else(|p| p.into_inner());
        *chain = id.map(|response_id| {
            let mut messages = request.messages.clone();
            // The message the agent keeps for this answer, as it builds it.
            messages.push(Message::Assistant {
                reasoning: answer.reasoning.clone(),
                content: answer.text.clone(),
                tool_calls: answer.tool_calls.clone(),
            });
            Chain {
                response_id,
                messages,
            }
        });
    }

    fn forget_chain(&self) {
        *self.chain.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl ModelProvider for ResponsesProvider {
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

/// Reads a streamed Responses body, as [`ResponsesProvider`] does, from any
/// byte stream. Public for benchmarks and tests; the event format stays private.
pub async fn decode_stream<S, B, E>(
    body: S,
    observer: &dyn ProviderObserver,
) -> Result<ChatResponse, StreamFailure>
where
    S: futures_util::Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    let id = Mutex::new(None);
    super::http::decode_stream(
        body,
        EventDecoder::new(&id),
        observer,
        super::answer_cap::DEFAULT_MAX_RESPONSE_BYTES,
    )
    .await
}

/// The body [`ResponsesProvider`] would send for `request`, as JSON:
/// stateless, or (with `continuing: Some((response_id, messages))`) chained
/// on a stored response that holds the first `messages` messages. Public
/// for benchmarks that count the bytes sent per turn.
pub fn request_body(
    request: &ChatRequest,
    model: &str,
    stream: bool,
    reasoning: &ReasoningSettings,
    continuing: Option<(&str, usize)>,
) -> serde_json::Result<Vec<u8>> {
    let keeping = Keeping {
        chained: continuing.is_some(),
        previous_response_id: continuing.map(|(id, _)| id),
    };
    let skip = continuing.map_or(0, |(_, messages)| messages);
    serde_json::to_vec(&wire_request(
        request, model, stream, reasoning, keeping, skip,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base_url: &str) -> ResponsesConfig {
        ResponsesConfig {
            name: "gpt-test".to_string(),
            base_url: Some(base_url.to_string()),
            api_key_env: Some("AGENTCI_UNIT_TEST_UNSET_KEY".to_string()),
            request_timeout: std::time::Duration::from_secs(5),
            stream: false,
            reasoning: ReasoningSettings::default(),
        }
    }

    #[test]
    fn a_missing_key_names_the_variable_and_the_key_stays_hidden() {
        let err =
            ResponsesProvider::with_api_key(config("https://api.openai.com/v1"), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("environment variable AGENTCI_UNIT_TEST_UNSET_KEY is not set"),
            "{err}"
        );
        let provider = ResponsesProvider::with_api_key(
            config("https://api.openai.com/v1"),
            Some("sk-secret-456".into()),
        )
        .unwrap();
        assert_eq!(provider.endpoint(), "https://api.openai.com/v1/responses");
        let debug = format!("{provider:?}");
        assert!(!debug.contains("sk-secret-456"), "{debug}");
    }

    #[test]
    fn a_chain_is_continued_only_by_the_conversation_it_ended() {
        let provider =
            ResponsesProvider::with_api_key(config("http://127.0.0.1:1/v1"), None).unwrap();
        let user = |text: &str| Message::User {
            content: text.into(),
        };
        let request = ChatRequest {
            max_output_tokens: None,
            model: String::new(),
            messages: vec![user("goal")],
            tools: Vec::new(),
            tool_choice: Default::default(),
        };
        let answer = ChatResponse {
            text: Some("ok".into()),
            ..Default::default()
        };
        provider.remember(&request, &answer, Some("resp_1".into()));
        let mut next = request.clone();
        next.messages.push(Message::Assistant {
            reasoning: Vec::new(),
            content: Some("ok".into()),
            tool_calls: Vec::new(),
        });
        next.messages.push(user("more"));
        assert_eq!(provider.continued(&next), (Some("resp_1".into()), 2));
        // A rewritten history (compaction) starts over.
        let mut rewritten = next.clone();
        rewritten.messages[0] = user("summary of the goal");
        assert_eq!(provider.continued(&rewritten), (None, 0));
        // A response without an id cannot be continued.
        provider.remember(&request, &answer, None);
        assert_eq!(provider.continued(&next), (None, 0));
    }
}
