//! Spans opened and closed by hand, for what sits above runs: an eval's
//! suites and attempts. Each attempt's run nests under its attempt's span
//! through a [`TraceParent`], so a whole evaluation is one trace.

use std::time::SystemTime;

use opentelemetry::trace::{Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use super::client::{EXPORT_TIMEOUT, FirstFailure};
use super::pipeline::{ExportStartError, tracer_provider};
use super::{OtlpTarget, TraceParent};

/// An exporter and its tracer, for spans made by hand.
pub struct SpanTree {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    failure: FirstFailure,
}

impl std::fmt::Debug for SpanTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpanTree")
    }
}

/// A span that is open until [`OpenSpan::end`].
#[derive(Clone, Debug)]
pub struct OpenSpan(Context);

impl SpanTree {
    /// An exporter to `target`; `Err` says why export cannot start.
    pub fn start(target: &OtlpTarget) -> Result<SpanTree, ExportStartError> {
        let (provider, failure, _) = tracer_provider(target)?;
        let tracer = provider.tracer("agentci");
        Ok(SpanTree {
            provider,
            tracer,
            failure,
        })
    }

    /// Opens `name` now, under `parent` (`None`: a new trace).
    pub fn open(
        &self,
        name: String,
        parent: Option<&OpenSpan>,
        attributes: Vec<KeyValue>,
    ) -> OpenSpan {
        let builder = self
            .tracer
            .span_builder(name)
            .with_start_time(SystemTime::now())
            .with_attributes(attributes);
        let root = Context::new();
        let span = builder.start_with_context(&self.tracer, parent.map_or(&root, |p| &p.0));
        OpenSpan(Context::new().with_span(span))
    }

    /// Sends what is left and stops; the first export failure, if any.
    pub fn finish(&self) -> Option<String> {
        let _ = self.provider.force_flush();
        let _ = self.provider.shutdown_with_timeout(EXPORT_TIMEOUT);
        self.failure.lock().ok().and_then(|f| f.clone())
    }
}

impl OpenSpan {
    /// A span of another process (the CI job's), to open spans under.
    pub fn remote(parent: &TraceParent) -> OpenSpan {
        OpenSpan(parent.context())
    }

    /// What a run started under this span is given, to nest under it.
    pub fn trace_parent(&self) -> TraceParent {
        TraceParent::of(self.0.span().span_context())
    }

    /// Closes the span now with `attributes`; `error` marks it failed.
    pub fn end(&self, attributes: Vec<KeyValue>, error: Option<String>) {
        let span = self.0.span();
        span.set_attributes(attributes);
        if let Some(why) = error {
            span.set_status(Status::error(why));
        }
        span.end_with_timestamp(SystemTime::now());
    }
}
