//! The state of one agent run and the two things every phase does: call the
//! model (within budget, recorded) and run a turn's tool calls (control
//! calls answered here, the rest through a [`batch`](super::batch)).

mod keep;

use std::time::Instant;

use serde_json::Value;

use crate::event::{
    ContextTrimmed, EventKind, ModelRequest, ModelResponse, ModelRetry, Phase, PlanStep,
    StepStatus, ToolCallRef,
};
use crate::policy::PermissionPolicy;
use crate::provider::Usage;
use crate::provider::{
    ChatRequest, ChatResponse, Message, ModelProvider, ProviderError, ProviderObserver,
    RetryNotice, ToolCall, ToolChoice, ToolDefinition,
};
use crate::sink::bus::EventBus;
use crate::spec::ToolLoopSpec;
use crate::tools::{ToolContext, ToolErrorCode, ToolResult};

use super::batch::{BatchEnv, run_batch};
use super::budget::Exceeded;
use super::context;
use super::context_keeper::ContextKeeper;
use super::protocol::{self, CONTROL_TOOLS};
use super::sent::SentLog;
use super::state::{LoopState, StateSaver, StepRecord};
use super::subagent::{SubagentConfig, Subagents};
use super::toolset::ToolSet;

/// Why the agent phase ended early.
#[derive(Debug)]
pub enum Stop {
    Budget(Exceeded),
    Provider(ProviderError),
    /// The agent could not finish (no plan, stuck in a loop).
    Failed(String),
    /// Tools the run cannot do without are gone (a required MCP server is down).
    ToolsUnavailable(String),
    /// Stopped from outside (a signal); the reason says by what.
    Interrupted(String),
}

/// The agent's working parts around its [`LoopState`]: what talks to the
/// model and runs tools (fixed for the run) and the state they change
/// (through the methods here, so every change is one the loop means).
pub struct Session<'a> {
    provider: &'a dyn ModelProvider,
    model_name: String,
    bus: EventBus,
    ctx: ToolContext,
    tools: ToolSet,
    /// What every request offers: the run's tools, then the control tools.
    /// The same list on every turn keeps the prompt prefix cacheable; which
    /// tools may run in a phase is decided when a call arrives.
    offered: Vec<ToolDefinition>,
    /// Tools offered on the final turn only (`submit_result`), after the others.
    final_tools: Vec<ToolDefinition>,
    policy: PermissionPolicy,
    /// Concurrency, timeouts and loop guard settings from the job.
    tool_loop: ToolLoopSpec,
    /// What `task` calls need from one turn to the next.
    subagents: SubagentConfig,
    /// The last request sent, so the trace records only what each one adds.
    sent: SentLog,
    /// `rules_reminder`: the line appended to the last result of each batch.
    rules_reminder: Option<String>,
    /// The context window, the high-water mark and the token estimate
    /// (a handle on the tokenizer, rebuilt from the job, not loop state).
    context: ContextKeeper,
    /// Saves `state` before every model turn, when the run keeps a checkpoint.
    saver: Option<Box<dyn StateSaver + 'a>>,
    /// A checkpoint could not be written: said once, as a warning.
    saver_failed: bool,
    state: LoopState,
}

/// The fixed parts of a [`Session`].
pub struct SessionParts<'a> {
    pub provider: &'a dyn ModelProvider,
    pub model_name: String,
    pub bus: EventBus,
    pub ctx: ToolContext,
    pub tools: ToolSet,
    pub policy: PermissionPolicy,
    pub tool_loop: ToolLoopSpec,
    pub subagents: SubagentConfig,
    pub rules_reminder: Option<String>,
    pub context: ContextKeeper,
    pub saver: Option<Box<dyn StateSaver + 'a>>,
    /// What the trace says the last request sent (a resumed run's), so
    /// the next request's delta is against it; `None` for a new run.
    pub last_sent: Option<SentLog>,
}

/// A control call seen in a turn, applied by the phase that asked for it.
#[derive(Debug, Clone)]
pub struct ControlCall {
    pub name: String,
    pub arguments: Result<Value, String>,
}

impl<'a> Session<'a> {
    /// A session that goes on from `state` (a new run's opening state, or a loaded one).
    pub fn new(parts: SessionParts<'a>, state: LoopState) -> Session<'a> {
        let SessionParts {
            provider,
            model_name,
            bus,
            ctx,
            tools,
            policy,
            tool_loop,
            subagents,
            rules_reminder,
            context,
            saver,
            last_sent,
        } = parts;
        subagents.started.store(
            state.subagents_started,
            std::sync::atomic::Ordering::Relaxed,
        );
        Session {
            provider,
            model_name,
            bus,
            ctx,
            offered: [tools.definitions(), protocol::control_tools()].concat(),
            final_tools: Vec::new(),
            tools,
            policy,
            tool_loop,
            subagents,
            sent: last_sent.unwrap_or_default(),
            rules_reminder,
            context,
            saver,
            saver_failed: false,
            state,
        }
    }

    /// The loop's state as it stands.
    pub fn state(&self) -> &LoopState {
        &self.state
    }

    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// The run's tool context (its processes, workspace and limits).
    pub fn tool_context(&self) -> &ToolContext {
        &self.ctx
    }

    /// The tools of the run, by name.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools.names()
    }

    /// Add a user message to the conversation.
    pub fn tell(&mut self, content: String) {
        self.state.conversation.push(Message::User { content });
    }

    /// Offer `tool` from the next turn on (the final turn's `submit_result`):
    /// added at the end, so the prompt prefix before it stays cached.
    pub fn offer_final_tool(&mut self, tool: ToolDefinition) {
        if !self.offered.iter().any(|t| t.name == tool.name) {
            self.offered.push(tool.clone());
            self.final_tools.push(tool);
        }
    }

    /// Answer the tool call `tool_call_id` of the last turn with `content`
    /// (a call the phase handles itself, such as `submit_result`).
    pub fn answer_call(&mut self, tool_call_id: &str, content: String) {
        self.state.conversation.push(Message::Tool {
            tool_call_id: tool_call_id.to_string(),
            content,
        });
    }

    /// Count a planning turn; returns its number, from 1.
    pub fn next_plan_turn(&mut self) -> u32 {
        self.state.plan_turns += 1;
        self.state.plan_turns
    }

    /// Take `steps` as the plan (the one accepted while planning).
    pub fn set_plan(&mut self, steps: Vec<PlanStep>) {
        self.state.plan = steps;
    }

    /// Replace the steps after step `index` with `steps`; returns the whole plan.
    pub fn replace_steps_after(&mut self, index: usize, steps: Vec<PlanStep>) -> &[PlanStep] {
        self.state.plan.truncate(index + 1);
        self.state.plan.extend(steps);
        &self.state.plan
    }

    /// Add a step at the end of the plan (a new round's); returns its index.
    pub fn add_step(&mut self, step: PlanStep) -> usize {
        self.state.plan.push(step);
        self.state.plan.len() - 1
    }

    /// A step begins: the loop guard forgets the last one.
    pub fn start_step(&mut self) {
        self.state.guard.start_step();
        self.state.step_open = true;
    }

    /// The step under way ended.
    pub fn finish_step(&mut self, summary: String, status: StepStatus) {
        self.state.steps.push(StepRecord { summary, status });
        self.state.step_open = false;
    }

    /// Save the state as it stands (before a model turn) to the run's
    /// checkpoint, if it keeps one. A failed save is a warning, once: the
    /// run matters more than being able to resume it.
    pub fn checkpoint(&mut self) {
        let Some(saver) = self.saver.as_mut() else {
            return;
        };
        self.state.budget.fold_time();
        self.state.subagents_started = self
            .subagents
            .started
            .load(std::sync::atomic::Ordering::Relaxed);
        if let Err(message) = saver.save(&mut self.state)
            && !self.saver_failed
        {
            self.saver_failed = true;
            self.bus.emit(EventKind::Warning {
                source: "checkpoint".into(),
                message: format!(
                    "{message}; `agentci run --resume` may go on from an earlier turn"
                ),
            });
        }
    }

    /// Why the current step must end, when the model keeps repeating itself.
    pub fn stuck(&self) -> Option<&str> {
        self.state.guard.stuck()
    }

    /// The next round of checks begins.
    pub fn start_round(&mut self) -> u32 {
        self.state.round += 1;
        self.state.round
    }

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

    /// Run one turn's calls. Calls named in `control` are not run: they are
    /// returned for the phase to apply, and `answer` gives their result text.
    /// A control tool this phase does not take gets an error result that
    /// says when it may be called. Every call gets a tool message, in the
    /// order the model made them.
    pub async fn run_calls(
        &mut self,
        calls: &[ToolCall],
        control: &[&str],
        read_only_phase: bool,
        mut answer: impl FnMut(&ControlCall) -> Result<String, String>,
    ) -> Result<Vec<ControlCall>, Stop> {
        type Indexed<'c> = Vec<(usize, &'c ToolCall)>;
        let (controls, regular): (Indexed, Indexed) = calls
            .iter()
            .enumerate()
            .partition(|(_, c)| CONTROL_TOOLS.contains(&c.name.as_str()));
        let regular_calls: Vec<ToolCall> = regular.iter().map(|(_, c)| (*c).clone()).collect();
        self.state
            .budget
            .check_tool_batch(regular_calls.len() as u32)
            .map_err(Stop::Budget)?;

        let mut texts: Vec<Option<String>> = vec![None; calls.len()];
        let mut applied = Vec::new();
        for (index, call) in controls {
            if !control.contains(&call.name.as_str()) {
                let message = protocol::out_of_phase(&call.name, read_only_phase)
                    .unwrap_or_else(|| format!("`{}` cannot be called now", call.name));
                texts[index] =
                    Some(ToolResult::failure(ToolErrorCode::InvalidArgument, message).model_text());
                continue;
            }
            let control_call = ControlCall {
                name: call.name.clone(),
                arguments: serde_json::from_str(&call.arguments)
                    .map_err(|e| format!("arguments are not valid JSON: {e}")),
            };
            texts[index] = Some(match answer(&control_call) {
                Ok(text) => {
                    applied.push(control_call);
                    text
                }
                Err(message) => {
                    ToolResult::failure(ToolErrorCode::InvalidArgument, message).model_text()
                }
            });
        }

        let results = {
            let state = &mut self.state;
            // The batch's sub-agents spend from the run's budget while it runs.
            let budget = std::sync::Mutex::new(&mut state.budget);
            let tasks = Subagents {
                provider: self.provider,
                model_name: &self.model_name,
                parent_tools: &self.tools,
                config: &self.subagents,
                policy: &self.policy,
                ctx: &self.ctx,
                bus: &self.bus,
                tool_loop: &self.tool_loop,
                budget: &budget,
            };
            let env = BatchEnv {
                tools: &self.tools,
                policy: &self.policy,
                ctx: &self.ctx,
                bus: &self.bus,
                read_only_phase,
                tool_loop: &self.tool_loop,
                batches: &state.batches,
                tasks: Some(&tasks),
            };
            run_batch(&env, &regular_calls, &mut state.guard).await
        };
        self.state
            .budget
            .record_tool_calls(regular_calls.len() as u32);
        for ((index, _), result) in regular.iter().zip(results) {
            // The model provider is a third party: it never sees a secret a tool printed.
            texts[*index] = Some(self.bus.redact(&result.model_text()));
        }

        let last = calls.len().saturating_sub(1);
        for (index, (call, text)) in calls.iter().zip(texts).enumerate() {
            let mut content = text.unwrap_or_default();
            // In the tool result itself: both APIs accept no other message
            // between a turn's results and the next model turn.
            if index == last
                && let Some(reminder) = &self.rules_reminder
            {
                content.push_str("\n\n");
                content.push_str(reminder);
            }
            self.state.conversation.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content,
            });
        }
        // A step that repeats itself ends there (the step reads the guard);
        // while planning there is no step to end, so the run does.
        if read_only_phase && let Some(reason) = self.state.guard.stuck() {
            return Err(Stop::Failed(format!(
                "the model kept {reason} while planning"
            )));
        }
        Ok(applied)
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
pub(super) struct CallObserver<'a> {
    pub(super) bus: &'a EventBus,
    pub(super) call_id: &'a str,
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
pub(super) fn response_event(
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
