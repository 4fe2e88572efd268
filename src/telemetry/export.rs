//! `agentci trace export --otlp`: a run's JSONL trace, read back, sent as
//! the same spans a live export makes, so a run that had no collector (or
//! one that was down) can still be looked at in the team's tracing tool.

use super::OtlpTarget;
use super::spans::{OtlpSink, time_of};
use crate::event::bus::EventSink;
use crate::event::{Event, EventKind};

/// Sends the spans of `events` (one run's, in trace order) to `target` and
/// waits for them to be taken. `Err` with one line when the collector did
/// not take them.
pub fn export_trace<'a>(
    target: &OtlpTarget,
    events: impl IntoIterator<Item = &'a Event>,
) -> Result<(), String> {
    let (mut sink, flush) = OtlpSink::start(target, None, None).map_err(|e| e.to_string())?;
    let mut last = None;
    let mut completed = false;
    for event in events {
        // Events are only ever read here: a sink error cannot happen.
        let _ = sink.on_event(event);
        completed |= matches!(event.kind, EventKind::RunCompleted(_));
        last = Some(time_of(event));
    }
    if !completed && let Some(at) = last {
        sink.end_unfinished(at);
    }
    // The flush's warning speaks of the job's settings; the caller names its flag.
    let _ = flush();
    let _ = sink.finish();
    match sink.first_failure() {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}
