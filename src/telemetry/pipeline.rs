//! The export pipeline every traced thing shares (a run's sink, an eval's
//! suite and attempt spans): the OTLP/HTTP exporter over the crate's own
//! client, behind a batch processor with a bounded queue.

use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};

use super::OtlpTarget;
use super::client::{EXPORT_TIMEOUT, ExportClient, FirstFailure};

/// Spans waiting for export; past this they are dropped, never waited for.
const MAX_QUEUE: usize = 4096;

/// A tracer provider exporting to `target`, and where its first export
/// failure is kept; `Err` with one line when the exporter cannot be built.
pub(super) fn tracer_provider(
    target: &OtlpTarget,
) -> Result<(SdkTracerProvider, FirstFailure), String> {
    let failure = FirstFailure::default();
    let client = ExportClient::new(failure.clone())
        .map_err(|e| format!("telemetry export cannot start: {e}"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(target.traces_url.clone())
        .with_headers(target.headers.clone().into_iter().collect())
        .with_http_client(client)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| {
            format!(
                "telemetry export to {} cannot start ({e}); check `telemetry.otlp` or \
                 OTEL_EXPORTER_OTLP_*",
                target.traces_url
            )
        })?;
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(MAX_QUEUE)
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(
            BatchSpanProcessor::builder(exporter)
                .with_batch_config(batch)
                .build(),
        )
        .with_resource(Resource::builder().with_service_name("agentci").build())
        .build();
    Ok((provider, failure))
}
