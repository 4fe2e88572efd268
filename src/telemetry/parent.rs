//! The span a run nests under when something above it is traced: an eval
//! attempt's span, or the CI job's own, handed down as a W3C `traceparent`
//! (the `TRACEPARENT` variable of OpenTelemetry's environment carriers).

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};

/// A text that is not a W3C `traceparent`; it holds the text's first 80
/// characters, made inert for the terminal.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a W3C traceparent (00-<32 hex trace id>-<16 hex span id>-<2 hex flags>)")]
pub struct NotATraceParent(String);

/// A W3C trace context: `00-{trace id}-{parent span id}-{flags}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    trace_id: TraceId,
    span_id: SpanId,
    flags: TraceFlags,
}

impl TraceParent {
    /// Reads a `traceparent` header value; `Err` says what a valid one looks like.
    pub fn parse(text: &str) -> Result<TraceParent, NotATraceParent> {
        let wrong = || {
            NotATraceParent(crate::inert::terminal(
                text.chars().take(80).collect::<String>().as_str(),
            ))
        };
        let parts: Vec<&str> = text.trim().split('-').collect();
        let [version, trace, span, flags] = parts.as_slice() else {
            return Err(wrong());
        };
        let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex(version, 2)
            || *version == "ff"
            || !hex(trace, 32)
            || !hex(span, 16)
            || !hex(flags, 2)
        {
            return Err(wrong());
        }
        let trace_id = TraceId::from_hex(trace).map_err(|_| wrong())?;
        let span_id = SpanId::from_hex(span).map_err(|_| wrong())?;
        // All-zero ids are invalid by the W3C spec.
        if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
            return Err(wrong());
        }
        let flags = u8::from_str_radix(flags, 16).map_err(|_| wrong())?;
        Ok(TraceParent {
            trace_id,
            span_id,
            flags: TraceFlags::new(flags),
        })
    }

    pub(super) fn of(context: &SpanContext) -> TraceParent {
        TraceParent {
            trace_id: context.trace_id(),
            span_id: context.span_id(),
            flags: context.trace_flags(),
        }
    }

    /// The context a span started under it has as its parent.
    pub(super) fn context(&self) -> Context {
        Context::new().with_remote_span_context(SpanContext::new(
            self.trace_id,
            self.span_id,
            self.flags,
            true,
            TraceState::default(),
        ))
    }
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            self.trace_id,
            self.span_id,
            self.flags.to_u8()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_w3c_traceparent_reads_and_writes_back_the_same() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(TraceParent::parse(text).unwrap().to_string(), text);
    }

    #[test]
    fn malformed_or_all_zero_traceparents_are_refused_with_the_expected_shape() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01",
        ] {
            let error = TraceParent::parse(bad).unwrap_err().to_string();
            assert!(error.contains("W3C traceparent"), "{bad}: {error}");
        }
    }
}
