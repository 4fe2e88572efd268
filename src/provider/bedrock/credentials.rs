//! Where a Bedrock request's credentials come from, read from the variables
//! `aws-actions/configure-aws-credentials` leaves in a GitHub Actions job:
//! a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`, sent as a bearer token and
//! preferred, as the AWS SDKs prefer it), static or session keys
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), or a
//! web identity (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`) exchanged
//! with STS `AssumeRoleWithWebIdentity` for session keys, cached until
//! shortly before they expire.
//!
//! Signing is not here ([`super::signing`]); secrets never reach an error
//! message or `Debug` output.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::provider::ProviderError;
use crate::provider::http::{ApiKey, root_cause};

/// Session keys are renewed this long before they expire.
const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// Keys a request is signed with.
#[derive(Clone)]
pub(super) struct Keys {
    pub access_key_id: String,
    pub secret_access_key: ApiKey,
    pub session_token: Option<ApiKey>,
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// How requests authenticate.
#[derive(Debug)]
pub(super) enum AwsAuth {
    /// A Bedrock API key, sent as `Authorization: Bearer`.
    Bearer(ApiKey),
    /// Keys from the environment, used as they are.
    Keys(Keys),
    /// Keys from STS for a web identity token.
    WebIdentity(WebIdentity),
}

/// An OIDC token file and the role it is exchanged for.
#[derive(Debug)]
pub(super) struct WebIdentity {
    token_file: PathBuf,
    role_arn: String,
    session_name: String,
    /// The STS endpoint (`AWS_ENDPOINT_URL_STS`, else the region's).
    sts_url: String,
    client: reqwest::Client,
    cached: tokio::sync::Mutex<Option<(Keys, SystemTime)>>,
}

impl AwsAuth {
    /// The credentials the environment gives, in the AWS SDKs' order; a
    /// clear error naming the variables when there are none.
    pub fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
        region: &str,
        client: &reqwest::Client,
    ) -> Result<Self, ProviderError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(token) = var("AWS_BEARER_TOKEN_BEDROCK") {
            return Ok(AwsAuth::Bearer(ApiKey(token.trim().to_string())));
        }
        match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            (Some(id), Some(secret)) => {
                return Ok(AwsAuth::Keys(Keys {
                    access_key_id: id.trim().to_string(),
                    secret_access_key: ApiKey(secret.trim().to_string()),
                    session_token: var("AWS_SESSION_TOKEN").map(|t| ApiKey(t.trim().to_string())),
                }));
            }
            (Some(_), None) => {
                return Err(ProviderError::Config(
                    "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; set both (aws-actions/configure-aws-credentials does)".into(),
                ));
            }
            _ => {}
        }
        if let Some(token_file) = var("AWS_WEB_IDENTITY_TOKEN_FILE") {
            let role_arn = var("AWS_ROLE_ARN").ok_or_else(|| {
                ProviderError::Config(
                    "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not; set AWS_ROLE_ARN to the role to assume".into(),
                )
            })?;
            let sts_url = var("AWS_ENDPOINT_URL_STS")
                .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com"));
            return Ok(AwsAuth::WebIdentity(WebIdentity {
                token_file: PathBuf::from(token_file),
                role_arn,
                session_name: var("AWS_ROLE_SESSION_NAME").unwrap_or_else(|| {
                    let now = SystemTime::now()
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs());
                    format!("agentci-{now}")
                }),
                sts_url,
                client: client.clone(),
                cached: tokio::sync::Mutex::new(None),
            }));
        }
        Err(ProviderError::Config(
            "no AWS credentials for Bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN (aws-actions/configure-aws-credentials sets them), or AWS_BEARER_TOKEN_BEDROCK".into(),
        ))
    }

    /// Where the credentials came from, for the hint on a 401/403.
    pub fn describe(&self) -> &'static str {
        match self {
            AwsAuth::Bearer(_) => "the Bedrock API key in AWS_BEARER_TOKEN_BEDROCK",
            AwsAuth::Keys(_) => {
                "the AWS credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, and that the model is enabled in this region"
            }
            AwsAuth::WebIdentity(_) => {
                "that the role in AWS_ROLE_ARN may invoke the model, and that the model is enabled in this region"
            }
        }
    }

    /// The keys to sign with now: the environment's, or STS's (cached).
    pub async fn keys(&self) -> Result<Option<Keys>, ProviderError> {
        match self {
            AwsAuth::Bearer(_) => Ok(None),
            AwsAuth::Keys(keys) => Ok(Some(keys.clone())),
            AwsAuth::WebIdentity(identity) => identity.keys().await.map(Some),
        }
    }
}

impl WebIdentity {
    async fn keys(&self) -> Result<Keys, ProviderError> {
        let mut cached = self.cached.lock().await;
        if let Some((keys, expires)) = cached.as_ref()
            && SystemTime::now() + REFRESH_MARGIN < *expires
        {
            return Ok(keys.clone());
        }
        let (keys, expires) = self.assume_role().await?;
        *cached = Some((keys.clone(), expires));
        Ok(keys)
    }

    /// STS `AssumeRoleWithWebIdentity`, which is not signed: the token is
    /// the proof
    /// (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithWebIdentity.html).
    async fn assume_role(&self) -> Result<(Keys, SystemTime), ProviderError> {
        let token = std::fs::read_to_string(&self.token_file).map_err(|err| {
            ProviderError::Config(format!(
                "cannot read the web identity token in AWS_WEB_IDENTITY_TOKEN_FILE ({}): {err}",
                self.token_file.display()
            ))
        })?;
        let form = form_body(&[
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", "2011-06-15"),
            ("RoleArn", &self.role_arn),
            ("RoleSessionName", &self.session_name),
            ("WebIdentityToken", token.trim()),
        ]);
        let response = self
            .client
            .post(&self.sts_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/xml")
            .body(form)
            .send()
            .await
            .map_err(|err| {
                ProviderError::Unavailable(format!(
                    "cannot reach AWS STS at {} to assume AWS_ROLE_ARN: {}",
                    self.sts_url,
                    root_cause(&err)
                ))
            })?;
        let status = response.status();
        let text = response.text().await.map_err(|err| {
            ProviderError::Unavailable(format!(
                "AWS STS at {} broke off its answer: {}",
                self.sts_url,
                root_cause(&err)
            ))
        })?;
        if !status.is_success() {
            let code = xml_text(&text, "Code").unwrap_or("no error code");
            let message = xml_text(&text, "Message").unwrap_or("no message");
            let error = format!(
                "AWS STS refused to assume role {} with the token in AWS_WEB_IDENTITY_TOKEN_FILE: HTTP {} {code}: {message}; check the role's trust policy",
                self.role_arn,
                status.as_u16()
            );
            return Err(match status.as_u16() {
                429 | 500.. => ProviderError::Unavailable(error),
                _ => ProviderError::Config(error),
            });
        }
        parse_assumed(&text).ok_or_else(|| {
            ProviderError::Unavailable(format!(
                "AWS STS at {} answered without credentials",
                self.sts_url
            ))
        })
    }
}

/// The keys and their expiry in an `AssumeRoleWithWebIdentityResponse`.
fn parse_assumed(xml: &str) -> Option<(Keys, SystemTime)> {
    let credentials = xml_text(xml, "Credentials")?;
    let expiration = chrono::DateTime::parse_from_rfc3339(xml_text(credentials, "Expiration")?)
        .ok()?
        .timestamp();
    let expires = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(expiration).ok()?);
    let keys = Keys {
        access_key_id: xml_text(credentials, "AccessKeyId")?.to_string(),
        secret_access_key: ApiKey(xml_text(credentials, "SecretAccessKey")?.to_string()),
        session_token: xml_text(credentials, "SessionToken").map(|t| ApiKey(t.to_string())),
    };
    Some((keys, expires))
}

/// The text between `<tag>` and `</tag>` (STS's answers are small, flat and
/// never use attributes on these elements).
fn xml_text<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let start = xml.find(&format!("<{tag}>"))? + tag.len() + 2;
    let end = start + xml[start..].find(&format!("</{tag}>"))?;
    Some(xml[start..end].trim())
}

/// An `application/x-www-form-urlencoded` body.
pub(crate) fn form_body(fields: &[(&str, &str)]) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    fields
        .iter()
        .map(|(name, value)| {
            format!(
                "{}={}",
                utf8_percent_encode(name, NON_ALPHANUMERIC),
                utf8_percent_encode(value, NON_ALPHANUMERIC)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn resolve(vars: &[(&str, &str)]) -> Result<AwsAuth, ProviderError> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AwsAuth::from_env(
            &|name| map.get(name).cloned(),
            "us-east-1",
            &crate::tls::client_builder().build().unwrap(),
        )
    }

    #[test]
    fn environment_gives_keys_web_identity_or_a_bearer_key() {
        let auth = resolve(&[
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "very-secret"),
        ])
        .unwrap();
        assert!(
            matches!(&auth, AwsAuth::Keys(k) if k.access_key_id == "AKID" && k.session_token.is_none())
        );
        assert!(!format!("{auth:?}").contains("very-secret"));
        let auth = resolve(&[
            ("AWS_WEB_IDENTITY_TOKEN_FILE", "/tmp/token"),
            ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
        ])
        .unwrap();
        assert!(
            matches!(&auth, AwsAuth::WebIdentity(w) if w.sts_url == "https://sts.us-east-1.amazonaws.com")
        );
        let auth = resolve(&[
            ("AWS_BEARER_TOKEN_BEDROCK", "bedrock-key"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
        ])
        .unwrap();
        assert!(matches!(auth, AwsAuth::Bearer(_)));
    }

    #[test]
    fn missing_pieces_name_the_variable_to_set() {
        let err = resolve(&[]).unwrap_err().to_string();
        assert!(err.contains("AWS_ACCESS_KEY_ID") && err.contains("AWS_WEB_IDENTITY_TOKEN_FILE"));
        let err = resolve(&[("AWS_ACCESS_KEY_ID", "AKID")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("AWS_SECRET_ACCESS_KEY is not"), "{err}");
        let err = resolve(&[("AWS_WEB_IDENTITY_TOKEN_FILE", "/t")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("AWS_ROLE_ARN"), "{err}");
    }

    #[test]
    fn sts_answer_is_read() {
        let xml = r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <SessionToken>FwoGZX</SessionToken>
      <SecretAccessKey>wJalr</SecretAccessKey>
      <Expiration>2030-10-24T23:00:23Z</Expiration>
      <AccessKeyId>ASIAX</AccessKeyId>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>"#;
        let (keys, expires) = parse_assumed(xml).unwrap();
        assert_eq!(keys.access_key_id, "ASIAX");
        assert_eq!(keys.secret_access_key.0, "wJalr");
        assert_eq!(keys.session_token.unwrap().0, "FwoGZX");
        assert!(expires > SystemTime::now());
        assert!(parse_assumed("<ErrorResponse/>").is_none());
        assert_eq!(form_body(&[("a b", "c:d")]), "a%20b=c%3Ad");
    }
}
