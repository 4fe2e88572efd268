//! Keeping every request under the high-water mark of the model's context
//! window: the estimate before each model call, and when it is above the
//! mark, a compaction (a summary by the model in one extra call when the
//! budget and the window allow it, else a digest), recorded as a
//! `context.compacted` event. What to keep and the texts are
//! [`compaction`]'s; counting is [`tokens`]'; the reactive trim after a
//! "too long" answer stays in [`super::context`].

use std::time::Instant;

use crate::event::{ContextCompacted, EventKind, ModelRequest, ModelResponse, Phase};
use crate::provider::{ChatRequest, Message};
use crate::spec::{CompactWith, ContextSpec};

use super::compaction::{self, Method, SUMMARY_TOKENS};
use super::session::{CallObserver, Session, Stop};
use super::tokens::{self, TokenEstimator};

/// A summary request may take at most this share of the window.
const SUMMARY_WINDOW_SHARE: f64 = 0.9;

/// The run's context settings and its token estimator.
#[derive(Debug)]
pub struct ContextKeeper {
    pub estimator: TokenEstimator,
    pub window: u64,
    /// The high-water mark in tokens.
    pub mark: u64,
    pub method: CompactWith,
}

impl ContextKeeper {
    pub fn new(model: &str, spec: &ContextSpec) -> Self {
        let window = tokens::window_for(model, spec.window);
        ContextKeeper {
            estimator: TokenEstimator::new(model),
            window,
            mark: (window as f64 * spec.high_water) as u64,
            method: spec.method,
        }
    }
}

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
            .estimate(&self.messages, &self.offered, mark);
        if before.tokens < mark {
            return Ok(());
        }
        let weights = self.context.estimator.weights();
        let target =
            compaction::target_for(mark).saturating_sub(self.context.estimator.tools_tokens());
        let selection = compaction::select(&self.messages, &weights, target);
        let removed = selection.removed(&self.messages);
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
        let messages_before = self.messages.len();

        let (mut messages, done) = if selection.removes_any() {
            let request = compaction::summary_request(&self.model_name, &removed);
            let digest = compaction::digest(&removed);
            let (body, done) = self.summary_or_digest(request, digest, phase, step).await?;
            let note = compaction::note(done.method, replaced_messages, &self.plan_status(), &body);
            (
                compaction::apply(&self.messages, &selection, note),
                Some(done),
            )
        } else {
            (self.messages.clone(), None)
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
        self.messages = messages;
        let done = done.unwrap_or(Done {
            method: Method::Digest,
            summary_call_id: None,
            fallback_reason: None,
        });
        self.bus.emit(EventKind::ContextCompacted(ContextCompacted {
            call_id: format!("model-{}", self.budget.turns + 1),
            method: done.method.as_str().to_string(),
            summary_call_id: done.summary_call_id,
            fallback_reason: done.fallback_reason,
            messages_before,
            messages_after: self.messages.len(),
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
        if !self.budget.room_for_extra_call(size, SUMMARY_TOKENS) {
            return fallback("the budget leaves no room for a summary call".into());
        }
        let turn = self.budget.turns + 1;
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
        let cost_usd = self.budget.record_model_call(&usage);
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
        let done = self.step_summaries.len();
        self.plan
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
