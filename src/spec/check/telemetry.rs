//! The job's `telemetry:` key: where the run's OpenTelemetry spans go.
//! Only `http/protobuf` is taken for now; exporting is [`crate::telemetry`]'s.

use std::collections::BTreeMap;

use super::Checker;
use crate::spec::load::{check_base_url, pos_of};
use crate::spec::raw::RawTelemetry;
use crate::spec::{OtlpSpec, TelemetrySpec};

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
        if let Some(protocol) = &otlp.protocol
            && protocol.value != "http/protobuf"
        {
            let pos = pos_of(&self.r, protocol);
            let message = if protocol.value == "grpc" {
                "`telemetry.otlp.protocol: grpc` is not yet taken; use `http/protobuf` (the \
                 collector's port 4318)"
                    .to_string()
            } else {
                format!(
                    "`telemetry.otlp.protocol` is `{}`; the only protocol taken is `http/protobuf`",
                    protocol.value
                )
            };
            self.r.error(pos, message);
        }
        let endpoint = otlp.endpoint.as_ref().and_then(|url| {
            let text = self.substitute(url, vars)?;
            match check_base_url(&text) {
                Ok(()) => Some(text),
                Err(problem) => {
                    let pos = pos_of(&self.r, url);
                    self.r.error(
                        pos,
                        format!(
                            "`telemetry.otlp.endpoint`: {}; give the collector's OTLP/HTTP \
                             address, e.g. http://127.0.0.1:4318",
                            problem.replace(", e.g. http://127.0.0.1:11434/v1", "")
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
            otlp: Some(OtlpSpec { endpoint, headers }),
            content,
        }
    }
}
