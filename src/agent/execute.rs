//! The execution phase: each plan step runs a tool-calling loop until the
//! model calls `step_done` (or answers with text only). The model may
//! replace the steps after the current one with `update_plan`; completed
//! steps never change.
//!
//! Round trips cost more than anything agentci does, so a step takes what
//! a response brings at once: the first step may start with the calls that
//! came with the plan; `step_done` may come with the step's last calls (it
//! applies when they all succeeded); and the last step's `step_done` may
//! carry the run's report and, when the job takes one, its result.

use serde_json::Value;

use crate::event::{EventKind, Phase, StepStatus};
use crate::provider::{ToolCall, ToolChoice};

use super::plan::{FirstCalls, plan_answer_taken};
use super::protocol::{self, STEP_DONE, SUBMIT_PLAN, StepDone, UPDATE_PLAN};
use super::result::{ResultSchema, SUBMIT_RESULT};
use super::session::{Answer, Answers, ControlCall, FailedCall, Session, Stop, Turn};

/// What the last step's `step_done` brought for the end of the run.
#[derive(Debug, Default)]
pub struct StepsEnded {
    /// The result submitted with it: valid, or what was wrong with it (one
    /// of the result's tries spent).
    pub result: Option<Result<Value, String>>,
}

/// Run the plan's steps from the first one not finished yet. `first` are
/// the calls that came with the plan, which the first step runs as its
/// own; `schema` is the job's result schema, whose `submit_result` the
/// last step's `step_done` may bring.
pub async fn execute_plan(
    session: &mut Session<'_>,
    mut first: Option<FirstCalls>,
    schema: Option<&ResultSchema>,
) -> Result<StepsEnded, Stop> {
    let mut ended = StepsEnded::default();
    while let Some((index, step)) = session.state().next_step() {
        let acted = first.take();
        // A resumed run may go on in a step it had begun: its start is in
        // the trace and its message in the conversation already.
        if !session.state().step_open {
            session.bus().emit(EventKind::StepStarted {
                index,
                title: step.title.clone(),
            });
            // With the plan's calls the step's instructions go with their
            // results instead, in the same request.
            if acted.is_none() {
                let message = step_message(session, index);
                session.tell(message);
            }
            session.start_step();
        }
        let end = run_step(session, index, acted, schema).await?;
        end_sessions(session, &format!("step {}", index + 1));
        let last = index + 1 == session.state().plan.len();
        let report = end.done.report.filter(|_| last);
        session.bus().emit(EventKind::StepCompleted {
            index,
            title: step.title,
            summary: end.done.summary.clone(),
            status: end.done.status,
        });
        if let Some(report) = report {
            session.set_report(report);
        }
        session.finish_step(end.done.summary, end.done.status);
        ended.result = end.result;
    }
    Ok(ended)
}

/// The message that starts step `index`, as the plan stands.
fn step_message(session: &Session<'_>, index: usize) -> String {
    let plan = &session.state().plan;
    protocol::step_message(
        index,
        plan.len(),
        &plan[index],
        &session.tool_names(),
        session.takes_result(),
    )
}

/// How a step ended.
struct StepEnd {
    done: StepDone,
    result: Option<Result<Value, String>>,
}

/// Run step `index` to completion, starting with `acted` (the calls that
/// came with the plan) when there are some.
async fn run_step(
    session: &mut Session<'_>,
    index: usize,
    mut acted: Option<FirstCalls>,
    schema: Option<&ResultSchema>,
) -> Result<StepEnd, Stop> {
    loop {
        let (calls, plan_call) = match acted.take() {
            Some(FirstCalls { calls, plan_call }) => (calls, Some(plan_call)),
            None => {
                session.checkpoint();
                let response = session
                    .call_model(Phase::Execute, Some(index), ToolChoice::Auto)
                    .await?;
                if response.tool_calls.is_empty() {
                    let summary = response.text.unwrap_or_default().trim().to_string();
                    return Ok(StepEnd {
                        done: StepDone {
                            summary,
                            status: StepStatus::Done,
                            report: None,
                        },
                        result: None,
                    });
                }
                (response.tool_calls, None)
            }
        };
        let turn = StepTurn {
            index,
            plan_len: session.state().plan.len(),
            plan_call: plan_call.as_deref(),
            schema,
            note: plan_call.is_some().then(|| step_message(session, index)),
        };
        let mut said = Said::default();
        let applied = run_turn(session, &calls, &turn, &mut said).await?;
        if let Some((call_id, failed)) = said.declined {
            session.bus().emit(EventKind::StepDoneDeclined {
                index,
                call_id,
                failed_call_id: failed.id,
                failed_tool: failed.tool,
            });
        }
        let result = said.result;
        if let Some(reason) = session.stuck() {
            // The run goes on to the next step (or the summary); the step's
            // status and summary say why it ended.
            return Ok(StepEnd {
                done: StepDone {
                    summary: format!("The step was ended: the model was {reason}."),
                    status: StepStatus::Failed,
                    report: None,
                },
                result: None,
            });
        }
        let mut done = None;
        for call in applied {
            let Ok(args) = call.arguments else { continue };
            if call.name == UPDATE_PLAN {
                if let Ok(steps) = protocol::parse_steps(&args, true) {
                    let steps = session.replace_steps_after(index, steps).to_vec();
                    session.bus().emit(EventKind::PlanUpdated {
                        steps,
                        from_index: index + 1,
                    });
                }
            } else if call.name == STEP_DONE && done.is_none() {
                done = protocol::parse_step_done(&args).ok();
            }
        }
        if let Some(done) = done {
            return Ok(StepEnd { done, result });
        }
    }
}

/// What one turn of a step needs to answer its control calls.
struct StepTurn<'t> {
    index: usize,
    /// The plan's length before the turn's `update_plan`.
    plan_len: usize,
    /// The turn is the response that brought the plan: its accepted `submit_plan`.
    plan_call: Option<&'t str>,
    schema: Option<&'t ResultSchema>,
    /// Added to the turn's last result.
    note: Option<String>,
}

/// What a step turn's answers decided beyond the calls applied.
#[derive(Default)]
struct Said {
    /// What came of a `submit_result` the last step's `step_done` brought.
    result: Option<Result<Value, String>>,
    /// A `step_done` (its call id) not applied, and the call that failed.
    declined: Option<(String, FailedCall)>,
}

/// Run one turn's calls in step `turn.index`.
async fn run_turn(
    session: &mut Session<'_>,
    calls: &[ToolCall],
    turn: &StepTurn<'_>,
    said: &mut Said,
) -> Result<Vec<ControlCall>, Stop> {
    let mut control = vec![STEP_DONE, UPDATE_PLAN];
    if turn.plan_call.is_some() {
        control.push(SUBMIT_PLAN);
    }
    if turn.schema.is_some() {
        control.push(SUBMIT_RESULT);
    }
    let calls = Turn {
        calls,
        control: &control,
        read_only: false,
    };
    session
        .run_calls(calls, |taken, failed| Answers {
            answers: answer_step_turn(taken, failed, turn, said),
            note: turn.note.clone(),
        })
        .await
}

/// The answers to a step turn's control calls, in order: `update_plan`
/// first (the step is the last one after it or not), then `step_done`
/// (not applied when a call of the turn failed), then `submit_result`
/// (taken only with the last step's applied `step_done`).
fn answer_step_turn(
    taken: &[ControlCall],
    failed: Option<&FailedCall>,
    turn: &StepTurn<'_>,
    said: &mut Said,
) -> Vec<Answer> {
    let mut answers: Vec<Option<Answer>> = vec![None; taken.len()];
    let mut plan_len = turn.plan_len;
    for (slot, call) in answers.iter_mut().zip(taken) {
        if call.name == UPDATE_PLAN {
            *slot = Some(
                match parsed(call)
                    .and_then(|args| protocol::parse_steps(args, true).map_err(|e| e.to_string()))
                {
                    Ok(steps) => {
                        plan_len = turn.index + 1 + steps.len();
                        Answer::Applied(format!(
                            "Plan updated: {} steps after this one.",
                            steps.len()
                        ))
                    }
                    Err(message) => Answer::Refused(message),
                },
            );
        }
    }
    let last = turn.index + 1 == plan_len;
    // What became of the turn's first valid step_done.
    let mut ends_run: Option<Fate> = None;
    for (slot, call) in answers.iter_mut().zip(taken) {
        if call.name != STEP_DONE {
            continue;
        }
        *slot = Some(
            match parsed(call)
                .and_then(|args| protocol::parse_step_done(args).map_err(|e| e.to_string()))
            {
                Err(message) => Answer::Refused(message),
                Ok(_) if ends_run.is_some() => Answer::Applied(
                    "This step was already ended by an earlier step_done of this response."
                        .to_string(),
                ),
                Ok(_) if let Some(failed) = failed => {
                    ends_run = Some(Fate::NotApplied);
                    said.declined = Some((call.id.clone(), failed.clone()));
                    Answer::Declined(protocol::step_done_not_applied(
                        failed.position,
                        &failed.tool,
                    ))
                }
                Ok(done) => {
                    ends_run = Some(Fate::Ended { last });
                    let mut ack = protocol::step_done_ack(done.status);
                    if done.report.is_some() && !last {
                        ack.push_str(protocol::REPORT_NOT_LAST);
                    }
                    Answer::Applied(ack)
                }
            },
        );
    }
    for (slot, call) in answers.iter_mut().zip(taken) {
        if call.name == SUBMIT_PLAN {
            *slot = Some(plan_answer_taken(
                call,
                Some(call.id.as_str()) == turn.plan_call,
            ));
        } else if call.name == SUBMIT_RESULT {
            *slot = Some(answer_result(call, ends_run, turn.schema, &mut said.result));
        }
    }
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Answer::Refused("cannot be called now".to_string())))
        .collect()
}

/// What became of a turn's `step_done`.
#[derive(Clone, Copy)]
enum Fate {
    /// A call of the turn failed: the step goes on.
    NotApplied,
    /// The step ended; `last`: it was the plan's last step.
    Ended { last: bool },
}

/// The answer to a `submit_result` in a step turn: checked against the
/// schema when the turn's `step_done` ended the last step.
fn answer_result(
    call: &ControlCall,
    fate: Option<Fate>,
    schema: Option<&ResultSchema>,
    result: &mut Option<Result<Value, String>>,
) -> Answer {
    match (fate, schema) {
        (Some(Fate::Ended { last: true }), Some(schema)) if result.is_none() => {
            let checked = match &call.arguments {
                Ok(args) => schema.check(&args.to_string()).map_err(|e| e.to_string()),
                Err(message) => Err(message.clone()),
            };
            let answer = match &checked {
                Ok(_) => Answer::Applied(super::result::RESULT_ACCEPTED.to_string()),
                Err(errors) => Answer::Declined(super::result::mismatch(errors)),
            };
            *result = Some(checked);
            answer
        }
        (Some(Fate::Ended { last: true }), Some(_)) => {
            Answer::Declined(super::result::ALREADY_ACCEPTED.to_string())
        }
        (Some(Fate::NotApplied), _) => Answer::Declined(
            "not applied: the step_done of this response was not applied; submit the result \
             with the last step's step_done"
                .to_string(),
        ),
        _ => Answer::Refused(protocol::out_of_phase(SUBMIT_RESULT, false).unwrap_or_default()),
    }
}

fn parsed(call: &ControlCall) -> Result<&Value, String> {
    call.arguments.as_ref().map_err(Clone::clone)
}

/// Kill the background sessions the step leaves running (all of them, or
/// those not kept), each recorded in the trace as a warning.
pub(super) fn end_sessions(session: &Session<'_>, when: &str) {
    let sessions = session.tool_context().processes.sessions();
    let ended = if when == "the run" {
        sessions.kill_all()
    } else {
        sessions.end_step()
    };
    for view in ended {
        session.bus().emit(EventKind::Warning {
            source: "process".into(),
            message: crate::tools::process::ended_message(&view, when),
        });
    }
}
