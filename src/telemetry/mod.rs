//! OpenTelemetry export of a run: each run becomes one trace of spans,
//! named and attributed after the OpenTelemetry GenAI semantic conventions,
//! sent to an OTLP/HTTP collector while the run goes on.
//!
//! Where the spans go is the job's `telemetry.otlp` or the standard
//! `OTEL_EXPORTER_OTLP_*` variables ([`OtlpTarget::resolve`]); turning
//! events into spans is `spans`'s, sending them `client`'s. Export never
//! changes a run: spans are batched in a bounded queue, the last ones get a
//! short flush, and a collector that cannot be reached is one `warning`.

mod client;
mod content;
mod export;
mod grpc;
mod metrics;
mod parent;
mod pipeline;
mod runtime;
mod spans;
mod tree;

use std::collections::BTreeMap;

pub use export::export_trace;
pub use opentelemetry::KeyValue;
pub use parent::{NotATraceParent, TraceParent};
pub use pipeline::ExportStartError;
pub use spans::{OtlpSink, RunIdentity};
pub use tree::{OpenSpan, SpanTree};

use crate::event::CompletionHook;
use crate::event::bus::EventSink;
use crate::job::{OtlpProtocol, TelemetrySpec};

/// What exports one run: the span sink (and the metrics sink when a
/// metrics URL is known), and the flush that runs before `run.completed`.
pub struct RunExport {
    pub sinks: Vec<Box<dyn EventSink>>,
    pub flush: CompletionHook,
}

/// Starts exporting a run to `target`, its spans under `parent`; metrics
/// use `temporality` (`OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`).
/// `Err` with one line when the exporter cannot be built.
pub fn start_run_export(
    target: &OtlpTarget,
    parent: Option<&TraceParent>,
    identity: RunIdentity,
    temporality: Option<&str>,
) -> Result<RunExport, ExportStartError> {
    let (spans, flush) = OtlpSink::start(target, parent, Some(identity))?;
    let (failure, http) = (spans.failure_slot(), spans.http_client());
    let mut sinks: Vec<Box<dyn EventSink>> = vec![Box::new(spans)];
    if let Some(url) = &target.metrics_url {
        let kind = metrics::temporality(temporality);
        sinks.push(Box::new(metrics::MetricsSink::start(
            url,
            &target.headers,
            target.protocol,
            kind,
            failure,
            http,
        )?));
    }
    Ok(RunExport { sinks, flush })
}

/// Where a run's spans are sent, once the job and the environment are read.
#[derive(Clone, PartialEq, Eq)]
pub struct OtlpTarget {
    /// The full URL spans are posted to (`…/v1/traces`).
    pub traces_url: String,
    /// The full URL metrics are posted to (`…/v1/metrics`); `None` when
    /// only a traces endpoint is named.
    pub metrics_url: Option<String>,
    /// The job's headers; the `OTEL_EXPORTER_OTLP_HEADERS` ones are added by the exporter.
    pub headers: BTreeMap<String, String>,
    /// Export message content and tool arguments and results (masked, capped).
    pub content: bool,
    pub protocol: OtlpProtocol,
    /// What was wrong with the settings but did not stop export (an
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` not taken): a warning for the run.
    pub warning: Option<String>,
}

impl std::fmt::Debug for OtlpTarget {
    /// Header values are credentials: only their names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpTarget")
            .field("traces_url", &self.traces_url)
            .field("metrics_url", &self.metrics_url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("content", &self.content)
            .field("protocol", &self.protocol)
            .finish()
    }
}

impl OtlpTarget {
    /// The job's `telemetry.otlp.endpoint` first, then
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is), then
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (with `/v1/traces`); `None` when none
    /// is set: nothing is exported.
    pub fn resolve(spec: &TelemetrySpec, env: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let job = spec.otlp.as_ref();
        let from_job = job.and_then(|o| o.endpoint.as_deref()).is_some();
        let (protocol, warning) = match job {
            Some(otlp) if from_job => (otlp.protocol, None),
            _ => protocol_from_env(&set),
        };
        let base = job
            .and_then(|o| o.endpoint.clone())
            .or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT"));
        // OTLP/HTTP signals have their own paths; gRPC takes the address as it is.
        let under_base = |path: &str| {
            base.as_deref().map(|b| match protocol {
                OtlpProtocol::HttpProtobuf => with_path(b, path),
                OtlpProtocol::Grpc => b.to_string(),
            })
        };
        // The job's endpoint is one base for both; the variables may name each signal's URL.
        let signal = |name: &str, path: &str| match from_job {
            true => under_base(path),
            false => set(name).or_else(|| under_base(path)),
        };
        let traces_url = signal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces")?;
        Some(OtlpTarget {
            traces_url,
            metrics_url: signal("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "/v1/metrics"),
            headers: job.map(|o| o.headers.clone()).unwrap_or_default(),
            // The GenAI instrumentations' switch, for teams that set it once for all their tools.
            content: spec.content
                || set("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
            protocol,
            warning,
        })
    }
}

/// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`;
/// `http/protobuf` when neither is set, or (with a warning) when the value
/// is one agentci does not speak.
fn protocol_from_env(set: &impl Fn(&str) -> Option<String>) -> (OtlpProtocol, Option<String>) {
    let named = [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]
    .into_iter()
    .find_map(|name| set(name).map(|value| (name, value)));
    match named {
        None => (OtlpProtocol::HttpProtobuf, None),
        Some((name, value)) => match OtlpProtocol::parse(&value) {
            Some(protocol) => (protocol, None),
            None => (
                OtlpProtocol::HttpProtobuf,
                Some(format!(
                    "{name} is `{}`; agentci sends `http/protobuf` or `grpc`, so it sends \
                     `http/protobuf`",
                    crate::inert::terminal(value.trim())
                )),
            ),
        },
    }
}

fn with_path(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::OtlpSpec;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        assert_eq!(
            OtlpTarget::resolve(&TelemetrySpec::default(), env(&[])),
            None
        );
    }

    #[test]
    fn the_job_beats_the_environment_and_the_signal_variable_is_taken_as_is() {
        let job = TelemetrySpec {
            content: false,
            otlp: Some(OtlpSpec {
                endpoint: Some("http://job:4318/".into()),
                headers: BTreeMap::new(),
                protocol: OtlpProtocol::HttpProtobuf,
            }),
        };
        let vars = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:4318/custom",
            ),
        ]);
        let url =
            |spec: &TelemetrySpec, vars| OtlpTarget::resolve(spec, vars).map(|t| t.traces_url);
        assert_eq!(
            url(&job, &vars).as_deref(),
            Some("http://job:4318/v1/traces")
        );
        assert_eq!(
            url(&TelemetrySpec::default(), &vars).as_deref(),
            Some("http://traces:4318/custom")
        );
        assert_eq!(
            url(
                &TelemetrySpec::default(),
                &env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:1")])
            )
            .as_deref(),
            Some("http://b:1/v1/traces")
        );
    }

    #[test]
    fn metrics_go_under_the_same_base_or_to_their_own_variable_and_never_alone() {
        let metrics = |vars: &[(&str, &str)]| {
            OtlpTarget::resolve(&TelemetrySpec::default(), env(vars)).map(|t| t.metrics_url)
        };
        assert_eq!(
            metrics(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:1/")]),
            Some(Some("http://b:1/v1/metrics".to_string()))
        );
        assert_eq!(
            metrics(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:1"),
                ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:2/x")
            ]),
            Some(Some("http://m:2/x".to_string()))
        );
        assert_eq!(
            metrics(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:3/v1/traces")]),
            Some(None),
            "a traces endpoint alone sends no metrics"
        );
        assert_eq!(
            metrics(&[("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:2/x")]),
            None,
            "metrics go with a run's spans"
        );
    }

    #[test]
    fn grpc_takes_the_address_as_it_is_and_an_unknown_protocol_is_a_warning() {
        let grpc = OtlpTarget::resolve(
            &TelemetrySpec::default(),
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ]),
        )
        .unwrap();
        assert_eq!(grpc.protocol, OtlpProtocol::Grpc);
        assert_eq!(grpc.traces_url, "http://c:4317");
        assert_eq!(grpc.metrics_url.as_deref(), Some("http://c:4317"));
        let json = OtlpTarget::resolve(
            &TelemetrySpec::default(),
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ]),
        )
        .unwrap();
        assert_eq!(json.protocol, OtlpProtocol::HttpProtobuf);
        assert!(json.warning.unwrap().contains("`http/json`"));
    }

    #[test]
    fn header_values_stay_out_of_debug_output() {
        let target = OtlpTarget {
            traces_url: "http://c/v1/traces".into(),
            metrics_url: None,
            headers: BTreeMap::from([("x-api-key".to_string(), "sekrit".to_string())]),
            content: false,
            protocol: OtlpProtocol::HttpProtobuf,
            warning: None,
        };
        assert!(!format!("{target:?}").contains("sekrit"));
    }
}
