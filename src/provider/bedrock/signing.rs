//! Signs a Bedrock request with AWS Signature Version 4 (service
//! `bedrock`), with the `aws-sigv4` crate the AWS SDK for Rust itself
//! signs with: the headers it returns (`authorization`, `x-amz-date`,
//! `x-amz-security-token`) go on the request as they are. What is signed is
//! exactly what is sent: method, the URL as written (the model id's `:`
//! already percent-encoded), `host`, `content-type`, `accept` and the body.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;

use super::credentials::Keys;
use crate::provider::ProviderError;

/// The service name Bedrock's runtime endpoints are signed for.
const SERVICE: &str = "bedrock";

/// The signature headers for a POST of `body` to `url` carrying `headers`,
/// as (name, value, sensitive) triples.
pub(super) fn signature_headers(
    keys: &Keys,
    region: &str,
    url: &reqwest::Url,
    headers: &[(&str, &str)],
    body: &[u8],
    now: SystemTime,
) -> Result<Vec<(&'static str, String, bool)>, ProviderError> {
    let identity = Credentials::new(
        &keys.access_key_id,
        &keys.secret_access_key.0,
        keys.session_token.as_ref().map(|t| t.0.clone()),
        None,
        "agentci",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SERVICE)
        .time(now)
        .settings(SigningSettings::default())
        .build()
        .map_err(|err| ProviderError::Config(format!("cannot sign the Bedrock request: {err}")))?
        .into();
    let signable = SignableRequest::new(
        "POST",
        url.as_str(),
        headers.iter().copied(),
        SignableBody::Bytes(body),
    )
    .map_err(|err| ProviderError::Config(format!("cannot sign the Bedrock request: {err}")))?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|err| ProviderError::Config(format!("cannot sign the Bedrock request: {err}")))?
        .into_parts();
    let (headers, _params) = instructions.into_parts();
    Ok(headers
        .into_iter()
        .map(|header| {
            (
                header.name(),
                header.value().to_string(),
                header.sensitive(),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::http::ApiKey;
    use std::time::Duration;

    /// The credential scope, date and signed headers for a fixed request and
    /// time are the documented ones; the signature itself is recomputed
    /// independently by the fake Bedrock server the suite runs against.
    #[test]
    fn signature_has_the_documented_scope() {
        let keys = Keys {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: ApiKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into()),
            session_token: None,
        };
        let url = reqwest::Url::parse(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-x-v1%3A0/invoke",
        )
        .unwrap();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        let headers = signature_headers(
            &keys,
            "us-east-1",
            &url,
            &[
                ("host", "bedrock-runtime.us-east-1.amazonaws.com"),
                ("content-type", "application/json"),
            ],
            b"{}",
            now,
        )
        .unwrap();
        let find = |name: &str| {
            headers
                .iter()
                .find(|(n, _, _)| *n == name)
                .map(|(_, v, _)| v.clone())
                .unwrap()
        };
        assert_eq!(find("x-amz-date"), "20150830T123600Z");
        let authorization = find("authorization");
        assert!(
            authorization.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature="
            ),
            "{authorization}"
        );
    }
}
