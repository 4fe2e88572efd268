//! The OAuth access token a Vertex AI request carries: one given in the
//! environment (`GOOGLE_OAUTH_ACCESS_TOKEN`, `CLOUDSDK_AUTH_ACCESS_TOKEN`, as
//! `gcloud auth print-access-token` prints it), or one obtained through
//! workload identity federation from the credentials file
//! `google-github-actions/auth` writes (`GOOGLE_APPLICATION_CREDENTIALS`,
//! `type: external_account`): the subject token (a file, or a URL such as
//! GitHub's OIDC endpoint) is exchanged at Google's STS (RFC 8693), and the
//! federated token for a service account's token when the file names one to
//! impersonate (<https://google.aip.dev/auth/4117>). Tokens are cached until
//! shortly before they expire; none reaches an error or `Debug` output.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_json::Value;

use crate::provider::ProviderError;
use crate::provider::bedrock::form_body;
use crate::provider::http::{ApiKey, root_cause};

const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// Tokens are renewed this long before they expire.
const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// How requests get their bearer token.
#[derive(Debug)]
pub(super) enum GoogleAuth {
    /// A token from the environment, used as it is.
    Token(ApiKey),
    /// Workload identity federation through a credentials file.
    External(Box<ExternalAccount>),
}

/// `type: external_account` in a credentials file; only the fields read.
#[derive(Debug, Deserialize)]
struct ExternalAccountFile {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    audience: String,
    #[serde(default)]
    subject_token_type: String,
    #[serde(default)]
    token_url: String,
    #[serde(default)]
    service_account_impersonation_url: Option<String>,
    #[serde(default)]
    credential_source: Option<CredentialSource>,
}

#[derive(Deserialize)]
struct CredentialSource {
    #[serde(default)]
    file: Option<PathBuf>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    format: Option<SourceFormat>,
}

/// The headers carry a secret (GitHub's `ACTIONS_ID_TOKEN_REQUEST_TOKEN`):
/// only their names are shown.
impl std::fmt::Debug for CredentialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialSource")
            .field("file", &self.file)
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("format", &self.format)
            .finish()
    }
}

/// `text` (the whole body is the token) or `json` (the token is a field).
#[derive(Debug, Deserialize)]
struct SourceFormat {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    subject_token_field_name: Option<String>,
}

#[derive(Debug)]
pub(super) struct ExternalAccount {
    /// The credentials file, for error messages.
    path: PathBuf,
    file: ExternalAccountFile,
    client: reqwest::Client,
    cached: tokio::sync::Mutex<Option<(ApiKey, SystemTime)>>,
}

impl GoogleAuth {
    /// The token source the environment gives; a clear error naming the
    /// variables when there is none.
    pub fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
        client: &reqwest::Client,
    ) -> Result<Self, ProviderError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(token) =
            var("GOOGLE_OAUTH_ACCESS_TOKEN").or_else(|| var("CLOUDSDK_AUTH_ACCESS_TOKEN"))
        {
            return Ok(GoogleAuth::Token(ApiKey(token.trim().to_string())));
        }
        let Some(path) = var("GOOGLE_APPLICATION_CREDENTIALS") else {
            return Err(ProviderError::Config(
                "no Google credentials for Vertex AI: set GOOGLE_OAUTH_ACCESS_TOKEN (e.g. from `gcloud auth print-access-token`), or GOOGLE_APPLICATION_CREDENTIALS to a workload identity credentials file (google-github-actions/auth writes one)".into(),
            ));
        };
        let path = PathBuf::from(path);
        let text = std::fs::read_to_string(&path).map_err(|err| {
            ProviderError::Config(format!(
                "cannot read GOOGLE_APPLICATION_CREDENTIALS ({}): {err}",
                path.display()
            ))
        })?;
        let file: ExternalAccountFile = serde_json::from_str(&text).map_err(|err| {
            ProviderError::Config(format!(
                "GOOGLE_APPLICATION_CREDENTIALS ({}) is not a credentials file: {err}",
                path.display()
            ))
        })?;
        if file.kind != "external_account" {
            return Err(ProviderError::Config(format!(
                "GOOGLE_APPLICATION_CREDENTIALS ({}) holds {:?} credentials; agentci reads external_account (workload identity federation) files: use google-github-actions/auth with workload_identity_provider, or set GOOGLE_OAUTH_ACCESS_TOKEN",
                path.display(),
                file.kind
            )));
        }
        let source_given = file
            .credential_source
            .as_ref()
            .is_some_and(|s| s.file.is_some() || s.url.is_some());
        if file.token_url.is_empty() || file.audience.is_empty() || !source_given {
            return Err(ProviderError::Config(format!(
                "the credentials file in GOOGLE_APPLICATION_CREDENTIALS ({}) lacks audience, token_url or credential_source.file/url",
                path.display()
            )));
        }
        Ok(GoogleAuth::External(Box::new(ExternalAccount {
            path,
            file,
            client: client.clone(),
            cached: tokio::sync::Mutex::new(None),
        })))
    }

    /// Where the token came from, for the hint on a 401/403.
    pub fn describe(&self) -> &'static str {
        match self {
            GoogleAuth::Token(_) => {
                "the access token in GOOGLE_OAUTH_ACCESS_TOKEN (tokens expire after an hour) and that the model is enabled in the project"
            }
            GoogleAuth::External(_) => {
                "that the identity in GOOGLE_APPLICATION_CREDENTIALS may use Vertex AI in the project (roles/aiplatform.user) and that the model is enabled"
            }
        }
    }

    /// The token to send now.
    pub async fn token(&self) -> Result<ApiKey, ProviderError> {
        match self {
            GoogleAuth::Token(token) => Ok(token.clone()),
            GoogleAuth::External(account) => account.token().await,
        }
    }
}

impl ExternalAccount {
    async fn token(&self) -> Result<ApiKey, ProviderError> {
        let mut cached = self.cached.lock().await;
        if let Some((token, expires)) = cached.as_ref()
            && SystemTime::now() + REFRESH_MARGIN < *expires
        {
            return Ok(token.clone());
        }
        let subject = self.subject_token().await?;
        let (federated, expires) = self.exchange(&subject).await?;
        let (token, expires) = match &self.file.service_account_impersonation_url {
            Some(url) => self.impersonate(url, &federated).await?,
            None => (federated, expires),
        };
        *cached = Some((token.clone(), expires));
        Ok(token)
    }

    fn error(&self, what: &str, detail: impl std::fmt::Display) -> ProviderError {
        ProviderError::Config(format!(
            "cannot get a Google access token with GOOGLE_APPLICATION_CREDENTIALS ({}): {what}: {detail}",
            self.path.display()
        ))
    }

    /// The token this machine's identity provider issued (GitHub's OIDC token).
    async fn subject_token(&self) -> Result<String, ProviderError> {
        let Some(source) = &self.file.credential_source else {
            return Err(self.error("the subject token", "no credential_source"));
        };
        let raw = if let Some(file) = &source.file {
            std::fs::read_to_string(file)
                .map_err(|err| self.error(&format!("reading {}", file.display()), err))?
        } else if let Some(url) = &source.url {
            let mut request = self.client.get(url);
            for (name, value) in &source.headers {
                request = request.header(name, value);
            }
            let response = request
                .send()
                .await
                .map_err(|err| self.unreachable("the subject token URL", url, &err))?;
            let status = response.status();
            let text = response
                .text()
                .await
                .map_err(|err| self.unreachable("the subject token URL", url, &err))?;
            if !status.is_success() {
                return Err(self.error(
                    "the subject token URL",
                    format!("HTTP {} from {url}", status.as_u16()),
                ));
            }
            text
        } else {
            return Err(self.error("the subject token", "credential_source has no file or url"));
        };
        let token = match source.format.as_ref() {
            Some(format) if format.kind == "json" => {
                let field = format
                    .subject_token_field_name
                    .as_deref()
                    .unwrap_or("access_token");
                serde_json::from_str::<Value>(&raw)
                    .ok()
                    .and_then(|json| json.get(field).and_then(Value::as_str).map(str::to_string))
                    .ok_or_else(|| {
                        self.error(
                            "the subject token",
                            format!("no field {field:?} in its JSON"),
                        )
                    })?
            }
            _ => raw.trim().to_string(),
        };
        if token.is_empty() {
            return Err(self.error("the subject token", "it is empty"));
        }
        Ok(token)
    }

    fn unreachable(&self, what: &str, url: &str, err: &reqwest::Error) -> ProviderError {
        ProviderError::Unavailable(format!(
            "cannot reach {what} {url} for a Google access token: {}",
            root_cause(err)
        ))
    }

    /// The STS token exchange
    /// (https://cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token).
    async fn exchange(&self, subject: &str) -> Result<(ApiKey, SystemTime), ProviderError> {
        let form = form_body(&[
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            ("audience", &self.file.audience),
            ("scope", SCOPE),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            ("subject_token", subject),
            ("subject_token_type", &self.file.subject_token_type),
        ]);
        let url = &self.file.token_url;
        let response = self
            .client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .map_err(|err| self.unreachable("Google STS", url, &err))?;
        let answer: Value = self.read_json(response, "Google STS", url).await?;
        let token = answer
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| self.error("Google STS", "an answer without access_token"))?;
        let lifetime = answer
            .get("expires_in")
            .and_then(Value::as_u64)
            .unwrap_or(3600);
        Ok((
            ApiKey(token.to_string()),
            SystemTime::now() + Duration::from_secs(lifetime),
        ))
    }

    /// IAM Credentials `generateAccessToken` for the service account
    /// (https://cloud.google.com/iam/docs/reference/credentials/rest/v1/projects.serviceAccounts/generateAccessToken).
    async fn impersonate(
        &self,
        url: &str,
        federated: &ApiKey,
    ) -> Result<(ApiKey, SystemTime), ProviderError> {
        let response = self
            .client
            .post(url)
            .bearer_auth(&federated.0)
            .json(&serde_json::json!({"scope": [SCOPE]}))
            .send()
            .await
            .map_err(|err| self.unreachable("IAM Credentials", url, &err))?;
        let answer: Value = self.read_json(response, "IAM Credentials", url).await?;
        let token = answer
            .get("accessToken")
            .and_then(Value::as_str)
            .ok_or_else(|| self.error("IAM Credentials", "an answer without accessToken"))?;
        let expires = answer
            .get("expireTime")
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .and_then(|t| u64::try_from(t.timestamp()).ok())
            .map_or_else(
                || SystemTime::now() + Duration::from_secs(3600),
                |secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
            );
        Ok((ApiKey(token.to_string()), expires))
    }

    async fn read_json(
        &self,
        response: reqwest::Response,
        what: &str,
        url: &str,
    ) -> Result<Value, ProviderError> {
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|err| self.unreachable(what, url, &err))?;
        if !status.is_success() {
            let message = crate::provider::http::server_message(&text)
                .or_else(|| {
                    serde_json::from_str::<Value>(&text).ok().and_then(|v| {
                        v.get("error_description")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                })
                .unwrap_or_default();
            let error = self.error(what, format!("HTTP {} {message}", status.as_u16()));
            return Err(match status.as_u16() {
                429 | 500.. => ProviderError::Unavailable(error.to_string()),
                _ => error,
            });
        }
        serde_json::from_str(&text)
            .map_err(|err| self.error(what, format!("an answer that is not JSON ({err})")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(vars: &[(&str, &str)]) -> Result<GoogleAuth, ProviderError> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        GoogleAuth::from_env(
            &|name| map.get(name).cloned(),
            &crate::tls::client_builder().build().unwrap(),
        )
    }

    #[test]
    fn a_token_or_a_federation_file() {
        let auth = resolve(&[("CLOUDSDK_AUTH_ACCESS_TOKEN", "ya29.secret")]).unwrap();
        assert!(matches!(auth, GoogleAuth::Token(_)));
        assert!(!format!("{auth:?}").contains("ya29"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("creds.json");
        std::fs::write(
            &path,
            r#"{"type":"external_account","audience":"//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/gh","subject_token_type":"urn:ietf:params:oauth:token-type:jwt","token_url":"https://sts.googleapis.com/v1/token","credential_source":{"url":"https://token.actions.example/x","headers":{"Authorization":"Bearer x"},"format":{"type":"json","subject_token_field_name":"value"}}}"#,
        )
        .unwrap();
        let auth = resolve(&[("GOOGLE_APPLICATION_CREDENTIALS", path.to_str().unwrap())]).unwrap();
        assert!(matches!(auth, GoogleAuth::External(_)));
        // The OIDC request token in the headers stays out of Debug output.
        assert!(!format!("{auth:?}").contains("Bearer x"));
        std::fs::write(&path, r#"{"type":"service_account","private_key":"k"}"#).unwrap();
        let err = resolve(&[("GOOGLE_APPLICATION_CREDENTIALS", path.to_str().unwrap())])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"service_account\"") && err.contains("external_account"),
            "{err}"
        );
        let err = resolve(&[]).unwrap_err().to_string();
        assert!(
            err.contains("GOOGLE_OAUTH_ACCESS_TOKEN")
                && err.contains("GOOGLE_APPLICATION_CREDENTIALS")
        );
    }
}
