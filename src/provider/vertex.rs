//! Anthropic models on Google Vertex AI: the Messages body (without
//! `model`, with `anthropic_version: vertex-2023-10-16`) posted to
//! `…/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:streamRawPredict`
//! (`:rawPredict` with `stream: false`) with an OAuth bearer token
//! (`credentials`); the answer is Anthropic's own, SSE or JSON
//! (<https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude>).
//!
//! The Messages format itself is [`super::anthropic`]'s; this module adds
//! the URL and the token. It does not retry (see [`super::retry`]).

use std::time::Duration;

use futures_util::future::BoxFuture;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::http::HttpTarget;
use super::{
    ChatRequest, ChatResponse, ModelInfo, ModelProvider, ProviderError, ProviderObserver,
    anthropic, pricing,
};

mod credentials;

use credentials::GoogleAuth;

const PROVIDER: &str = "vertex";
/// The Messages version Vertex AI reads from the body.
pub const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// Characters of a model id (`claude-sonnet-4-5@20250929`) or project that
/// go into the path as they are.
const PATH_PART: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'@');

/// What a [`VertexProvider`] is built from; mirrors the job's `model:` block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexConfig {
    /// The model, e.g. `claude-sonnet-4-5@20250929`.
    pub name: String,
    /// `model.project`; else `ANTHROPIC_VERTEX_PROJECT_ID`, else `GOOGLE_CLOUD_PROJECT`.
    pub project: Option<String>,
    /// `model.region`; else `CLOUD_ML_REGION`. `global` uses the global endpoint.
    pub region: Option<String>,
    /// Overrides `https://{region}-aiplatform.googleapis.com` (a test server, a private endpoint).
    pub base_url: Option<String>,
    pub request_timeout: Duration,
    pub stream: bool,
    /// `model.reasoning`: how the model thinks and how its reasoning is kept.
    pub reasoning: crate::provider::ReasoningSettings,
}

#[derive(Debug)]
pub struct VertexProvider {
    model: String,
    anthropic_name: String,
    /// `model.reasoning`: thinking, as Anthropic's own API takes it.
    reasoning: crate::provider::ReasoningSettings,
    target: HttpTarget,
    auth: GoogleAuth,
    stream: bool,
}

impl VertexProvider {
    /// Builds the provider from the run's environment.
    pub fn new(config: VertexConfig, env: &crate::run_env::RunEnv) -> Result<Self, ProviderError> {
        Self::with_env(config, &|name| env.var(name))
    }

    /// Builds the provider with `env` standing in for the environment.
    pub fn with_env(
        config: VertexConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderError> {
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let project = config
            .project
            .clone()
            .or_else(|| var("ANTHROPIC_VERTEX_PROJECT_ID"))
            .or_else(|| var("GOOGLE_CLOUD_PROJECT"))
            .ok_or_else(|| {
                ProviderError::Config(
                    "no Google Cloud project for Vertex AI: set model.project or ANTHROPIC_VERTEX_PROJECT_ID (or GOOGLE_CLOUD_PROJECT)".into(),
                )
            })?;
        let region = config
            .region
            .clone()
            .or_else(|| var("CLOUD_ML_REGION"))
            .ok_or_else(|| {
                ProviderError::Config(
                    "no region for Vertex AI: set model.region (e.g. us-east5, or global) or CLOUD_ML_REGION".into(),
                )
            })?;
        if !region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(ProviderError::Config(format!(
                "{region:?} is not a Google Cloud region; write it like us-east5 or global"
            )));
        }
        let base_url = config
            .base_url
            .clone()
            .unwrap_or_else(|| match region.as_str() {
                "global" => "https://aiplatform.googleapis.com".to_string(),
                region => format!("https://{region}-aiplatform.googleapis.com"),
            });
        let method = if config.stream {
            "streamRawPredict"
        } else {
            "rawPredict"
        };
        let path = format!(
            "v1/projects/{}/locations/{region}/publishers/anthropic/models/{}:{method}",
            utf8_percent_encode(&project, PATH_PART),
            utf8_percent_encode(config.name.trim(), PATH_PART),
        );
        let mut target = HttpTarget::keyless(
            PROVIDER,
            &base_url,
            &path,
            String::new(),
            config.request_timeout,
            "https://us-east5-aiplatform.googleapis.com",
        )?;
        let auth = GoogleAuth::from_env(env, &target.client)?;
        target.api_key_env = auth.describe().to_string();
        Ok(Self {
            anthropic_name: pricing::anthropic_name(&config.name).replace('@', "-"),
            reasoning: config.reasoning.clone(),
            model: config.name,
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
            Some(self.stream),
            (ANTHROPIC_VERSION, anthropic::BetaIn::Header),
            &self.reasoning,
        )?;
        let token = self.auth.token().await?;
        let mut authorization =
            reqwest::header::HeaderValue::from_str(&format!("Bearer {}", token.0)).map_err(
                |_| {
                    ProviderError::Config(
                    "the Google access token contains characters that cannot go in an HTTP header"
                        .into(),
                )
                },
            )?;
        authorization.set_sensitive(true);
        let builder = self
            .target
            .client
            .post(&self.target.endpoint)
            .header(reqwest::header::AUTHORIZATION, authorization)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        let builder = match body.beta_header {
            Some(beta) => builder.header("anthropic-beta", beta),
            None => builder,
        }
        .body(body.bytes);
        let response = self
            .target
            .send(builder, &self.model, anthropic::is_prompt_too_long)
            .await?;
        self.target
            .read_answer(
                response,
                anthropic::cloud_stream_decoder(),
                anthropic::parse_cloud_answer,
                observer,
            )
            .await
    }
}

impl ModelProvider for VertexProvider {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn build(config: VertexConfig, vars: &[(&str, &str)]) -> Result<VertexProvider, ProviderError> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        VertexProvider::with_env(
            VertexConfig {
                request_timeout: Duration::from_secs(5),
                ..config
            },
            &|n| map.get(n).cloned(),
        )
    }

    fn model(name: &str, stream: bool) -> VertexConfig {
        VertexConfig {
            name: name.into(),
            stream,
            ..Default::default()
        }
    }

    const TOKEN: (&str, &str) = ("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.t");

    #[test]
    fn endpoint_names_project_region_and_method() {
        let vars = [
            TOKEN,
            ("ANTHROPIC_VERTEX_PROJECT_ID", "my-proj"),
            ("GOOGLE_CLOUD_PROJECT", "other"),
            ("CLOUD_ML_REGION", "us-east5"),
        ];
        let provider = build(model("claude-sonnet-4-5@20250929", true), &vars).unwrap();
        assert_eq!(
            provider.endpoint(),
            "https://us-east5-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
        );
        assert_eq!(provider.anthropic_name, "claude-sonnet-4-5-20250929");
        let config = VertexConfig {
            region: Some("global".into()),
            project: Some("p2".into()),
            ..model("claude-haiku-4-5@20251001", false)
        };
        let provider = build(config, &vars).unwrap();
        assert_eq!(
            provider.endpoint(),
            "https://aiplatform.googleapis.com/v1/projects/p2/locations/global/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict"
        );
    }

    #[test]
    fn missing_project_or_region_is_a_clear_error() {
        let err = build(model("m", true), &[TOKEN, ("CLOUD_ML_REGION", "us-east5")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("model.project") && err.contains("ANTHROPIC_VERTEX_PROJECT_ID"),
            "{err}"
        );
        let err = build(model("m", true), &[TOKEN, ("GOOGLE_CLOUD_PROJECT", "p")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("model.region") && err.contains("CLOUD_ML_REGION"),
            "{err}"
        );
    }
}
