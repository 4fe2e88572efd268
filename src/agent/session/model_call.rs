//! Calling the model: the budget and the tools checked before each turn,
//! the `model.request`/`model.response` events, the retries and partial
//! text reported as events, and one trim and retry when the conversation is
//! too long. Running the calls the model makes is [`super::calls`]'s.

use std::time::Instant;

use crate::event::bus::EventBus;
use crate::event::{
    ContextTrimmed, EventKind, ModelRequest, ModelResponse, ModelRetry, Phase, ToolCallRef,
};
use crate::provider::Usage;
use crate::provider::{
    ChatRequest, ChatResponse, Message, ProviderError, ProviderObserver, RetryNotice, ToolChoice,
    ToolDefinition,
};

use super::super::context;
use super::super::protocol;
use super::{Session, Stop};

impl Session<'_> {
    /// Call the model with the conversation so far and the run's tools; the
    /// reply is appended to the conversation.
    pub async fn call_model(
        &mut self,
        phase: Phase,
        step: Option<usize>,
        tool_choice: ToolChoice,
    ) -> Result<ChatResponse, Stop> {
        self.state.budget.check_model_call().map_err(Stop::Budget)?;
        if self
            .tools
            .before_turn()
            .await
            .map_err(Stop::ToolsUnavailable)?
        {
            self.offered = [
                self.tools.definitions(),
                protocol::control_tools(),
                self.final_tools.clone(),
            ]
            .concat();
        }
        self.keep_under_mark(phase, step).await?;
        let turn = self.state.budget.turns + 1;
        let call_id = format!("model-{turn}");
        self.bus.emit(EventKind::ModelRequest(ModelRequest {
            call_id: call_id.clone(),
            phase,
            turn,
            step,
            messages: self.state.conversation.len(),
            tools: self.offered.iter().map(|t| t.name.clone()).collect(),
            sent: Some(self.sent.record(&self.state.conversation, &self.offered)),
        }));
        let started = Instant::now();
        let response = self.complete(&call_id, tool_choice).await?;
        self.context
            .estimator
            .calibrate(response.usage.input_tokens);
        let cost_usd = self.state.budget.record_model_call(&response.usage);
        let first_without_usage =
            response.usage == Usage::default() && self.state.budget.calls_without_usage == 1;
        self.bus.emit(response_event(
            call_id.clone(),
            &response,
            started,
            cost_usd,
        ));
        if first_without_usage {
            self.bus.emit(EventKind::Warning {
                source: "model".into(),
                message: format!(
                    "the model server reported no token usage for {call_id}; the tokens and cost \
                     of such calls are unknown, so the run's cost_usd is unknown and max_tokens \
                     and max_cost_usd count only the calls that reported usage"
                ),
            });
        }
        self.state.conversation.push(Message::Assistant {
            reasoning: response.reasoning.clone(),
            content: response.text.clone(),
            tool_calls: response.tool_calls.clone(),
        });
        Ok(response)
    }

    /// Ask the provider, with retries and partial text reported as events.
    /// When the conversation is too long for the model, it is trimmed and
    /// the call is tried once more.
    async fn complete(
        &mut self,
        call_id: &str,
        tool_choice: ToolChoice,
    ) -> Result<ChatResponse, Stop> {
        let mut trimmed = false;
        loop {
            // The conversation and the tools are lent to the request, not
            // copied: a long run would otherwise copy its whole history on
            // every turn.
            let request = Lent::lend(
                &self.model_name,
                tool_choice,
                &mut self.state.conversation,
                &mut self.offered,
            );
            let observer = CallObserver {
                bus: &self.bus,
                call_id,
            };
            let answer = self
                .provider
                .complete_observed(&request.request, &observer)
                .await;
            drop(request);
            match answer {
                Ok(response) => return Ok(response),
                Err(ProviderError::ContextTooLong(reason)) if !trimmed => {
                    let Some(trim) = context::trim(&mut self.state.conversation) else {
                        return Err(Stop::Provider(ProviderError::ContextTooLong(reason)));
                    };
                    self.state.rewrites += 1;
                    self.context.estimator.forget_counts();
                    self.bus.emit(EventKind::ContextTrimmed(ContextTrimmed {
                        call_id: call_id.to_string(),
                        reason,
                        messages_before: trim.messages_before,
                        messages_after: trim.messages_after,
                        estimated_tokens_before: trim.estimated_tokens_before,
                        estimated_tokens_after: trim.estimated_tokens_after,
                        sent: Some(self.sent.record(&self.state.conversation, &self.offered)),
                    }));
                    trimmed = true;
                }
                Err(error) => return Err(Stop::Provider(error)),
            }
        }
    }
}

/// A request holding the session's conversation and tools for one call;
/// they go back to the session when it is dropped, also when the call is
/// cancelled halfway (a signal drops the future).
struct Lent<'s> {
    request: ChatRequest,
    messages: &'s mut Vec<Message>,
    tools: &'s mut Vec<ToolDefinition>,
}

impl<'s> Lent<'s> {
    fn lend(
        model: &str,
        tool_choice: ToolChoice,
        messages: &'s mut Vec<Message>,
        tools: &'s mut Vec<ToolDefinition>,
    ) -> Self {
        Lent {
            request: ChatRequest {
                max_output_tokens: None,
                model: model.to_string(),
                messages: std::mem::take(messages),
                tools: std::mem::take(tools),
                tool_choice,
            },
            messages,
            tools,
        }
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        std::mem::swap(self.messages, &mut self.request.messages);
        std::mem::swap(self.tools, &mut self.request.tools);
    }
}

/// Turns what the provider layer reports during one call into events.
pub(in crate::agent) struct CallObserver<'a> {
    pub(in crate::agent) bus: &'a EventBus,
    pub(in crate::agent) call_id: &'a str,
}

impl ProviderObserver for CallObserver<'_> {
    fn partial_text(&self, delta: &str) {
        self.bus.partial_text(self.call_id, delta);
    }

    fn retrying(&self, notice: &RetryNotice) {
        self.bus.emit(EventKind::ModelRetry(ModelRetry {
            call_id: self.call_id.to_string(),
            attempt: notice.attempt,
            max_attempts: notice.max_attempts,
            reason: notice.reason.clone(),
            status: notice.status,
            wait_ms: notice.wait.as_millis() as u64,
        }));
    }
}

/// The `model.response` event of `response` to the call `call_id`, started at `started`.
pub(in crate::agent) fn response_event(
    call_id: String,
    response: &ChatResponse,
    started: Instant,
    cost_usd: Option<f64>,
) -> EventKind {
    EventKind::ModelResponse(ModelResponse {
        call_id,
        latency_ms: started.elapsed().as_millis() as u64,
        usage: response.usage.clone(),
        finish_reason: response.finish_reason.clone(),
        reasoning: crate::provider::reasoning::readable(&response.reasoning),
        text: response.text.clone(),
        tool_calls: response
            .tool_calls
            .iter()
            .map(|c| ToolCallRef {
                id: c.id.clone(),
                name: c.name.clone(),
            })
            .collect(),
        cost_usd,
    })
}
