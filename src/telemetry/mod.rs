//! OpenTelemetry export of a run: each run becomes one trace of spans,
//! named and attributed after the OpenTelemetry GenAI semantic conventions,
//! sent to an OTLP/HTTP collector while the run goes on.
//!
//! Where the spans go is the job's `telemetry.otlp` or the standard
//! `OTEL_EXPORTER_OTLP_*` variables ([`OtlpTarget::resolve`]); turning
//! events into spans is [`spans`]'s, sending them [`client`]'s. Export never
//! changes a run: spans are batched in a bounded queue, the last ones get a
//! short flush, and a collector that cannot be reached is one `warning`.

mod client;
mod export;
mod parent;
mod pipeline;
mod spans;
mod tree;

use std::collections::BTreeMap;

pub use export::export_trace;
pub use opentelemetry::KeyValue;
pub use parent::TraceParent;
pub use spans::OtlpSink;
pub use tree::{OpenSpan, SpanTree};

use crate::spec::TelemetrySpec;

/// Where a run's spans are sent, once the job and the environment are read.
#[derive(Clone, PartialEq, Eq)]
pub struct OtlpTarget {
    /// The full URL spans are posted to (`…/v1/traces`).
    pub traces_url: String,
    /// The job's headers; the `OTEL_EXPORTER_OTLP_HEADERS` ones are added by the exporter.
    pub headers: BTreeMap<String, String>,
}

impl std::fmt::Debug for OtlpTarget {
    /// Header values are credentials: only their names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpTarget")
            .field("traces_url", &self.traces_url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
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
        let traces_url = match job.and_then(|o| o.endpoint.as_deref()) {
            Some(base) => with_traces_path(base),
            None => match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
                Some(url) => url,
                None => with_traces_path(&set("OTEL_EXPORTER_OTLP_ENDPOINT")?),
            },
        };
        Some(OtlpTarget {
            traces_url,
            headers: job.map(|o| o.headers.clone()).unwrap_or_default(),
        })
    }
}

fn with_traces_path(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::OtlpSpec;

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
            otlp: Some(OtlpSpec {
                endpoint: Some("http://job:4318/".into()),
                headers: BTreeMap::new(),
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
    fn header_values_stay_out_of_debug_output() {
        let target = OtlpTarget {
            traces_url: "http://c/v1/traces".into(),
            headers: BTreeMap::from([("x-api-key".to_string(), "sekrit".to_string())]),
        };
        assert!(!format!("{target:?}").contains("sekrit"));
    }
}
