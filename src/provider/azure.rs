//! Azure OpenAI: a model deployed in an Azure OpenAI resource, reached
//! through the Chat Completions wire format of [`super::openai`].
//!
//! What differs from OpenAI is only where requests go and how they
//! authenticate, so this module builds that and hands it to the Chat
//! Completions provider: the URL is the resource's endpoint (there is no
//! default), `/openai/deployments/{deployment}/chat/completions` and an
//! `api-version` query; the credential is the resource's key in the
//! `api-key` header (`AZURE_OPENAI_API_KEY`), or, when no key is set, a
//! Microsoft Entra ID access token as a bearer token
//! (`AZURE_OPENAI_AD_TOKEN`, e.g. what `azure/login` and
//! `az account get-access-token` give a CI job). Azure always checks a
//! credential, so one is required even for a server on loopback.

use std::fmt;
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::ProviderError;
use super::openai::{ChatEndpoint, KeyHeader, OpenAiConfig, OpenAiProvider};

const PROVIDER: &str = "azure-openai";
/// The newest generally available data-plane inference version when this
/// was written (Azure's API version lifecycle page lists 2024-10-21 as the
/// latest GA; the later ones are previews, which may change or retire
/// without the notice GA versions get).
pub const DEFAULT_API_VERSION: &str = "2024-10-21";
/// Where the resource's key is read from unless `model.api_key_env` says otherwise.
pub const KEY_ENV: &str = "AZURE_OPENAI_API_KEY";
/// Where a Microsoft Entra ID access token is read from when no key is set.
pub const TOKEN_ENV: &str = "AZURE_OPENAI_AD_TOKEN";

/// A path segment or query value: everything but letters, digits and `-._~` escaped.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What an Azure OpenAI provider is built from; mirrors the job's `model:` block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AzureConfig {
    /// The deployment name (`model.name`).
    pub deployment: String,
    /// The resource endpoint, `https://RESOURCE.openai.azure.com`; required.
    pub base_url: Option<String>,
    /// `model.api_version`; defaults to [`DEFAULT_API_VERSION`].
    pub api_version: Option<String>,
    /// The variable holding the key; defaults to [`KEY_ENV`].
    pub api_key_env: Option<String>,
    pub request_timeout: Duration,
    pub stream: bool,
    pub reasoning: super::ReasoningSettings,
}

/// How a request to the resource authenticates.
#[derive(Clone, PartialEq, Eq)]
pub enum AzureCredential {
    /// The resource's key, sent as `api-key`.
    Key(String),
    /// A Microsoft Entra ID access token, sent as `Authorization: Bearer`.
    EntraToken(String),
}

impl fmt::Debug for AzureCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AzureCredential::Key(_) => f.write_str("Key(<redacted>)"),
            AzureCredential::EntraToken(_) => f.write_str("EntraToken(<redacted>)"),
        }
    }
}

/// Builds the provider, reading the key (or else the Entra ID token) from the run's environment.
pub fn provider(
    config: AzureConfig,
    env: &crate::run_env::RunEnv,
) -> Result<OpenAiProvider, ProviderError> {
    provider_with_env(config, &|name| env.var(name))
}

/// [`provider`], reading variables through `env` (`agentci doctor` checks a
/// job's set-up this way, as a run would read it).
pub fn provider_with_env(
    config: AzureConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<OpenAiProvider, ProviderError> {
    let key_env = config.api_key_env.as_deref().unwrap_or(KEY_ENV);
    let read = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let credential = read(key_env)
        .map(AzureCredential::Key)
        .or_else(|| read(TOKEN_ENV).map(AzureCredential::EntraToken));
    with_credential(config, credential)
}

/// Builds the provider with a credential the caller already has.
pub fn with_credential(
    config: AzureConfig,
    credential: Option<AzureCredential>,
) -> Result<OpenAiProvider, ProviderError> {
    let key_env = config
        .api_key_env
        .clone()
        .unwrap_or_else(|| KEY_ENV.to_string());
    let base_url = resource_url(config.base_url.as_deref())?;
    let Some(credential) = credential else {
        return Err(ProviderError::Config(format!(
            "neither {key_env} nor {TOKEN_ENV} is set; set {key_env} to the Azure OpenAI \
             resource's key, or {TOKEN_ENV} to a Microsoft Entra ID access token for \
             https://cognitiveservices.azure.com"
        )));
    };
    let version = config.api_version.as_deref().unwrap_or(DEFAULT_API_VERSION);
    let path = format!(
        "openai/deployments/{}/chat/completions?api-version={}",
        utf8_percent_encode(&config.deployment, SEGMENT),
        utf8_percent_encode(version, SEGMENT)
    );
    let (key_env, key_header, secret) = match credential {
        AzureCredential::Key(key) => (key_env, KeyHeader::ApiKey, key),
        AzureCredential::EntraToken(token) => (TOKEN_ENV.to_string(), KeyHeader::Bearer, token),
    };
    let endpoint = ChatEndpoint {
        provider: PROVIDER,
        base_url,
        path,
        key_env,
        key_header,
    };
    let chat = OpenAiConfig {
        name: config.deployment,
        base_url: None,
        api_key_env: None,
        request_timeout: config.request_timeout,
        stream: config.stream,
        reasoning: config.reasoning,
    };
    OpenAiProvider::at(chat, endpoint, Some(secret))
}

/// The resource's endpoint, required, without a deployment path in it.
fn resource_url(base_url: Option<&str>) -> Result<String, ProviderError> {
    let Some(url) = base_url.map(str::trim).filter(|u| !u.is_empty()) else {
        return Err(ProviderError::Config(
            "provider azure-openai needs model.base_url: set it to the resource's endpoint, \
             like https://RESOURCE.openai.azure.com (Azure portal, the resource's Keys and \
             Endpoint page)"
                .to_string(),
        ));
    };
    if url.contains("/openai/") || url.trim_end_matches('/').ends_with("/openai") {
        return Err(ProviderError::Config(format!(
            "model.base_url {url:?} should be only the resource's endpoint, like \
             https://RESOURCE.openai.azure.com: agentci adds /openai/deployments/...; put the \
             deployment's name in model.name"
        )));
    }
    Ok(url.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base_url: Option<&str>) -> AzureConfig {
        AzureConfig {
            deployment: "gpt 4o prod".into(),
            base_url: base_url.map(str::to_string),
            request_timeout: Duration::from_secs(5),
            ..Default::default()
        }
    }

    #[test]
    fn the_deployment_url_carries_the_api_version() {
        let provider = with_credential(
            config(Some("https://contoso.openai.azure.com/")),
            Some(AzureCredential::Key("azure-secret".into())),
        )
        .unwrap();
        assert_eq!(
            provider.endpoint(),
            "https://contoso.openai.azure.com/openai/deployments/gpt%204o%20prod/chat/completions?api-version=2024-10-21"
        );
        let debug = format!("{provider:?}");
        assert!(!debug.contains("azure-secret"), "{debug}");
        let mut pinned = config(Some("https://contoso.openai.azure.com"));
        pinned.api_version = Some("2025-04-01-preview".into());
        let provider =
            with_credential(pinned, Some(AzureCredential::EntraToken("t".into()))).unwrap();
        assert!(
            provider
                .endpoint()
                .ends_with("?api-version=2025-04-01-preview")
        );
    }

    #[test]
    fn missing_settings_say_what_to_set() {
        let key = || Some(AzureCredential::Key("k".into()));
        let err = with_credential(config(None), key())
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs model.base_url"), "{err}");
        let err = with_credential(
            config(Some(
                "https://contoso.openai.azure.com/openai/deployments/x",
            )),
            key(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("only the resource's endpoint"), "{err}");
        // Loopback or not, Azure wants a credential.
        let err = with_credential(config(Some("http://127.0.0.1:9")), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("neither AZURE_OPENAI_API_KEY nor AZURE_OPENAI_AD_TOKEN is set"),
            "{err}"
        );
        assert_eq!(
            format!("{:?}", AzureCredential::EntraToken("eyJ".into())),
            "EntraToken(<redacted>)"
        );
    }
}
