//! What the HTTP providers share: the endpoint and key, one attempt of a
//! request with its timeout, turning transport and HTTP failures into
//! one-line [`ProviderError`]s that say what to fix, and reading a body
//! (whole, or streamed through a wire format's [`StreamDecoder`]) under the
//! answer cap of [`super::answer_cap`].
//!
//! Wire formats (bodies, event meanings) are not here: they stay private to
//! [`super::openai`] and [`super::anthropic`]. Retrying is
//! [`super::retry`]'s job; one call here is one attempt.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use futures_util::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::answer_cap::{self, WholeBodyFailure};
use super::answer_error::AnswerError;
use super::sse::{self, SseError, SseEvent};
use super::{ChatResponse, ProviderError, ProviderObserver};
use crate::run_env::RunEnv;

/// How much of an unparseable body an error message quotes.
const BODY_EXCERPT_CHARS: usize = 200;

/// An API key that never shows itself in `Debug` output.
#[derive(Clone)]
pub(super) struct ApiKey(pub String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Where requests go and how they authenticate; built once per provider.
#[derive(Debug)]
pub(super) struct HttpTarget {
    pub provider: &'static str,
    /// The full URL requests are posted to.
    pub endpoint: String,
    pub api_key_env: String,
    pub api_key: Option<ApiKey>,
    /// Requests carry a cloud's own credentials; `api_key_env` then says
    /// where they come from.
    pub signed: bool,
    pub request_timeout: Duration,
    /// `model.max_response_bytes`: the most bytes one answer may take on the wire.
    pub max_response_bytes: u64,
    pub client: reqwest::Client,
}

impl HttpTarget {
    /// Checks the base URL, requires a key unless the server is on loopback
    /// (local servers rarely check one), and sets up the client.
    pub fn new(
        provider: &'static str,
        base_url: &str,
        path: &str,
        api_key_env: String,
        api_key: Option<String>,
        request_timeout: Duration,
        example_url: &str,
    ) -> Result<Self, ProviderError> {
        let mut target = Self::keyless(
            provider,
            base_url,
            path,
            api_key_env,
            request_timeout,
            example_url,
        )?;
        target.signed = false;
        target.api_key = api_key.filter(|key| !key.is_empty()).map(ApiKey);
        let loopback = reqwest::Url::parse(&target.endpoint).is_ok_and(|url| is_loopback(&url));
        if target.api_key.is_none() && !loopback {
            return Err(ProviderError::Config(format!(
                "environment variable {} is not set; set it to your API key, or set model.api_key_env to the variable that holds it",
                target.api_key_env
            )));
        }
        Ok(target)
    }

    /// A target whose requests carry credentials of their own making (a
    /// cloud's signature or short-lived token), so no key is required here;
    /// `credentials` says where they come from, for the hint on a 401/403.
    pub fn keyless(
        provider: &'static str,
        base_url: &str,
        path: &str,
        credentials: String,
        request_timeout: Duration,
        example_url: &str,
    ) -> Result<Self, ProviderError> {
        let parsed = reqwest::Url::parse(base_url).map_err(|err| {
            ProviderError::Config(format!(
                "model.base_url {base_url:?} is not a valid URL: {err}; write it like {example_url}"
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ProviderError::Config(format!(
                "model.base_url {base_url:?} must start with http:// or https://"
            )));
        }
        // The attempt as a whole runs under `request_timeout` (see `attempt`);
        // the client's own limit is a second guard for the connect phase.
        let client = crate::tls::client_builder()
            // Providers and gateways (LiteLLM, vLLM) log who called.
            .user_agent(concat!("agentci/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(request_timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|err| {
                ProviderError::Config(format!("cannot set up the HTTP client: {err}"))
            })?;
        Ok(Self {
            provider,
            endpoint: format!("{}/{path}", base_url.trim_end_matches('/')),
            api_key_env: credentials,
            api_key: None,
            signed: true,
            request_timeout,
            max_response_bytes: answer_cap::DEFAULT_MAX_RESPONSE_BYTES,
            client,
        })
    }

    /// The key as a sensitive header value: `Bearer KEY` or the bare key.
    pub fn key_header(
        &self,
        name: HeaderName,
        bearer: bool,
    ) -> Result<Option<(HeaderName, HeaderValue)>, ProviderError> {
        let Some(key) = &self.api_key else {
            return Ok(None);
        };
        let text = if bearer {
            format!("Bearer {}", key.0)
        } else {
            key.0.clone()
        };
        let mut value = HeaderValue::from_str(&text).map_err(|_| {
            ProviderError::Config(format!(
                "the API key in {} contains characters that cannot go in an HTTP header",
                self.api_key_env
            ))
        })?;
        value.set_sensitive(true);
        Ok(Some((name, value)))
    }

    /// One attempt, bounded by `request_timeout` from connect to last byte,
    /// whether the body is read whole or streamed: a hung server cannot hang
    /// the run.
    pub async fn attempt<F>(&self, work: F) -> Result<ChatResponse, ProviderError>
    where
        F: std::future::Future<Output = Result<ChatResponse, ProviderError>>,
    {
        match tokio::time::timeout(self.request_timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(self.timeout_error()),
        }
    }

    pub fn timeout_error(&self) -> ProviderError {
        ProviderError::Unavailable(format!(
            "the model server at {} did not answer within {}; raise model.request_timeout or check the server",
            self.endpoint,
            format_duration(self.request_timeout)
        ))
    }

    /// An answer over `max_response_bytes`: refused, and not retried (the
    /// same request would bring the same answer).
    pub fn too_large_error(&self) -> ProviderError {
        ProviderError::AnswerTooLarge(format!(
            "the model server at {} sent an answer larger than {}, the limit \
             model.max_response_bytes sets; the answer was refused; if the model really answers \
             that much, raise model.max_response_bytes in the job",
            self.endpoint,
            answer_cap::size_text(self.max_response_bytes)
        ))
    }

    /// A whole body, under the answer cap.
    pub async fn read_whole(&self, response: reqwest::Response) -> Result<String, ProviderError> {
        answer_cap::read_whole(response, self.max_response_bytes)
            .await
            .map_err(|failure| match failure {
                WholeBodyFailure::TooLarge => self.too_large_error(),
                WholeBodyFailure::Transport(err) => self.transport_error(&err),
            })
    }

    pub fn transport_error(&self, err: &reqwest::Error) -> ProviderError {
        if err.is_timeout() {
            return self.timeout_error();
        }
        let cause = root_cause(err);
        if err.is_connect() {
            return ProviderError::Unavailable(format!(
                "cannot reach the model server at {}: {cause}; is the server running and model.base_url right?",
                self.endpoint
            ));
        }
        ProviderError::Unavailable(format!(
            "the request to the model server at {} failed: {cause}",
            self.endpoint
        ))
    }

    /// A non-success status as an error whose message says what to fix.
    /// `context_too_long` recognises the format's "prompt too long" answer.
    pub fn http_error(
        &self,
        status: reqwest::StatusCode,
        headers: &HeaderMap,
        body: &str,
        model: &str,
        context_too_long: impl Fn(u16, &str) -> bool,
    ) -> ProviderError {
        let mut message = server_message(body).unwrap_or_else(|| {
            status
                .canonical_reason()
                .unwrap_or("no message")
                .to_string()
        });
        if let Some(key) = &self.api_key {
            // Some servers echo the key they rejected.
            message = message.replace(&key.0, "<redacted>");
        }
        if context_too_long(status.as_u16(), body) {
            return ProviderError::ContextTooLong(format!(
                "the conversation is too long for model {model:?} at {}: {message}",
                self.endpoint
            ));
        }
        let hint = match status.as_u16() {
            400 => format!(
                "; the server refused the request: check the model name {model:?} and that model.provider ({}) matches the server",
                self.provider
            ),
            401 | 403 if self.signed => format!("; check {}", self.api_key_env),
            401 | 403 => format!("; check the API key in {}", self.api_key_env),
            404 => format!("; check model.base_url and the model name {model:?}"),
            _ => String::new(),
        };
        ProviderError::Http {
            provider: self.provider.to_string(),
            status: status.as_u16(),
            url: self.endpoint.clone(),
            message: format!("{message}{hint}"),
            retry_after: retry_after(headers, SystemTime::now()),
        }
    }

    /// A 200 whose body cannot be read as an answer.
    pub fn bad_body(&self, what: &str, reason: &str, body: &str) -> ProviderError {
        ProviderError::Unavailable(format!(
            "the model server at {} answered with {reason}{what}; body starts with {:?}",
            self.endpoint,
            excerpt(body)
        ))
    }

    /// Sends `builder` and returns the response when its status is a success.
    pub async fn send(
        &self,
        builder: reqwest::RequestBuilder,
        model: &str,
        context_too_long: impl Fn(u16, &str) -> bool,
    ) -> Result<reqwest::Response, ProviderError> {
        let response = builder
            .send()
            .await
            .map_err(|err| self.transport_error(&err))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let text = self.read_whole(response).await?;
        Err(self.http_error(status, &headers, &text, model, context_too_long))
    }

    /// Reads an answer: a streamed body through `decoder`, or (a server may
    /// ignore `stream: true`) a plain JSON body through `parse`.
    pub async fn read_answer<D: StreamDecoder>(
        &self,
        response: reqwest::Response,
        decoder: D,
        parse: impl FnOnce(&str) -> Result<ChatResponse, AnswerError>,
        observer: &dyn ProviderObserver,
    ) -> Result<ChatResponse, ProviderError> {
        if is_event_stream(&response) {
            return self.read_stream(response, decoder, observer).await;
        }
        let text = self.read_whole(response).await?;
        parse(&text).map_err(|reason| self.bad_body("", &reason.to_string(), &text))
    }

    /// Reads a streamed body through `decoder`. A stream that ends before
    /// the format's final event, breaks off, or carries garbage is an
    /// [`ProviderError::Unavailable`], so the call is retried as a whole and
    /// nothing half-received becomes an answer; one that passes the answer
    /// cap is [`ProviderError::AnswerTooLarge`].
    pub async fn read_stream<D: StreamDecoder>(
        &self,
        response: reqwest::Response,
        decoder: D,
        observer: &dyn ProviderObserver,
    ) -> Result<ChatResponse, ProviderError> {
        decode_stream(
            response.bytes_stream(),
            decoder,
            observer,
            self.max_response_bytes,
        )
        .await
        .map_err(|failure| self.stream_error(failure))
    }

    /// A stream's failure as a provider error.
    pub fn stream_error(&self, failure: StreamFailure) -> ProviderError {
        match failure {
            StreamFailure::TooLarge => self.too_large_error(),
            StreamFailure::Transport(message) if message.contains("timed out") => {
                self.timeout_error()
            }
            other => ProviderError::Unavailable(format!(
                "the response stream from the model server at {} {other}",
                self.endpoint
            )),
        }
    }
}

/// Is this a streamed (`text/event-stream`) response? A server may ignore
/// `stream: true` and answer with plain JSON; both are read.
fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// A wire format's reading of a stream of events into one answer.
pub trait StreamDecoder {
    /// Takes one event; returns `true` when it was the format's last one.
    /// Text deltas go to `observer` as they are read.
    fn event(
        &mut self,
        event: &SseEvent,
        observer: &dyn ProviderObserver,
    ) -> Result<bool, AnswerError>;
    /// The answer, once the last event was seen.
    fn finish(self) -> Result<ChatResponse, AnswerError>;
}

/// Why a stream did not give an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamFailure {
    /// The connection broke or timed out mid-stream.
    Transport(String),
    /// An event the format cannot read, or a server error sent in the stream.
    Malformed(String),
    /// The body ended before the format's final event.
    Incomplete { events: usize },
    /// The body passed the answer cap (`model.max_response_bytes`).
    TooLarge,
}

impl fmt::Display for StreamFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamFailure::Transport(message) => write!(f, "broke off: {message}"),
            StreamFailure::Malformed(message) => write!(f, "could not be read: {message}"),
            StreamFailure::Incomplete { events } => write!(
                f,
                "broke off after {events} events, before the end of the answer"
            ),
            StreamFailure::TooLarge => f.write_str("passed the answer cap"),
        }
    }
}

/// Feeds every event of `body` to `decoder` until its final event; more
/// than `limit` bytes is [`StreamFailure::TooLarge`].
pub async fn decode_stream<S, B, E, D>(
    body: S,
    mut decoder: D,
    observer: &dyn ProviderObserver,
    limit: u64,
) -> Result<ChatResponse, StreamFailure>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: fmt::Display,
    D: StreamDecoder,
{
    let over = AtomicBool::new(false);
    let events = sse::events(answer_cap::capped(body, limit, &over));
    futures_util::pin_mut!(events);
    let mut seen = 0;
    while let Some(event) = events.next().await {
        let event = event.map_err(|err| match err {
            SseError::Transport(_) if over.load(Ordering::Relaxed) => StreamFailure::TooLarge,
            SseError::Transport(message) => StreamFailure::Transport(message),
            SseError::Malformed(message) => StreamFailure::Malformed(message),
        })?;
        seen += 1;
        if decoder
            .event(&event, observer)
            .map_err(|e| StreamFailure::Malformed(e.to_string()))?
        {
            return decoder
                .finish()
                .map_err(|e| StreamFailure::Malformed(e.to_string()));
        }
    }
    Err(StreamFailure::Incomplete { events: seen })
}

/// How long the server asked to wait: `retry-after-ms`, or `Retry-After` as
/// seconds or an HTTP date (relative to `now`).
pub(super) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::from_secs_f64(seconds.min(86_400.0)));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(date.timestamp()).ok()?);
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A server on this machine (`localhost`, 127.0.0.0/8, `::1`), which may
/// run without a key.
/// The API key in the variable `named` (or `default` when the job names
/// none) of `env`; an empty one counts as none, as a server on loopback may
/// need none.
pub(super) fn api_key_from_env(env: &RunEnv, named: Option<&str>, default: &str) -> Option<String> {
    env.var(named.unwrap_or(default))
        .filter(|key| !key.is_empty())
}

pub fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host_str() {
        Some(host) if host.eq_ignore_ascii_case("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// The innermost error's text, which names the real cause ("connection
/// refused", "dns error: …") where reqwest's own text only names the URL.
pub fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    if let Some(io) = current.downcast_ref::<std::io::Error>()
        && io.kind() == std::io::ErrorKind::ConnectionRefused
    {
        return "connection refused".to_string();
    }
    lowercase_first(&current.to_string())
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `error.message` (OpenAI, Anthropic, vLLM) or `error` as a string
/// (Ollama); else the body itself when it is short text.
pub(super) fn server_message(body: &str) -> Option<String> {
    let message = match serde_json::from_str::<Value>(body) {
        Ok(json) => match json.get("error") {
            Some(Value::Object(error)) => error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string),
            Some(Value::String(error)) => Some(error.clone()),
            _ => json
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string),
        },
        Err(_) => Some(excerpt(body)),
    }?;
    let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    (!one_line.is_empty()).then_some(one_line)
}

pub(super) fn excerpt(text: &str) -> String {
    let mut cut: String = text.chars().take(BODY_EXCERPT_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

pub(super) fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_message_reads_the_common_shapes() {
        assert_eq!(
            server_message(r#"{"error":{"message":"bad key\nreally"}}"#).as_deref(),
            Some("bad key really")
        );
        assert_eq!(
            server_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            )
            .as_deref(),
            Some("Overloaded")
        );
        assert_eq!(
            server_message(r#"{"error":"model not found"}"#).as_deref(),
            Some("model not found")
        );
        assert_eq!(
            server_message("<html>oops</html>").as_deref(),
            Some("<html>oops</html>")
        );
        assert_eq!(server_message(""), None);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(Duration::from_secs(30)), "30s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470);
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1")]), now),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.5")]), now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after-ms", "250"), ("retry-after", "9")]),
                now
            ),
            Some(Duration::from_millis(250))
        );
        // 2015-10-21T07:28:00Z is 10 s after `now`.
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]),
                now
            ),
            Some(Duration::from_secs(10))
        );
        // A date in the past means "now".
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Wed, 21 Oct 2015 07:00:00 GMT")]),
                now
            ),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[]), now), None);
    }
}
