//! OTLP/gRPC (`protocol: grpc`): tonic's exporter needs a Tokio runtime
//! for its connection, its timers and its retries, and the SDK's batch
//! processors poll exports on a plain thread. The exporter gets a small
//! runtime of its own, entered on every poll, so export works the same
//! from a run, an eval or `trace export`, and never runs on the run's
//! workers. Failures are noted as the HTTP client notes them, for the
//! run's one `warning`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use tokio::runtime::Handle;

use super::client::FirstFailure;
use super::runtime::OwnRuntime;

/// A future polled inside the exporter's runtime.
struct InRuntime<'a, T> {
    handle: Handle,
    future: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
}

impl<T> Future for InRuntime<'_, T> {
    type Output = T;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let _entered = self.handle.enter();
        self.future.as_mut().poll(cx)
    }
}

/// A tonic exporter run in its own runtime, its first failure noted.
#[derive(Debug)]
pub(super) struct OnOwnRuntime<E> {
    inner: E,
    runtime: Arc<OwnRuntime>,
    failure: FirstFailure,
    url: String,
}

impl<E> OnOwnRuntime<E> {
    pub(super) fn new(
        inner: E,
        runtime: Arc<OwnRuntime>,
        failure: FirstFailure,
        url: &str,
    ) -> Self {
        OnOwnRuntime {
            inner,
            runtime,
            failure,
            url: url.to_string(),
        }
    }

    async fn run<'a>(
        &'a self,
        export: impl Future<Output = OTelSdkResult> + Send + 'a,
    ) -> OTelSdkResult {
        let result = match self.runtime.handle() {
            Some(handle) => {
                InRuntime {
                    handle,
                    future: Box::pin(export),
                }
                .await
            }
            None => export.await,
        };
        if let Err(e) = &result
            && let Ok(mut first) = self.failure.lock()
            && first.is_none()
        {
            *first = Some(format!("the collector at {} (gRPC) failed: {e}", self.url));
        }
        result
    }
}

impl<E: SpanExporter> SpanExporter for OnOwnRuntime<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.run(self.inner.export(batch)).await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for OnOwnRuntime<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        self.run(self.inner.export(metrics)).await
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}
