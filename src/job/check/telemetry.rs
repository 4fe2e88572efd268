//! The job's `telemetry:` key: where the run's OpenTelemetry spans go.
//! `http/protobuf` or `grpc`; exporting is [`crate::telemetry`]'s.

use std::collections::BTreeMap;

use super::Checker;
use crate::job::load::{check_base_url, pos_of};
use crate::job::raw::RawTelemetry;
use crate::job::{OtlpProtocol, OtlpSpec, TelemetrySpec};

impl Checker<'_> {
    pub(super) fn telemetry(
        &mut self,
        raw: Option<&RawTelemetry>,
        vars: &BTreeMap<String, String>,
    ) -> TelemetrySpec {
        let content =
            self.optional_boolean(raw.and_then(|t| t.content.as_ref()), "telemetry.content");
        let Some(otlp) = raw.and_then(|t| t.otlp.as_ref()) else {
            return TelemetrySpec {
                otlp: None,
                content,
            };
        };
        let protocol = match &otlp.protocol {
            None => OtlpProtocol::HttpProtobuf,
            Some(given) => OtlpProtocol::parse(&given.value).unwrap_or_else(|| {
                let pos = pos_of(&self.r, given);
                self.r.error(
                    pos,
                    format!(
                        "`telemetry.otlp.protocol` is `{}`; use `http/protobuf` (the collector's \
                         port 4318) or `grpc` (port 4317)",
                        given.value
                    ),
                );
                OtlpProtocol::HttpProtobuf
            }),
        };
        let endpoint = otlp.endpoint.as_ref().and_then(|url| {
            let text = self.substitute(url, vars)?;
            match check_base_url(&text) {
                Ok(()) => Some(text),
                Err(problem) => {
                    let pos = pos_of(&self.r, url);
                    self.r.error(
                        pos,
                        format!(
                            "`telemetry.otlp.endpoint`: {}; give the collector's OTLP \
                             address, e.g. http://127.0.0.1:4318 (grpc: port 4317)",
                            problem
                                .to_string()
                                .replace(", e.g. http://127.0.0.1:11434/v1", "")
                        ),
                    );
                    None
                }
            }
        });
        let mut headers = BTreeMap::new();
        for (name, value) in &otlp.headers {
            if let Some(text) = self.substitute(value, vars) {
                headers.insert(name.clone(), text);
            }
        }
        TelemetrySpec {
            otlp: Some(OtlpSpec {
                endpoint,
                headers,
                protocol,
            }),
            content,
        }
    }
}
