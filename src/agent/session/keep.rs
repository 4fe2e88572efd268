//! The session's side of keeping every request under the high-water mark
//! (see [`ContextKeeper`](crate::agent::context_keeper)): the estimate
//! before each model call and, above the mark, the compaction of the older
//! turns, recorded as a `context.compacted` event.

use std::time::Instant;

use crate::event::{ContextCompacted, EventKind, ModelRequest, ModelResponse, Phase};
use crate::provider::{ChatRequest, Message};
use crate::spec::CompactWith;

use super::super::compaction::{self, Method, SUMMARY_TOKENS};
use super::{CallObserver, Session, Stop};

/// A summary request may take at most this share of the window.
const SUMMARY_WINDOW_SHARE: f64 = 0.9;

/// What the compaction did, for its event.
struct Done {
    method: Method,
    summary_call_id: Option<String>,
    fallback_reason: Option<String>,
}

impl Session<'_> {
    /// Estimate the next request; above the mark, compact the older turns.
    pub(super) async fn keep_under_mark(
        &mut self,
        phase: Phase,
        step: Option<usize>,
    ) -> Result<(), Stop> {
        let mark = self.context.mark;
        let before = self
            .context
            .estimator
            .estimate(&self.state.conversation, &self.offered, mark);
        if before.tokens < mark {
            return Ok(());
        }
        let weights = self.context.estimator.weights();
        let target =
            compaction::target_for(mark).saturating_sub(self.context.estimator.tools_tokens());
        let selection = compaction::select(&self.state.conversation, &weights, target);
        let removed = selection.removed(&self.state.conversation);
        let replaced_tool_calls: Vec<String> = removed
            .iter()
            .filter_map(|m| match m {
                Message::Assistant { tool_calls, .. } => {
                    Some(tool_calls.iter().map(|c| c.id.clone()))
                }
                _ => None,
            })
            .flatten()
            .collect();
        let replaced_messages = removed.len();
        let messages_before = self.state.conversation.len();

        let (mut messages, done) = if selection.removes_any() {
            let request = compaction::summary_request(&self.model_name, &removed);
            let digest = compaction::digest(&removed);
            let (body, done) = self.summary_or_digest(request, digest, phase, step).await?;
            let note = compaction::note(done.method, replaced_messages, &self.plan_status(), &body);
            (
                compaction::apply(&self.state.conversation, &selection, note),
                Some(done),
            )
        } else {
            (self.state.conversation.clone(), None)
        };
        let estimator = &mut self.context.estimator;
        estimator.forget_counts();
        let offered = &self.offered;
        let shortened = compaction::shorten_outputs(&mut messages, &mut |m| {
            estimator.estimate(m, offered, 0).tokens < mark
        });
        if done.is_none() && shortened == 0 {
            // Nothing older to replace and nothing long to shorten: the
            // request goes as it is; a "too long" answer is trimmed.
            return Ok(());
        }
        let after = estimator.estimate(&messages, offered, 0);
        self.state.conversation = messages;
        self.state.rewrites += 1;
        let done = done.unwrap_or(Done {
            method: Method::Digest,
            summary_call_id: None,
            fallback_reason: None,
        });
        self.bus.emit(EventKind::ContextCompacted(ContextCompacted {
            call_id: format!("model-{}", self.state.budget.turns + 1),
            method: done.method.as_str().to_string(),
            summary_call_id: done.summary_call_id,
            fallback_reason: done.fallback_reason,
            messages_before,
            messages_after: self.state.conversation.len(),
            replaced_messages,
            replaced_tool_calls,
            shortened_outputs: shortened,
            tokens_before: before.tokens,
            tokens_after: after.tokens,
            window: self.context.window,
            high_water: mark,
        }));
        Ok(())
    }

    /// The summary by the model when the job wants one and the budget and
    /// the window allow it; otherwise (or when the call fails) the digest.
    async fn summary_or_digest(
        &mut self,
        request: ChatRequest,
        digest: String,
        phase: Phase,
        step: Option<usize>,
    ) -> Result<(String, Done), Stop> {
        let fallback = |reason: String| {
            Ok((
                digest.clone(),
                Done {
                    method: Method::Digest,
                    summary_call_id: None,
                    fallback_reason: Some(reason),
                },
            ))
        };
        if self.context.method == CompactWith::Digest {
            return Ok((
                digest,
                Done {
                    method: Method::Digest,
                    summary_call_id: None,
                    fallback_reason: None,
                },
            ));
        }
        let size: u64 = request
            .messages
            .iter()
            .map(|m| match m {
                Message::System { content } | Message::User { content } => {
                    self.context.estimator.text_tokens(content)
                }
                _ => 0,
            })
            .sum();
        if (size + SUMMARY_TOKENS) as f64 > self.context.window as f64 * SUMMARY_WINDOW_SHARE {
            return fallback("the turns to summarise do not fit the model's window".into());
        }
        if !self.state.budget.room_for_extra_call(size, SUMMARY_TOKENS) {
            return fallback("the budget leaves no room for a summary call".into());
        }
        let turn = self.state.budget.turns + 1;
        let call_id = format!("model-{turn}");
        self.bus.emit(EventKind::ModelRequest(ModelRequest {
            call_id: call_id.clone(),
            phase,
            turn,
            step,
            messages: request.messages.len(),
            tools: Vec::new(),
            // The summary call is not part of the run's conversation, whose
            // deltas chain from one request to the next; `context.compacted`
            // says what it replaced.
            sent: None,
        }));
        let started = Instant::now();
        let observer = CallObserver {
            bus: &self.bus,
            call_id: &call_id,
        };
        let answer = self.provider.complete_observed(&request, &observer).await;
        let (usage, text, finish_reason, ok) = match answer {
            Ok(response) => {
                let text = response.text.clone().unwrap_or_default();
                let ok = !text.trim().is_empty() && response.tool_calls.is_empty();
                (response.usage, Some(text), response.finish_reason, ok)
            }
            Err(error) => {
                self.bus.emit(EventKind::Warning {
                    source: "context".into(),
                    message: format!(
                        "the summary call for compaction failed ({error}); a digest of the \
                         calls made replaces the older turns"
                    ),
                });
                return fallback(format!("the summary call failed: {error}"));
            }
        };
        let cost_usd = self.state.budget.record_model_call(&usage);
        self.bus.emit(EventKind::ModelResponse(ModelResponse {
            call_id: call_id.clone(),
            latency_ms: started.elapsed().as_millis() as u64,
            usage,
            finish_reason,
            text: text.clone(),
            tool_calls: Vec::new(),
            cost_usd,
        }));
        if !ok {
            return fallback("the summary call answered no text".into());
        }
        Ok((
            text.unwrap_or_default(),
            Done {
                method: Method::Summary,
                summary_call_id: Some(call_id),
                fallback_reason: None,
            },
        ))
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
