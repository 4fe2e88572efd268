//! Running one turn's tool calls: control calls (plan, step and result
//! tools) answered by the phase, the rest run as a [`batch`](super::super::batch)
//! within the run's budget, and every call's result added to the
//! conversation in the order the model made them. Calling the model is
//! [`super::model_call`]'s.

use serde_json::Value;

use crate::event::EventKind;
use crate::event::bus::EventBus;
use crate::provider::{Message, ToolCall};
use crate::tools::{ToolErrorCode, ToolResult};

use super::super::batch::{self, BatchEnv};
use super::super::loop_guard::{Judgement, LoopGuard};
use super::super::protocol::{self, CONTROL_TOOLS};
use super::super::result::SUBMIT_RESULT;
use super::super::subagent::Subagents;
use super::{ControlCall, Session, Stop};

/// One response's calls and how the phase takes them.
pub struct Turn<'c> {
    pub calls: &'c [ToolCall],
    /// The control tools the phase answers; any other gets the refusal
    /// that says when it may be called.
    pub control: &'c [&'c str],
    /// Planning: only the read-only tools may run.
    pub read_only: bool,
}

/// What the phase says to a control call it takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Taken: the call is returned to the phase as applied.
    Applied(String),
    /// Not taken this time, for a reason that is not the call's fault (a
    /// call before it failed); not counted as a repeat.
    Declined(String),
    /// Refused: an error result, counted by the loop guard like any refusal.
    Refused(String),
}

/// What the phase answers, once the turn's other calls have run.
pub struct Answers {
    /// One per control call the phase was given, in the same order.
    pub answers: Vec<Answer>,
    /// Text added to the turn's last tool result (the step's instructions
    /// when the plan came with the step's first calls): in the result
    /// itself, as the rules reminder is, so the prompt prefix stays cached.
    pub note: Option<String>,
}

/// A call of the turn (not a control call) that did not succeed.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedCall {
    /// Its place among the response's calls, from 1.
    pub position: usize,
    pub id: String,
    pub tool: String,
}

impl Session<'_> {
    /// Run one turn's calls. The calls that are not control calls run
    /// first, as one batch; then the control calls named in `turn.control`
    /// are given to `answer`, with the first of the others that failed, and
    /// answered as it says. A control tool this phase does not take gets an
    /// error result that says when it may be called. Every call gets a tool
    /// message, in the order the model made them. Returns the control calls
    /// the phase applied.
    pub async fn run_calls(
        &mut self,
        turn: Turn<'_>,
        answer: impl FnOnce(&[ControlCall], Option<&FailedCall>) -> Answers,
    ) -> Result<Vec<ControlCall>, Stop> {
        type Indexed<'c> = Vec<(usize, &'c ToolCall)>;
        let calls = turn.calls;
        let (controls, regular): (Indexed, Indexed) = calls
            .iter()
            .enumerate()
            .partition(|(_, c)| self.is_control(&c.name));
        let regular_calls: Vec<ToolCall> = regular.iter().map(|(_, c)| (*c).clone()).collect();
        self.state
            .budget
            .check_tool_batch(regular_calls.len() as u32)
            .map_err(Stop::Budget)?;

        let mut texts: Vec<Option<String>> = vec![None; calls.len()];
        let ran = self.run_batch(&regular_calls, turn.read_only).await;
        self.state
            .budget
            .record_tool_calls(regular_calls.len() as u32);
        self.state.work.record(&ran, regular_calls.len());
        let mut failed = None;
        for ((index, call), result) in regular.iter().zip(ran.results) {
            if !result.ok && failed.is_none() {
                failed = Some(FailedCall {
                    position: index + 1,
                    id: call.id.clone(),
                    tool: call.name.clone(),
                });
            }
            // The model provider is a third party: it never sees a secret a tool printed.
            texts[*index] = Some(self.ctx.secrets.redact(&result.model_text()).into_owned());
        }
        let phase = Phase {
            control: turn.control,
            read_only: turn.read_only,
        };
        let (applied, note) = answer_controls(
            &controls,
            &phase,
            |taken| answer(taken, failed.as_ref()),
            &mut texts,
            (&mut self.state.guard, &self.model.bus),
        );

        let last = calls.len().saturating_sub(1);
        for (index, (call, text)) in calls.iter().zip(texts).enumerate() {
            let mut content = text.unwrap_or_default();
            // In the tool result itself: both APIs accept no other message
            // between a turn's results and the next model turn.
            if index == last {
                for extra in [note.as_ref(), self.rules_reminder.as_ref()]
                    .into_iter()
                    .flatten()
                {
                    content.push_str("\n\n");
                    content.push_str(extra);
                }
            }
            self.state.conversation.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content,
            });
        }
        // A step that repeats itself ends there (the step reads the guard);
        // while planning there is no step to end, so the run does.
        if turn.read_only
            && let Some(reason) = self.state.guard.stuck()
        {
            return Err(Stop::Failed(format!(
                "the model kept {reason} while planning"
            )));
        }
        Ok(applied)
    }

    /// A call the phases answer themselves: the control tools, and
    /// `submit_result` in a job with a result schema (taken on the final
    /// turn, refused with when it is taken before).
    fn is_control(&self, name: &str) -> bool {
        CONTROL_TOOLS.contains(&name) || (self.takes_result && name == SUBMIT_RESULT)
    }

    /// Run the calls that are not control calls, as one batch that may start sub-agents.
    async fn run_batch(
        &mut self,
        regular_calls: &[ToolCall],
        read_only_phase: bool,
    ) -> batch::BatchRan {
        let state = &mut self.state;
        // The batch's sub-agents spend from the run's budget while it runs.
        let budget = std::sync::Mutex::new(&mut state.budget);
        let tasks = Subagents {
            provider: self.model.provider,
            model_name: &self.model.model_name,
            parent_tools: &self.tools,
            config: &self.subagents,
            policy: &self.policy,
            ctx: &self.ctx,
            bus: &self.model.bus,
            tool_loop: &self.tool_loop,
            budget: &budget,
        };
        let env = BatchEnv {
            tools: &self.tools,
            policy: &self.policy,
            ctx: &self.ctx,
            bus: &self.model.bus,
            read_only_phase,
            tool_loop: &self.tool_loop,
            batches: &state.batches,
            tasks: Some(&tasks),
        };
        batch::run_batch(&env, regular_calls, &mut state.guard).await
    }
}

/// The control calls a phase takes, and whether it is the read-only one (planning).
struct Phase<'p> {
    control: &'p [&'p str],
    read_only: bool,
}

/// Answer the turn's control calls, each in its place in `texts`: a
/// control tool the phase does not take gets an error result that says
/// when it is taken; the others go to `answer` together. Refused calls
/// count for the loop guard. Returns the calls the phase applied and the
/// note for the turn's last result.
fn answer_controls(
    controls: &[(usize, &ToolCall)],
    phase: &Phase<'_>,
    answer: impl FnOnce(&[ControlCall]) -> Answers,
    texts: &mut [Option<String>],
    (guard, bus): (&mut LoopGuard, &EventBus),
) -> (Vec<ControlCall>, Option<String>) {
    let mut taken = Vec::new();
    let mut taken_at = Vec::new();
    for &(index, call) in controls {
        if phase.control.contains(&call.name.as_str()) {
            taken.push(ControlCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: serde_json::from_str(&call.arguments)
                    .map_err(|e| format!("arguments are not valid JSON: {e}")),
            });
            taken_at.push((index, call));
            continue;
        }
        let refusal = protocol::out_of_phase(&call.name, phase.read_only)
            .unwrap_or_else(|| format!("`{}` cannot be called now", call.name));
        texts[index] = Some(refused(call, refusal, guard, bus).model_text());
    }
    if taken.is_empty() {
        return (Vec::new(), None);
    }
    let Answers { answers, note } = answer(&taken);
    let mut applied = Vec::new();
    for (((index, call), control_call), said) in taken_at.into_iter().zip(taken).zip(answers) {
        texts[index] = Some(match said {
            Answer::Applied(text) => {
                applied.push(control_call);
                text
            }
            Answer::Declined(text) => text,
            Answer::Refused(refusal) => refused(call, refusal, guard, bus).model_text(),
        });
    }
    (applied, note)
}

/// The result of a refused control call. The loop guard counts it like any
/// other call: a model that calls `submit_result` in a step again and
/// again is warned, then its step ends, instead of spending the budget.
fn refused(call: &ToolCall, refusal: String, guard: &mut LoopGuard, bus: &EventBus) -> ToolResult {
    let args = serde_json::from_str(&call.arguments)
        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
    match guard.observe_call(&call.name, &args) {
        Judgement::Run => ToolResult::failure(ToolErrorCode::InvalidArgument, refusal),
        Judgement::Warn(warning) => {
            bus.emit(EventKind::Warning {
                source: "loop_guard".into(),
                message: format!(
                    "call {} (`{}`) refused again: {warning}",
                    call.id, call.name
                ),
            });
            ToolResult::failure(
                ToolErrorCode::LoopDetected,
                format!("{refusal}. {}", sentence(&warning)),
            )
        }
        Judgement::Stop(reason) => ToolResult::failure(
            ToolErrorCode::LoopDetected,
            format!("{refusal}. The step is ended, {reason}"),
        ),
    }
}

/// `text` with its first letter in upper case, to follow a full stop.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
