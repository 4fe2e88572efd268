//! The export pipeline every traced thing shares (a run's sink, an eval's
//! suite and attempt spans): the OTLP/HTTP exporter over the crate's own
//! client, or OTLP/gRPC on a runtime of its own, behind a batch processor
//! with a bounded queue.

use std::collections::BTreeMap;

use opentelemetry_otlp::tonic_types::metadata::MetadataMap;
use opentelemetry_otlp::{
    ExporterBuildError, Protocol, RetryPolicy, WithExportConfig, WithHttpConfig, WithTonicConfig,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};

use super::OtlpTarget;
use super::client::{EXPORT_TIMEOUT, ExportClient, FirstFailure};
use super::grpc::OnOwnRuntime;
use super::runtime::OwnRuntime;
use crate::job::OtlpProtocol;

/// Why telemetry export cannot start; each says which setting to check.
#[derive(Debug, thiserror::Error)]
pub enum ExportStartError {
    /// The span exporter for `url` cannot be built.
    #[error(
        "telemetry export to {url} cannot start ({source}); check `telemetry.otlp` or \
         OTEL_EXPORTER_OTLP_*"
    )]
    Spans {
        url: String,
        source: ExporterBuildError,
    },
    /// The metrics exporter for `url` cannot be built.
    #[error("metrics export to {url} cannot start ({source})")]
    Metrics {
        url: String,
        source: ExporterBuildError,
    },
    /// The exporter's own HTTP client or runtime cannot be made.
    #[error("telemetry export cannot start: {0}")]
    Runtime(#[source] std::io::Error),
    /// A header of `telemetry.otlp.headers`, by name (never its value),
    /// that gRPC metadata cannot carry.
    #[error("`telemetry.otlp.headers.{0}` cannot be sent as gRPC metadata")]
    GrpcHeader(String),
}

/// Spans waiting for export; past this they are dropped, never waited for.
const MAX_QUEUE: usize = 4096;

/// How often what ended is sent: often enough that a long run's spans do
/// not pile up in memory until its end (the SDK's default is 5 s).
const SEND_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// A tracer provider exporting to `target`, where its first export
/// failure is kept, and its HTTP client (for the metrics to share);
/// `Err` with one line when the exporter cannot be built.
pub(super) fn tracer_provider(
    target: &OtlpTarget,
) -> Result<(SdkTracerProvider, FirstFailure, Option<ExportClient>), ExportStartError> {
    let failure = FirstFailure::default();
    let cannot_build = |source: ExporterBuildError| ExportStartError::Spans {
        url: target.traces_url.clone(),
        source,
    };
    let builder = SdkTracerProvider::builder()
        .with_resource(Resource::builder().with_service_name("agentci").build());
    let mut shared = None;
    let builder = match target.protocol {
        OtlpProtocol::HttpProtobuf => {
            let client = ExportClient::new(failure.clone()).map_err(ExportStartError::Runtime)?;
            shared = Some(client.clone());
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(target.traces_url.clone())
                .with_headers(target.headers.clone().into_iter().collect())
                .with_http_client(client)
                .with_timeout(EXPORT_TIMEOUT)
                .build()
                .map_err(cannot_build)?;
            builder.with_span_processor(batched(exporter))
        }
        OtlpProtocol::Grpc => {
            let runtime =
                OwnRuntime::one_worker("agentci-otlp-grpc").map_err(ExportStartError::Runtime)?;
            let exporter = {
                // tonic opens its connection on the runtime it is built in.
                let _entered = runtime.enter();
                opentelemetry_otlp::SpanExporter::builder()
                    .with_tonic()
                    .with_endpoint(target.traces_url.clone())
                    .with_metadata(grpc_metadata(&target.headers)?)
                    .with_timeout(EXPORT_TIMEOUT)
                    .with_retry_policy(RetryPolicy::disabled())
                    .build()
                    .map_err(cannot_build)?
            };
            let exporter =
                OnOwnRuntime::new(exporter, runtime, failure.clone(), &target.traces_url);
            builder.with_span_processor(batched(exporter))
        }
    };
    Ok((builder.build(), failure, shared))
}

fn batched<E: opentelemetry_sdk::trace::SpanExporter + 'static>(exporter: E) -> BatchSpanProcessor {
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(MAX_QUEUE)
        .with_scheduled_delay(SEND_EVERY)
        .build();
    BatchSpanProcessor::builder(exporter)
        .with_batch_config(batch)
        .build()
}

/// The job's headers as gRPC metadata: names lowercase ASCII, values
/// printable; one that is not is named (never its value).
pub(super) fn grpc_metadata(
    headers: &BTreeMap<String, String>,
) -> Result<MetadataMap, ExportStartError> {
    let mut map = http::HeaderMap::new();
    for (name, value) in headers {
        let bad = || ExportStartError::GrpcHeader(name.clone());
        let name = http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
            .map_err(|_| bad())?;
        let value = http::HeaderValue::from_str(value).map_err(|_| bad())?;
        map.insert(name, value);
    }
    Ok(MetadataMap::from_headers(map))
}
