//! The execution phase: each plan step runs a tool-calling loop until the
//! model calls `step_done` (or answers with text only). The model may
//! replace the steps after the current one with `update_plan`; completed
//! steps never change.

use crate::event::{EventKind, Phase, StepStatus};
use crate::provider::ToolChoice;

use super::protocol::{self, STEP_DONE, UPDATE_PLAN};
use super::session::{Session, Stop};

/// Run the plan's steps from the first one not finished yet.
pub async fn execute_plan(session: &mut Session<'_>) -> Result<(), Stop> {
    while let Some((index, step)) = session.state().next_step() {
        // A resumed run may go on in a step it had begun: its start is in
        // the trace and its message in the conversation already.
        if !session.state().step_open {
            session.bus().emit(EventKind::StepStarted {
                index,
                title: step.title.clone(),
            });
            session.tell(protocol::step_message(
                index,
                session.state().plan.len(),
                &step,
                &session.tool_names(),
            ));
            session.start_step();
        }
        let (summary, status) = run_step(session, index).await?;
        end_sessions(session, &format!("step {}", index + 1));
        session.bus().emit(EventKind::StepCompleted {
            index,
            title: step.title,
            summary: summary.clone(),
            status,
        });
        session.finish_step(summary, status);
    }
    Ok(())
}

/// Run step `index` to completion; returns its summary and how it ended.
async fn run_step(session: &mut Session<'_>, index: usize) -> Result<(String, StepStatus), Stop> {
    loop {
        session.checkpoint();
        let response = session
            .call_model(Phase::Execute, Some(index), ToolChoice::Auto)
            .await?;
        if response.tool_calls.is_empty() {
            let summary = response.text.unwrap_or_default().trim().to_string();
            return Ok((summary, StepStatus::Done));
        }
        let applied = session
            .run_calls(
                &response.tool_calls,
                &[STEP_DONE, UPDATE_PLAN],
                false,
                |call| {
                    let args = call.arguments.as_ref().map_err(Clone::clone)?;
                    if call.name == STEP_DONE {
                        protocol::parse_step_done(args)
                            .map(|(_, status)| protocol::step_done_ack(status))
                    } else {
                        protocol::parse_steps(args, true).map(|steps| {
                            format!("Plan updated: {} steps after this one.", steps.len())
                        })
                    }
                },
            )
            .await?;
        if let Some(reason) = session.stuck() {
            // The run goes on to the next step (or the summary); the step's
            // status and summary say why it ended.
            return Ok((
                format!("The step was ended: the model was {reason}."),
                StepStatus::Failed,
            ));
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
            } else if done.is_none() {
                done = protocol::parse_step_done(&args).ok();
            }
        }
        if let Some(done) = done {
            return Ok(done);
        }
    }
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
