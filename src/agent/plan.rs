//! The planning phase: the model may look around with the read-only tools,
//! then must call `submit_plan` within `max_plan_turns` turns.

use crate::event::{EventKind, Phase, PlanStep};
use crate::provider::ToolChoice;

use super::protocol::{self, SUBMIT_PLAN};
use super::session::{Session, Stop};

pub async fn make_plan(
    session: &mut Session<'_>,
    max_plan_turns: u32,
) -> Result<Vec<PlanStep>, Stop> {
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
        let applied = session
            .run_calls(&response.tool_calls, &[SUBMIT_PLAN], true, |call| {
                let args = call.arguments.as_ref().map_err(Clone::clone)?;
                protocol::parse_steps(args, false).map(|_| protocol::PLAN_ACCEPTED.to_string())
            })
            .await?;
        // The first valid plan wins if the model submitted more than one.
        if let Some(Ok(args)) = applied.first().map(|c| c.arguments.clone())
            && let Ok(steps) = protocol::parse_steps(&args, false)
        {
            session.bus().emit(EventKind::PlanCreated {
                steps: steps.clone(),
            });
            return Ok(steps);
        }
    }
    Err(Stop::Failed(format!(
        "the model did not submit a plan within {max_plan_turns} planning turns"
    )))
}
