//! The job's checks: shell commands run in the workspace after the agent
//! finishes. They, not the model, decide whether the run passed. They run
//! through the run's [`ProcessRunner`], in the same sandbox as `exec`.

use std::path::Path;
use std::time::Instant;

use crate::agent::CancelSignal;
use crate::event::bus::EventBus;
use crate::event::{CheckCompleted, CheckOutcome, EventKind};
use crate::job::CheckSpec;
use crate::process::ProcessRunner;

/// Characters of check output kept in the trace and JUnit: the end, where failures are.
const CHECK_OUTPUT_CHARS: usize = 20_000;

/// What a run of the checks found: how many passed and failed, and the
/// failed ones as they were recorded (secrets masked).
#[derive(Debug, Default)]
pub struct ChecksRan {
    pub passed: u32,
    pub failed: u32,
    pub failures: Vec<CheckCompleted>,
}

/// Checks cut short by `cancel`: how many had finished, and why it stopped.
#[derive(Debug)]
pub struct ChecksStopped {
    pub reason: String,
    pub passed: u32,
    pub failed: u32,
}

/// Run every check in order and record each; returns what they found.
/// Stopped when `cancel` fires: the running check is killed
/// (dropping it kills its process group) and it and the rest are recorded
/// as skipped.
pub async fn run_checks_until(
    checks: &[CheckSpec],
    workspace: &Path,
    processes: &ProcessRunner,
    bus: &EventBus,
    cancel: &CancelSignal,
) -> Result<ChecksRan, ChecksStopped> {
    let (mut passed, mut failed) = (0, 0);
    let mut failures = Vec::new();
    let sandbox = processes.profile().as_str();
    for (index, check) in checks.iter().enumerate() {
        let started = Instant::now();
        let shell = processes.run_shell(&check.run, workspace, check.timeout, CHECK_OUTPUT_CHARS);
        let outcome = tokio::select! {
            biased;
            reason = cancel.cancelled() => {
                skip_checks(&checks[index..], &reason, bus);
                return Err(ChecksStopped { reason, passed, failed });
            }
            outcome = shell => outcome,
        };
        let (result, exit_code, output) = match outcome {
            Ok(out) if out.timed_out => (CheckOutcome::TimedOut, out.exit_code, out.output),
            Ok(out) if out.exit_code == Some(0) => {
                (CheckOutcome::Passed, out.exit_code, out.output)
            }
            Ok(out) => (CheckOutcome::Failed, out.exit_code, out.output),
            Err(e) => (
                CheckOutcome::Failed,
                None,
                format!("could not start the check: {e}"),
            ),
        };
        if result == CheckOutcome::Passed {
            passed += 1;
        } else {
            failed += 1;
        }
        let recorded = bus.emit(EventKind::CheckCompleted(CheckCompleted {
            name: check.name.clone(),
            command: check.run.clone(),
            outcome: result,
            exit_code,
            duration_ms: started.elapsed().as_millis() as u64,
            output,
            sandbox: sandbox.to_string(),
        }));
        if result != CheckOutcome::Passed
            && let EventKind::CheckCompleted(masked) = recorded.kind
        {
            failures.push(masked);
        }
    }
    Ok(ChecksRan {
        passed,
        failed,
        failures,
    })
}

/// Record every check as skipped: the agent did not finish, so they would judge nothing.
pub fn skip_checks(checks: &[CheckSpec], reason: &str, bus: &EventBus) {
    for check in checks {
        bus.emit(EventKind::CheckCompleted(CheckCompleted {
            name: check.name.clone(),
            command: check.run.clone(),
            outcome: CheckOutcome::Skipped,
            exit_code: None,
            duration_ms: 0,
            output: reason.to_string(),
            sandbox: String::new(),
        }));
    }
}
