//! What the trace tells about the agent's own work, apart from the checks:
//! whether it submitted a plan, how many steps it completed, whether its
//! conversation had to be cut. The JUnit writer uses it to fail the agent
//! testcase when the run failed for a reason of the agent's own (no plan,
//! gave up, context overflow, a step that ended badly) even when a check
//! failed too: readers show the agent testcase on its own, and a passing
//! one next to a failing check reads as "the agent did its job".
//!
//! It decides nothing about the run's status; that comes from `run.completed`.

use std::collections::BTreeSet;

use crate::event::{EventKind, RunCompleted, RunStatus, StepStatus};

/// The agent's progress as seen in the events.
#[derive(Debug, Default)]
pub(super) struct AgentProgress {
    planned: bool,
    steps: usize,
    completed: BTreeSet<usize>,
    trimmed: u32,
    /// The first step that ended other than done, said in one line.
    ended_badly: Option<String>,
}

impl AgentProgress {
    pub(super) fn observe(&mut self, kind: &EventKind) {
        match kind {
            EventKind::PlanCreated { steps } => {
                self.planned = true;
                self.steps = steps.len();
            }
            EventKind::PlanUpdated { steps, .. } => self.steps = steps.len(),
            EventKind::StepCompleted {
                index,
                title,
                summary,
                status,
            } => {
                self.completed.insert(*index);
                if *status != StepStatus::Done && self.ended_badly.is_none() {
                    self.ended_badly = Some(format!(
                        "step {} \"{title}\" ended {}: {}",
                        index + 1,
                        status.as_str(),
                        or_default(summary, "no summary given")
                    ));
                }
            }
            EventKind::ContextTrimmed(_) => self.trimmed += 1,
            _ => {}
        }
    }

    /// The first step that ended other than done, in one line.
    pub(super) fn ended_badly(&self) -> Option<&str> {
        self.ended_badly.as_deref()
    }

    /// Whether the agent submitted a plan and completed every step of it.
    fn finished_plan(&self) -> bool {
        self.planned && (0..self.steps).all(|i| self.completed.contains(&i))
    }

    /// Why the agent itself failed, when it did: a step that ended badly,
    /// or a failed run whose agent never finished its plan (the run's reason
    /// is then the agent's, since the agent stopped before the checks ran)
    /// or that failed with no failed check (so the reason is not the checks').
    pub(super) fn own_failure(&self, done: &RunCompleted) -> Option<String> {
        // A step the model reported failed or blocked explains a run that
        // did not pass; when the checks passed anyway, the run's verdict stands.
        if let Some(step) = &self.ended_badly
            && done.status != RunStatus::Passed
        {
            return Some(step.clone());
        }
        let failed_itself =
            done.status == RunStatus::Failed && (done.checks_failed == 0 || !self.finished_plan());
        failed_itself.then(|| or_default(&done.reason, "the run failed"))
    }

    /// The text under a failure or error: the reason, then what the agent
    /// got done, so a reader that shows only the text still has the story.
    pub(super) fn story(&self, reason: &str, done: Option<&RunCompleted>) -> String {
        let mut lines = vec![or_default(reason, "the run failed")];
        lines.push(if !self.planned {
            "plan: none submitted".to_string()
        } else {
            format!(
                "plan: {} of {} steps completed",
                self.completed.len().min(self.steps),
                self.steps
            )
        });
        if self.trimmed > 0 {
            lines.push(format!(
                "context: the conversation was cut {} time(s) to fit the model's window",
                self.trimmed
            ));
        }
        match done {
            Some(done) => lines.push(format!(
                "checks: {} passed, {} failed",
                done.checks_passed, done.checks_failed
            )),
            None => lines.push("checks: the run ended before reporting them".to_string()),
        }
        lines.join("\n")
    }
}

/// `text`, or `fallback` when it is blank: readers such as dorny's
/// jest-junit parser crash on an empty `message` or failure text.
pub(super) fn or_default(text: &str, fallback: &str) -> String {
    if text.trim().is_empty() {
        fallback.to_string()
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{PlanStep, Totals};

    fn done(status: RunStatus, reason: &str, failed: u32) -> RunCompleted {
        RunCompleted {
            status,
            reason: reason.into(),
            summary: None,
            totals: Totals::default(),
            checks_passed: 0,
            checks_failed: failed,
            result: None,
            signal: None,
        }
    }

    fn planned(steps: usize, completed: usize) -> AgentProgress {
        let mut progress = AgentProgress::default();
        let step = |i: usize| PlanStep {
            title: format!("step {i}"),
            expected_outcome: "done".into(),
        };
        progress.observe(&EventKind::PlanCreated {
            steps: (0..steps).map(step).collect(),
        });
        for index in 0..completed {
            progress.observe(&EventKind::StepCompleted {
                index,
                title: format!("step {index}"),
                summary: String::new(),
                status: StepStatus::Done,
            });
        }
        progress
    }

    #[test]
    fn a_finished_plan_leaves_failed_checks_to_the_checks() {
        let progress = planned(2, 2);
        assert_eq!(
            progress.own_failure(&done(RunStatus::Failed, "1 of 1 checks failed", 1)),
            None
        );
        assert_eq!(
            progress.own_failure(&done(RunStatus::Passed, "ok", 0)),
            None
        );
    }

    #[test]
    fn no_plan_or_an_unfinished_one_is_the_agents_failure_even_with_failed_checks() {
        let reason = "the model did not submit a plan within 3 planning turns";
        let failed = done(RunStatus::Failed, reason, 1);
        assert_eq!(
            AgentProgress::default().own_failure(&failed).as_deref(),
            Some(reason)
        );
        assert!(planned(3, 1).own_failure(&failed).is_some());
        // A plan replaced mid-run counts its new length.
        let mut progress = planned(1, 1);
        progress.observe(&EventKind::PlanUpdated {
            steps: vec![
                PlanStep {
                    title: "a".into(),
                    expected_outcome: "b".into(),
                };
                2
            ],
            from_index: 1,
        });
        assert!(progress.own_failure(&failed).is_some());
    }

    #[test]
    fn a_blank_reason_still_gives_a_message_and_the_story_says_how_far_it_got() {
        let failed = done(RunStatus::Failed, "  ", 0);
        assert_eq!(
            planned(2, 1).own_failure(&failed).as_deref(),
            Some("the run failed")
        );
        assert_eq!(
            planned(2, 1).story("", Some(&failed)),
            "the run failed\nplan: 1 of 2 steps completed\nchecks: 0 passed, 0 failed"
        );
    }

    #[test]
    fn a_blocked_step_explains_a_failed_run_but_not_a_passed_one() {
        let mut progress = planned(2, 1);
        progress.observe(&EventKind::StepCompleted {
            index: 1,
            title: "run the tests".into(),
            summary: "cargo is not installed".into(),
            status: StepStatus::Blocked,
        });
        assert_eq!(
            progress
                .own_failure(&done(RunStatus::Failed, "1 of 1 checks failed", 1))
                .as_deref(),
            Some("step 2 \"run the tests\" ended blocked: cargo is not installed")
        );
        assert_eq!(
            progress.own_failure(&done(RunStatus::Passed, "the check passed", 0)),
            None
        );
    }
}
