//! The HTTP client the OTLP exporter sends through: the crate's own
//! `reqwest`, on a small runtime of its own, so export works from the
//! exporter's background thread and never waits on the run's workers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use opentelemetry_http::{HttpClient, HttpError};

use super::runtime::OwnRuntime;

/// Longest a single export may take; the end-of-run flush waits no longer.
pub(super) const EXPORT_TIMEOUT: Duration = Duration::from_millis(1500);

/// The first export failure, one line, for the run's `warning`.
pub(super) type FirstFailure = Arc<Mutex<Option<String>>>;

/// Cheap to clone: a run's spans and metrics share one client, one
/// connection pool and one runtime.
#[derive(Clone)]
pub(super) struct ExportClient {
    client: reqwest::Client,
    runtime: Arc<OwnRuntime>,
    failure: FirstFailure,
}

impl std::fmt::Debug for ExportClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExportClient")
    }
}

impl ExportClient {
    pub(super) fn new(failure: FirstFailure) -> std::io::Result<Self> {
        let runtime = OwnRuntime::current_thread()?;
        let client = crate::tls::client_builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(std::io::Error::other)?;
        Ok(ExportClient {
            client,
            runtime,
            failure,
        })
    }

    fn remember(&self, problem: String) {
        if let Ok(mut first) = self.failure.lock()
            && first.is_none()
        {
            *first = Some(problem);
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let url = parts.uri.to_string();
        let mut builder = self.client.request(parts.method, &url).body(body);
        for (name, value) in &parts.headers {
            builder = builder.header(name, value);
        }
        let Some(sent) = self.runtime.block_on(async {
            let response = builder.send().await?;
            let status = response.status();
            let body = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, body))
        }) else {
            return Err("the telemetry exporter has stopped".into());
        };
        match sent {
            Ok((status, body)) => {
                if !status.is_success() {
                    self.remember(format!("the collector at {url} answered {status}"));
                }
                let mut response = Response::new(body);
                *response.status_mut() = status;
                Ok(response)
            }
            Err(e) => {
                let why = if e.is_timeout() {
                    "did not answer in time".to_string()
                } else if e.is_connect() {
                    "cannot be reached".to_string()
                } else {
                    "failed".to_string()
                };
                self.remember(format!("the collector at {url} {why}"));
                Err(Box::new(e))
            }
        }
    }
}
