//! The planning phase: the model may look around with the read-only tools,
//! then must call `submit_plan` within `max_plan_turns` turns. A response
//! that brings the plan together with other calls (the first step's) is
//! handed on whole: the step runs those calls as its own, and answers the
//! plan with them ([`super::execute`]).

use crate::event::{EventKind, Phase, PlanStep};
use crate::provider::{ToolCall, ToolChoice};

use super::protocol::{self, SUBMIT_PLAN};
use super::session::{Answer, Answers, Session, Stop, Turn};

/// The accepted plan, and the response's calls when it came with others.
pub struct Planned {
    pub steps: Vec<PlanStep>,
    /// The whole response when it made calls besides `submit_plan`: they
    /// are the first step's, not yet run or answered.
    pub acted: Option<FirstCalls>,
}

/// The calls of the response that brought the plan, and which of its
/// `submit_plan` calls was taken.
pub struct FirstCalls {
    pub calls: Vec<ToolCall>,
    pub plan_call: String,
}

pub async fn make_plan(session: &mut Session<'_>, max_plan_turns: u32) -> Result<Planned, Stop> {
    while session.state().plan_turns < max_plan_turns {
        session.checkpoint();
        let turn = session.next_plan_turn();
        let response = session
            .call_model(Phase::Plan, None, ToolChoice::Auto)
            .await?;
        if response.tool_calls.is_empty() {
            if turn < max_plan_turns {
                session.tell(protocol::PLAN_REMINDER.to_string());
            }
            continue;
        }
        // The first valid plan wins if the model submitted more than one.
        let plan = response.tool_calls.iter().find_map(|call| {
            let args = serde_json::from_str(&call.arguments).ok()?;
            (call.name == SUBMIT_PLAN)
                .then(|| protocol::parse_steps(&args, false).ok())
                .flatten()
                .map(|steps| (call.id.clone(), steps))
        });
        if let Some((plan_call, steps)) = plan {
            session.bus().emit(EventKind::PlanCreated {
                steps: steps.clone(),
            });
            let acts = response.tool_calls.iter().any(|c| c.name != SUBMIT_PLAN);
            if acts {
                return Ok(Planned {
                    steps,
                    acted: Some(FirstCalls {
                        calls: response.tool_calls,
                        plan_call,
                    }),
                });
            }
            answer_plan_only(session, &response.tool_calls, &plan_call).await?;
            return Ok(Planned { steps, acted: None });
        }
        let calls = Turn {
            calls: &response.tool_calls,
            control: &[SUBMIT_PLAN],
            read_only: true,
        };
        session
            .run_calls(calls, |taken, _| Answers {
                answers: taken.iter().map(plan_answer).collect(),
                note: None,
            })
            .await?;
    }
    Err(Stop::Failed(format!(
        "the model did not submit a plan within {max_plan_turns} planning turns"
    )))
}

/// Answer a response of `submit_plan` calls only: `plan_call` is accepted,
/// any other valid one is a plan too many.
async fn answer_plan_only(
    session: &mut Session<'_>,
    calls: &[ToolCall],
    plan_call: &str,
) -> Result<(), Stop> {
    let turn = Turn {
        calls,
        control: &[SUBMIT_PLAN],
        read_only: true,
    };
    session
        .run_calls(turn, |taken, _| Answers {
            answers: taken
                .iter()
                .map(|call| plan_answer_taken(call, call.id == plan_call))
                .collect(),
            note: None,
        })
        .await?;
    Ok(())
}

/// The answer to a `submit_plan` while no plan is accepted.
fn plan_answer(call: &super::session::ControlCall) -> Answer {
    let parsed = call
        .arguments
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|args| protocol::parse_steps(args, false).map_err(|e| e.to_string()));
    match parsed {
        Ok(_) => Answer::Applied(protocol::PLAN_ACCEPTED.to_string()),
        Err(message) => Answer::Refused(message),
    }
}

/// The answer to a `submit_plan` of the response that brought the plan:
/// the accepted one, a refusal for a bad one, or a plan too many.
pub(super) fn plan_answer_taken(call: &super::session::ControlCall, accepted: bool) -> Answer {
    if accepted {
        return Answer::Applied(protocol::PLAN_ACCEPTED.to_string());
    }
    match plan_answer(call) {
        Answer::Applied(_) => {
            Answer::Refused(protocol::out_of_phase(SUBMIT_PLAN, false).unwrap_or_default())
        }
        other => other,
    }
}
