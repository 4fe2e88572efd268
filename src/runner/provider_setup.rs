//! Building the model provider a job asks for: the HTTP providers wrapped in
//! the job's retry policy, and recording wrapped around that when
//! `--record` is given (so only the answer that finally came is recorded).
//!
//! A provider that cannot be built (a missing key, a missing cassette) is
//! not reported here: it becomes a provider that fails its first call, so the
//! failure flows through the run like any other and the trace and JUnit
//! file still say what went wrong.

use std::path::{Path, PathBuf};

use crate::job::{JobSpec, ModelSpec, ProviderKind, RetrySpec};
use crate::provider::anthropic::AnthropicProvider;
use crate::provider::azure::{self, AzureConfig};
use crate::provider::bedrock::{BedrockConfig, BedrockProvider};
use crate::provider::openai::OpenAiProvider;
use crate::provider::openai_responses::ResponsesProvider;
use crate::provider::pricing::{Price, builtin_price};
use crate::provider::record::RecordingProvider;
use crate::provider::replay::ReplayProvider;
use crate::provider::retry::{RetryPolicy, RetryingProvider};
use crate::provider::vertex::{VertexConfig, VertexProvider};
use crate::provider::{ApiConfig, ModelInfo};
use crate::provider::{ChatRequest, ChatResponse, ModelProvider, ProviderError, ProviderObserver};
use crate::run_env::RunEnv;
use crate::tools::BoxFuture;

/// `skill_folders` (each skill's name and folder) are normalized in
/// cassettes like the workspace, so a recording replays in another checkout;
/// `event_text` (the prompt holds the GitHub event's text) goes into a
/// recording's header. Keys and credentials are read from `env`.
pub fn build_provider(
    job: &JobSpec,
    env: &RunEnv,
    workspace: &Path,
    skill_folders: &[(String, PathBuf)],
    record: Option<&Path>,
    event_text: bool,
    secrets: crate::redact::Redactor,
) -> Box<dyn ModelProvider> {
    let info = ModelInfo {
        provider: job.model.provider.as_str().to_string(),
        name: job.model.name.clone(),
    };
    let built: Result<Box<dyn ModelProvider>, ProviderError> = match job.model.provider {
        ProviderKind::Replay => match &job.model.cassette {
            Some(cassette) => ReplayProvider::open(cassette, workspace).map(|p| {
                Box::new(
                    p.with_skill_folders(skill_folders)
                        .with_match(job.model.replay_match),
                ) as Box<dyn ModelProvider>
            }),
            None => Err(ProviderError::Config(
                "model.provider is replay but no cassette is given; set model.cassette or pass --replay FILE".into(),
            )),
        },
        _ => served_provider(&job.model, env),
    };
    let built = match (built, record) {
        (Ok(inner), Some(path)) => {
            RecordingProvider::new(inner, path, workspace, event_text, secrets)
                .map(|p| Box::new(p.with_skill_folders(skill_folders)) as Box<dyn ModelProvider>)
        }
        (other, _) => other,
    };
    match built {
        Ok(provider) => provider,
        Err(error) => Box::new(BrokenProvider {
            info,
            error: Some(error).into(),
        }),
    }
}

/// The HTTP provider a served model (not a replay) is reached through,
/// wrapped in the job's retry policy. Credentials are read here, once, from
/// the run's environment snapshot `env`: the run builds its providers before
/// the model can act, so a file the model could change later (a credentials
/// file in the workspace) is never read again.
pub fn served_provider(
    model: &ModelSpec,
    env: &RunEnv,
) -> Result<Box<dyn ModelProvider>, ProviderError> {
    let name = model.name.clone();
    let base_url = model.base_url.clone();
    let api_key_env = model.api_key_env.clone();
    let request_timeout = model.request_timeout;
    let cap = model.max_response_bytes;
    let stream = model.stream;
    let reasoning = model.reasoning.clone();
    // The three APIs reached with a key take the same settings.
    let keyed = || ApiConfig {
        name: name.clone(),
        base_url: base_url.clone(),
        api_key_env: api_key_env.clone(),
        request_timeout,
        stream,
        reasoning: reasoning.clone(),
    };
    let built: Box<dyn ModelProvider> = match model.provider {
        ProviderKind::OpenAi => {
            Box::new(OpenAiProvider::new(keyed(), env)?.with_max_response_bytes(cap))
        }
        ProviderKind::OpenAiResponses => {
            Box::new(ResponsesProvider::new(keyed(), env)?.with_max_response_bytes(cap))
        }
        ProviderKind::AzureOpenAi => Box::new(
            azure::provider(
                AzureConfig {
                    deployment: name,
                    base_url,
                    api_version: model.api_version.clone(),
                    api_key_env,
                    request_timeout,
                    stream,
                    reasoning,
                },
                env,
            )?
            .with_max_response_bytes(cap),
        ),
        ProviderKind::Anthropic => {
            Box::new(AnthropicProvider::new(keyed(), env)?.with_max_response_bytes(cap))
        }
        ProviderKind::Bedrock => Box::new(
            BedrockProvider::new(
                BedrockConfig {
                    name,
                    region: model.region.clone(),
                    base_url,
                    request_timeout,
                    stream,
                    reasoning,
                },
                env,
            )?
            .with_max_response_bytes(cap),
        ),
        ProviderKind::Vertex => Box::new(
            VertexProvider::new(
                VertexConfig {
                    name,
                    project: model.project.clone(),
                    region: model.region.clone(),
                    base_url,
                    request_timeout,
                    stream,
                    reasoning,
                },
                env,
            )?
            .with_max_response_bytes(cap),
        ),
        ProviderKind::Replay => {
            return Err(ProviderError::Config(
                "a replay serves only the requests it recorded".into(),
            ));
        }
    };
    Ok(Box::new(RetryingProvider::new(
        built,
        retry_policy(&model.retry),
    )))
}

/// The job's `model.retry` over the defaults.
pub fn retry_policy(spec: &RetrySpec) -> RetryPolicy {
    let default = RetryPolicy::default();
    let initial_backoff = spec.initial_backoff.unwrap_or(default.initial_backoff);
    RetryPolicy {
        max_attempts_connect: spec
            .max_attempts_connect
            .unwrap_or(default.max_attempts_connect),
        max_attempts_status: spec
            .max_attempts_status
            .unwrap_or(default.max_attempts_status),
        initial_backoff,
        // A small initial backoff with no cap given keeps the default cap;
        // an initial backoff above the default cap raises it.
        max_backoff: spec
            .max_backoff
            .unwrap_or(default.max_backoff.max(initial_backoff)),
    }
}

/// Stands in for a provider that could not be built; fails the first call
/// with the original error.
struct BrokenProvider {
    info: ModelInfo,
    error: std::sync::Mutex<Option<ProviderError>>,
}

impl ModelProvider for BrokenProvider {
    fn model_info(&self) -> ModelInfo {
        self.info.clone()
    }

    fn complete_observed<'a>(
        &'a self,
        _request: &'a ChatRequest,
        _observer: &'a dyn ProviderObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        let error = self
            .error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_else(|| {
                ProviderError::Unavailable("the model provider is unavailable".into())
            });
        Box::pin(async move { Err(error) })
    }
}

/// `spec.price`, else the built-in list price of `model` (the name the
/// server answers to): what a run's or a judge's calls cost.
pub fn model_price(spec: &crate::job::ModelSpec, model: &str) -> Option<Price> {
    spec.price
        .map(|p| Price {
            input_per_mtok: p.input_per_mtok,
            output_per_mtok: p.output_per_mtok,
            cache_read_per_mtok: p.cache_read_per_mtok,
            cache_write_per_mtok: p.cache_write_per_mtok,
        })
        .or_else(|| builtin_price(model))
}
