//! The fake server's Azure OpenAI route,
//! `POST /openai/deployments/{deployment}/chat/completions?api-version=…`:
//! Chat Completions as the OpenAI route serves it, behind the two checks
//! Azure makes first, with Azure's own error shape
//! (`{"error": {"code": "404", "message": …}}`).

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{Shared, answer};

/// Azure's answer to a request it refuses before looking at the body.
fn azure_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"code": status.as_u16().to_string(), "message": message}})),
    )
        .into_response()
}

pub async fn chat_completions(
    state: State<Arc<Mutex<Shared>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Every data-plane request names its API version
    // (https://learn.microsoft.com/en-us/azure/ai-services/openai/reference#rest-api-versioning:
    // "The REST API is versioned through the api-version query parameter");
    // without one the service answers 404 "Resource not found".
    let versioned = uri.query().unwrap_or_default().split('&').any(|pair| {
        pair.strip_prefix("api-version=")
            .is_some_and(|v| !v.is_empty())
    });
    if !versioned {
        return azure_error(StatusCode::NOT_FOUND, "Resource not found");
    }
    // An `api-key` header or an Entra ID bearer token
    // (https://learn.microsoft.com/en-us/azure/ai-services/openai/reference#authentication);
    // neither is a 401 with this message.
    let keyed = headers.get("api-key").is_some()
        || headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("Bearer "));
    if !keyed {
        return azure_error(
            StatusCode::UNAUTHORIZED,
            "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.",
        );
    }
    answer(state, uri, headers, body).await
}
