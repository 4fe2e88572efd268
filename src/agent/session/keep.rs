//! The session's side of keeping every request under the high-water mark
//! (see [`ContextKeeper`](crate::agent::context_keeper)): the estimate
//! before each model call and, above the mark, the compaction of the older
//! turns, recorded as a `context.compacted` event; the summary call counts
//! as one of the run's model calls.

use crate::event::{EventKind, Phase};
use crate::provider::ChatRequest;

use super::super::compaction::SUMMARY_TOKENS;
use super::super::context_keeper::{SummaryCall, summary_call};
use super::{Session, Stop};

impl Session<'_> {
    /// Estimate the next request; above the mark, compact the older turns.
    pub(super) async fn keep_under_mark(
        &mut self,
        phase: Phase,
        step: Option<usize>,
    ) -> Result<(), Stop> {
        let plan_status = self.plan_status();
        let budget = &mut self.state.budget;
        let (provider, bus) = (self.provider, &self.bus);
        let summarize = async |request: ChatRequest, size: u64| {
            if !budget.room_for_extra_call(size, SUMMARY_TOKENS) {
                return Err("the budget leaves no room for a summary call".to_string());
            }
            let turn = budget.turns + 1;
            let call = SummaryCall {
                provider,
                bus,
                call_id: format!("model-{turn}"),
                phase,
                turn,
                step,
            };
            summary_call(call, request, |usage| budget.record_model_call(usage)).await
        };
        let compacted = self
            .context
            .keep_under_mark(
                &mut self.state.conversation,
                &self.offered,
                &self.model_name,
                &plan_status,
                summarize,
            )
            .await;
        if let Some(mut event) = compacted {
            // The conversation was rewritten, not added to: a checkpoint saves it anew.
            self.state.rewrites += 1;
            event.call_id = format!("model-{}", self.state.budget.turns + 1);
            self.bus.emit(EventKind::ContextCompacted(event));
        }
        Ok(())
    }

    /// The plan with the state of each step, for the compaction note.
    fn plan_status(&self) -> String {
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
