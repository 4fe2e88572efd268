//! How a run ends in its trace: the events the parts of the run that
//! outlive the agent loop still have to report (a job's MCP servers'
//! last requests, the telemetry export's failure), then `run.completed`.
//! The runner collects them here as the parts start, so the event bus
//! only stamps, masks and delivers.
//!
//! Before `run.completed` the sinks settle what they held back (trace lines
//! a full disk kept in memory, written now with the space reserved for the
//! records, see [`crate::sink::reserve`]). A record that still cannot be
//! written makes a passing run an `error` whose reason names the file and
//! the error, so no display, summary or exit code says `passed` for a run
//! whose record is incomplete.

use crate::event::bus::{EventBus, SinkError};
use crate::event::{CompletionHook, EventKind, RunCompleted, RunStatus};

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

    /// Deliver the hooks' events, settle the records, then `run.completed`;
    /// returns what the sinks saw: the same event, with secrets masked.
    pub fn complete(self, completed: RunCompleted, bus: &EventBus) -> RunCompleted {
        for last in self.hooks.into_iter().flat_map(|hook| hook()) {
            bus.emit(last);
        }
        let completed = with_records(completed, &bus.settle());
        match bus.emit(EventKind::RunCompleted(completed.clone())).kind {
            EventKind::RunCompleted(masked) => masked,
            _ => completed,
        }
    }
}

/// `completed` as it stands once the records are settled: a run whose
/// records could not all be written says which and why, and does not pass.
pub fn with_records(mut completed: RunCompleted, unwritten: &[SinkError]) -> RunCompleted {
    if unwritten.is_empty() {
        return completed;
    }
    completed.reason = incomplete_reason(&completed.reason, unwritten);
    if completed.status == RunStatus::Passed {
        completed.status = RunStatus::Error;
    }
    completed
}

/// `reason`, followed by what could not be written.
pub fn incomplete_reason(reason: &str, unwritten: &[impl std::fmt::Display]) -> String {
    let failures: Vec<String> = unwritten.iter().map(|e| format!("failed to {e}")).collect();
    format!(
        "{reason}; the run's records are incomplete: {}",
        failures.join("; ")
    )
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

    fn completed(status: RunStatus) -> RunCompleted {
        RunCompleted {
            status,
            reason: "the check passed".into(),
            summary: None,
            totals: Totals::default(),
            checks_passed: 1,
            checks_failed: 0,
            result: None,
            signal: None,
        }
    }

    // Regression: a run whose trace could not be written said `passed`.
    #[test]
    fn unwritten_records_make_a_pass_an_error_naming_the_file() {
        let full = SinkError {
            what: "write trace to",
            path: "/ws/.agentci/runs/r/trace.jsonl".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        };
        let done = with_records(completed(RunStatus::Passed), &[full]);
        assert_eq!(done.status, RunStatus::Error);
        assert_eq!(
            done.reason,
            "the check passed; the run's records are incomplete: failed to write trace to \
             /ws/.agentci/runs/r/trace.jsonl: No space left on device (os error 28)"
        );
        // A failed run stays failed (exit 1), its reason saying the same.
        let full = SinkError {
            what: "write junit xml to",
            path: "j.xml".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        };
        let done = with_records(completed(RunStatus::Failed), &[full]);
        assert_eq!(done.status, RunStatus::Failed);
        assert!(
            done.reason.contains("records are incomplete"),
            "{}",
            done.reason
        );
        // Nothing unwritten: nothing changes.
        assert_eq!(
            with_records(completed(RunStatus::Passed), &[]),
            completed(RunStatus::Passed)
        );
    }
}
