//! Calling the model for one conversation, the run's agent's or a
//! sub-agent's alike: the context kept under the mark, the
//! `model.request`/`model.response` events, the retries and partial text
//! reported as events, one trim and retry when the conversation is too
//! long, the usage counted against the run's budget (and a warning the
//! first time a server reports none), the reply added to the conversation.
//! What differs between the two is the [`Role`]: how calls are named and
//! how they count. Checking the budget and the tools before a turn, and
//! running the calls the model makes, are the owners' ([`super::calls`],
//! [`super::super::subagent`]).

use std::sync::Mutex;
use std::time::Instant;

use crate::event::bus::EventBus;
use crate::event::{
    ContextTrimmed, EventKind, ModelRequest, ModelResponse, ModelRetry, Phase, ToolCallRef,
};
use crate::provider::Usage;
use crate::provider::{
    ChatRequest, ChatResponse, Message, ModelProvider, ProviderError, ProviderObserver,
    RetryNotice, ToolChoice, ToolDefinition,
};

use super::super::budget::BudgetTracker;
use super::super::context;
use super::super::context_keeper::ContextKeeper;
use super::super::sent::SentLog;

/// Whose conversation a [`ModelSession`] carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Role {
    /// The run's agent: its model calls are the run's turns (`model-N`).
    Main,
    /// The sub-agent `id` (`task-N`): its calls are named `{id}/model-N`,
    /// counted in its own turns (`task.max_turns`), their tokens and cost
    /// in the run's budget.
    Subagent(String),
}

/// The run's budget as one conversation reaches it: the run's agent holds
/// it; the sub-agents of a batch share it while they run side by side.
pub enum Meter<'b, 'a> {
    Own(&'b mut BudgetTracker),
    Shared(&'b Mutex<&'a mut BudgetTracker>),
}

impl Meter<'_, '_> {
    /// Read or change the budget.
    pub fn with<R>(&mut self, f: impl FnOnce(&mut BudgetTracker) -> R) -> R {
        match self {
            Meter::Own(budget) => f(budget),
            // A poisoned lock means a sibling panicked mid-update; the figures are still whole.
            Meter::Shared(shared) => f(&mut shared.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }
}

/// The conversation a call sends and grows, owned by the caller (the run's
/// loop state, or a sub-agent's own).
pub struct Conversation<'c> {
    pub messages: &'c mut Vec<Message>,
    /// The tools every request offers, in a fixed order (cacheable prefix).
    pub offered: &'c mut Vec<ToolDefinition>,
    /// Counts each time the messages were rewritten rather than added to
    /// (a trim, a compaction): a checkpoint saves them anew.
    pub rewrites: &'c mut u64,
}

/// Where a call stands: its phase and step, the tool choice, and the plan
/// with the state of each step for a compaction note (empty: no plan).
pub struct CallPlace<'p> {
    pub phase: Phase,
    pub step: Option<usize>,
    pub tool_choice: ToolChoice,
    pub plan_status: &'p str,
}

/// One conversation's link to the model: the provider, the events it
/// reports on, what the last request sent and the context window kept.
pub struct ModelSession<'a> {
    pub(super) provider: &'a dyn ModelProvider,
    pub(super) model_name: String,
    pub(super) bus: EventBus,
    pub(super) role: Role,
    /// The last request sent, so the trace records only what each one adds.
    sent: SentLog,
    /// The context window, the high-water mark and the token estimate.
    pub(super) context: ContextKeeper,
    /// Model calls begun (summaries not counted): a sub-agent's turns.
    pub(super) turns: u32,
    /// What this conversation's calls spent, summaries included.
    pub(super) usage: Usage,
}

impl<'a> ModelSession<'a> {
    /// A conversation's link; `sent` is what the trace says its last
    /// request sent (a resumed run's), default for a new conversation.
    pub fn new(
        provider: &'a dyn ModelProvider,
        model_name: String,
        bus: EventBus,
        role: Role,
        context: ContextKeeper,
        sent: SentLog,
    ) -> ModelSession<'a> {
        ModelSession {
            provider,
            model_name,
            bus,
            role,
            sent,
            context,
            turns: 0,
            usage: Usage::default(),
        }
    }

    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// Model calls this conversation began (summaries not counted).
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// What this conversation's model calls spent, summaries included.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// The number of the model call under way: the run's next turn for
    /// the run's agent (a summary call before it moves it), the
    /// sub-agent's own turn for a sub-agent.
    pub(super) fn turn(&self, meter: &mut Meter<'_, '_>) -> u32 {
        turn_of(&self.role, self.turns, meter)
    }

    /// The id of the model call numbered `turn`.
    pub(super) fn call_id(&self, turn: u32) -> String {
        call_id_of(&self.role, "model", turn)
    }

    /// Call the model with `conversation`; the reply is appended to it.
    /// Above the mark, its older turns are compacted first.
    pub async fn call(
        &mut self,
        place: CallPlace<'_>,
        conversation: Conversation<'_>,
        meter: &mut Meter<'_, '_>,
    ) -> Result<ChatResponse, ProviderError> {
        let Conversation {
            messages,
            offered,
            rewrites,
        } = conversation;
        self.turns += 1;
        self.keep_under_mark(&place, messages, offered, rewrites, meter)
            .await;
        let turn = self.turn(meter);
        let call_id = self.call_id(turn);
        self.bus.emit(EventKind::ModelRequest(ModelRequest {
            call_id: call_id.clone(),
            phase: place.phase,
            turn,
            step: place.step,
            messages: messages.len(),
            tools: offered.iter().map(|t| t.name.clone()).collect(),
            sent: Some(self.sent.record(messages, offered)),
        }));
        let started = Instant::now();
        let response = self
            .complete(&call_id, place.tool_choice, messages, offered, rewrites)
            .await?;
        self.context
            .estimator
            .calibrate(response.usage.input_tokens);
        let turn_of_run = self.role == Role::Main;
        let (cost_usd, first_without_usage) =
            record(&mut self.usage, meter, &response.usage, turn_of_run);
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
        messages.push(Message::Assistant {
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
        messages: &mut Vec<Message>,
        offered: &mut Vec<ToolDefinition>,
        rewrites: &mut u64,
    ) -> Result<ChatResponse, ProviderError> {
        let mut trimmed = false;
        loop {
            // The conversation and the tools are lent to the request, not
            // copied: a long run would otherwise copy its whole history on
            // every turn.
            let request = LentRequest::lend(&self.model_name, tool_choice, messages, offered);
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
                Err(ProviderError::ContextTooLong(reason)) if !trimmed => {
                    let Some(trim) = context::trim(messages) else {
                        return Err(ProviderError::ContextTooLong(reason));
                    };
                    *rewrites += 1;
                    self.context.estimator.forget_counts();
                    self.bus.emit(EventKind::ContextTrimmed(ContextTrimmed {
                        call_id: call_id.to_string(),
                        reason,
                        messages_before: trim.messages_before,
                        messages_after: trim.messages_after,
                        estimated_tokens_before: trim.estimated_tokens_before,
                        estimated_tokens_after: trim.estimated_tokens_after,
                        sent: Some(self.sent.record(messages, offered)),
                    }));
                    trimmed = true;
                }
                other => return other,
            }
        }
    }
}

/// The number of the model call under way; see [`ModelSession::turn`].
pub(super) fn turn_of(role: &Role, turns: u32, meter: &mut Meter<'_, '_>) -> u32 {
    match role {
        Role::Main => meter.with(|budget| budget.turns) + 1,
        Role::Subagent(_) => turns,
    }
}

/// The id of a call of `kind` (`model`, `summary`) numbered `turn`. The
/// run's agent's summary call is one of the run's turns, named as one.
pub(super) fn call_id_of(role: &Role, kind: &str, turn: u32) -> String {
    match role {
        Role::Main => format!("model-{turn}"),
        Role::Subagent(id) => format!("{id}/{kind}-{turn}"),
    }
}

/// Count a model call's (or a summary's) `spent` in `total` and against
/// the run's budget; returns its cost and whether it is the run's first
/// call without usage. `turn_of_run`: a call of the run's agent, one of
/// the run's turns.
pub(super) fn record(
    total: &mut Usage,
    meter: &mut Meter<'_, '_>,
    spent: &Usage,
    turn_of_run: bool,
) -> (Option<f64>, bool) {
    add_usage(total, spent);
    meter.with(|budget| {
        let cost = match turn_of_run {
            true => budget.record_model_call(spent),
            false => budget.record_usage(spent),
        };
        let first = *spent == Usage::default() && budget.calls_without_usage == 1;
        (cost, first)
    })
}

fn add_usage(total: &mut Usage, usage: &Usage) {
    total.input_tokens += usage.input_tokens;
    total.output_tokens += usage.output_tokens;
    total.cache_read_tokens += usage.cache_read_tokens;
    total.cache_write_tokens += usage.cache_write_tokens;
}

/// A request holding a conversation and its tools for one call; they go
/// back to their owner when it is dropped, also when the call is
/// cancelled halfway (a signal drops the future).
struct LentRequest<'s> {
    request: ChatRequest,
    messages: &'s mut Vec<Message>,
    tools: &'s mut Vec<ToolDefinition>,
}

impl<'s> LentRequest<'s> {
    fn lend(
        model: &str,
        tool_choice: ToolChoice,
        messages: &'s mut Vec<Message>,
        tools: &'s mut Vec<ToolDefinition>,
    ) -> Self {
        LentRequest {
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

impl Drop for LentRequest<'_> {
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
fn response_event(
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
