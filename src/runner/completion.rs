//! How a run ends in its trace: the events the parts of the run that
//! outlive the agent loop still have to report (a job's MCP servers'
//! last requests, the telemetry export's failure), then `run.completed`.
//! The runner collects them here as the parts start, so the event bus
//! only stamps, masks and delivers.

use crate::event::bus::EventBus;
use crate::event::{CompletionHook, EventKind, RunCompleted};

/// The last events to deliver before `run.completed`, in the order the
/// parts of the run asked.
#[derive(Default)]
pub struct Completion {
    hooks: Vec<CompletionHook>,
}

impl Completion {
    /// Deliver the events `hook` returns just before `run.completed`, while
    /// they still fit in the trace.
    pub fn before(&mut self, hook: CompletionHook) {
        self.hooks.push(hook);
    }

    /// Deliver the hooks' events, then `run.completed`; returns what the
    /// sinks saw: the same event, with secrets masked.
    pub fn complete(self, completed: RunCompleted, bus: &EventBus) -> RunCompleted {
        for last in self.hooks.into_iter().flat_map(|hook| hook()) {
            bus.emit(last);
        }
        match bus.emit(EventKind::RunCompleted(completed.clone())).kind {
            EventKind::RunCompleted(masked) => masked,
            _ => completed,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::event::bus::Collect;
    use crate::event::{RunStatus, Totals};

    // A part of the run that outlives the agent loop still gets its last
    // events in, before run.completed; nothing comes after it.
    #[test]
    fn hooks_deliver_before_run_completed() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let bus = EventBus::new("r", vec![Box::new(Collect(Arc::clone(&seen)))]);
        let mut completion = Completion::default();
        for message in ["first", "second"] {
            completion.before(Box::new(move || {
                vec![EventKind::Warning {
                    source: "mcp".into(),
                    message: message.into(),
                }]
            }));
        }
        completion.complete(
            RunCompleted {
                status: RunStatus::Passed,
                reason: String::new(),
                summary: None,
                totals: Totals::default(),
                checks_passed: 0,
                checks_failed: 0,
                result: None,
                signal: None,
            },
            &bus,
        );
        bus.emit(EventKind::Warning {
            source: "late".into(),
            message: "dropped".into(),
        });
        let seen = seen.lock().unwrap();
        let kinds: Vec<(u64, String)> = seen
            .iter()
            .map(|e| {
                let what = match &e.kind {
                    EventKind::Warning { message, .. } => message.clone(),
                    EventKind::RunCompleted(_) => "run.completed".into(),
                    _ => "other".into(),
                };
                (e.seq, what)
            })
            .collect();
        let expected = [(1, "first"), (2, "second"), (3, "run.completed")]
            .map(|(seq, what)| (seq, what.to_string()));
        assert_eq!(kinds, expected);
    }
}
