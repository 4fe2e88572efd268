//! Building the model provider a job asks for, with recording wrapped around
//! it when `--record` is given.
//!
//! A provider that cannot be built (a missing key, a missing cassette) is
//! not reported here: it becomes a provider that fails its first call, so the
//! failure flows through the run like any other and the trace and JUnit
//! file still say what went wrong.

use std::path::Path;

use crate::event::ModelInfo;
use crate::provider::openai::{OpenAiConfig, OpenAiProvider};
use crate::provider::record::RecordingProvider;
use crate::provider::replay::ReplayProvider;
use crate::provider::{ChatRequest, ChatResponse, ModelProvider, ProviderError};
use crate::spec::{JobSpec, ProviderKind};
use crate::tools::BoxFuture;

pub fn build_provider(
    job: &JobSpec,
    workspace: &Path,
    record: Option<&Path>,
) -> Box<dyn ModelProvider> {
    let info = ModelInfo {
        provider: job.model.provider.as_str().to_string(),
        name: job.model.name.clone(),
    };
    let built: Result<Box<dyn ModelProvider>, ProviderError> = match job.model.provider {
        ProviderKind::OpenAi => OpenAiProvider::new(OpenAiConfig {
            name: job.model.name.clone(),
            base_url: job.model.base_url.clone(),
            api_key_env: job.model.api_key_env.clone(),
            request_timeout: job.model.request_timeout,
        })
        .map(|p| Box::new(p) as Box<dyn ModelProvider>),
        ProviderKind::Replay => match &job.model.cassette {
            Some(cassette) => ReplayProvider::open(cassette, workspace)
                .map(|p| Box::new(p) as Box<dyn ModelProvider>),
            None => Err(ProviderError::Config(
                "model.provider is replay but no cassette is given; set model.cassette or pass --replay FILE".into(),
            )),
        },
    };
    let built = match (built, record) {
        (Ok(inner), Some(path)) => RecordingProvider::new(inner, path, workspace)
            .map(|p| Box::new(p) as Box<dyn ModelProvider>),
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

    fn complete<'a>(
        &'a self,
        _request: &'a ChatRequest,
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
