//! The loop's state as one value: the conversation, the plan with how far
//! it got, the budget spent, the loop guard's memory and the round.
//!
//! Everything the agent needs to carry on from where it stopped is here and
//! nothing else: the job, the tools, the provider and the bus are rebuilt
//! from the job file. That is why it is serializable: it is what a
//! checkpoint saves and what a resumed run loads. Saving and loading it is
//! not this module's business.

use std::sync::atomic::AtomicU64;

use serde::{Deserialize, Serialize};

use crate::event::{PlanStep, StepStatus};
use crate::provider::Message;

use super::batch::BatchRan;
use super::budget::BudgetTracker;
use super::loop_guard::LoopGuard;
use crate::tools::ToolErrorCode;

#[derive(Debug, Serialize, Deserialize)]
pub struct LoopState {
    /// The round of checks the agent works towards, from 1.
    pub round: u32,
    /// What the model has seen and said, in order.
    pub conversation: Vec<Message>,
    /// The steps, finished and still to come; empty until a plan is accepted.
    pub plan: Vec<PlanStep>,
    /// How the steps ended, in order: the next step to run is `steps.len()`.
    pub steps: Vec<StepRecord>,
    /// Planning turns taken.
    pub plan_turns: u32,
    pub budget: BudgetTracker,
    /// Repeats seen in the current step.
    pub guard: LoopGuard,
    /// Tool batches run so far (they are numbered from 1 in the trace).
    pub batches: AtomicU64,
    /// The step at `steps.len()` has begun (its message is in the
    /// conversation): a resumed run goes on in it rather than starting it again.
    #[serde(default)]
    pub step_open: bool,
    /// Sub-agents started so far (`task-1`, `task-2`, … over the whole run).
    #[serde(default)]
    pub subagents_started: u64,
    /// Times the conversation was rewritten (trimmed or compacted) rather
    /// than added to: a checkpoint rewrites its saved messages when it changes.
    #[serde(default)]
    pub rewrites: u64,
    /// The tool calls the model made and what became of them.
    #[serde(default)]
    pub work: WorkTally,
    /// The run's report, as the last step's `step_done` gave it this round:
    /// with it, no separate report turn is asked for.
    #[serde(default)]
    pub report: Option<String>,
}

/// The model's tool calls over the run (control calls aside): how many it
/// made, how many ran, how many the rules denied. A run that made calls
/// and none ran could not do anything, whatever the model reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkTally {
    pub made: u64,
    pub ran: u64,
    /// Refused as `PERMISSION_DENIED` (the job's rules, the skill's, the phase's).
    pub denied: u64,
}

impl WorkTally {
    /// Count one turn's `calls` calls and what came of them.
    pub fn record(&mut self, batch: &BatchRan, calls: usize) {
        self.made += calls as u64;
        self.ran += batch.ran as u64;
        self.denied += batch
            .results
            .iter()
            .filter(|r| r.error == Some(ToolErrorCode::PermissionDenied))
            .count() as u64;
    }

    /// Calls were made and not one of them ran.
    pub fn nothing_ran(&self) -> bool {
        self.made > 0 && self.ran == 0
    }
}

/// Where the loop's state goes before every model turn: the run's
/// checkpoint. The saver may take the conversation out of `state` while
/// it writes, but gives it back; an `Err` is a line for the user (the run
/// goes on without the checkpoint being current).
pub trait StateSaver: Send {
    fn save(&mut self, state: &mut LoopState) -> Result<(), NotSaved>;
}

/// A checkpoint that could not be written; the text says what and where.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotSaved(pub String);

/// How a finished step ended.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StepRecord {
    pub summary: String,
    pub status: StepStatus,
}

impl LoopState {
    /// The state before the first model call: the opening messages, nothing spent.
    pub fn new(conversation: Vec<Message>, budget: BudgetTracker, guard: LoopGuard) -> LoopState {
        LoopState {
            round: 1,
            conversation,
            plan: Vec::new(),
            steps: Vec::new(),
            plan_turns: 0,
            budget,
            guard,
            batches: AtomicU64::new(0),
            step_open: false,
            subagents_started: 0,
            rewrites: 0,
            work: WorkTally::default(),
            report: None,
        }
    }

    /// The step to run next and its index, once the plan has one left.
    pub fn next_step(&self) -> Option<(usize, PlanStep)> {
        let index = self.steps.len();
        self.plan.get(index).map(|step| (index, step.clone()))
    }

    /// Summaries of the finished steps, in order.
    pub fn step_summaries(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().map(|s| s.summary.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::BudgetSpec;
    use crate::provider::ToolCall;
    use crate::provider::Usage;
    use serde_json::json;

    #[test]
    fn the_state_round_trips_through_json() {
        let budget = BudgetTracker::new(
            &BudgetSpec {
                max_turns: Some(9),
                max_tool_calls: Some(40),
                ..Default::default()
            },
            None,
        );
        let mut state = LoopState::new(
            vec![
                Message::System {
                    content: "skill".into(),
                },
                Message::User {
                    content: "goal".into(),
                },
            ],
            budget,
            LoopGuard::new(3),
        );
        state.round = 2;
        state.conversation.push(Message::Assistant {
            reasoning: Vec::new(),
            content: None,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: r#"{"path":"a.txt"}"#.into(),
            }],
        });
        state.conversation.push(Message::Tool {
            tool_call_id: "c1".into(),
            content: "hello".into(),
        });
        state.plan = vec![
            PlanStep {
                title: "one".into(),
                expected_outcome: "done".into(),
            },
            PlanStep {
                title: "two".into(),
                expected_outcome: "also done".into(),
            },
        ];
        state.steps.push(StepRecord {
            summary: "did one".into(),
            status: StepStatus::Done,
        });
        state.plan_turns = 2;
        state.budget.record_model_call(&Usage {
            input_tokens: 120,
            output_tokens: 30,
            ..Default::default()
        });
        state.budget.record_tool_calls(1);
        state.guard.observe_call("read", &json!({"path": "a.txt"}));
        state
            .guard
            .observe_turn(&[("read", &json!({"path": "a.txt"}))]);
        state.batches.store(4, std::sync::atomic::Ordering::Relaxed);

        let saved = serde_json::to_value(&state).unwrap();
        let loaded: LoopState = serde_json::from_value(saved.clone()).unwrap();
        assert_eq!(serde_json::to_value(&loaded).unwrap(), saved);
        assert_eq!(loaded.next_step().map(|(i, _)| i), Some(1));
        assert_eq!(loaded.budget.turns, 1);
        assert_eq!(loaded.budget.usage.input_tokens, 120);
        assert!(loaded.budget.check_model_call().is_ok());
        // The guard remembers the call: two more identical ones are a repeat.
        let mut guard = loaded.guard;
        assert_eq!(
            guard.observe_call("read", &json!({"path": "a.txt"})),
            super::super::loop_guard::Judgement::Run
        );
        assert!(matches!(
            guard.observe_call("read", &json!({"path": "a.txt"})),
            super::super::loop_guard::Judgement::Warn(_)
        ));
    }
}
