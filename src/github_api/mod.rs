//! The few GitHub REST API calls the eval workflow needs: find the merged
//! results of the base branch's last successful run ([`baseline`]) and keep
//! one comment on a pull request up to date ([`comments`]).
//!
//! It is a client and nothing more: it does not know what a results.json
//! means (the CLI parses what [`baseline`] hands back) nor how a comment is
//! worded (`eval::report::comment`). The CLI reads `GITHUB_API_URL`,
//! `GITHUB_REPOSITORY` and `GITHUB_TOKEN` and builds a [`GithubApi`]; the
//! token goes into the `Authorization` header of requests to the API's own
//! host and nowhere else: not into errors, not into `Debug`, not across a
//! redirect to another host (artifact downloads redirect to blob storage).

pub mod artifact;
pub mod baseline;
pub mod comments;

use std::fmt;
use std::time::Duration;

use serde::de::DeserializeOwned;

/// GitHub documents this version header for every REST call
/// (<https://docs.github.com/en/rest/about-the-rest-api/api-versions>).
pub const API_VERSION: &str = "2022-11-28";
/// The media type GitHub recommends
/// (<https://docs.github.com/en/rest/using-the-rest-api/getting-started-with-the-rest-api#media-types>).
pub const ACCEPT: &str = "application/vnd.github+json";
/// The most of an API answer (JSON) read; the lists asked for are a page of
/// a few entries.
const MAX_JSON_BYTES: usize = 8 << 20;
/// How much of an error answer a message quotes.
const EXCERPT_CHARS: usize = 200;

/// A token that never shows itself in `Debug` output.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    pub fn new(token: String) -> Token {
        Token(token)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Where the API is, which repository, and the token: read once by the CLI.
#[derive(Debug, Clone)]
pub struct GithubApi {
    api_url: String,
    /// `OWNER/NAME`.
    repository: String,
    token: Token,
    client: reqwest::Client,
}

/// What went wrong, with the step it went wrong in; never the token.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    #[error("{step}: cannot reach {url}: {reason}")]
    Unreachable {
        step: String,
        url: String,
        reason: String,
    },
    #[error("{step}: GitHub answered {status} for {url}: {excerpt}{hint}")]
    Status {
        step: String,
        url: String,
        status: u16,
        excerpt: String,
        hint: &'static str,
    },
    #[error("{step}: the answer from {url} is not what GitHub documents: {reason}")]
    Garbled {
        step: String,
        url: String,
        reason: String,
    },
    #[error("{0}")]
    Setup(String),
}

impl GithubApi {
    /// `api_url` is `GITHUB_API_URL` (`https://api.github.com`, or a GitHub
    /// Enterprise Server's `/api/v3`); `repository` is `OWNER/NAME`.
    pub fn new(api_url: &str, repository: &str, token: Token) -> Result<GithubApi, GithubError> {
        let parsed = reqwest::Url::parse(api_url).map_err(|e| {
            GithubError::Setup(format!(
                "GITHUB_API_URL `{api_url}` is not a URL ({e}); leave it unset for https://api.github.com"
            ))
        })?;
        if !matches!(parsed.scheme(), "https" | "http") {
            return Err(GithubError::Setup(format!(
                "GITHUB_API_URL `{api_url}` is not an http(s) URL"
            )));
        }
        let mut parts = repository.split('/');
        let valid = |s: Option<&str>| {
            s.is_some_and(|s| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            })
        };
        if !(valid(parts.next()) && valid(parts.next()) && parts.next().is_none()) {
            return Err(GithubError::Setup(format!(
                "GITHUB_REPOSITORY `{repository}` is not OWNER/NAME"
            )));
        }
        let client = crate::tls::client_builder()
            .user_agent(concat!("agentci/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            // Redirects are followed by hand, so the token stays on the API's host.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| GithubError::Setup(format!("cannot set up the HTTP client: {e}")))?;
        Ok(GithubApi {
            api_url: api_url.trim_end_matches('/').to_string(),
            repository: repository.to_string(),
            token,
            client,
        })
    }

    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// `{api}/repos/{owner}/{repo}/{path}`.
    fn url(&self, path: &str) -> String {
        format!("{}/repos/{}/{path}", self.api_url, self.repository)
    }

    /// A request to the API with the headers GitHub documents and the token.
    fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, url)
            .header(reqwest::header::ACCEPT, ACCEPT)
            .header("X-GitHub-Api-Version", API_VERSION)
            .bearer_auth(&self.token.0)
    }

    /// Send `request` and read its JSON answer, at most [`MAX_JSON_BYTES`].
    async fn json<T: DeserializeOwned>(
        &self,
        step: &str,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, GithubError> {
        let response = send(step, url, request).await?;
        let body = read_capped(step, url, response, MAX_JSON_BYTES).await?;
        serde_json::from_slice(&body).map_err(|e| GithubError::Garbled {
            step: step.to_string(),
            url: url.to_string(),
            reason: e.to_string(),
        })
    }

    async fn get_json<T: DeserializeOwned>(&self, step: &str, url: &str) -> Result<T, GithubError> {
        self.json(step, url, self.request(reqwest::Method::GET, url))
            .await
    }
}

/// Send, and turn a transport error or a status other than 2xx into an error.
async fn send(
    step: &str,
    url: &str,
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, GithubError> {
    let response = request.send().await.map_err(|e| GithubError::Unreachable {
        step: step.to_string(),
        url: url.to_string(),
        reason: error_chain(&e.without_url()),
    })?;
    let status = response.status();
    if status.is_success() || status.is_redirection() {
        return Ok(response);
    }
    let body = response.bytes().await.unwrap_or_default();
    let text = String::from_utf8_lossy(&body);
    let excerpt: String = crate::inert::line(text.trim())
        .chars()
        .take(EXCERPT_CHARS)
        .collect();
    let hint = match status.as_u16() {
        401 => "; the token is missing or expired: pass `GITHUB_TOKEN: ${{ github.token }}`",
        403 | 404 => {
            "; the token may lack a permission: give the job `actions: read` (and \
             `pull-requests: write` to comment)"
        }
        _ => "",
    };
    Err(GithubError::Status {
        step: step.to_string(),
        url: url.to_string(),
        status: status.as_u16(),
        excerpt,
        hint,
    })
}

/// The body, refused past `limit` bytes rather than read whole.
async fn read_capped(
    step: &str,
    url: &str,
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, GithubError> {
    let too_big = || GithubError::Garbled {
        step: step.to_string(),
        url: url.to_string(),
        reason: format!("the answer is larger than {limit} bytes"),
    };
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_big());
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(too_big());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => {
                return Err(GithubError::Unreachable {
                    step: step.to_string(),
                    url: url.to_string(),
                    reason: error_chain(&e.without_url()),
                });
            }
        }
    }
}

/// An error and its causes on one line ("error sending request: connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_never_shows_in_debug_and_bad_settings_are_named() {
        let api = GithubApi::new(
            "https://api.github.com",
            "octo/app",
            Token::new("ghs_secret123".into()),
        )
        .unwrap();
        let shown = format!("{api:?}");
        assert!(!shown.contains("ghs_secret123"), "{shown}");
        assert!(shown.contains("Token(<redacted>)"), "{shown}");
        let err = GithubApi::new("not a url", "octo/app", Token::new("t".into())).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("GITHUB_API_URL `not a url` is not a URL")
        );
        let err = GithubApi::new("https://x", "octo", Token::new("t".into())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "GITHUB_REPOSITORY `octo` is not OWNER/NAME"
        );
    }
}
