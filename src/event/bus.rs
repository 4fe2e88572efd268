//! The event bus: where a run's events get their `seq`, `ts` and `run_id`,
//! have their secrets masked, and fan out to the sinks.
//!
//! [`EventSink`] is what every sink implements; [`EventBus`] stamps each
//! [`EventKind`] and delivers the finished [`Event`] to every sink in order.
//! Masking happens here, once, with a [`Redactor`] the runner built from the
//! run's secret values, so no sink can see a secret or disagree about what is
//! hidden. What leaves the run another way (tool results sent to the model)
//! the agent masks itself, with the run's secrets its tool context holds.
//! The bus only stamps, masks and delivers: what a part of the run still
//! has to report before `run.completed` is the runner's to collect, and
//! where the trace stands for a checkpoint is the checkpoint writer's to
//! follow (a sink like any other). The event types themselves are
//! [`crate::event`]'s; this module does not define any.

use std::sync::{Arc, Mutex};

use crate::event::{AgentTag, Event, EventKind};
use crate::redact::Redactor;

/// Something that observes the event stream: trace writer, JUnit writer,
/// progress display. Sinks never call back into the run.
pub trait EventSink: Send {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError>;
    /// Called once just before `run.completed`: write what the sink held
    /// back because it could not be written (the trace's lines while the
    /// disk was full), with the space kept for the records. An `Err` means
    /// the record is incomplete, and the run does not pass.
    fn settle(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    /// Called once after `run.completed`, to write anything built up.
    fn finish(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    /// A piece of a model answer's text as it streams in, for live displays.
    /// Not an event: it has no `seq` and is not in the trace (the whole text
    /// is, in `model.response`). A `model.retry` for the same call means the
    /// text so far was thrown away.
    fn on_partial_text(&mut self, _call_id: &str, _delta: &str) {}
    /// An event a resumed run's trace already holds from before the resume:
    /// taken into what the sink builds up over the whole run (a summary, a
    /// report), not shown or written again. Given before the first event.
    fn on_history(&mut self, _event: &Event) {}
}

/// A sink that could not write what it was given.
#[derive(Debug, thiserror::Error)]
#[error("{what} {path}: {source}")]
pub struct SinkError {
    pub what: &'static str,
    pub path: String,
    #[source]
    pub source: std::io::Error,
}

/// Stamps events and fans them out to sinks. Cheap to clone; shared by the
/// concurrent parts of a run so that `seq` stays gapless.
#[derive(Clone)]
pub struct EventBus {
    inner: Arc<Mutex<BusState>>,
    /// Stamped on every event this handle emits: a sub-agent's bus.
    agent: Option<AgentTag>,
}

struct BusState {
    run_id: String,
    next_seq: u64,
    sinks: Vec<Box<dyn EventSink>>,
    /// Masks secrets in every event before any sink sees it.
    redactor: Redactor,
    /// The first sink error; reported at the end, the run goes on.
    errors: Vec<SinkError>,
    /// Settling before `run.completed` left a record incomplete (which
    /// `run.completed` then says).
    settle_failed: bool,
    /// `run.completed` was delivered: it stays the last event, so anything
    /// a step left running after a signal (the git step) emits is dropped.
    completed: bool,
}

impl EventBus {
    pub fn new(run_id: impl Into<String>, sinks: Vec<Box<dyn EventSink>>) -> Self {
        Self::with_redactor(run_id, sinks, Redactor::default())
    }

    /// A bus that masks the secrets `redactor` knows in every event it delivers.
    pub fn with_redactor(
        run_id: impl Into<String>,
        sinks: Vec<Box<dyn EventSink>>,
        redactor: Redactor,
    ) -> Self {
        EventBus {
            inner: Arc::new(Mutex::new(BusState {
                run_id: run_id.into(),
                next_seq: 1,
                sinks,
                redactor,
                errors: Vec::new(),
                settle_failed: false,
                completed: false,
            })),
            agent: None,
        }
    }

    /// The same bus (same sinks, same `seq`), stamping `agent` on every event.
    pub fn for_agent(&self, agent: AgentTag) -> EventBus {
        EventBus {
            inner: Arc::clone(&self.inner),
            agent: Some(agent),
        }
    }

    /// The secrets this bus masks, for what the run writes besides events
    /// (the checkpoint, the patch, a cassette): masked the same way.
    pub fn redactor(&self) -> Redactor {
        self.lock().redactor.clone()
    }

    pub fn run_id(&self) -> String {
        self.lock().run_id.clone()
    }

    /// The same bus, numbering its next event `next_seq`: a resumed run
    /// goes on with the trace it continues.
    pub fn continuing_at(self, next_seq: u64) -> EventBus {
        self.lock().next_seq = next_seq;
        self
    }

    /// Stamp `kind` and deliver it to every sink; returns the finished event.
    /// After `run.completed` nothing more is delivered.
    pub fn emit(&self, kind: EventKind) -> Event {
        let mut state = self.lock();
        let kind = redact_kind(&state.redactor, kind);
        let event = Event {
            seq: state.next_seq,
            ts: now_rfc3339(),
            run_id: state.run_id.clone(),
            agent: self.agent.clone(),
            kind,
        };
        if state.completed {
            return event;
        }
        state.completed = matches!(event.kind, EventKind::RunCompleted(_));
        state.next_seq += 1;
        let BusState { sinks, errors, .. } = &mut *state;
        for sink in sinks.iter_mut() {
            if let Err(e) = sink.on_event(&event) {
                errors.push(e);
            }
        }
        event
    }

    /// Hand a piece of streamed model text to every sink, unstamped.
    pub fn partial_text(&self, call_id: &str, delta: &str) {
        let mut state = self.lock();
        let BusState {
            sinks, redactor, ..
        } = &mut *state;
        // Masked like events; a secret split across two pieces is not caught
        // here, but the piece never reaches the trace, only the live display.
        let delta = redactor.redact(delta);
        for sink in sinks.iter_mut() {
            sink.on_partial_text(call_id, &delta);
        }
    }

    /// Let every sink write what it held back, before `run.completed`;
    /// returns what could not be written. A sink still holding lines tries
    /// again in [`EventBus::finish`], which reports them if they fail again.
    pub fn settle(&self) -> Vec<SinkError> {
        let mut state = self.lock();
        let unwritten: Vec<SinkError> = state
            .sinks
            .iter_mut()
            .filter_map(|sink| sink.settle().err())
            .collect();
        state.settle_failed |= !unwritten.is_empty();
        unwritten
    }

    /// Whether [`EventBus::settle`] found a record incomplete.
    pub fn settle_failed(&self) -> bool {
        self.lock().settle_failed
    }

    /// Let every sink write what it built up; returns the sink errors of the whole run.
    pub fn finish(&self) -> Vec<SinkError> {
        let mut state = self.lock();
        let BusState { sinks, errors, .. } = &mut *state;
        for sink in sinks.iter_mut() {
            if let Err(e) = sink.finish() {
                errors.push(e);
            }
        }
        std::mem::take(errors)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BusState> {
        // A sink that panicked poisons the lock; the events are still worth delivering.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `kind` with every secret masked. The rare event that no longer loads once
/// masked (a secret equal to an enum tag) is replaced rather than leaked.
fn redact_kind(redactor: &Redactor, kind: EventKind) -> EventKind {
    match redactor.redact_serde(kind) {
        Ok(kind) => kind,
        Err(EventKind::RunCompleted(mut done)) => {
            // The trace must still end with run.completed: mask its free text by hand.
            done.reason = redactor.redact(&done.reason).into_owned();
            done.summary = done.summary.map(|s| redactor.redact(&s).into_owned());
            // A result that cannot be masked is not shown at all.
            done.result = done.result.and_then(|r| redactor.redact_serde(r).ok());
            EventKind::RunCompleted(done)
        }
        Err(_) => EventKind::Warning {
            source: "redact".into(),
            message: "an event was withheld: a secret's value equals one of the trace's \
                      keywords, so it could not be masked"
                .into(),
        },
    }
}

/// The current time as RFC 3339 with milliseconds, in UTC.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
/// A sink that keeps every event it is given: what tests of the bus and of
/// its callers look at.
#[cfg(test)]
pub(crate) struct Collect(pub(crate) Arc<Mutex<Vec<Event>>>);

#[cfg(test)]
impl EventSink for Collect {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{RunCompleted, RunStatus, Totals};

    struct Partial(Arc<Mutex<Vec<String>>>);
    impl EventSink for Partial {
        fn on_event(&mut self, _: &Event) -> Result<(), SinkError> {
            Ok(())
        }
        fn on_partial_text(&mut self, _: &str, delta: &str) {
            self.0.lock().unwrap().push(delta.to_string());
        }
    }

    #[test]
    fn partial_text_is_masked_too() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let bus = EventBus::with_redactor(
            "r",
            vec![Box::new(Partial(seen.clone()))],
            Redactor::new(vec!["sk-secret-value".to_string()]),
        );
        bus.partial_text("m1", "the key is sk-secret-value, see");
        assert_eq!(seen.lock().unwrap()[0], "the key is ***, see");
    }

    // Regression: a git step still running after a signal could emit
    // `git.commit` after `run.completed`, which must be the trace's last line.
    #[test]
    fn nothing_is_delivered_after_run_completed() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let bus = EventBus::new("r1", vec![Box::new(Collect(seen.clone()))]);
        bus.emit(EventKind::RunCompleted(RunCompleted {
            status: RunStatus::Interrupted,
            reason: "interrupted by SIGTERM".into(),
            summary: None,
            totals: Totals::default(),
            checks_passed: 0,
            checks_failed: 0,
            result: None,
            signal: None,
        }));
        bus.emit(EventKind::GitCommit {
            branch: "b".into(),
            sha: "0".repeat(40),
        });
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert!(matches!(seen[0].kind, EventKind::RunCompleted(_)));
    }

    #[test]
    fn tags_are_dotted_and_fields_flat() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let bus = EventBus::new("r1", vec![Box::new(Collect(seen.clone()))]);
        bus.emit(EventKind::StepStarted {
            index: 0,
            title: "look".into(),
        });
        let line = serde_json::to_value(&seen.lock().unwrap()[0]).unwrap();
        assert_eq!(line["type"], "step.started");
        assert_eq!(line["seq"], 1);
        assert_eq!(line["run_id"], "r1");
        assert_eq!(line["title"], "look");
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    struct Seqs(Arc<Mutex<Vec<u64>>>);
    impl EventSink for Seqs {
        fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
            self.0.lock().unwrap().push(event.seq);
            Ok(())
        }
    }

    proptest! {
        /// Events emitted from several threads at once still get seq 1, 2, 3… in delivery order.
        #[test]
        fn seq_is_gapless_under_concurrent_emitters(threads in 1usize..6, per_thread in 0usize..40) {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let bus = EventBus::new("r", vec![Box::new(Seqs(seen.clone()))]);
            std::thread::scope(|s| {
                for _ in 0..threads {
                    let bus = bus.clone();
                    s.spawn(move || {
                        for i in 0..per_thread {
                            bus.emit(EventKind::StepStarted { index: i, title: String::new() });
                        }
                    });
                }
            });
            let seqs = seen.lock().unwrap().clone();
            let expected: Vec<u64> = (1..=(threads * per_thread) as u64).collect();
            prop_assert_eq!(seqs, expected);
        }
    }
}
