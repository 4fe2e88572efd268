//! The agent: plan, execute, summarize, check — one run of a job.
//!
//! Everything the run does is reported as events on the [`EventBus`]; the
//! run returns only its final [`RunCompleted`], which is also the last event.
//! The agent knows nothing about files it writes (sinks do that) or about
//! the terminal. What happens to the workspace afterwards (a patch, a
//! commit) is the caller's [`AfterChecks`] step; signals reach the run as a
//! [`CancelSignal`].

pub mod batch;
pub mod budget;
pub mod cancel;
pub mod checks;
pub mod compaction;
pub mod context;
pub mod context_keeper;
pub mod execute;
pub mod kept_output;
pub mod loop_guard;
pub mod memory;
pub mod plan;
pub mod protocol;
mod sent;
pub mod session;
pub mod subagent;
pub mod tokens;
pub mod toolset;

use std::time::Instant;

use futures_util::future::BoxFuture;

use crate::event::{
    EventBus, EventKind, OutputPaths, Phase, RunCompleted, RunStarted, RunStatus, SCHEMA_VERSION,
    SkillLoaded, Totals,
};
use crate::policy::PermissionPolicy;
use crate::provider::pricing::{Price, builtin_price};
use crate::provider::{Message, ModelProvider, ProviderError, ToolChoice};
use crate::skills::Skill;
use crate::spec::JobSpec;
use crate::tools::{FileAccess, ToolContext, ToolLimits, Workspace};
use crate::untrusted::UntrustedText;

pub use cancel::{CancelSignal, CancelTrigger, cancel_pair};

use budget::BudgetTracker;
use loop_guard::LoopGuard;
use session::{Session, Stop};
pub use toolset::{LiveTools, ToolSet};

/// Everything one run needs, validated and frozen.
pub struct RunInput<'a> {
    pub job: &'a JobSpec,
    pub skill: &'a Skill,
    /// The job's `skills`: listed in the system prompt, read on demand.
    pub further_skills: &'a [Skill],
    pub provider: &'a dyn ModelProvider,
    /// The run's tools, assembled by the runner (builtins and any others).
    pub tools: ToolSet,
    pub workspace: Workspace,
    pub outputs: OutputPaths,
    /// Problems found while loading that did not stop the run.
    pub warnings: Vec<String>,
    pub limits: ToolLimits,
    /// Starts `exec`'s and the checks' processes: the run's sandbox,
    /// environment (the job's `env:` resolved) and secrets to mask.
    pub processes: crate::process::ProcessRunner,
    /// Text from outside the job, given to the model fenced in the goal message.
    pub untrusted: &'a [UntrustedText],
    /// The job's memory file, for the system prompt.
    pub memory: Option<&'a memory::Memory>,
    /// Stops the run from outside; [`CancelSignal::never`] when nothing does.
    pub cancel: CancelSignal,
    /// Runs after the checks and before `run.completed`, unless the run was interrupted.
    pub after_checks: Option<AfterChecks<'a>>,
}

/// A step after the checks (the runner's git outputs). It gets the status
/// so far and the bus for its own events; an `Err` is a line for the user
/// and makes a passing run fail.
pub type AfterChecks<'a> =
    Box<dyn FnOnce(RunStatus, EventBus) -> BoxFuture<'a, Result<(), String>> + Send + 'a>;

/// Run the job to the end and return how it ended (also emitted as `run.completed`).
pub async fn run(input: RunInput<'_>, bus: EventBus) -> RunCompleted {
    let started = Instant::now();
    let RunInput {
        job,
        skill,
        further_skills,
        provider,
        tools,
        workspace,
        outputs,
        warnings,
        limits,
        processes,
        untrusted,
        memory,
        cancel,
        after_checks,
    } = input;
    if tools.names().iter().any(|t| t == "process") {
        processes.sessions().enable();
    }
    let policy = PermissionPolicy::new(&job.permissions);
    let workspace_display = workspace.root().display().to_string();
    bus.emit(EventKind::RunStarted(RunStarted {
        schema_version: SCHEMA_VERSION,
        agentci_version: env!("CARGO_PKG_VERSION").to_string(),
        job_name: job.name.clone(),
        job_file: job.path.display().to_string(),
        skill: skill.name.clone(),
        goal: job.goal.clone(),
        model: provider.model_info(),
        workspace: workspace_display.clone(),
        tools: tools.names(),
        outputs,
        sandbox: processes.sandbox_report(),
        budget: Some(Box::new(sent::budget_in_effect(
            &job.budget,
            skill.max_turns,
        ))),
        permissions: Some(Box::new(sent::permissions_in_effect(&job.permissions))),
    }));
    bus.emit(EventKind::SkillLoaded(SkillLoaded {
        name: skill.name.clone(),
        path: skill.dir.display().to_string(),
        description: skill.description.clone(),
        allowed_tools: skill
            .allowed_tools
            .as_ref()
            .map(|ps| ps.iter().map(|p| p.as_str().to_string()).collect()),
        warnings: skill.warnings.clone(),
        source: skill.source.clone(),
    }));
    for message in warnings.iter().chain(&skill.warnings) {
        bus.emit(EventKind::Warning {
            source: "load".into(),
            message: message.clone(),
        });
    }
    if let Some(reason) = report_degraded_sandbox(&processes, &bus) {
        checks::skip_checks(&job.checks, &reason, &bus);
        let completed = RunCompleted {
            status: RunStatus::Error,
            reason,
            summary: None,
            totals: Totals {
                duration_ms: started.elapsed().as_millis() as u64,
                ..Totals::default()
            },
            checks_passed: 0,
            checks_failed: 0,
        };
        return match bus.emit(EventKind::RunCompleted(completed.clone())).kind {
            EventKind::RunCompleted(masked) => masked,
            _ => completed,
        };
    }
    let model = provider.model_info();
    let price = model_price(job, &model.name);
    if price.is_none() && job.budget.max_cost_usd.is_some() {
        bus.emit(EventKind::Warning {
            source: "budget".into(),
            message: format!(
                "budget.max_cost_usd cannot be enforced: agentci knows no price for model {:?}; \
                 set model.price: {{input_per_mtok, output_per_mtok}}",
                model.name
            ),
        });
    }

    let mut session = Session {
        provider,
        model_name: job.model.name.clone(),
        bus: bus.clone(),
        ctx: ToolContext {
            workspace: workspace.clone(),
            limits,
            processes: processes.clone(),
            secrets: bus.redactor(),
            access: file_access(&policy, job),
            fetch_policy: Some(std::sync::Arc::new(policy.clone())),
        },
        messages: vec![
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
        ],
        offered: [tools.definitions(), protocol::control_tools()].concat(),
        tools,
        policy,
        budget: BudgetTracker::new(&job.budget, skill.max_turns).with_price(price),
        guard: LoopGuard::new(job.tool_loop.loop_repeats),
        tool_loop: job.tool_loop.clone(),
        batches: std::sync::atomic::AtomicU64::new(0),
        plan: Vec::new(),
        step_summaries: Vec::new(),
        subagents: subagent::SubagentConfig {
            skill_patterns: skill.allowed_tools.clone(),
            workspace: workspace_display.clone(),
            ..Default::default()
        },
        sent: Default::default(),
        rules_reminder: (job.guidance.rules_reminder && !job.guidance.rules.is_empty())
            .then(|| protocol::rules_reminder(job.guidance.rules.len())),
        context: context_keeper::ContextKeeper::new(&job.model.name, &job.model.context),
    };

    // Dropping the agent phase on a signal stops the model call in flight
    // and kills the process groups of running tools.
    let agent_result = tokio::select! {
        biased;
        reason = cancel.cancelled() => Err(Stop::Interrupted(reason)),
        result = timed_agent_phase(&mut session, job) => result,
    };
    // Background sessions end with the agent phase, also on a signal: the
    // checks judge the workspace, not a server the model left running.
    execute::end_sessions(&session, "the run");
    let summary = agent_result.as_ref().ok().cloned().flatten();

    let run_checks =
        || checks::run_checks_until(&job.checks, workspace.root(), &processes, &bus, &cancel);
    let (mut status, mut reason, checks_passed, checks_failed) = match agent_result {
        Ok(_) => match run_checks().await {
            Ok((passed, 0)) => (RunStatus::Passed, passed_reason(passed), passed, 0),
            Ok((passed, failed)) => (
                RunStatus::Failed,
                format!("{failed} of {} checks failed", passed + failed),
                passed,
                failed,
            ),
            Err(stopped) => interrupted(stopped),
        },
        Err(Stop::Failed(reason)) => match run_checks().await {
            Ok((passed, failed)) => (RunStatus::Failed, reason, passed, failed),
            Err(stopped) => interrupted(stopped),
        },
        Err(Stop::Interrupted(reason)) => {
            checks::skip_checks(&job.checks, &reason, &bus);
            (RunStatus::Interrupted, reason, 0, 0)
        }
        Err(Stop::Budget(exceeded)) => {
            bus.emit(EventKind::BudgetExceeded {
                limit: exceeded.limit,
                used: exceeded.used,
                max: exceeded.max,
            });
            let reason = exceeded.reason();
            checks::skip_checks(&job.checks, &reason, &bus);
            (RunStatus::BudgetExceeded, reason, 0, 0)
        }
        Err(Stop::ToolsUnavailable(reason)) => {
            checks::skip_checks(&job.checks, &reason, &bus);
            // Exit 4 as for the model provider: a service the run needs is unavailable.
            (RunStatus::ProviderUnavailable, reason, 0, 0)
        }
        Err(Stop::Provider(error)) => {
            let status = match error {
                ProviderError::Config(_) => RunStatus::Error,
                // Trimming did not make it fit: the run cannot go on, but the
                // provider is fine.
                ProviderError::ContextTooLong(_) => RunStatus::Failed,
                _ => RunStatus::ProviderUnavailable,
            };
            let reason = format!("model provider failed: {error}");
            checks::skip_checks(&job.checks, &reason, &bus);
            (status, reason, 0, 0)
        }
    };

    if let Some(after) = after_checks
        && status != RunStatus::Interrupted
    {
        (status, reason) = run_after_checks(after, status, reason, &cancel, &bus).await;
    }
    if let Some(drift) = provider.replay_drift() {
        bus.emit(EventKind::ReplayDrift(drift));
    }

    let completed = RunCompleted {
        status,
        reason,
        summary,
        totals: Totals {
            turns: session.budget.turns,
            tool_calls: session.budget.tool_calls,
            input_tokens: session.budget.usage.input_tokens,
            output_tokens: session.budget.usage.output_tokens,
            cache_read_tokens: session.budget.usage.cache_read_tokens,
            cache_write_tokens: session.budget.usage.cache_write_tokens,
            cost_usd: session.budget.cost_usd(),
            duration_ms: started.elapsed().as_millis() as u64,
        },
        checks_passed,
        checks_failed,
    };
    // Return what the sinks saw: the same event, with secrets masked.
    match bus.emit(EventKind::RunCompleted(completed.clone())).kind {
        EventKind::RunCompleted(masked) => masked,
        _ => completed,
    }
}

/// Say what the sandbox cannot enforce here (`sandbox.degraded` and a
/// warning); returns why the run must stop when the job requires it all.
fn report_degraded_sandbox(
    processes: &crate::process::ProcessRunner,
    bus: &EventBus,
) -> Option<String> {
    let report = processes.sandbox_report();
    if report.missing.is_empty() {
        return None;
    }
    let what: Vec<String> = report
        .missing
        .iter()
        .map(|m| format!("{m}: {}", crate::sandbox::missing_reason(m)))
        .collect();
    let message = format!(
        "the sandbox `{}` is degraded on this machine; not enforced: {} (see `agentci doctor`)",
        report.profile,
        what.join("; ")
    );
    let require = report.require;
    bus.emit(EventKind::SandboxDegraded(report));
    bus.emit(EventKind::Warning {
        source: "sandbox".into(),
        message: if require {
            message.clone()
        } else {
            format!("{message}; set `sandbox.require: true` to make this an error")
        },
    });
    require.then(|| format!("sandbox.require is true and {message}"))
}

/// How long a signal waits for the step after the checks to reach a checkpoint.
const AFTER_CHECKS_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The caller's step after the checks; returns the run's status and reason after it.
async fn run_after_checks(
    after: AfterChecks<'_>,
    status: RunStatus,
    reason: String,
    cancel: &CancelSignal,
    bus: &EventBus,
) -> (RunStatus, String) {
    let mut step = after(status, bus.clone());
    let outcome = tokio::select! {
        biased;
        why = cancel.cancelled() => Err(why),
        outcome = &mut step => Ok(outcome),
    };
    if outcome.is_err() {
        // The step stops at its next checkpoint (a commit under way finishes);
        // wait a little for it, so what it did is in the trace before
        // `run.completed`. A push hung on the network is left behind.
        let _ = tokio::time::timeout(AFTER_CHECKS_GRACE, step).await;
    }
    match outcome {
        Ok(Ok(())) => (status, reason),
        // Outputs the job asked for and did not get: a passing run fails.
        Ok(Err(message)) if status == RunStatus::Passed => (RunStatus::Failed, message),
        Ok(Err(message)) => (status, format!("{reason}; {message}")),
        Err(why) => (RunStatus::Interrupted, why),
    }
}

fn interrupted(stopped: checks::ChecksStopped) -> (RunStatus, String, u32, u32) {
    (
        RunStatus::Interrupted,
        stopped.reason,
        stopped.passed,
        stopped.failed,
    )
}

/// The agent phase, cut at the budget's `timeout`.
async fn timed_agent_phase(
    session: &mut Session<'_>,
    job: &JobSpec,
) -> Result<Option<String>, Stop> {
    match session.budget.remaining_time() {
        Some(left) => match tokio::time::timeout(left, agent_phase(session, job)).await {
            Ok(result) => result,
            Err(_) => Err(Stop::Budget(session.budget.timeout_exceeded())),
        },
        None => agent_phase(session, job).await,
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
fn file_access(policy: &PermissionPolicy, job: &JobSpec) -> FileAccess {
    let rules = policy.clone();
    FileAccess::new(
        move |path| rules.read_denied_by(path),
        job.permissions.allow_hard_links,
    )
}

/// The job's `model.price`, else the built-in list price of `model`.
fn model_price(job: &JobSpec, model: &str) -> Option<Price> {
    job.model
        .price
        .map(|p| Price {
            input_per_mtok: p.input_per_mtok,
            output_per_mtok: p.output_per_mtok,
            cache_read_per_mtok: p.cache_read_per_mtok,
            cache_write_per_mtok: p.cache_write_per_mtok,
        })
        .or_else(|| builtin_price(model))
}

fn passed_reason(checks: u32) -> String {
    match checks {
        0 => "the agent finished; the job has no checks".to_string(),
        1 => "the check passed".to_string(),
        n => format!("all {n} checks passed"),
    }
}

/// Plan, execute, summarize. Returns the final summary, if the model gave one.
async fn agent_phase(session: &mut Session<'_>, job: &JobSpec) -> Result<Option<String>, Stop> {
    session.plan = plan::make_plan(session, job.max_plan_turns).await?;
    execute::execute_plan(session).await?;
    // The work is done; a budget too small for the summary turn does not fail the run.
    if session.budget.check_model_call().is_err() {
        return Ok(fallback_summary(session));
    }
    session.messages.push(Message::User {
        content: protocol::SUMMARY_REQUEST.to_string(),
    });
    // The same tools as every other turn (the history holds tool calls, and
    // the prompt prefix stays cached), but none may be called.
    let response = match session
        .call_model(Phase::Summary, None, ToolChoice::None)
        .await
    {
        Ok(response) => response,
        // Likewise a provider that fails on the summary turn: the checks still judge the work.
        Err(Stop::Provider(error)) => {
            session.bus.emit(EventKind::Warning {
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
        .step_summaries
        .iter()
        .filter(|s| !s.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    (!joined.is_empty()).then_some(joined)
}
