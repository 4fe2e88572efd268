//! Going on with a run that stopped before it was done: which checkpoints
//! may be resumed, the run's trace cut back to the checkpoint, and what
//! the `run.resumed` event says.
//!
//! A run is resumed from its last checkpoint, taken before a model turn.
//! What the killed run did after it (the turn under way, its tool calls,
//! its `run.completed`) is dropped from the trace, so the trace reads as
//! one run with a `run.resumed` at the seam, `seq` gapless and every call
//! id once; the workspace keeps what those tool calls did, and the turn
//! runs again. Saving checkpoints is [`super::checkpoint`]'s business;
//! running the resumed run is [`super::run`]'s.

use std::path::{Path, PathBuf};

use crate::agent::ResumeFrom;
use crate::event::{BudgetInEffect, Event, EventKind, RunResumed, RunStatus};
use crate::provider::{Message, ToolDefinition};
use crate::trace_view::{DeltaMismatch, Rebuilt, rebuild};

use super::checkpoint::{self, Checkpoint, CheckpointError, Origin};
use super::checkpoint_key::CheckpointKey;

/// Why a stopped run cannot go on; each names the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The checkpoint cannot be loaded.
    #[error("{0}")]
    Checkpoint(#[from] CheckpointError),
    /// The checkpoint is of another job, skill, workspace or output path
    /// than the run is given now.
    #[error("{0}")]
    Mismatch(String),
    #[error("cannot read the run's trace {}: {source}", .path.display())]
    ReadTrace {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The trace cannot be cut back to the checkpoint.
    #[error("{}: {problem}", .path.display())]
    Trace { path: PathBuf, problem: String },
    /// The run ended by itself: there is nothing to go on with.
    #[error(
        "nothing to resume: run {run_id} in {} ended `{}` ({reason}); only a run that was \
         interrupted, stopped by its budget or by a failing model provider goes on",
        .run_dir.display(),
        .status.as_str()
    )]
    Finished {
        run_id: String,
        run_dir: PathBuf,
        status: RunStatus,
        reason: String,
    },
    /// A request's `sent` delta does not fit the one before it.
    #[error("{}: seq {seq}: {source}", .path.display())]
    Rebuild {
        path: PathBuf,
        seq: u64,
        source: DeltaMismatch,
    },
}

/// A run ready to go on: its checkpoint, and its trace up to it.
#[derive(Debug)]
pub struct Resumption {
    pub checkpoint: Checkpoint,
    /// The trace's bytes up to the checkpoint, which the resumed run's trace starts with.
    pub trace_kept: Vec<u8>,
    /// The events of those bytes, for the JUnit file rebuilt from the whole trace.
    pub history: Vec<Event>,
    /// The messages and tools of the last request in the kept trace.
    last_sent: (Vec<Message>, Option<Vec<ToolDefinition>>),
    /// How the run had ended, when it got to say.
    previous: Option<(RunStatus, String)>,
    /// Whole events after the checkpoint, dropped.
    events_dropped: u64,
    /// The last line was cut short (the process was killed while writing it).
    torn_line_dropped: bool,
}

/// What a resumed run must match: the job and skill it is given now, and
/// the paths the command line gives now. A resume never takes a path from
/// the checkpoint: it checks that the checkpoint recorded the same ones.
pub struct Given<'a> {
    pub job_file: &'a str,
    pub job_sha256: &'a str,
    pub skill_file: &'a str,
    pub skill_sha256: &'a str,
    pub workspace: &'a Path,
    pub trace: &'a Path,
    pub junit: &'a Path,
    /// The key the checkpoint's MAC must be made with.
    pub key: &'a CheckpointKey,
}

/// Load the checkpoint of `run_dir` and the trace it belongs to, and
/// check that the run may go on with the job, skill and paths `given`.
pub fn prepare(run_dir: &Path, given: &Given<'_>) -> Result<Resumption, ResumeError> {
    let checkpoint = checkpoint::load(run_dir, given.key)?;
    check_origin(&checkpoint.origin, given, run_dir).map_err(ResumeError::Mismatch)?;
    check_paths(&checkpoint.origin, given, run_dir).map_err(ResumeError::Mismatch)?;
    let trace = given.trace;
    let bytes = std::fs::read(trace).map_err(|source| ResumeError::ReadTrace {
        path: trace.to_path_buf(),
        source,
    })?;
    let cut =
        cut_trace(&bytes, checkpoint.next_seq, &checkpoint.origin.run_id).map_err(|problem| {
            ResumeError::Trace {
                path: trace.to_path_buf(),
                problem,
            }
        })?;
    if let Some((status, reason)) = &cut.previous
        && !resumable(*status)
    {
        return Err(ResumeError::Finished {
            run_id: checkpoint.origin.run_id.clone(),
            run_dir: run_dir.to_path_buf(),
            status: *status,
            reason: reason.clone(),
        });
    }
    let mut rebuilt = Rebuilt::default();
    let mut requests = 0;
    for event in cut.history.iter().filter(|e| e.agent.is_none()) {
        let sent = match &event.kind {
            EventKind::ModelRequest(request) => request.sent.as_ref(),
            EventKind::ContextTrimmed(trim) => trim.sent.as_ref(),
            _ => None,
        };
        if let Some(delta) = sent {
            rebuild(&mut rebuilt, delta).map_err(|source| ResumeError::Rebuild {
                path: trace.to_path_buf(),
                seq: event.seq,
                source,
            })?;
            requests += 1;
        }
    }
    let offered = (requests > 0).then_some(rebuilt.offered);
    Ok(Resumption {
        checkpoint,
        trace_kept: bytes[..cut.kept_bytes].to_vec(),
        history: cut.history,
        last_sent: (rebuilt.messages, offered),
        previous: cut.previous,
        events_dropped: cut.events_dropped,
        torn_line_dropped: cut.torn_line_dropped,
    })
}

impl Resumption {
    /// The trace's next `seq`.
    pub fn next_seq(&self) -> u64 {
        self.checkpoint.next_seq
    }

    pub fn origin(&self) -> &Origin {
        &self.checkpoint.origin
    }

    /// The time the run had taken up to the checkpoint.
    pub fn elapsed(&self) -> std::time::Duration {
        self.checkpoint.state.budget.elapsed()
    }

    /// The `run.resumed` event (with `budget`, the budget in effect now)
    /// and where the agent goes on from.
    pub fn into_start(self, budget: BudgetInEffect) -> (RunResumed, ResumeFrom) {
        let state = self.checkpoint.state;
        let before = state.budget.in_effect();
        let budget_changed = changed_limits(&before, &budget);
        let from_step = (state.step_open || !state.plan.is_empty())
            .then_some(state.steps.len())
            .filter(|&index| index < state.plan.len());
        let (previous_status, previous_reason) = self.previous.unzip();
        let resumed = RunResumed {
            from_turn: state.budget.turns,
            from_step,
            round: state.round,
            previous_status,
            previous_reason,
            budget_before: before,
            budget,
            budget_changed,
            events_dropped: self.events_dropped,
            torn_line_dropped: self.torn_line_dropped,
        };
        let start = ResumeFrom {
            state,
            last_sent: self.last_sent,
        };
        (resumed, start)
    }
}

/// The keys of the limits that differ between `before` and `now`.
fn changed_limits(before: &BudgetInEffect, now: &BudgetInEffect) -> Vec<String> {
    let differs = [
        ("max_turns", before.max_turns != now.max_turns),
        (
            "max_tool_calls",
            before.max_tool_calls != now.max_tool_calls,
        ),
        ("max_tokens", before.max_tokens != now.max_tokens),
        ("max_cost_usd", before.max_cost_usd != now.max_cost_usd),
        ("timeout", before.timeout_secs != now.timeout_secs),
    ];
    differs
        .into_iter()
        .filter(|(_, differs)| *differs)
        .map(|(key, _)| key.to_string())
        .collect()
}

/// Statuses of a run that may go on: stopped from outside, by the budget,
/// or by the model provider. A run that passed or failed on its own, or
/// could not start, is done.
fn resumable(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Interrupted | RunStatus::BudgetExceeded | RunStatus::ProviderUnavailable
    )
}

/// The checkpoint must be of this job and skill, as they are now.
fn check_origin(origin: &Origin, given: &Given<'_>, run_dir: &Path) -> Result<(), String> {
    let record = checkpoint::record_path(run_dir);
    if origin.job_sha256 != given.job_sha256 || origin.job_file != given.job_file {
        let what = if origin.job_file != given.job_file {
            format!("it was {}, not {}", origin.job_file, given.job_file)
        } else {
            format!(
                "{} or the flags that shape the job changed since",
                given.job_file
            )
        };
        return Err(format!(
            "{}: the checkpoint is of another job ({what}); resume with the job file and \
             flags the run started with, or run the job again",
            record.display()
        ));
    }
    if origin.skill_sha256 != given.skill_sha256 {
        return Err(format!(
            "{}: the checkpoint is of another skill ({} changed since the run started); \
             resume with the skill the run started with, or run the job again",
            record.display(),
            given.skill_file
        ));
    }
    Ok(())
}

/// The checkpoint must have been written by a run that worked and wrote
/// where this one is told to.
fn check_paths(origin: &Origin, given: &Given<'_>, run_dir: &Path) -> Result<(), String> {
    let paths = [
        (
            "workspace",
            &origin.workspace,
            given.workspace,
            "--workspace or the job's `workspace:`",
        ),
        ("run folder", &origin.run_dir, run_dir, "--resume"),
        (
            "trace",
            &origin.trace,
            given.trace,
            "--trace or the job's `outputs.trace`",
        ),
        (
            "JUnit file",
            &origin.junit,
            given.junit,
            "--junit or the job's `outputs.junit`",
        ),
    ];
    for (what, recorded, now, flag) in paths {
        if !same_path(recorded, now) {
            return Err(format!(
                "{}: the checkpoint is of a run whose {what} was {}, and this run's is {}; \
                 resume with the flags the run started with ({flag}), or run the job again",
                checkpoint::record_path(run_dir).display(),
                recorded.display(),
                now.display()
            ));
        }
    }
    Ok(())
}

/// The same file or folder: compared once resolved when both exist.
fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A trace cut back to a checkpoint.
#[derive(Debug)]
struct Cut {
    kept_bytes: usize,
    history: Vec<Event>,
    previous: Option<(RunStatus, String)>,
    events_dropped: u64,
    torn_line_dropped: bool,
}

/// Keep the events before `next_seq`; say how the run ended, if it did.
fn cut_trace(bytes: &[u8], next_seq: u64, run_id: &str) -> Result<Cut, String> {
    let mut history = Vec::new();
    let mut kept_bytes = 0;
    let mut offset = 0;
    let mut previous = None;
    let mut events_dropped = 0;
    let mut torn_line_dropped = false;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let start = offset;
        offset += line.len();
        let event = match line.strip_suffix(b"\n") {
            Some(text) => serde_json::from_slice::<Event>(text)
                .map_err(|e| format!("line {}: not a valid event: {e}", history.len() + 1))?,
            // Only the last line can lack its newline: the kill cut it short.
            None => {
                torn_line_dropped = true;
                break;
            }
        };
        if event.run_id != run_id {
            return Err(format!(
                "seq {}: an event of run {}, not of run {run_id}",
                event.seq, event.run_id
            ));
        }
        if let EventKind::RunCompleted(done) = &event.kind {
            previous = Some((done.status, done.reason.clone()));
        }
        if event.seq < next_seq {
            if event.seq != history.len() as u64 + 1 {
                return Err(format!(
                    "seq {} where {} was due",
                    event.seq,
                    history.len() + 1
                ));
            }
            history.push(event);
            kept_bytes = start + line.len();
        } else {
            events_dropped += 1;
        }
    }
    if (history.len() as u64) + 1 < next_seq {
        return Err(format!(
            "the trace ends at seq {} but the checkpoint was taken after seq {}: it is not the \
             whole trace of the run",
            history.len(),
            next_seq - 1
        ));
    }
    Ok(Cut {
        kept_bytes,
        history,
        previous,
        events_dropped,
        torn_line_dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::bus::EventBus;
    use crate::event::{RunCompleted, Totals};

    /// A trace of `kinds` as the bus writes it, in memory.
    fn trace(kinds: Vec<EventKind>) -> Vec<u8> {
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        struct Lines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl crate::event::bus::EventSink for Lines {
            fn on_event(&mut self, event: &Event) -> Result<(), crate::event::bus::SinkError> {
                let mut lines = self.0.lock().unwrap();
                serde_json::to_writer(&mut *lines, event).unwrap();
                lines.push(b'\n');
                Ok(())
            }
        }
        let bus = EventBus::new("r1", vec![Box::new(Lines(lines.clone()))]);
        for kind in kinds {
            bus.emit(kind);
        }
        lines.lock().unwrap().clone()
    }

    fn warning(n: u32) -> EventKind {
        EventKind::Warning {
            source: "test".into(),
            message: format!("event {n}"),
        }
    }

    #[test]
    fn the_trace_is_cut_at_the_checkpoint_and_a_torn_line_dropped() {
        let mut bytes = trace(vec![warning(1), warning(2), warning(3)]);
        bytes.extend_from_slice(b"{\"seq\":4,\"ts");
        let cut = cut_trace(&bytes, 3, "r1").unwrap();
        assert_eq!(cut.history.len(), 2);
        assert_eq!(cut.events_dropped, 1);
        assert!(cut.torn_line_dropped);
        assert!(cut.previous.is_none());
        let kept = String::from_utf8(bytes[..cut.kept_bytes].to_vec()).unwrap();
        assert_eq!(kept.lines().count(), 2);
        assert!(kept.ends_with('\n'));
    }

    #[test]
    fn how_the_stopped_run_ended_is_kept_and_a_short_trace_refused() {
        let done = EventKind::RunCompleted(RunCompleted {
            status: RunStatus::Interrupted,
            reason: "interrupted by SIGTERM".into(),
            summary: None,
            totals: Totals::default(),
            checks_passed: 0,
            checks_failed: 0,
            result: None,
            signal: None,
        });
        let bytes = trace(vec![warning(1), warning(2), done]);
        let cut = cut_trace(&bytes, 2, "r1").unwrap();
        assert_eq!(
            cut.previous,
            Some((RunStatus::Interrupted, "interrupted by SIGTERM".into()))
        );
        assert_eq!(cut.events_dropped, 2);

        let error = cut_trace(&bytes, 9, "r1").unwrap_err();
        assert!(error.contains("not the whole trace"), "{error}");
        let error = cut_trace(&bytes, 2, "other").unwrap_err();
        assert!(error.contains("not of run other"), "{error}");
    }

    #[test]
    fn only_the_limits_that_changed_are_named() {
        let before = BudgetInEffect {
            max_turns: 5,
            max_cost_usd: Some(1.0),
            ..Default::default()
        };
        let now = BudgetInEffect {
            max_turns: 9,
            max_cost_usd: Some(1.0),
            timeout_secs: Some(60.0),
            ..Default::default()
        };
        assert_eq!(changed_limits(&before, &now), ["max_turns", "timeout"]);
    }
}
