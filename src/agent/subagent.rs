//! Sub-agents: what a `task` call starts, runs and hands back.
//!
//! A sub-agent gets a fresh conversation (its system prompt and the task's
//! prompt, nothing of the parent's), a narrower tool set (`explore`: read,
//! find, grep, ls; `general`: the parent's tools minus `task`; the call's
//! `tools` narrows further, never widens), the parent's permission rules,
//! sandbox and tool context, and its own turn limit (`task.max_turns`). It
//! calls tools until it answers with text only; that text is the `task`
//! call's result. It has no plan protocol and cannot start sub-agents.
//! Its model calls go through the same `ModelSession` (`session/model_call.rs`) as the parent's,
//! in the role of a sub-agent: its conversation is kept under the
//! high-water mark of the model's window as the parent's is (its own
//! [`ContextKeeper`], the job's `model.context_window`, `compact_at` and
//! `compact_with`), trimmed and retried once when too long, and its
//! events, usage warnings and budget counting are the parent's code's; a
//! summary call counts against the run's budget like its other calls.
//!
//! Its events go into the run's trace through a bus that stamps `agent:
//! {id, parent_call}` on each, between `subagent.started` and
//! `subagent.completed`. Its tokens, cost and tool calls count against the
//! run's budget (one tracker, shared while the batch runs); it stops when
//! that budget is spent, and the parent finds out at its next check. What
//! it does not do: decide how `task` calls are grouped (the batch does,
//! asking [`TaskRunner::read_only`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

use crate::event::bus::EventBus;
use crate::event::{AgentTag, EventKind, Phase, SubagentCompleted, SubagentStarted};
use crate::job::{ContextSpec, ToolLoopSpec};
use crate::policy::{PermissionPolicy, ToolPattern};
use crate::provider::Usage;
use crate::provider::{Message, ModelProvider, ToolCall, ToolChoice};
use crate::tools::task::{EXPLORE_TOOLS, TASK, TaskKind};
use crate::tools::{BoxFuture, ToolContext, ToolErrorCode, ToolResult};

use super::batch::{BatchEnv, run_batch};
use super::budget::BudgetTracker;
use super::context_keeper::ContextKeeper;
use super::loop_guard::LoopGuard;
use super::sent::SentLog;
use super::session::{CallPlace, Conversation, Meter, ModelSession, Role};
use super::toolset::ToolSet;

/// Runs the `task` calls of a batch.
pub trait TaskRunner: Sync {
    /// May this call run next to the turn's other read-only calls?
    fn read_only(&self, args: &Value) -> bool;
    /// Start a sub-agent for the parent's call `call_id` and return its answer.
    fn run<'a>(&'a self, call_id: &'a str, args: Value) -> BoxFuture<'a, ToolResult>;
}

/// What the run keeps for its sub-agents from one turn to the next.
#[derive(Debug, Default)]
pub struct SubagentConfig {
    /// The skill's `allowed-tools`, which bind sub-agents too.
    pub skill_patterns: Option<Vec<ToolPattern>>,
    /// Numbers the run's sub-agents.
    pub started: AtomicU64,
    /// The workspace as the system prompt shows it.
    pub workspace: String,
    /// The job's context window settings, which keep a sub-agent's conversation too.
    pub context: ContextSpec,
}

/// The run's sub-agents for one batch: everything borrowed from the session.
pub struct Subagents<'a> {
    pub provider: &'a dyn ModelProvider,
    pub model_name: &'a str,
    pub parent_tools: &'a ToolSet,
    pub config: &'a SubagentConfig,
    pub policy: &'a PermissionPolicy,
    pub ctx: &'a ToolContext,
    pub bus: &'a EventBus,
    pub tool_loop: &'a ToolLoopSpec,
    /// The run's budget, shared by the batch's sub-agents.
    pub budget: &'a Mutex<&'a mut BudgetTracker>,
}

/// How a sub-agent ended.
struct Ending {
    answer: Result<String, String>,
    turns: u32,
    tool_calls: u32,
    usage: Usage,
}

impl TaskRunner for Subagents<'_> {
    fn read_only(&self, args: &Value) -> bool {
        self.tool_names(args).is_ok_and(|(_, names)| {
            names.iter().all(|n| {
                self.parent_tools
                    .get(n, false)
                    .is_ok_and(|tool| tool.spec().read_only)
            })
        })
    }

    fn run<'a>(&'a self, call_id: &'a str, args: Value) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let (kind, names) = match self.tool_names(&args) {
                Ok(found) => found,
                Err(message) => {
                    return ToolResult::failure(ToolErrorCode::InvalidArgument, message);
                }
            };
            let prompt = args
                .get("prompt")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let number = self.config.started.fetch_add(1, Ordering::Relaxed) + 1;
            let id = format!("task-{number}");
            let bus = self.bus.for_agent(AgentTag {
                id: id.clone(),
                parent_call: call_id.to_string(),
            });
            let max_turns = self.tool_loop.task_max_turns;
            bus.emit(EventKind::SubagentStarted(SubagentStarted {
                kind: kind.as_str().to_string(),
                tools: names.clone(),
                max_turns,
            }));
            let started = Instant::now();
            let ending = self.converse(&id, &bus, &names, prompt).await;
            bus.emit(EventKind::SubagentCompleted(SubagentCompleted {
                ok: ending.answer.is_ok(),
                reason: match &ending.answer {
                    Ok(_) => "answered".to_string(),
                    Err(why) => why.clone(),
                },
                turns: ending.turns,
                tool_calls: ending.tool_calls,
                usage: ending.usage.clone(),
                duration_ms: started.elapsed().as_millis() as u64,
            }));
            let data = json!({
                "agent": id,
                "kind": kind.as_str(),
                "tools": names,
                "turns": ending.turns,
                "tool_calls": ending.tool_calls,
            });
            match ending.answer {
                Ok(text) => {
                    let (kept, cut) =
                        crate::tools::support::cut_chars(&text, self.ctx.limits.max_output_chars);
                    let note = if cut > 0 {
                        format!("\n[… {cut} more characters of the answer were cut]")
                    } else {
                        String::new()
                    };
                    ToolResult::success(
                        format!("{id} answered after {} turns:", ending.turns),
                        format!("{kept}{note}"),
                        data,
                    )
                }
                Err(why) => ToolResult::failure(
                    ToolErrorCode::SubagentFailed,
                    format!("{id} gave no answer: {why}"),
                )
                .with_data(data),
            }
        })
    }
}

impl<'a> Subagents<'a> {
    /// The kind and the tool names a call asks for, or why it cannot have them.
    fn tool_names(&self, args: &Value) -> Result<(TaskKind, Vec<String>), String> {
        let kind_name = args.get("kind").and_then(Value::as_str);
        let kind = TaskKind::parse(kind_name).ok_or_else(|| {
            format!(
                "unknown task kind {:?}; use one of: {}",
                kind_name.unwrap_or_default(),
                TaskKind::NAMES.join(", ")
            )
        })?;
        let parent = self.parent_tools.names();
        let of_kind: Vec<String> = parent
            .into_iter()
            .filter(|name| name != TASK)
            .filter(|name| kind == TaskKind::General || EXPLORE_TOOLS.contains(&name.as_str()))
            .collect();
        let Some(asked) = args.get("tools").and_then(Value::as_array) else {
            return Ok((kind, of_kind));
        };
        let mut names = Vec::new();
        for name in asked {
            let name = name.as_str().unwrap_or_default();
            if !of_kind.iter().any(|n| n == name) {
                let why = if name == TASK {
                    "sub-agents cannot start sub-agents".to_string()
                } else {
                    format!("`tools` can only narrow the {} tools", kind.as_str())
                };
                let article = match kind {
                    TaskKind::Explore => "an",
                    TaskKind::General => "a",
                };
                return Err(format!(
                    "`{name}` is not among the tools of {article} {} task in this run ({}); {why}",
                    kind.as_str(),
                    of_kind.join(", ")
                ));
            }
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
        if names.is_empty() {
            return Err(format!(
                "`tools` is empty; leave it out to give the task all the {} tools ({})",
                kind.as_str(),
                of_kind.join(", ")
            ));
        }
        Ok((kind, names))
    }

    /// The sub-agent's loop: model, tools, model … until it answers with
    /// text. Its model calls go through a [`ModelSession`] of its own, as
    /// the run's agent's do.
    async fn converse(&self, id: &str, bus: &EventBus, names: &[String], prompt: &str) -> Ending {
        let tools = self.parent_tools.subset(names);
        let mut offered = tools.definitions();
        let mut messages = vec![
            Message::System {
                content: system_prompt(&self.config.workspace, &tools.names()),
            },
            Message::User {
                content: prompt.to_string(),
            },
        ];
        // Its own conversation, so its own deltas in the trace and its own
        // estimate of the window.
        let mut model = ModelSession::new(
            self.provider,
            self.model_name.to_string(),
            bus.clone(),
            Role::Subagent(id.to_string()),
            ContextKeeper::new(self.model_name, &self.config.context),
            SentLog::default(),
        );
        let mut meter = Meter::Shared(self.budget);
        // A sub-agent's conversation is not saved in a checkpoint.
        let mut rewrites = 0;
        let mut guard = LoopGuard::new(self.tool_loop.loop_repeats);
        let batches = AtomicU64::new(0);
        let mut tool_calls = 0;
        let max_turns = self.tool_loop.task_max_turns;
        let answer = loop {
            if model.turns() >= max_turns {
                break Err(format!(
                    "it used its {max_turns} turns (task.max_turns) without a final answer"
                ));
            }
            if let Err(exceeded) = meter.with(|budget| budget.check_spend()) {
                break Err(format!("the run's budget is spent ({})", exceeded.reason()));
            }
            let place = CallPlace {
                phase: Phase::Execute,
                step: None,
                tool_choice: ToolChoice::Auto,
                plan_status: "",
            };
            let conversation = Conversation {
                messages: &mut messages,
                offered: &mut offered,
                rewrites: &mut rewrites,
            };
            let response = match model.call(place, conversation, &mut meter).await {
                Ok(response) => response,
                Err(error) => break Err(format!("its model call failed: {error}")),
            };
            if response.tool_calls.is_empty() {
                let text = response.text.unwrap_or_default().trim().to_string();
                break match text.is_empty() {
                    true => Err("it answered with no text".to_string()),
                    false => Ok(text),
                };
            }
            let count = response.tool_calls.len() as u32;
            if let Err(exceeded) = meter.with(|budget| budget.check_tool_batch(count)) {
                break Err(format!("the run's budget is spent ({})", exceeded.reason()));
            }
            let calls = &response.tool_calls;
            self.run_tools(&tools, bus, &batches, &mut guard, calls, &mut messages)
                .await;
            meter.with(|budget| budget.record_tool_calls(count));
            tool_calls += count;
            if let Some(reason) = guard.stuck() {
                break Err(format!("it was {reason}"));
            }
        };
        Ending {
            answer,
            turns: model.turns(),
            tool_calls,
            usage: model.usage().clone(),
        }
    }

    /// Run one turn's tool calls of the sub-agent as a batch (it starts no
    /// tasks) and add their results, masked, to its conversation.
    async fn run_tools(
        &self,
        tools: &ToolSet,
        bus: &EventBus,
        batches: &AtomicU64,
        guard: &mut LoopGuard,
        calls: &[ToolCall],
        messages: &mut Vec<Message>,
    ) {
        let env = BatchEnv {
            tools,
            policy: self.policy,
            ctx: self.ctx,
            bus,
            read_only_phase: false,
            tool_loop: self.tool_loop,
            batches,
            tasks: None,
        };
        let results = run_batch(&env, calls, guard).await.results;
        for (call, result) in calls.iter().zip(results) {
            messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content: self.ctx.secrets.redact(&result.model_text()).into_owned(),
            });
        }
    }
}

/// The sub-agent's system prompt: the same text for the same tools in a
/// run, so the provider can cache it.
pub fn system_prompt(workspace: &str, tools: &[String]) -> String {
    format!(
        "You are a sub-agent of agentci, a coding agent running unattended in CI. Another agent \
         gave you one task; you do not see its conversation, and nobody will answer questions. \
         Do the task with your tools, then answer with your findings as plain text, without \
         calling a tool: that answer is all the other agent gets, so make it complete and \
         concise (name files and lines). There is no plan to submit and no step to end.\n\
         Your tools: {tools}. Paths in tool calls are relative to the workspace ({workspace}). \
         Calls are decided by the job's permission policy; a denied call returns \
         PERMISSION_DENIED, so choose another way. You cannot start sub-agents.",
        tools = if tools.is_empty() {
            "none".to_string()
        } else {
            tools.join(", ")
        },
    )
}
