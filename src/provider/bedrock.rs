//! Anthropic models on Amazon Bedrock: the Messages body (without `model`,
//! with `anthropic_version: bedrock-2023-05-31`) posted to
//! `/model/{modelId}/invoke-with-response-stream` (or `/invoke` with
//! `stream: false`) of the region's `bedrock-runtime` endpoint, signed with
//! SigV4 (`signing`) or sent with a Bedrock API key (`credentials`);
//! the streamed answer comes in AWS event stream frames ([`event_stream`])
//! that carry Anthropic's stream events.
//!
//! The Messages format itself (conversation, tool blocks, answer decoding)
//! is [`super::anthropic`]'s; this module adds the URL, the signature and
//! the framing. It does not retry (see [`super::retry`]).

use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::http::{HttpTarget, StreamFailure};
use super::{
    ChatRequest, ChatResponse, ModelInfo, ModelProvider, ProviderError, ProviderObserver,
    anthropic, pricing,
};

mod credentials;
pub mod event_stream;
mod signing;

use credentials::AwsAuth;
pub(super) use credentials::form_body;
use event_stream::EventStreamFailure;

const PROVIDER: &str = "bedrock";
/// The Messages version Bedrock reads from the body
/// (<https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html>).
pub const ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";
const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// A model id's characters that go into the URL path as they are; `:`
/// (`…-v1:0`) and anything else are percent-encoded, as the AWS SDKs do.
const MODEL_ID: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What a [`BedrockProvider`] is built from; mirrors the job's `model:` block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BedrockConfig {
    /// The model id or inference profile, e.g. `us.anthropic.claude-sonnet-4-5-20250929-v1:0`.
    pub name: String,
    /// `model.region`; else `AWS_REGION`, else `AWS_DEFAULT_REGION`.
    pub region: Option<String>,
    /// Overrides `https://bedrock-runtime.{region}.amazonaws.com` (a VPC endpoint, a test server).
    pub base_url: Option<String>,
    pub request_timeout: Duration,
    pub stream: bool,
    /// `model.reasoning`: how the model thinks and how its reasoning is kept.
    pub reasoning: crate::provider::ReasoningSettings,
}

#[derive(Debug)]
pub struct BedrockProvider {
    model: String,
    /// The model as Anthropic names it, for its output limit.
    anthropic_name: String,
    /// `model.reasoning`: thinking, as Anthropic's own API takes it.
    reasoning: crate::provider::ReasoningSettings,
    region: String,
    target: HttpTarget,
    auth: AwsAuth,
    stream: bool,
}

impl BedrockProvider {
    /// Builds the provider from the run's environment (region and credentials).
    pub fn new(config: BedrockConfig, env: &crate::run_env::RunEnv) -> Result<Self, ProviderError> {
        Self::with_env(config, &|name| env.var(name))
    }

    /// Builds the provider with `env` standing in for the environment.
    pub fn with_env(
        config: BedrockConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderError> {
        let region = region(config.region.as_deref(), env)?;
        let base_url = config
            .base_url
            .clone()
            .unwrap_or_else(|| format!("https://bedrock-runtime.{region}.amazonaws.com"));
        let action = if config.stream {
            "invoke-with-response-stream"
        } else {
            "invoke"
        };
        let path = format!(
            "model/{}/{action}",
            utf8_percent_encode(config.name.trim(), MODEL_ID)
        );
        let mut target = HttpTarget::keyless(
            PROVIDER,
            &base_url,
            &path,
            String::new(),
            config.request_timeout,
            "https://bedrock-runtime.us-east-1.amazonaws.com",
        )?;
        let auth = AwsAuth::from_env(env, &region, &target.client)?;
        target.api_key_env = auth.describe().to_string();
        if let AwsAuth::Bearer(key) = &auth {
            target.api_key = Some(key.clone());
        }
        Ok(Self {
            anthropic_name: pricing::anthropic_name(&config.name).to_string(),
            reasoning: config.reasoning.clone(),
            model: config.name,
            region,
            target,
            auth,
            stream: config.stream,
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
        let body = anthropic::cloud_body(
            request,
            &self.anthropic_name,
            None,
            (ANTHROPIC_VERSION, anthropic::BetaIn::Body),
            &self.reasoning,
        )?;
        let builder = self.signed_request(body.bytes).await?;
        let response = self
            .target
            .send(builder, &self.model, is_input_too_long)
            .await?;
        let streamed = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with(EVENT_STREAM));
        if !streamed {
            let text = self.target.read_whole(response).await?;
            return anthropic::parse_cloud_answer(&text)
                .map_err(|reason| self.target.bad_body("", &reason.to_string(), &text));
        }
        event_stream::decode(
            response.bytes_stream(),
            anthropic::cloud_stream_decoder(),
            observer,
            self.target.max_response_bytes,
        )
        .await
        .map_err(|failure| self.stream_error(failure))
    }

    /// The POST with its signature (or API key) on.
    async fn signed_request(
        &self,
        body: Vec<u8>,
    ) -> Result<reqwest::RequestBuilder, ProviderError> {
        let url = reqwest::Url::parse(&self.target.endpoint).map_err(|err| {
            ProviderError::Config(format!("model.base_url gives a bad Bedrock URL: {err}"))
        })?;
        let host = match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            (None, _) => return Err(ProviderError::Config("model.base_url has no host".into())),
        };
        let accept = if self.stream {
            EVENT_STREAM
        } else {
            "application/json"
        };
        let headers = [
            ("host", host.as_str()),
            ("content-type", "application/json"),
            ("accept", accept),
        ];
        let mut builder = self
            .target
            .client
            .post(url.clone())
            .header("content-type", "application/json")
            .header("accept", accept);
        if let Some(keys) = self.auth.keys().await? {
            for (name, value, sensitive) in signing::signature_headers(
                &keys,
                &self.region,
                &url,
                &headers,
                &body,
                SystemTime::now(),
            )? {
                let mut value = reqwest::header::HeaderValue::from_str(&value).map_err(|_| {
                    ProviderError::Config(
                        "the AWS credentials contain characters that cannot go in an HTTP header"
                            .into(),
                    )
                })?;
                // The signature is a secret's proof for five minutes; keep it out of logs.
                value.set_sensitive(sensitive || name == "authorization");
                builder = builder.header(name, value);
            }
        } else if let Some((name, value)) = self
            .target
            .key_header(reqwest::header::AUTHORIZATION, true)?
        {
            builder = builder.header(name, value);
        }
        Ok(builder.body(body))
    }

    fn stream_error(&self, failure: EventStreamFailure) -> ProviderError {
        match failure {
            EventStreamFailure::Stream(StreamFailure::TooLarge) => self.target.too_large_error(),
            EventStreamFailure::Stream(failure) => ProviderError::Unavailable(format!(
                "the response stream from Bedrock at {} {failure}",
                self.target.endpoint
            )),
            EventStreamFailure::Exception { kind, message } => {
                let status = event_stream::exception_status(&kind);
                let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
                if status == 424 {
                    // modelStreamErrorException: "An error occurred while
                    // streaming the response. Retry your request."
                    return ProviderError::Unavailable(format!(
                        "the response stream from Bedrock at {} broke off: {kind}: {message}",
                        self.target.endpoint
                    ));
                }
                if is_input_too_long(status, &message) {
                    return ProviderError::ContextTooLong(format!(
                        "the conversation is too long for model {:?} at {}: {message}",
                        self.model, self.target.endpoint
                    ));
                }
                ProviderError::Http {
                    provider: PROVIDER.to_string(),
                    status,
                    url: self.target.endpoint.clone(),
                    message: format!("{kind} in the response stream: {message}"),
                    retry_after: None,
                }
            }
        }
    }
}

impl ModelProvider for BedrockProvider {
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

/// `model.region`, else `AWS_REGION`, else `AWS_DEFAULT_REGION`; it goes
/// into a host name, so only a region's characters are taken.
fn region(
    configured: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ProviderError> {
    let (region, source) = match configured {
        Some(region) => (region.to_string(), "model.region"),
        None => match (env("AWS_REGION"), env("AWS_DEFAULT_REGION")) {
            (Some(region), _) if !region.trim().is_empty() => (region, "AWS_REGION"),
            (_, Some(region)) if !region.trim().is_empty() => (region, "AWS_DEFAULT_REGION"),
            _ => {
                return Err(ProviderError::Config(
                    "no AWS region for Bedrock: set model.region (e.g. us-east-1) or AWS_REGION"
                        .into(),
                ));
            }
        },
    };
    let region = region.trim().to_string();
    if region.is_empty()
        || !region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(ProviderError::Config(format!(
            "{source} {region:?} is not an AWS region; write it like us-east-1"
        )));
    }
    Ok(region)
}

/// Bedrock answers an over-long prompt with a 400 validationException
/// "Input is too long for requested model."; the Messages wording may also
/// come through.
fn is_input_too_long(status: u16, body: &str) -> bool {
    (status == 400 || status == 413)
        && (body.contains("Input is too long") || anthropic::is_prompt_too_long(status, body))
}

/// Reads a Bedrock event stream from any byte stream, as [`BedrockProvider`]
/// does. Public for benchmarks and tests.
pub async fn decode_stream<S, B, E>(
    body: S,
    observer: &dyn ProviderObserver,
) -> Result<ChatResponse, String>
where
    S: futures_util::Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    event_stream::decode(
        body,
        anthropic::cloud_stream_decoder(),
        observer,
        super::answer_cap::DEFAULT_MAX_RESPONSE_BYTES,
    )
    .await
    .map_err(|failure| format!("{failure:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn build(
        name: &str,
        stream: bool,
        vars: &[(&str, &str)],
    ) -> Result<BedrockProvider, ProviderError> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        BedrockProvider::with_env(
            BedrockConfig {
                name: name.into(),
                request_timeout: Duration::from_secs(5),
                stream,
                ..Default::default()
            },
            &|n| map.get(n).cloned(),
        )
    }

    const KEYS: [(&str, &str); 2] = [
        ("AWS_ACCESS_KEY_ID", "AKID"),
        ("AWS_SECRET_ACCESS_KEY", "s"),
    ];

    #[test]
    fn endpoint_has_the_region_and_the_encoded_model_id() {
        let mut vars = KEYS.to_vec();
        vars.push(("AWS_DEFAULT_REGION", "eu-west-1"));
        let provider = build("us.anthropic.claude-sonnet-4-5-20250929-v1:0", true, &vars).unwrap();
        assert_eq!(
            provider.endpoint(),
            "https://bedrock-runtime.eu-west-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"
        );
        vars.push(("AWS_REGION", "us-west-2"));
        let provider = build("anthropic.claude-haiku-4-5-20251001-v1:0", false, &vars).unwrap();
        assert_eq!(
            provider.endpoint(),
            "https://bedrock-runtime.us-west-2.amazonaws.com/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke"
        );
        assert_eq!(provider.anthropic_name, "claude-haiku-4-5-20251001");
    }

    #[test]
    fn a_missing_or_odd_region_is_a_clear_error() {
        let err = build("anthropic.claude-x-v1:0", true, &KEYS)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("model.region") && err.contains("AWS_REGION"),
            "{err}"
        );
        let mut vars = KEYS.to_vec();
        vars.push(("AWS_REGION", "us-east-1.evil.example/"));
        let err = build("m", true, &vars).unwrap_err().to_string();
        assert!(
            err.contains("AWS_REGION") && err.contains("not an AWS region"),
            "{err}"
        );
    }

    #[test]
    fn input_too_long_is_recognised() {
        assert!(is_input_too_long(
            400,
            r#"{"message":"Input is too long for requested model."}"#
        ));
        assert!(!is_input_too_long(
            400,
            r#"{"message":"Malformed input request"}"#
        ));
        assert!(!is_input_too_long(429, "Input is too long"));
    }
}
