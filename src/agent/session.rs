//! The state of one agent run and the two things every phase does: call the
//! model (within budget, recorded) and run a turn's tool calls (control
//! calls answered here, the rest through a [`batch`](super::batch)).

mod calls;
mod keep;
mod model_call;

pub use calls::{Answer, Answers, FailedCall, Turn};
pub(super) use model_call::{CallObserver, CallPlace, Conversation, Meter, ModelSession, Role};

use serde_json::Value;

use crate::event::bus::EventBus;
use crate::event::{EventKind, Phase, PlanStep, StepStatus};
use crate::job::ToolLoopSpec;
use crate::policy::PermissionPolicy;
use crate::provider::{
    ChatResponse, Message, ModelProvider, ProviderError, ToolChoice, ToolDefinition,
};
use crate::tools::ToolContext;

use super::budget::Exceeded;
use super::context_keeper::ContextKeeper;
use super::protocol;
use super::sent::SentLog;
use super::state::{LoopState, StateSaver, StepRecord};
use super::subagent::SubagentConfig;
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
    /// Talks to the model for the run's conversation, as each sub-agent's
    /// own does for its conversation.
    model: ModelSession<'a>,
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
    /// `rules_reminder`: the line appended to the last result of each batch.
    rules_reminder: Option<String>,
    /// The job has a result schema: `submit_result` is a call the phases
    /// answer (taken on the final turn, refused with when it is taken before).
    takes_result: bool,
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
    /// The job has a `result_schema`.
    pub takes_result: bool,
    pub context: ContextKeeper,
    pub saver: Option<Box<dyn StateSaver + 'a>>,
    /// What the trace says the last request sent (a resumed run's), so
    /// the next request's delta is against it; `None` for a new run.
    pub last_sent: Option<SentLog>,
}

/// A control call seen in a turn, applied by the phase that asked for it.
#[derive(Debug, Clone)]
pub struct ControlCall {
    /// The call's id, as the model gave it.
    pub id: String,
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
            takes_result,
            context,
            saver,
            last_sent,
        } = parts;
        subagents.started.store(
            state.subagents_started,
            std::sync::atomic::Ordering::Relaxed,
        );
        Session {
            model: ModelSession::new(
                provider,
                model_name,
                bus,
                Role::Main,
                context,
                last_sent.unwrap_or_default(),
            ),
            ctx,
            offered: [tools.definitions(), protocol::control_tools()].concat(),
            final_tools: Vec::new(),
            tools,
            policy,
            tool_loop,
            subagents,
            rules_reminder,
            takes_result,
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
        self.model.bus()
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
            .map_err(|e| Stop::ToolsUnavailable(e.to_string()))?
        {
            self.offered = [
                self.tools.definitions(),
                protocol::control_tools(),
                self.final_tools.clone(),
            ]
            .concat();
        }
        let plan_status = self.plan_status();
        let place = CallPlace {
            phase,
            step,
            tool_choice,
            plan_status: &plan_status,
        };
        let conversation = Conversation {
            messages: &mut self.state.conversation,
            offered: &mut self.offered,
            rewrites: &mut self.state.rewrites,
        };
        let mut meter = Meter::Own(&mut self.state.budget);
        self.model
            .call(place, conversation, &mut meter)
            .await
            .map_err(Stop::Provider)
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
            self.model.bus.emit(EventKind::Warning {
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

    /// The job takes a structured result (`submit_result`).
    pub fn takes_result(&self) -> bool {
        self.takes_result
    }

    /// Keep `report`, which the last step's `step_done` gave, as the run's report.
    pub fn set_report(&mut self, report: String) {
        self.state.report = Some(report);
    }

    /// The next round of checks begins: its last step reports anew.
    pub fn start_round(&mut self) -> u32 {
        self.state.report = None;
        self.state.round += 1;
        self.state.round
    }
}
