//! A conversation's side of keeping every request under the high-water
//! mark (see [`ContextKeeper`](crate::agent::context_keeper)): the estimate
//! before each model call and, above the mark, the compaction of the older
//! turns, recorded as a `context.compacted` event; the summary call counts
//! against the run's budget (for the run's agent, as one of its model
//! calls). The run's agent and its sub-agents keep theirs the same way.

use crate::event::EventKind;
use crate::provider::{ChatRequest, Message, ToolDefinition};

use super::super::compaction::SUMMARY_TOKENS;
use super::super::context_keeper::{SummaryCall, summary_call};
use super::Session;
use super::model_call::{CallPlace, Meter, ModelSession, Role, call_id_of, record, turn_of};

impl ModelSession<'_> {
    /// Estimate the next request; above the mark, compact the older turns.
    /// The summary call counts against the run's budget (for the run's
    /// agent, as one of its turns).
    pub(super) async fn keep_under_mark(
        &mut self,
        place: &CallPlace<'_>,
        messages: &mut Vec<Message>,
        offered: &[ToolDefinition],
        rewrites: &mut u64,
        meter: &mut Meter<'_, '_>,
    ) {
        let ModelSession {
            provider,
            model_name,
            bus,
            role,
            context,
            turns,
            usage,
            ..
        } = self;
        let (provider, bus, role, turns) = (*provider, &*bus, &*role, *turns);
        let summarize = async |request: ChatRequest, size: u64| {
            if !meter.with(|budget| budget.room_for_extra_call(size, SUMMARY_TOKENS)) {
                return Err("the budget leaves no room for a summary call".to_string());
            }
            let turn = turn_of(role, turns, meter);
            let call = SummaryCall {
                provider,
                bus,
                call_id: call_id_of(role, "summary", turn),
                phase: place.phase,
                turn,
                step: place.step,
            };
            let turn_of_run = *role == Role::Main;
            summary_call(call, request, |spent| {
                record(usage, meter, spent, turn_of_run).0
            })
            .await
        };
        let compacted = context
            .keep_under_mark(messages, offered, model_name, place.plan_status, summarize)
            .await;
        if let Some(mut event) = compacted {
            // The conversation was rewritten, not added to: a checkpoint saves it anew.
            *rewrites += 1;
            event.call_id = self.call_id(self.turn(meter));
            self.bus.emit(EventKind::ContextCompacted(event));
        }
    }
}

impl Session<'_> {
    /// The plan with the state of each step, for the compaction note.
    pub(super) fn plan_status(&self) -> String {
        let done = self.state.steps.len();
        self.state
            .plan
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let state = match i.cmp(&done) {
                    std::cmp::Ordering::Less => "done",
                    std::cmp::Ordering::Equal => "in progress",
                    std::cmp::Ordering::Greater => "to do",
                };
                format!("{}. [{state}] {}", i + 1, step.title)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}
