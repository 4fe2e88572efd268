//! The HTTP client a remote MCP server is reached with: the crate's shared
//! TLS configuration ([`crate::tls`]) with the settings of rmcp's own
//! default client (rmcp 3.11, `StreamableHttpClientTransport::from_config`),
//! which agentci used until its clients shared one TLS configuration: no idle
//! connections kept, and only same-origin 307/308 redirects followed.

/// How many redirects one request may follow (rmcp's `MAX_REDIRECTS`).
const MAX_REDIRECTS: usize = 10;

/// The client for one server.
pub(super) fn build() -> Result<reqwest::Client, String> {
    crate::tls::client_builder()
        // rmcp: an idle pooled connection whose last body was not read to
        // the end stalls the next request ~40 ms on Linux (delayed ACK).
        .pool_max_idle_per_host(0)
        .redirect(same_origin_redirects())
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// rmcp's redirect policy: a 307 or 308 keeps the method and body, so the
/// JSON-RPC message arrives intact; a 301/302/303 would turn the POST into a
/// bodyless GET, and another origin would receive the session id and the
/// job's `headers:` (its tokens). Those are returned as the response.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|original| original.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("exceeded {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}
