//! The agent: the conversation with the model that plans the work and
//! carries it out with tools, step by step, and reports on it.
//!
//! It returns how the conversation ended ([`AgentOutcome`]); what comes
//! around it (the start events, the checks, rounds, the git outputs,
//! `run.completed`) is [`crate::runner::run`]'s. Everything it does is reported as
//! events on the [`EventBus`]; its state is one [`LoopState`] value. It
//! knows nothing about files it writes (sinks do that) or the terminal.

pub mod batch;
pub mod budget;
pub mod cancel;
pub mod compaction;
pub mod context;
pub mod context_keeper;
pub mod execute;
pub mod kept_output;
pub mod loop_guard;
pub mod memory;
pub mod plan;
pub mod protocol;
pub mod result;
pub(crate) mod sent;
pub mod session;
pub mod state;
pub mod subagent;
pub mod tokens;
pub mod toolset;

use crate::event::bus::EventBus;
use crate::event::{EventKind, Phase, PlanStep, Totals};
use crate::job::JobSpec;
use crate::policy::{PermissionPolicy, SkillPrograms};
use crate::provider::pricing::Price;
use crate::provider::{Message, ModelProvider, ToolChoice};
use crate::skills::Skill;
use crate::tools::{FileAccess, ToolContext, ToolLimits, Workspace};
use crate::untrusted::UntrustedText;

pub use cancel::{CancelSignal, CancelTrigger, cancel_pair};
pub use session::Stop;
pub use state::{LoopState, NotSaved, StateSaver};

use budget::BudgetTracker;
use loop_guard::LoopGuard;
use session::{Session, SessionParts};
pub use toolset::{LiveTools, ToolSet};

/// What the agent needs to talk to the model and run tools, validated and frozen.
pub struct AgentInput<'a> {
    pub job: &'a JobSpec,
    pub skill: &'a Skill,
    /// The job's `skills`: listed in the system prompt, read on demand.
    pub further_skills: &'a [Skill],
    pub provider: &'a dyn ModelProvider,
    /// The run's tools, assembled by the runner (builtins and any others).
    pub tools: ToolSet,
    pub workspace: Workspace,
    pub limits: ToolLimits,
    /// Starts `exec`'s processes: the run's sandbox, environment and secrets to mask.
    pub processes: crate::process::ProcessRunner,
    /// Text from outside the job, given to the model fenced in the goal message.
    pub untrusted: &'a [UntrustedText],
    /// The job's memory file, for the system prompt.
    pub memory: Option<&'a memory::Memory>,
    /// The model's price, when known: cost is counted and `max_cost_usd` holds.
    pub price: Option<Price>,
    /// Saves the loop's state before every model turn (the run's checkpoint).
    pub saver: Option<Box<dyn StateSaver + 'a>>,
    /// A checkpoint to go on from instead of the start of the conversation.
    pub resume: Option<ResumeFrom>,
    /// Time the run spent before the agent (its MCP servers' start-up),
    /// counted against `budget.timeout`.
    pub time_spent: std::time::Duration,
}

/// Where a resumed agent goes on from: the loop's state as last saved,
/// and the last request its trace holds.
pub struct ResumeFrom {
    pub state: LoopState,
    /// The messages and tools of the last request in the trace.
    pub last_sent: (Vec<Message>, Option<Vec<crate::provider::ToolDefinition>>),
}

/// How the conversation ended: the final summary (if the model gave one),
/// or why it stopped early.
pub type AgentOutcome = Result<Option<String>, Stop>;

/// One agent: its session and the job it works on.
pub struct Agent<'a> {
    session: Session<'a>,
    job: &'a JobSpec,
    /// The structured result of the latest final turn (with `result_schema`).
    result: Option<serde_json::Value>,
    /// What the model wrote on this round's result turn, kept when no valid
    /// result came: the run's summary is then the model's own words.
    final_text: Option<String>,
}

impl<'a> Agent<'a> {
    /// An agent at the start of the conversation: the system prompt, the
    /// run's details and the goal, nothing spent.
    pub fn new(input: AgentInput<'a>, bus: EventBus) -> Agent<'a> {
        let AgentInput {
            job,
            skill,
            further_skills,
            provider,
            tools,
            workspace,
            limits,
            processes,
            untrusted,
            memory,
            price,
            saver,
            resume,
            time_spent,
        } = input;
        if tools.names().iter().any(|t| t == "process") {
            processes.sessions().enable();
        }
        crate::tools::schema::compile_ahead(tools.argument_schemas());
        let policy = run_policy(job, skill, further_skills, workspace.root());
        let workspace_display = workspace.root().display().to_string();
        let opening = vec![
            Message::System {
                content: protocol::system_prompt(
                    skill,
                    &tools.names(),
                    !untrusted.is_empty(),
                    &protocol::Guidance {
                        memory,
                        rules: &job.guidance.rules,
                    },
                ),
            },
            Message::System {
                content: protocol::run_details(&run_details(
                    &tools,
                    &policy,
                    &workspace_display,
                    job,
                    protocol::skill_folders(skill, further_skills),
                )),
            },
            Message::User {
                content: protocol::goal_message(&job.goal, &tools.read_only_names(), untrusted),
            },
        ];
        let (mut state, last_sent) = starting_state(job, skill, price, opening, resume);
        state.budget.count_time(time_spent);
        let parts = SessionParts {
            provider,
            model_name: job.model.name.clone(),
            ctx: ToolContext {
                workspace,
                limits,
                // The run's secrets, as its processes mask them: also masked in
                // what is sent to the model (tool results, answers to submissions).
                secrets: processes.secrets().clone(),
                processes,
                access: file_access(&policy, job),
                fetch_policy: Some(std::sync::Arc::new(policy.clone())),
            },
            bus,
            tools,
            policy,
            tool_loop: job.tool_loop.clone(),
            subagents: subagent::SubagentConfig {
                skill_patterns: skill.allowed_tools.clone(),
                workspace: workspace_display.clone(),
                context: job.model.context,
                ..Default::default()
            },
            rules_reminder: (job.guidance.rules_reminder && !job.guidance.rules.is_empty())
                .then(|| protocol::rules_reminder(job.guidance.rules.len())),
            takes_result: job.result_schema.is_some(),
            context: context_keeper::ContextKeeper::new(&job.model.name, &job.model.context),
            saver,
            last_sent,
        };
        let mut session = Session::new(parts, state);
        // Offered from the first turn (at the end of the list, so the
        // prefix stays the same from turn to turn): the last step's
        // step_done may bring the result with it.
        if let Some(tool) = job
            .result_schema
            .as_ref()
            .and_then(|schema| result::ResultSchema::new(schema).ok())
        {
            session.offer_final_tool(tool.tool());
        }
        Agent {
            session,
            job,
            result: None,
            final_text: None,
        }
    }

    /// The tools the model is offered, by name.
    pub fn tool_names(&self) -> Vec<String> {
        self.session.tool_names()
    }

    /// The loop's state as it stands.
    pub fn state(&self) -> &LoopState {
        self.session.state()
    }

    /// Plan, carry out the steps, summarize; cut at the budget's `timeout`.
    /// Dropping the future stops the model call in flight and kills the
    /// process groups of running tools.
    pub async fn work(&mut self) -> AgentOutcome {
        self.final_text = None;
        let ended = FinalTurn {
            result: &mut self.result,
            text: &mut self.final_text,
        };
        timed_agent_phase(&mut self.session, self.job, ended).await
    }

    /// The model's text on the last result turn, also when it never
    /// submitted a valid result (then [`Agent::work`] ends with a `Stop`).
    pub fn final_text(&self) -> Option<&str> {
        self.final_text.as_deref()
    }

    /// The structured result the model submitted, valid against the job's
    /// `result_schema`; `None` without a schema or before a valid one came.
    pub fn result(&self) -> Option<&serde_json::Value> {
        self.result.as_ref()
    }

    /// Kill the background sessions the model left running, each recorded
    /// as a warning: the checks judge the workspace, not a server the model
    /// left running.
    pub fn end_sessions(&self) {
        execute::end_sessions(&self.session, "the run");
    }

    /// Start the next round: `feedback` (what failed) goes to the model
    /// with a new last `step`, and the agent works on with the conversation,
    /// plan and budget it has. Returns the round's number.
    pub fn add_round(&mut self, feedback: String, step: PlanStep) -> u32 {
        let round = self.session.start_round();
        self.session.tell(feedback);
        let from_index = self.session.add_step(step);
        let steps = self.session.state().plan.clone();
        self.session
            .bus()
            .emit(EventKind::PlanUpdated { steps, from_index });
        round
    }

    /// What the conversation spent so far (the duration is the caller's).
    pub fn totals(&self) -> Totals {
        let budget = &self.session.state().budget;
        Totals {
            turns: budget.turns,
            tool_calls: budget.tool_calls,
            input_tokens: budget.usage.input_tokens,
            output_tokens: budget.usage.output_tokens,
            cache_read_tokens: budget.usage.cache_read_tokens,
            cache_write_tokens: budget.usage.cache_write_tokens,
            reasoning_tokens: budget.usage.reasoning_tokens,
            cost_usd: budget.cost_usd(),
            duration_ms: 0,
        }
    }
}

/// Where the final turn leaves the structured result and the model's text.
struct FinalTurn<'a> {
    result: &'a mut Option<serde_json::Value>,
    text: &'a mut Option<String>,
}

/// The agent phase, cut at the budget's `timeout`.
async fn timed_agent_phase(
    session: &mut Session<'_>,
    job: &JobSpec,
    ended: FinalTurn<'_>,
) -> Result<Option<String>, Stop> {
    match session.state().budget.remaining_time() {
        Some(left) => match tokio::time::timeout(left, agent_phase(session, job, ended)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Stop::Budget(session.state().budget.timeout_exceeded())),
        },
        None => agent_phase(session, job, ended).await,
    }
}

/// The loop's state at the start: fresh, or a resumed run's, which keeps
/// what it spent; and, when resumed, the last request sent.
fn starting_state(
    job: &JobSpec,
    skill: &Skill,
    price: Option<Price>,
    opening: Vec<Message>,
    resume: Option<ResumeFrom>,
) -> (LoopState, Option<sent::SentLog>) {
    let budget = BudgetTracker::new(&job.budget, skill.max_turns).with_price(price);
    // A resumed run keeps what it spent, under the budget it is given now.
    match resume {
        Some(ResumeFrom {
            mut state,
            last_sent,
        }) => {
            state.budget = state.budget.with_limits_of(budget);
            let (messages, offered) = last_sent;
            (state, Some(sent::SentLog::continuing(messages, offered)))
        }
        None => (
            LoopState::new(opening, budget, LoopGuard::new(job.tool_loop.loop_repeats)),
            None,
        ),
    }
}

/// What the system prompt tells the model about this run.
fn run_details<'a>(
    tools: &ToolSet,
    policy: &PermissionPolicy,
    workspace: &'a str,
    job: &'a JobSpec,
    skill_folders: String,
) -> protocol::RunDetails<'a> {
    let has_exec = tools.names().iter().any(|name| name == "exec");
    protocol::RunDetails {
        workspace,
        skill_folders,
        exec: has_exec.then(|| policy.allowance("exec")),
        exec_denied: policy.denials("exec"),
        checks: &job.checks,
    }
}

/// What tools that show files nobody named in the call (`grep`) may show:
/// the job's `read` deny rules, asked per file, and its hard-link choice.
/// The run's permission policy: the job's rules with the skill-folder
/// placeholders replaced by the loaded skills' folders, whose scripts the
/// rules may then name by absolute path.
fn run_policy(
    job: &JobSpec,
    skill: &Skill,
    further_skills: &[Skill],
    workspace: &std::path::Path,
) -> PermissionPolicy {
    let rules = crate::skills::placeholders::expand_in_rules(
        job.permissions.rules(),
        skill,
        further_skills,
    );
    let folders = std::iter::once(skill)
        .chain(further_skills)
        .map(|s| s.dir.as_path());
    PermissionPolicy::new(&rules)
        .with_network(job.sandbox.network)
        .with_skill_programs(SkillPrograms::new(workspace, folders))
}

fn file_access(policy: &PermissionPolicy, job: &JobSpec) -> FileAccess {
    let rules = policy.clone();
    FileAccess::new(
        move |path| rules.read_denied_by(path),
        job.permissions.allow_hard_links,
    )
}

/// Plan (unless there is a plan already), execute the steps not yet done,
/// and, unless the last step's `step_done` gave the report (and the result,
/// when the job takes one), ask for them. Returns the final summary, if
/// the model gave one.
async fn agent_phase(
    session: &mut Session<'_>,
    job: &JobSpec,
    ended: FinalTurn<'_>,
) -> Result<Option<String>, Stop> {
    let schema = job
        .result_schema
        .as_ref()
        .map(result::ResultSchema::new)
        .transpose()
        .map_err(|e| Stop::Failed(e.to_string()))?;
    let mut first = None;
    if session.state().plan.is_empty() {
        let planned = plan::make_plan(session, job.max_plan_turns).await?;
        session.set_plan(planned.steps);
        first = planned.acted;
    }
    let steps = execute::execute_plan(session, first, schema.as_ref()).await?;
    let report = session.state().report.clone();
    if let Some(schema) = &schema {
        // A round's result replaces the one before: the last round's work is what it describes.
        *ended.result = None;
        if report.is_some() {
            ended.text.clone_from(&report);
        }
        let first_try = match steps.result {
            Some(Ok(result)) => {
                *ended.result = Some(result);
                return Ok(report.or_else(|| fallback_summary(session)));
            }
            Some(Err(problem)) => Some(problem),
            None => None,
        };
        let submitted = result::result_turn(session, schema, ended.text, first_try).await?;
        *ended.result = Some(submitted.result);
        return Ok(report
            .or(submitted.summary)
            .or_else(|| fallback_summary(session)));
    }
    // The last step's step_done gave the report: no report turn.
    if report.is_some() {
        return Ok(report);
    }
    // The work is done; a budget too small for the summary turn does not fail the run.
    if session.state().budget.check_model_call().is_err() {
        return Ok(fallback_summary(session));
    }
    // Before the request is told: a resumed run asks for the summary again.
    session.checkpoint();
    session.tell(protocol::SUMMARY_REQUEST.to_string());
    // The same tools as every other turn (the history holds tool calls, and
    // the prompt prefix stays cached), but none may be called.
    let response = match session
        .call_model(Phase::Summary, None, ToolChoice::None)
        .await
    {
        Ok(response) => response,
        // Likewise a provider that fails on the summary turn: the checks still judge the work.
        Err(Stop::Provider(error)) => {
            session.bus().emit(EventKind::Warning {
                source: "summary".into(),
                message: format!(
                    "the summary turn failed ({error}); the step summaries stand in for it"
                ),
            });
            return Ok(fallback_summary(session));
        }
        Err(other) => return Err(other),
    };
    Ok(response
        .text
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .or_else(|| fallback_summary(session)))
}

fn fallback_summary(session: &Session<'_>) -> Option<String> {
    let joined = session
        .state()
        .step_summaries()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    (!joined.is_empty()).then_some(joined)
}
