//! What stands in for the checks when a job has none. Checks decide pass or
//! fail; without them a run used to pass whenever the agent finished, even
//! when every call it made was denied or it said itself that a step failed
//! or was blocked ("passed — the agent finished" on a run where nothing
//! could happen). Such a run now fails (exit 1, like an agent that gave
//! up); the checks, when a job has them, still decide on their own.
//!
//! This module only words the objection from the loop's state; the run
//! decides what to do with it.

use crate::agent::LoopState;
use crate::event::StepStatus;

/// Characters of a step's summary the reason quotes.
const SUMMARY_CHARS: usize = 200;

/// Why a finished run of a job without checks cannot pass, or `None` when
/// nothing the agent did says it failed.
pub(super) fn objection(state: &LoopState) -> Option<String> {
    nothing_ran(state).or_else(|| unfinished_steps(state))
}

/// Every tool call the model made was refused.
fn nothing_ran(state: &LoopState) -> Option<String> {
    let work = state.work;
    if !work.nothing_ran() {
        return None;
    }
    let calls = match work.made {
        1 => "the agent's only tool call".to_string(),
        n => format!("all {n} tool calls of the agent"),
    };
    let what = if work.denied == work.made {
        format!("{calls} {} denied by the permission rules", were(work.made))
    } else if work.denied > 0 {
        format!(
            "{calls} {} refused ({} denied by the permission rules, the others not run)",
            were(work.made),
            work.denied
        )
    } else {
        // Nothing to allow: the calls named tools the run lacks, had bad
        // arguments or repeated themselves.
        return Some(format!(
            "nothing could happen: {calls} {} refused (a tool the run lacks, bad arguments, \
             repeats), and the job has no checks",
            were(work.made)
        ));
    };
    Some(format!(
        "nothing could happen: {what}, and the job has no checks; allow what the goal needs \
         (`--allow edit`, `--allow 'exec(cargo test *)'`, or `permissions.allow` in the job)"
    ))
}

fn were(calls: u64) -> &'static str {
    if calls == 1 { "was" } else { "were" }
}

/// Steps the agent ended `failed` or `blocked`.
fn unfinished_steps(state: &LoopState) -> Option<String> {
    let unfinished: Vec<(usize, StepStatus, &str)> = state
        .steps
        .iter()
        .enumerate()
        .filter(|(_, record)| record.status != StepStatus::Done)
        .map(|(index, record)| (index, record.status, record.summary.as_str()))
        .collect();
    let &(first, status, summary) = unfinished.first()?;
    let title = |index: usize| {
        state
            .plan
            .get(index)
            .map_or(String::new(), |step| format!(" ({})", step.title))
    };
    let which = if unfinished.len() == 1 {
        format!(
            "step {} of {}{} ended {}",
            first + 1,
            state.steps.len(),
            title(first),
            status.as_str()
        )
    } else {
        let listed: Vec<String> = unfinished
            .iter()
            .map(|&(index, status, _)| format!("step {} {}", index + 1, status.as_str()))
            .collect();
        format!(
            "{} of {} steps did not get done ({})",
            unfinished.len(),
            state.steps.len(),
            listed.join(", ")
        )
    };
    let said = crate::inert::clip(summary.trim(), SUMMARY_CHARS);
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(": {said}")
    };
    Some(format!(
        "{which}, and the job has no checks to show otherwise{said}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::budget::BudgetTracker;
    use crate::agent::loop_guard::LoopGuard;
    use crate::agent::state::{StepRecord, WorkTally};
    use crate::event::PlanStep;
    use crate::job::BudgetSpec;

    fn state(work: WorkTally, steps: &[(&str, StepStatus, &str)]) -> LoopState {
        let mut state = LoopState::new(
            Vec::new(),
            BudgetTracker::new(&BudgetSpec::default(), None),
            LoopGuard::new(3),
        );
        state.work = work;
        for (title, status, summary) in steps {
            state.plan.push(PlanStep {
                title: (*title).into(),
                expected_outcome: String::new(),
            });
            state.steps.push(StepRecord {
                summary: (*summary).into(),
                status: *status,
            });
        }
        state
    }

    fn tally(made: u64, ran: u64, denied: u64) -> WorkTally {
        WorkTally { made, ran, denied }
    }

    #[test]
    fn a_run_whose_calls_were_all_denied_cannot_pass() {
        let done = [("Fix", StepStatus::Done, "fixed")];
        let reason = objection(&state(tally(4, 0, 4), &done)).unwrap();
        assert!(
            reason.starts_with(
                "nothing could happen: all 4 tool calls of the agent were denied by the \
                 permission rules"
            ),
            "{reason}"
        );
        assert!(reason.contains("--allow edit"), "{reason}");
        let reason = objection(&state(tally(3, 0, 1), &done)).unwrap();
        assert!(
            reason.contains("(1 denied by the permission rules"),
            "{reason}"
        );
        let reason = objection(&state(tally(1, 0, 0), &done)).unwrap();
        assert!(
            reason.starts_with("nothing could happen: the agent's only tool call was refused"),
            "{reason}"
        );
        assert!(!reason.contains("--allow"), "{reason}");
        assert_eq!(objection(&state(tally(4, 1, 3), &done)), None);
        // No calls at all is not "everything was refused".
        assert_eq!(objection(&state(tally(0, 0, 0), &done)), None);
    }

    #[test]
    fn a_failed_or_blocked_step_cannot_pass() {
        let reason = objection(&state(
            tally(2, 2, 0),
            &[
                ("Look", StepStatus::Done, "looked"),
                ("Fix the code", StepStatus::Blocked, "edit is not allowed"),
            ],
        ))
        .unwrap();
        assert_eq!(
            reason,
            "step 2 of 2 (Fix the code) ended blocked, and the job has no checks to show \
             otherwise: edit is not allowed"
        );
        let reason = objection(&state(
            tally(2, 2, 0),
            &[
                ("Look", StepStatus::Failed, "x".repeat(300).as_str()),
                ("Fix", StepStatus::Blocked, ""),
            ],
        ))
        .unwrap();
        assert!(
            reason.starts_with("2 of 2 steps did not get done (step 1 failed, step 2 blocked)"),
            "{reason}"
        );
        assert!(reason.ends_with("x…"), "{reason}");
    }
}
