//! Where an attempt's judges get their model: live through the provider
//! builder the run uses ([`served_provider`], the same API keys and retry
//! policy), recorded into the attempt's cassette after the run's exchanges
//! under `--record`, or replayed from that cassette when the attempt
//! replays, so a suite with judges re-runs with no network and no key.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::JudgeError;
use crate::job::ModelSpec;
use crate::job::load::parse_model_flag;
use crate::provider::cassette::CassetteHeader;
use crate::provider::pricing::Price;
use crate::provider::record::RecordingProvider;
use crate::provider::replay::ReplayProvider;
use crate::provider::{ModelProvider, ProviderError, ReasoningSettings};
use crate::run_env::RunEnv;
use crate::runner::provider_setup::{model_price, served_provider};

/// How the attempt's judges reach a model.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Call the model.
    Live,
    /// Call the model and append each exchange to this cassette.
    Record(PathBuf),
    /// Serve the judge exchanges recorded in this cassette.
    Replay(PathBuf),
}

/// The judges' model source for one attempt.
pub struct Bench {
    /// The job's model, as the attempt ran it.
    job_model: ModelSpec,
    source: Source,
    workspace: PathBuf,
    /// A replay serves every judge of the attempt in order, so it is opened once.
    replay: Mutex<Option<std::sync::Arc<ReplayProvider>>>,
    /// Where a live judge's key is read, as the attempt's run read its own.
    env: RunEnv,
}

/// A judge's model: what answers, its name as `PROVIDER:NAME`, its price.
pub struct JudgeModel {
    pub provider: Box<dyn ModelProvider>,
    pub shown: String,
    pub name: String,
    pub price: Option<Price>,
}

impl Bench {
    pub fn new(job_model: ModelSpec, source: Source, workspace: &Path, env: &RunEnv) -> Bench {
        Bench {
            job_model,
            source,
            workspace: workspace.to_path_buf(),
            replay: Mutex::new(None),
            env: env.clone(),
        }
    }

    /// The model a judge naming `model` and `base_url` (both optional)
    /// calls: the job's, with what the judge names over it.
    pub fn model(
        &self,
        model: Option<&str>,
        base_url: Option<&str>,
    ) -> Result<JudgeModel, JudgeError> {
        let spec = judge_spec(&self.job_model, model, base_url)?;
        let shown = match (&self.source, model) {
            // The job's model, replayed: the one the cassette was recorded with.
            (Source::Replay(cassette), None) => CassetteHeader::peek(cassette)
                .map(|h| format!("{}:{}", h.provider, h.model))
                .unwrap_or_else(|| spec.name.clone()),
            (_, Some(written)) => written.to_string(),
            _ => format!("{}:{}", spec.provider.as_str(), spec.name),
        };
        let price = model_price(&spec, &spec.name);
        let provider: Box<dyn ModelProvider> = match &self.source {
            Source::Replay(cassette) => Box::new(Shared(self.replay(cassette)?)),
            Source::Live => served_provider(&spec, &self.env).map_err(|e| describe(&e))?,
            Source::Record(cassette) => {
                let live = served_provider(&spec, &self.env).map_err(|e| describe(&e))?;
                // The judge's key and the well-known tokens, masked as a run masks them.
                let secrets = crate::redact::Redactor::new(
                    spec.api_key_env
                        .iter()
                        .map(String::as_str)
                        .chain(crate::redact::WELL_KNOWN_SECRETS.iter().copied())
                        .filter_map(|name| self.env.var(name)),
                );
                Box::new(
                    RecordingProvider::append_judge(live, cassette, &self.workspace, secrets)
                        .map_err(|e| describe(&e))?,
                )
            }
        };
        Ok(JudgeModel {
            provider,
            name: spec.name.clone(),
            shown,
            price,
        })
    }

    fn replay(&self, cassette: &Path) -> Result<std::sync::Arc<ReplayProvider>, JudgeError> {
        let mut opened = self.replay.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(replay) = opened.as_ref() {
            return Ok(replay.clone());
        }
        let replay =
            ReplayProvider::open_judges(cassette, &self.workspace).map_err(|e| describe(&e))?;
        if replay.is_empty() {
            return Err(JudgeError::NoAnswers {
                cassette: cassette.to_path_buf(),
            });
        }
        let replay = std::sync::Arc::new(replay);
        *opened = Some(replay.clone());
        Ok(replay)
    }
}

fn describe(error: &ProviderError) -> JudgeError {
    JudgeError::Provider(error.to_string())
}

/// The job's model with a judge's `model` and `base_url` over it: settings
/// that belong to the job's provider (its key's variable, server, region)
/// do not carry over to another provider, nor its price to another model.
fn judge_spec(
    job: &ModelSpec,
    model: Option<&str>,
    base_url: Option<&str>,
) -> Result<ModelSpec, JudgeError> {
    let mut spec = job.clone();
    spec.cassette = None;
    if let Some(written) = model {
        let (kind, name) = parse_model_flag(written)?;
        if kind != job.provider {
            spec.api_key_env = kind.default_api_key_env().map(str::to_string);
            spec.base_url = None;
            spec.api_version = None;
            spec.region = None;
            spec.project = None;
        }
        if name != job.name {
            spec.price = None;
        }
        spec.reasoning = ReasoningSettings::default();
        spec.provider = kind;
        spec.name = name;
    }
    if let Some(url) = base_url {
        spec.base_url = Some(url.to_string());
    }
    Ok(spec)
}

/// One replay shared by the attempt's judges.
struct Shared(std::sync::Arc<ReplayProvider>);

impl ModelProvider for Shared {
    fn model_info(&self) -> crate::provider::ModelInfo {
        self.0.model_info()
    }

    fn complete_observed<'a>(
        &'a self,
        request: &'a crate::provider::ChatRequest,
        observer: &'a dyn crate::provider::ProviderObserver,
    ) -> futures_util::future::BoxFuture<'a, Result<crate::provider::ChatResponse, ProviderError>>
    {
        self.0.complete_observed(request, observer)
    }
}
