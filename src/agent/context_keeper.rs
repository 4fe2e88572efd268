//! Keeping every request under the high-water mark of the model's context
//! window: the estimate before each model call, and when it is above the
//! mark, a compaction (a summary by the model in one extra call when the
//! budget and the window allow it, else a digest), recorded as a
//! `context.compacted` event. The run's conversation and each sub-agent's
//! are kept the same way ([`ContextKeeper::keep_under_mark`]); the owner of
//! the conversation makes the summary call, against its budget, with
//! [`summary_call`]. What to keep and the texts are [`super::compaction`]'s;
//! counting is [`tokens`]'; the reactive trim after a "too long" answer
//! stays in [`super::context`].

use std::time::Instant;

use crate::event::bus::EventBus;
use crate::event::{ContextCompacted, EventKind, ModelRequest, ModelResponse, Phase};
use crate::job::{CompactWith, ContextSpec};
use crate::provider::{ChatRequest, Message, ModelProvider, ToolDefinition, Usage};

use super::compaction::{self, Method, SUMMARY_TOKENS};
use super::session::CallObserver;
use super::tokens::{self, TokenEstimator};

/// A summary request may take at most this share of the window.
const SUMMARY_WINDOW_SHARE: f64 = 0.9;

/// The summary and the id of the call that wrote it, or why there is none
/// (a digest replaces the turns then).
pub type SummaryAnswer = Result<(String, String), String>;

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

    /// Estimate the next request; above the mark, compact the older turns
    /// of `conversation` in place. `model` is asked for the summary;
    /// `plan_status` goes into the note (empty: no plan). `summarize` makes the summary call for a request and its
    /// size in tokens, when the job wants a summary and the window allows
    /// it. Returns the `context.compacted` event, its `call_id` left for the
    /// caller to fill in (the summary call may have moved the turn count).
    pub async fn keep_under_mark(
        &mut self,
        conversation: &mut Vec<Message>,
        offered: &[ToolDefinition],
        model: &str,
        plan_status: &str,
        summarize: impl AsyncFnOnce(ChatRequest, u64) -> SummaryAnswer,
    ) -> Option<ContextCompacted> {
        let mark = self.mark;
        let before = self.estimator.estimate(conversation, offered, mark);
        if before.tokens < mark {
            return None;
        }
        let weights = self.estimator.weights();
        let target = compaction::target_for(mark).saturating_sub(self.estimator.tools_tokens());
        let selection = compaction::select(conversation, &weights, target);
        let removed = selection.removed(conversation);
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
        let messages_before = conversation.len();

        let (mut messages, done) = if selection.removes_any() {
            let request = compaction::summary_request(model, &removed);
            let digest = compaction::digest(&removed);
            let (body, done) = self.summary_or_digest(request, digest, summarize).await;
            let note = compaction::note(done.method, replaced_messages, plan_status, &body);
            (
                compaction::apply(conversation, &selection, note),
                Some(done),
            )
        } else {
            (conversation.clone(), None)
        };
        let estimator = &mut self.estimator;
        estimator.forget_counts();
        let shortened = compaction::shorten_outputs(&mut messages, &mut |m| {
            estimator.estimate(m, offered, 0).tokens < mark
        });
        if done.is_none() && shortened == 0 {
            // Nothing older to replace and nothing long to shorten: the
            // request goes as it is; a "too long" answer is trimmed.
            return None;
        }
        let after = estimator.estimate(&messages, offered, 0);
        let messages_after = messages.len();
        *conversation = messages;
        let done = done.unwrap_or(Done {
            method: Method::Digest,
            summary_call_id: None,
            fallback_reason: None,
        });
        Some(ContextCompacted {
            call_id: String::new(),
            method: done.method.as_str().to_string(),
            summary_call_id: done.summary_call_id,
            fallback_reason: done.fallback_reason,
            messages_before,
            messages_after,
            replaced_messages,
            replaced_tool_calls,
            shortened_outputs: shortened,
            tokens_before: before.tokens,
            tokens_after: after.tokens,
            window: self.window,
            high_water: mark,
        })
    }

    /// The summary by the model when the job wants one and the window
    /// allows it and `summarize` brings one back; otherwise the digest.
    async fn summary_or_digest(
        &self,
        request: ChatRequest,
        digest: String,
        summarize: impl AsyncFnOnce(ChatRequest, u64) -> SummaryAnswer,
    ) -> (String, Done) {
        let fallback = |reason: Option<String>| {
            (
                digest.clone(),
                Done {
                    method: Method::Digest,
                    summary_call_id: None,
                    fallback_reason: reason,
                },
            )
        };
        if self.method == CompactWith::Digest {
            return fallback(None);
        }
        let size: u64 = request
            .messages
            .iter()
            .map(|m| match m {
                Message::System { content } | Message::User { content } => {
                    self.estimator.text_tokens(content)
                }
                _ => 0,
            })
            .sum();
        if (size + SUMMARY_TOKENS) as f64 > self.window as f64 * SUMMARY_WINDOW_SHARE {
            return fallback(Some(
                "the turns to summarise do not fit the model's window".into(),
            ));
        }
        match summarize(request, size).await {
            Ok((text, call_id)) => (
                text,
                Done {
                    method: Method::Summary,
                    summary_call_id: Some(call_id),
                    fallback_reason: None,
                },
            ),
            Err(reason) => fallback(Some(reason)),
        }
    }
}

/// What the compaction did, for its event.
struct Done {
    method: Method,
    summary_call_id: Option<String>,
    fallback_reason: Option<String>,
}

/// Where a summary call stands in the trace, and how its usage is counted.
pub struct SummaryCall<'a> {
    pub provider: &'a dyn ModelProvider,
    pub bus: &'a EventBus,
    pub call_id: String,
    pub phase: Phase,
    pub turn: u32,
    pub step: Option<usize>,
}

/// Make the summary call: its request and response events, its usage
/// counted by `record` (which returns its cost). A failed call is a
/// warning and a reason for the digest; so is an answer without text.
pub async fn summary_call(
    call: SummaryCall<'_>,
    request: ChatRequest,
    record: impl FnOnce(&Usage) -> Option<f64>,
) -> SummaryAnswer {
    let SummaryCall {
        provider,
        bus,
        call_id,
        phase,
        turn,
        step,
    } = call;
    bus.emit(EventKind::ModelRequest(ModelRequest {
        call_id: call_id.clone(),
        phase,
        turn,
        step,
        messages: request.messages.len(),
        tools: Vec::new(),
        // The summary call is not part of the conversation, whose deltas
        // chain from one request to the next; `context.compacted` says
        // what it replaced.
        sent: None,
    }));
    let started = Instant::now();
    let observer = CallObserver {
        bus,
        call_id: &call_id,
    };
    let response = match provider.complete_observed(&request, &observer).await {
        Ok(response) => response,
        Err(error) => {
            bus.emit(EventKind::Warning {
                source: "context".into(),
                message: format!(
                    "the summary call for compaction failed ({error}); a digest of the \
                     calls made replaces the older turns"
                ),
            });
            return Err(format!("the summary call failed: {error}"));
        }
    };
    let cost_usd = record(&response.usage);
    let text = response.text.unwrap_or_default();
    let ok = !text.trim().is_empty() && response.tool_calls.is_empty();
    bus.emit(EventKind::ModelResponse(ModelResponse {
        call_id: call_id.clone(),
        latency_ms: started.elapsed().as_millis() as u64,
        usage: response.usage,
        finish_reason: response.finish_reason,
        reasoning: crate::provider::reasoning::readable(&response.reasoning),
        text: Some(text.clone()),
        tool_calls: Vec::new(),
        cost_usd,
    }));
    if !ok {
        return Err("the summary call answered no text".into());
    }
    Ok((text, call_id))
}
