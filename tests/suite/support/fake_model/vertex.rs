//! Google Vertex AI for the fake model server: the `rawPredict` and
//! `streamRawPredict` routes of Anthropic's publisher models (answers in
//! Anthropic's own format), a bearer token check, and the identity
//! endpoints workload identity federation goes through: a subject token
//! URL standing in for GitHub's OIDC endpoint, Google's STS token exchange
//! and IAM Credentials `generateAccessToken`.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A token a test puts in `GOOGLE_OAUTH_ACCESS_TOKEN`.
pub const ACCESS_TOKEN: &str = "ya29.fake-env-access-token";
/// The token the subject token URL wants (GitHub's `ACTIONS_ID_TOKEN_REQUEST_TOKEN`).
pub const OIDC_REQUEST_TOKEN: &str = "gh-request-token-fake";
/// The OIDC token the subject token URL gives and the fake STS accepts.
pub const SUBJECT_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.gh-oidc-for-google.fake";
const FEDERATED_TOKEN: &str = "ya29.d.fake-federated-token";
const IMPERSONATED_TOKEN: &str = "ya29.c.fake-service-account-token";

/// The paths of the fake identity endpoints, under the server's address.
pub const OIDC_PATH: &str = "/google/oidc";
pub const STS_PATH: &str = "/google/sts/v1/token";
pub const IAM_PATH_PREFIX: &str = "/google/iam/v1/projects/-/serviceAccounts/";

/// Is this a Vertex AI Anthropic route? `Some(true)` for `streamRawPredict`.
pub fn predict_route(path: &str) -> Option<bool> {
    if !path.starts_with("/v1/projects/") || !path.contains("/publishers/anthropic/models/") {
        return None;
    }
    if path.ends_with(":streamRawPredict") {
        Some(true)
    } else if path.ends_with(":rawPredict") {
        Some(false)
    } else {
        None
    }
}

/// Google's error shape (https://cloud.google.com/apis/design/errors).
fn google_error(status: StatusCode, state: &str, message: &str) -> Response {
    let body = json!({"error": {"code": status.as_u16(), "message": message, "status": state}});
    (status, axum::Json(body)).into_response()
}

/// A missing or unknown bearer token is a 401 UNAUTHENTICATED, as Google
/// APIs answer it.
pub fn check_auth(headers: &HeaderMap) -> Option<Response> {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match token {
        Some(ACCESS_TOKEN | FEDERATED_TOKEN | IMPERSONATED_TOKEN) => None,
        _ => Some(google_error(
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
        )),
    }
}

/// Why Vertex AI would refuse the body beyond the Messages checks: the
/// model is named in the URL, not the body, and `anthropic_version` must be
/// `vertex-2023-10-16`
/// (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude).
pub fn refusal(body: &Value) -> Option<String> {
    if body.get("model").is_some() {
        return Some("model: Extra inputs are not permitted".into());
    }
    match body.get("anthropic_version").and_then(Value::as_str) {
        Some("vertex-2023-10-16") => None,
        Some(other) => Some(format!("anthropic_version: invalid version {other:?}")),
        None => Some("anthropic_version: Field required".into()),
    }
}

/// The identity endpoints; `None` for any other path.
pub fn identity(path: &str, headers: &HeaderMap, body: &[u8]) -> Option<Response> {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if path == OIDC_PATH {
        // GitHub's OIDC endpoint: `{"count": 1, "value": JWT}` for the job's request token.
        return Some(if bearer == Some(OIDC_REQUEST_TOKEN) {
            axum::Json(json!({"count": 1, "value": SUBJECT_TOKEN})).into_response()
        } else {
            (StatusCode::UNAUTHORIZED, "bad request token").into_response()
        });
    }
    if path == STS_PATH {
        return Some(sts(body));
    }
    if let Some(rest) = path.strip_prefix(IAM_PATH_PREFIX) {
        if !rest.ends_with(":generateAccessToken") {
            return None;
        }
        if bearer != Some(FEDERATED_TOKEN) {
            return Some(google_error(
                StatusCode::UNAUTHORIZED,
                "UNAUTHENTICATED",
                "Request had invalid authentication credentials.",
            ));
        }
        let request: Value = serde_json::from_slice(body).unwrap_or_default();
        if request["scope"].as_array().is_none_or(Vec::is_empty) {
            return Some(google_error(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                "Scope required.",
            ));
        }
        let expires = (chrono::Utc::now() + chrono::Duration::hours(1))
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        return Some(
            axum::Json(json!({"accessToken": IMPERSONATED_TOKEN, "expireTime": expires}))
                .into_response(),
        );
    }
    None
}

/// Google STS `token` (RFC 8693 token exchange)
/// (https://cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token):
/// errors are OAuth's `{"error", "error_description"}` with a 400.
fn sts(body: &[u8]) -> Response {
    let form = super::bedrock::form_fields(body);
    let get = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let refuse = |error: &str, description: &str| {
        (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": error, "error_description": description})),
        )
            .into_response()
    };
    if get("grant_type") != Some("urn:ietf:params:oauth:grant-type:token-exchange") {
        return refuse("unsupported_grant_type", "Invalid grant_type.");
    }
    if get("requested_token_type") != Some("urn:ietf:params:oauth:token-type:access_token") {
        return refuse("invalid_request", "Invalid requested_token_type.");
    }
    if !get("audience").is_some_and(|a| a.starts_with("//iam.googleapis.com/")) {
        return refuse(
            "invalid_target",
            "The target service indicated by the \"audience\" parameters is invalid.",
        );
    }
    if get("subject_token_type") != Some("urn:ietf:params:oauth:token-type:jwt") {
        return refuse("invalid_request", "Invalid subject_token_type.");
    }
    if get("subject_token") != Some(SUBJECT_TOKEN) {
        return refuse("invalid_grant", "The subject token is invalid.");
    }
    axum::Json(json!({
        "access_token": FEDERATED_TOKEN,
        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "token_type": "Bearer",
        "expires_in": 3600,
    }))
    .into_response()
}
