//! Metrics of a run for teams that alert on scheduled jobs: runs by status,
//! tokens and cost by model, model-call and run durations, tool calls by
//! outcome. Names follow the GenAI semantic conventions where they have one
//! (`gen_ai.client.token.usage`, `gen_ai.client.operation.duration`);
//! they are sent through the same OTLP/HTTP exporter as the spans, once,
//! after `run.completed` (within the same short flush as the last spans).

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider};
use opentelemetry_otlp::{
    ExporterBuildError, Protocol, RetryPolicy, WithExportConfig, WithHttpConfig, WithTonicConfig,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};

use super::client::{EXPORT_TIMEOUT, ExportClient, FirstFailure};
use super::grpc::OnOwnRuntime;
use super::pipeline::{ExportStartError, grpc_metadata};
use super::runtime::OwnRuntime;
use super::spans::time_of;
use crate::event::bus::{EventSink, SinkError};
use crate::event::{Event, EventKind};
use crate::job::OtlpProtocol;

/// Bucket boundaries the GenAI conventions give for token counts.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];

/// Bucket boundaries the GenAI conventions give for operation durations (s).
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// Long enough that nothing is sent before the run's end flush.
const NO_PERIODIC_EXPORT: Duration = Duration::from_secs(24 * 60 * 60);

struct Instruments {
    runs: Counter<u64>,
    run_duration: Histogram<f64>,
    cost: Counter<f64>,
    tokens: Histogram<u64>,
    call_duration: Histogram<f64>,
    tool_calls: Counter<u64>,
}

/// A reader that exports only when flushed or shut down: once, as the run ends.
fn once_at_the_end<E: PushMetricExporter>(exporter: E) -> PeriodicReader<E> {
    PeriodicReader::builder(exporter)
        .with_interval(NO_PERIODIC_EXPORT)
        .build()
}

/// The metrics sink of one run.
pub struct MetricsSink {
    provider: SdkMeterProvider,
    instruments: Instruments,
    job: String,
    model: String,
    provider_name: String,
    started: Option<SystemTime>,
    /// Model calls under way: when each was sent.
    calls: HashMap<String, SystemTime>,
}

/// `cumulative` unless `OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`
/// (read by the caller) asks for `delta`, as backends such as Honeycomb and
/// Datadog prefer for short-lived processes.
pub fn temporality(preference: Option<&str>) -> Temporality {
    match preference.map(str::to_ascii_lowercase).as_deref() {
        Some("delta") => Temporality::Delta,
        Some("lowmemory") => Temporality::LowMemory,
        _ => Temporality::Cumulative,
    }
}

impl MetricsSink {
    /// A sink sending to `url`; export failures go to `failure`, the same
    /// first-failure slot as the spans', so one warning covers both; over
    /// http/protobuf through the spans' client `http` when given.
    pub(super) fn start(
        url: &str,
        headers: &std::collections::BTreeMap<String, String>,
        protocol: OtlpProtocol,
        temporality: Temporality,
        failure: FirstFailure,
        http: Option<ExportClient>,
    ) -> Result<MetricsSink, ExportStartError> {
        let cannot_build = |source: ExporterBuildError| ExportStartError::Metrics {
            url: url.to_string(),
            source,
        };
        let builder = SdkMeterProvider::builder()
            .with_resource(Resource::builder().with_service_name("agentci").build());
        let builder = match protocol {
            OtlpProtocol::HttpProtobuf => {
                let client = match http {
                    Some(shared) => shared,
                    None => ExportClient::new(failure).map_err(ExportStartError::Runtime)?,
                };
                let exporter = opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(url.to_string())
                    .with_headers(headers.clone().into_iter().collect())
                    .with_http_client(client)
                    .with_timeout(EXPORT_TIMEOUT)
                    .with_temporality(temporality)
                    .build()
                    .map_err(cannot_build)?;
                builder.with_reader(once_at_the_end(exporter))
            }
            OtlpProtocol::Grpc => {
                let runtime = OwnRuntime::one_worker("agentci-otlp-grpc")
                    .map_err(ExportStartError::Runtime)?;
                let exporter = {
                    let _entered = runtime.enter();
                    opentelemetry_otlp::MetricExporter::builder()
                        .with_tonic()
                        .with_endpoint(url.to_string())
                        .with_metadata(grpc_metadata(headers)?)
                        .with_timeout(EXPORT_TIMEOUT)
                        .with_retry_policy(RetryPolicy::disabled())
                        .with_temporality(temporality)
                        .build()
                        .map_err(cannot_build)?
                };
                builder.with_reader(once_at_the_end(OnOwnRuntime::new(
                    exporter, runtime, failure, url,
                )))
            }
        };
        let provider = builder.build();
        let meter = provider.meter("agentci");
        let instruments = Instruments {
            runs: meter
                .u64_counter("agentci.runs")
                .with_unit("{run}")
                .with_description("Runs, by job, model and status")
                .build(),
            run_duration: meter
                .f64_histogram("agentci.run.duration")
                .with_unit("s")
                .with_description("How long a run took")
                .with_boundaries(DURATION_BUCKETS.iter().map(|b| b * 10.0).collect())
                .build(),
            cost: meter
                .f64_counter("agentci.cost")
                .with_unit("USD")
                .with_description("What runs cost, by job and model")
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens per model call, by model and token type")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            call_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("How long a model call took")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            tool_calls: meter
                .u64_counter("agentci.tool_calls")
                .with_unit("{call}")
                .with_description("Tool calls, by tool and outcome")
                .build(),
        };
        Ok(MetricsSink {
            provider,
            instruments,
            job: String::new(),
            model: String::new(),
            provider_name: String::new(),
            started: None,
            calls: HashMap::new(),
        })
    }

    fn model_attributes(&self) -> Vec<KeyValue> {
        vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", self.provider_name.clone()),
            KeyValue::new("gen_ai.request.model", self.model.clone()),
        ]
    }
}

fn seconds_between(from: SystemTime, to: SystemTime) -> f64 {
    to.duration_since(from).unwrap_or_default().as_secs_f64()
}

impl EventSink for MetricsSink {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        let at = time_of(event);
        match &event.kind {
            EventKind::RunStarted(started) => {
                self.job = started.job_name.clone();
                self.model = started.model.name.clone();
                self.provider_name = started.model.provider.clone();
                self.started = Some(at);
            }
            EventKind::ModelRequest(request) => {
                self.calls.insert(request.call_id.clone(), at);
            }
            EventKind::ModelResponse(response) => {
                let attributes = self.model_attributes();
                if let Some(sent) = self.calls.remove(&response.call_id) {
                    self.instruments
                        .call_duration
                        .record(seconds_between(sent, at), &attributes);
                }
                for (kind, count) in [
                    ("input", response.usage.input_tokens),
                    ("output", response.usage.output_tokens),
                ] {
                    let mut typed = attributes.clone();
                    typed.push(KeyValue::new("gen_ai.token.type", kind));
                    self.instruments.tokens.record(count, &typed);
                }
            }
            EventKind::ToolResult(result) => {
                let outcome = if result.ok { "ok" } else { "error" };
                let mut attributes = vec![
                    KeyValue::new("gen_ai.tool.name", result.tool.clone()),
                    KeyValue::new("agentci.tool.outcome", outcome),
                ];
                if let Some(code) = &result.error_code {
                    attributes.push(KeyValue::new("error.type", code.clone()));
                }
                self.instruments.tool_calls.add(1, &attributes);
            }
            EventKind::RunCompleted(completed) => {
                let attributes = vec![
                    KeyValue::new("agentci.job", self.job.clone()),
                    KeyValue::new("gen_ai.request.model", self.model.clone()),
                    KeyValue::new("agentci.run.status", completed.status.as_str()),
                ];
                self.instruments.runs.add(1, &attributes);
                if let Some(started) = self.started {
                    self.instruments
                        .run_duration
                        .record(seconds_between(started, at), &attributes);
                }
                if let Some(cost) = completed.totals.cost_usd {
                    self.instruments.cost.add(
                        cost,
                        &[
                            KeyValue::new("agentci.job", self.job.clone()),
                            KeyValue::new("gen_ai.request.model", self.model.clone()),
                        ],
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        let _ = self.provider.shutdown_with_timeout(EXPORT_TIMEOUT);
        Ok(())
    }
}
