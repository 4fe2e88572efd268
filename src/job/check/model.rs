//! The `model` section: provider, model name, endpoint and cassette, with
//! `--model`, `--base-url` and `--replay` applied over the job file.
//! `stream`, `retry` and `price` are read in [`super::model_options`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_saphyr::Spanned;

use super::{Checker, DEFAULT_REQUEST_TIMEOUT};
use crate::job::diagnostic::Pos;
use crate::job::load::{FlagValues, check_base_url, pos_of};
use crate::job::raw::RawModel;
use crate::job::{ModelSpec, ProviderKind};
use crate::provider::answer_cap::DEFAULT_MAX_RESPONSE_BYTES;
use crate::provider::replay::ReplayMatch;
use crate::tools::workspace::normalize;

impl Checker<'_> {
    pub(super) fn model(
        &mut self,
        raw: Option<&Spanned<RawModel>>,
        overrides: &FlagValues,
        vars: &BTreeMap<String, String>,
    ) -> Option<ModelSpec> {
        let pos = raw.map_or_else(|| self.r.start(), |m| pos_of(&self.r, m));
        let raw = raw.map(|m| &m.value);
        let field = |f: fn(&RawModel) -> &Option<Spanned<String>>| raw.and_then(|m| f(m).as_ref());
        let mut provider = self.provider_kind(field(|m| &m.provider));
        let mut name = field(|m| &m.name).map(|n| n.value.trim().to_string());
        let options = self.model_options(raw);
        let mut price = options.price;
        let mut context = options.context;
        // Settings that belong to the job's provider or model do not carry
        // over to another one named by --model.
        let mut same_provider = true;
        if let Some((kind, flag_name)) = &overrides.model {
            same_provider = provider == Some(*kind);
            if name.as_deref() != Some(flag_name.as_str()) {
                // Both belong to the job's model, not to the one the flag names.
                price = None;
                context.window = None;
            }
            provider = Some(*kind);
            name = Some(flag_name.clone());
        }
        let mut cassette = field(|m| &m.cassette).and_then(|c| self.existing_file(c, "cassette"));
        if let Some(replay) = &overrides.replay {
            provider = Some(ProviderKind::Replay);
            cassette = Some(replay.clone());
        }
        let base_url = match &overrides.base_url {
            Some(url) => Some(url.clone()),
            None if !same_provider => None,
            None => field(|m| &m.base_url).and_then(|url| self.base_url(url, vars)),
        };
        let request_timeout = raw
            .and_then(|m| m.request_timeout.as_ref())
            .and_then(|t| self.duration(t, "request_timeout"))
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT);
        let max_response_bytes = raw
            .and_then(|m| m.max_response_bytes.as_ref())
            .and_then(|v| self.size(v, "model.max_response_bytes"))
            .unwrap_or(DEFAULT_MAX_RESPONSE_BYTES);
        let replay_match = self.replay_match(raw, overrides);
        let api_key_env = field(|m| &m.api_key_env)
            .filter(|_| same_provider)
            .map(|e| e.value.clone());
        let kind = provider?;
        let provider_changed = !same_provider || overrides.replay.is_some();
        let reasoning = self.reasoning(
            raw.and_then(|m| m.reasoning.as_ref()),
            (kind, name.as_deref()),
            provider_changed,
            overrides,
        );
        let api_version = self.api_version(raw, kind, provider_changed, &base_url, pos);
        // What differs between a served model and a replayed one: the
        // name (required, or `replay`), the key's variable and the cassette.
        let (name, api_key_env, cassette) = match kind {
            ProviderKind::Replay => {
                let written = field(|m| &m.cassette).is_some();
                let cassette = self.replay_cassette(cassette, written, pos)?;
                let name = name.unwrap_or_else(|| "replay".to_string());
                (name, api_key_env, Some(cassette))
            }
            served => {
                let name = self.served_name(served, name, pos)?;
                let api_key_env =
                    api_key_env.or_else(|| served.default_api_key_env().map(str::to_string));
                (name, api_key_env, None)
            }
        };
        let (region, project) = self.cloud_place(raw, kind, !provider_changed);
        Some(ModelSpec {
            region,
            project,
            provider: kind,
            name,
            base_url,
            api_key_env,
            cassette,
            request_timeout,
            max_response_bytes,
            stream: options.stream,
            retry: options.retry,
            price,
            replay_match,
            context,
            reasoning,
            api_version,
        })
    }

    /// `api_version:` (Azure OpenAI's `api-version`, like `2024-10-21` or
    /// `2025-04-01-preview`), and Azure's required `base_url`. Another
    /// provider chosen by `--model` drops it; one written for another
    /// provider is an error.
    fn api_version(
        &mut self,
        raw: Option<&RawModel>,
        kind: ProviderKind,
        provider_changed: bool,
        base_url: &Option<String>,
        pos: Pos,
    ) -> Option<String> {
        if kind == ProviderKind::AzureOpenAi && base_url.is_none() {
            self.r.error(
                pos,
                "provider azure-openai needs `base_url`: the resource's endpoint, like \
                 `https://RESOURCE.openai.azure.com` (or pass --base-url)",
            );
        }
        let written = raw.and_then(|m| m.api_version.as_ref())?;
        let at = pos_of(&self.r, written);
        if kind != ProviderKind::AzureOpenAi {
            if !provider_changed && kind != ProviderKind::Replay {
                self.r.error(
                    at,
                    format!(
                        "provider {} does not take `api_version`; it is for azure-openai: \
                         remove it or change the provider",
                        kind.as_str()
                    ),
                );
            }
            return None;
        }
        let version = written.value.trim();
        let shape = regex::Regex::new(r"^\d{4}-\d{2}-\d{2}(-preview)?$")
            .is_ok_and(|re| re.is_match(version));
        if !shape {
            self.r.error(
                at,
                format!(
                    "`api_version` `{version}` is not an Azure OpenAI API version; write a \
                     date like `2024-10-21` or `2025-04-01-preview`"
                ),
            );
            return None;
        }
        Some(version.to_string())
    }

    /// `model.region` (Bedrock, Vertex AI) and `model.project` (Vertex AI);
    /// written for another provider they are an error, and they do not
    /// carry over to another provider named by `--model` or to a replay.
    fn cloud_place(
        &mut self,
        raw: Option<&RawModel>,
        kind: ProviderKind,
        same_provider: bool,
    ) -> (Option<String>, Option<String>) {
        let mut take = |field: Option<&Spanned<String>>, key: &str, takes: bool, who: &str| {
            let field = field.filter(|_| same_provider)?;
            if !takes {
                let p = kind.as_str();
                self.r.error(
                    pos_of(&self.r, field),
                    format!("model.{key} is for {who}; provider {p} does not take it"),
                );
                return None;
            }
            let value = field.value.trim().to_string();
            if value.is_empty() {
                self.r
                    .error(pos_of(&self.r, field), format!("model.{key} is empty"));
                return None;
            }
            Some(value)
        };
        let cloud = matches!(kind, ProviderKind::Bedrock | ProviderKind::Vertex);
        let region = take(
            raw.and_then(|m| m.region.as_ref()),
            "region",
            cloud,
            "bedrock and vertex",
        );
        let project = take(
            raw.and_then(|m| m.project.as_ref()),
            "project",
            kind == ProviderKind::Vertex,
            "vertex",
        );
        (region, project)
    }

    /// A served model's name; `None` (with an error) when neither the job
    /// nor `--model` names one.
    fn served_name(
        &mut self,
        kind: ProviderKind,
        name: Option<String>,
        pos: Pos,
    ) -> Option<String> {
        let name = name.filter(|n| !n.is_empty());
        if name.is_none() {
            let p = kind.as_str();
            self.r.error(
                pos,
                format!(
                    "missing model name: add `model: {{provider: {p}, name: MODEL}}` or \
                     pass --model {p}:MODEL"
                ),
            );
        }
        name
    }

    /// The replay provider's cassette; `None` when there is none. A cassette
    /// that was written but does not exist has had its error already.
    fn replay_cassette(
        &mut self,
        cassette: Option<PathBuf>,
        written: bool,
        pos: Pos,
    ) -> Option<PathBuf> {
        if cassette.is_none() && !written {
            self.r.error(
                pos,
                "the replay provider needs a cassette: add `cassette: FILE` or pass \
                 --replay FILE",
            );
        }
        cassette
    }

    /// `provider:`, `openai` when left out; `None` (with an error) for an unknown one.
    fn provider_kind(&mut self, written: Option<&Spanned<String>>) -> Option<ProviderKind> {
        let Some(p) = written else {
            return Some(ProviderKind::OpenAi);
        };
        let kind = ProviderKind::parse(&p.value);
        if kind.is_none() {
            let at = pos_of(&self.r, p);
            let other = &p.value;
            self.r.error(
                at,
                format!(
                    "unknown provider `{other}`; expected `openai` (any OpenAI-compatible \
                     server), `openai-responses`, `azure-openai`, `anthropic`, `bedrock`, \
                     `vertex` or `replay`"
                ),
            );
        }
        kind
    }

    /// The job file's `base_url:`, vars substituted, if it is one agentci
    /// can send to. A URL that a var made wrong says which var it was, so
    /// the problem shows here and not at the first request.
    fn base_url(
        &mut self,
        url: &Spanned<String>,
        vars: &BTreeMap<String, String>,
    ) -> Option<String> {
        let text = self.substitute(url, vars)?;
        match check_base_url(&text) {
            Ok(()) => Some(text),
            Err(message) => {
                let at = pos_of(&self.r, url);
                let used: Vec<String> = vars
                    .iter()
                    .filter(|(name, _)| url.value.contains(&format!("vars.{name}")))
                    .map(|(name, value)| format!("`{name}` is `{value}`"))
                    .collect();
                let message = match used.is_empty() {
                    true => message.to_string(),
                    false => format!(
                        "{message} (after substituting vars: {}; change the var's value, \
                         in `vars:` or with --var)",
                        used.join(", ")
                    ),
                };
                self.r.error(at, message);
                None
            }
        }
    }

    /// `replay: {match: strict | sequence}`, with `--replay-match` over it.
    fn replay_match(&mut self, raw: Option<&RawModel>, overrides: &FlagValues) -> ReplayMatch {
        let written = raw
            .and_then(|m| m.replay.as_ref())
            .and_then(|r| r.value.match_mode.as_ref());
        let from_file = written.and_then(|mode| match ReplayMatch::parse(mode.value.trim()) {
            Some(parsed) => Some(parsed),
            None => {
                let at = pos_of(&self.r, mode);
                self.r.error(
                    at,
                    format!(
                        "unknown replay match `{}`; expected `strict` (every request must equal \
                         the recording) or `sequence` (recorded answers in order, drift counted)",
                        mode.value
                    ),
                );
                None
            }
        });
        overrides.replay_match.or(from_file).unwrap_or_default()
    }

    /// A file path relative to the job file's folder that must exist.
    pub(super) fn existing_file(&mut self, value: &Spanned<String>, key: &str) -> Option<PathBuf> {
        let path = normalize(&self.job_dir.join(&value.value));
        if path.is_file() {
            return Some(path);
        }
        let pos = pos_of(&self.r, value);
        self.r.error(
            pos,
            format!(
                "{key} `{}` does not exist (looked for {}; relative paths start at the job \
                 file's folder)",
                value.value,
                path.display()
            ),
        );
        None
    }
}
