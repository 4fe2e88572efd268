//! Amazon Bedrock for the fake model server: the InvokeModel and
//! InvokeModelWithResponseStream routes, a fake IAM that knows two key
//! pairs, SigV4 checked independently of the provider, answers as real
//! event-stream frames, and a fake STS for `AssumeRoleWithWebIdentity`.
//!
//! The signature check is written here from the AWS Signature Version 4
//! documentation (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html),
//! with `hmac`/`sha2`, not with the `aws-sigv4` crate the provider signs
//! with, so a mistake in how agentci uses the crate shows as a 403 here.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Static keys a test puts in `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`.
pub const ACCESS_KEY_ID: &str = "AKIAFAKEEXAMPLE7Q2Z";
pub const SECRET_ACCESS_KEY: &str = "fakeSecretKey/K7MDENG+bPxRfiCYEXAMPLEKEY";
/// The web identity token the fake STS accepts (a test writes it to `AWS_WEB_IDENTITY_TOKEN_FILE`).
pub const WEB_IDENTITY_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.github-oidc.fake";
/// The keys the fake STS hands out; they sign only with their session token.
pub const STS_ACCESS_KEY_ID: &str = "ASIAFAKESTSKEY00001";
const STS_SECRET_ACCESS_KEY: &str = "stsSecret/9f8e7d6c5b4a";
const STS_SESSION_TOKEN: &str = "FwoGZXIvYXdzEFAKESESSIONTOKEN//+=";
/// A Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`) the fake accepts.
pub const API_KEY: &str = "ABSKZmFrZS1iZWRyb2NrLWtleQ==";

/// Is this an invoke route? `Some(true)` for the streaming one.
pub fn invoke_route(path: &str) -> Option<bool> {
    let rest = path.strip_prefix("/model/")?;
    if rest.ends_with("/invoke-with-response-stream") {
        Some(true)
    } else if rest.ends_with("/invoke") {
        Some(false)
    } else {
        None
    }
}

/// The fake STS lives at this path (tests set `AWS_ENDPOINT_URL_STS` to it).
pub fn is_sts(path: &str) -> bool {
    path.trim_end_matches('/') == "/aws-sts"
}

/// Bedrock's error body: `{"message": …}`, the kind in `x-amzn-ErrorType`.
pub fn error_body(message: &str) -> Value {
    json!({ "message": message })
}

fn refuse(status: StatusCode, kind: &str, message: &str) -> Response {
    let mut response = (status, axum::Json(error_body(message))).into_response();
    if let Ok(value) =
        format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/").parse()
    {
        response.headers_mut().insert("x-amzn-errortype", value);
    }
    response
}

/// Why Bedrock would refuse the body itself (beyond the Messages checks):
/// the model is named by the URL, so a `model` key is an "extraneous key",
/// and `anthropic_version` must be Bedrock's
/// (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html).
pub fn refusal(body: &Value) -> Option<String> {
    if body.get("model").is_some() {
        return Some("Malformed input request: #: extraneous key [model] is not permitted, please reformat your input and try again.".into());
    }
    if body.get("stream").is_some() {
        return Some("Malformed input request: #: extraneous key [stream] is not permitted, please reformat your input and try again.".into());
    }
    match body.get("anthropic_version").and_then(Value::as_str) {
        Some("bedrock-2023-05-31") => None,
        Some(other) => Some(format!("Invalid API version: {other}")),
        None => Some("Malformed input request: #: required key [anthropic_version] not found, please reformat your input and try again.".into()),
    }
}

/// Refuses a request that is not properly authenticated, as Bedrock does:
/// 403 `UnrecognizedClientException` for an unknown key,
/// `InvalidSignatureException` for a wrong signature, 403 for a bad API key.
pub fn check_auth(path: &str, headers: &HeaderMap, body: &[u8]) -> Option<Response> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let Some(authorization) = header("authorization") else {
        return Some(refuse(
            StatusCode::FORBIDDEN,
            "MissingAuthenticationTokenException",
            "Missing Authentication Token",
        ));
    };
    if let Some(key) = authorization.strip_prefix("Bearer ") {
        return (key != API_KEY).then(|| {
            refuse(
                StatusCode::FORBIDDEN,
                "AccessDeniedException",
                "Invalid API Key format: Must start with pre-defined prefix",
            )
        });
    }
    match verify_sigv4(path, headers, body, authorization) {
        Ok(()) => None,
        Err((kind, message)) => Some(refuse(StatusCode::FORBIDDEN, kind, &message)),
    }
}

type Refusal = (&'static str, String);

fn verify_sigv4(
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
    authorization: &str,
) -> Result<(), Refusal> {
    let incomplete = || {
        (
            "IncompleteSignatureException",
            format!(
                "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature': {authorization}"
            ),
        )
    };
    let fields = authorization
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or_else(incomplete)?;
    let field = |name: &str| {
        fields
            .split(',')
            .map(str::trim)
            .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
    };
    let (Some(credential), Some(signed_headers), Some(signature)) = (
        field("Credential"),
        field("SignedHeaders"),
        field("Signature"),
    ) else {
        return Err(incomplete());
    };
    let scope: Vec<&str> = credential.split('/').collect();
    let [access_key, date, region, service, "aws4_request"] = scope[..] else {
        return Err(incomplete());
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let secret = match access_key {
        ACCESS_KEY_ID => SECRET_ACCESS_KEY,
        STS_ACCESS_KEY_ID => {
            // Temporary keys are valid only with their session token.
            if header("x-amz-security-token") != Some(STS_SESSION_TOKEN) {
                return Err((
                    "UnrecognizedClientException",
                    "The security token included in the request is invalid.".into(),
                ));
            }
            STS_SECRET_ACCESS_KEY
        }
        _ => {
            return Err((
                "UnrecognizedClientException",
                "The security token included in the request is invalid.".into(),
            ));
        }
    };
    if service != "bedrock" {
        return Err((
            "InvalidSignatureException",
            "Credential should be scoped to correct service: 'bedrock'.".into(),
        ));
    }
    let amz_date = header("x-amz-date").ok_or_else(|| {
        (
            "IncompleteSignatureException",
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
                .to_string(),
        )
    })?;
    // Requests older than 15 minutes are refused ("Signature expired").
    let signed_at =
        chrono::NaiveDateTime::parse_from_str(amz_date, "%Y%m%dT%H%M%SZ").map_err(|_| {
            (
                "InvalidSignatureException",
                format!("bad X-Amz-Date {amz_date}"),
            )
        })?;
    let skew = (chrono::Utc::now().naive_utc() - signed_at)
        .num_seconds()
        .abs();
    if skew > 15 * 60 || !amz_date.starts_with(date) {
        return Err((
            "InvalidSignatureException",
            format!("Signature expired: {amz_date} is now earlier than the allowed window."),
        ));
    }
    let names: Vec<&str> = signed_headers.split(';').collect();
    if !names.contains(&"host") {
        return Err((
            "InvalidSignatureException",
            "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.".into(),
        ));
    }
    let mut canonical_headers = String::new();
    for name in &names {
        let value = header(name).unwrap_or_default();
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        canonical_headers.push_str(&format!("{name}:{value}\n"));
    }
    // Every service but S3 encodes each path segment a second time.
    let canonical_uri = path
        .split('/')
        .map(uri_encode)
        .collect::<Vec<_>>()
        .join("/");
    let canonical_request = format!(
        "POST\n{canonical_uri}\n\n{canonical_headers}\n{signed_headers}\n{}",
        hex(&Sha256::digest(body))
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{date}/{region}/{service}/aws4_request\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    );
    let mut key = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    for part in [region, service, "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let expected = hex(&hmac(&key, string_to_sign.as_bytes()));
    if expected != signature {
        return Err((
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.".into(),
        ));
    }
    Ok(())
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SigV4's URI encoding: everything but the unreserved characters.
fn uri_encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// Anthropic's SSE events as event-stream `chunk` frames: each event's JSON
/// base64-encoded in `{"bytes": …}`
/// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html).
pub fn frames(events: &[String]) -> Vec<Vec<u8>> {
    events
        .iter()
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| {
            let payload =
                json!({"bytes": data_encoding::BASE64.encode(data.as_bytes()), "p": "abcdefghij"});
            frame(
                &[
                    (":event-type", "chunk"),
                    (":content-type", "application/json"),
                    (":message-type", "event"),
                ],
                payload.to_string().as_bytes(),
            )
        })
        .collect()
}

/// A stream that starts an answer, then breaks off with an exception
/// event, as Bedrock sends one mid-stream.
pub fn stream_exception(kind: &str, message: &str) -> Vec<Vec<u8>> {
    let start = "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_x\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n";
    let mut frames = frames(&[start.to_string()]);
    frames.push(frame(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({ "message": message }).to_string().as_bytes(),
    ));
    frames
}

/// One event-stream message: prelude (lengths and their CRC32), string
/// headers (type 7), payload, CRC32 of all before it.
fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(u8::try_from(name.len()).expect("short header name"));
        head.extend_from_slice(name.as_bytes());
        head.push(7);
        head.extend_from_slice(
            &u16::try_from(value.len())
                .expect("short value")
                .to_be_bytes(),
        );
        head.extend_from_slice(value.as_bytes());
    }
    let total = u32::try_from(12 + head.len() + payload.len() + 4).expect("small frame");
    let mut out = total.to_be_bytes().to_vec();
    out.extend_from_slice(&u32::try_from(head.len()).expect("small").to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// STS `AssumeRoleWithWebIdentity` (unsigned, a form body): keys for the
/// fake's token, `InvalidIdentityToken` otherwise
/// (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithWebIdentity.html).
pub fn sts(body: &[u8]) -> Response {
    let form = form_fields(body);
    let get = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let error = |status: StatusCode, code: &str, message: &str| {
        let xml = format!(
            "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>fake</RequestId></ErrorResponse>"
        );
        (status, [("content-type", "text/xml")], xml).into_response()
    };
    if get("Action") != Some("AssumeRoleWithWebIdentity") || get("Version") != Some("2011-06-15") {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidAction",
            "Could not find operation",
        );
    }
    let (Some(role), Some(_session), Some(token)) = (
        get("RoleArn"),
        get("RoleSessionName"),
        get("WebIdentityToken"),
    ) else {
        return error(
            StatusCode::BAD_REQUEST,
            "MissingParameter",
            "RoleArn, RoleSessionName and WebIdentityToken are required",
        );
    };
    if token != WEB_IDENTITY_TOKEN {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidIdentityToken",
            "Couldn't retrieve verification key from your identity provider",
        );
    }
    if !role.starts_with("arn:aws:iam::") {
        return error(
            StatusCode::BAD_REQUEST,
            "ValidationError",
            "RoleArn is not an ARN",
        );
    }
    let expiration = (chrono::Utc::now() + chrono::Duration::hours(1))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let xml = format!(
        r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>repo:org/repo:ref:refs/heads/main</SubjectFromWebIdentityToken>
    <AssumedRoleUser><Arn>{role}/agentci</Arn><AssumedRoleId>AROAFAKE:agentci</AssumedRoleId></AssumedRoleUser>
    <Credentials>
      <SessionToken>{STS_SESSION_TOKEN}</SessionToken>
      <SecretAccessKey>{STS_SECRET_ACCESS_KEY}</SecretAccessKey>
      <Expiration>{expiration}</Expiration>
      <AccessKeyId>{STS_ACCESS_KEY_ID}</AccessKeyId>
    </Credentials>
    <Audience>sts.amazonaws.com</Audience>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>"#
    );
    (StatusCode::OK, [("content-type", "text/xml")], xml).into_response()
}

/// The fields of an `application/x-www-form-urlencoded` body.
pub fn form_fields(body: &[u8]) -> Vec<(String, String)> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}
