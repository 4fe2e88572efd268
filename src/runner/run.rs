//! One run of a job, from `run.started` to `run.completed`: the agent works,
//! the checks judge (in up to `checks_rounds` rounds: while checks fail,
//! the failures go back to the agent, which works on), the caller's step
//! after the checks (the git outputs) runs, and the run says how it ended.
//!
//! It sequences; it does not talk to the model (that is [`crate::agent`])
//! or write files (sinks do, from the events). Its only result is the
//! [`RunCompleted`], which is also the last event. Signals reach it as a
//! [`CancelSignal`].

use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use super::checks::{self, ChecksRan};
use super::completion::Completion;
use super::git_step::GitStepError;
use super::resume::Resumption;
use super::start::{self, OutOfTime};
use super::{rounds, unchecked};
use crate::agent::memory::Memory;
use crate::agent::sent;
use crate::agent::{
    Agent, AgentInput, AgentOutcome, CancelSignal, ResumeFrom, StateSaver, Stop, ToolSet,
};
use crate::event::bus::EventBus;
use crate::event::{
    CheckCompleted, EventKind, OutputPaths, RunCompleted, RunResumed, RunStatus, Totals,
};
use crate::job::JobSpec;
use crate::process::ProcessRunner;
use crate::provider::{ModelProvider, ProviderError};
use crate::skills::Skill;
use crate::tools::{ToolLimits, Workspace};
use crate::untrusted::UntrustedText;

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
    pub memory: Option<&'a Memory>,
    /// Stops the run from outside; [`CancelSignal::never`] when nothing does.
    pub cancel: CancelSignal,
    /// Runs after the checks and before `run.completed`, unless the run was interrupted.
    pub after_checks: Option<AfterChecks<'a>>,
    /// Saves the loop's state before every model turn (the run's checkpoint).
    pub saver: Option<Box<dyn StateSaver + 'a>>,
    /// The checkpoint to go on from (`agentci run --resume`): the run
    /// says `run.resumed` instead of starting.
    pub resume: Option<Resumption>,
    /// How the job's MCP servers started, before the run was called; `None`
    /// when the job has none.
    pub mcp_start: Option<McpStart>,
    /// The last events of the parts of the run that outlive the agent
    /// loop, delivered just before `run.completed`.
    pub completion: Completion,
}

/// The start of the job's MCP servers: the run's time too (in its duration
/// and against `budget.timeout`), said right after the run's start.
pub struct McpStart {
    pub duration: Duration,
    /// The servers the run's `budget.timeout` cut short: the run ends.
    pub timed_out: Vec<String>,
    /// `mcp.startup`, then what went wrong (servers down, warnings).
    pub events: Vec<EventKind>,
}

/// A step after the checks (the runner's git outputs). It gets the status
/// so far and the bus for its own events; an `Err` is a line for the user
/// and makes a passing run fail.
pub type AfterChecks<'a> =
    Box<dyn FnOnce(RunStatus, EventBus) -> BoxFuture<'a, Result<(), GitStepError>> + Send + 'a>;

/// Run the job to the end and return how it ended (also emitted as `run.completed`).
pub async fn run(input: RunInput<'_>, bus: EventBus) -> RunCompleted {
    let mut started = Instant::now();
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
        saver,
        resume,
        mcp_start,
        completion,
    } = input;
    // The servers started before this was called; their time is the run's.
    let servers_time = mcp_start.as_ref().map_or(Duration::ZERO, |m| m.duration);
    started = started.checked_sub(servers_time).unwrap_or(started);
    let model = provider.model_info();
    let price = super::provider_setup::model_price(&job.model, &model.name);
    let (resumed, resume) = resume_start(resume, job, skill, &mut started);
    let mut agent = Agent::new(
        AgentInput {
            job,
            skill,
            further_skills,
            provider,
            tools,
            workspace: workspace.clone(),
            limits,
            processes: processes.clone(),
            untrusted,
            memory,
            price,
            saver,
            resume,
            time_spent: servers_time,
        },
        bus.clone(),
    );
    let resuming = resumed.is_some();
    match resumed {
        // The run's start is in the trace already.
        Some(event) => {
            bus.emit(EventKind::RunResumed(Box::new(event)));
        }
        None => start::announce(
            start::Announcement {
                job,
                skill,
                model: model.clone(),
                workspace: workspace.root().display().to_string(),
                tools: agent.tool_names(),
                outputs,
                processes: &processes,
                warnings: &warnings,
            },
            &bus,
        ),
    }
    if let Some(reason) = start::report_degraded_sandbox(&processes, &bus) {
        return completion.complete(refused(job, reason, started, &bus), &bus);
    }
    start::warn_unpriced(job, &model.name, price, &bus);
    let out_of_time = mcp_start.and_then(|m| start::report_servers(m, &agent, &bus));

    let verdict = match out_of_time {
        Some(exceeded) => stopped_at_start(exceeded, job, &bus),
        None => {
            work_in_rounds(
                &mut agent, job, &workspace, &processes, &bus, &cancel, resuming,
            )
            .await
        }
    };
    let completed = conclude(
        &mut agent,
        verdict,
        after_checks,
        provider,
        started,
        &cancel,
        &bus,
    )
    .await;
    completion.complete(completed, &bus)
}

/// After the last round: the caller's step after the checks (unless the run
/// was interrupted), the replay's drift, and how the run ended.
async fn conclude(
    // `&mut`: the agent is `Send` but not `Sync`, and this future crosses threads.
    agent: &mut Agent<'_>,
    verdict: Verdict,
    after_checks: Option<AfterChecks<'_>>,
    provider: &dyn ModelProvider,
    started: Instant,
    cancel: &CancelSignal,
    bus: &EventBus,
) -> RunCompleted {
    let Verdict {
        mut status,
        mut reason,
        summary,
        checks_passed,
        checks_failed,
        ..
    } = verdict;

    if let Some(after) = after_checks
        && status != RunStatus::Interrupted
    {
        (status, reason) = run_after_checks(after, status, reason, cancel, bus).await;
    }
    if let Some(drift) = provider.replay_drift() {
        bus.emit(EventKind::ReplayDrift(drift));
    }

    RunCompleted {
        status,
        reason,
        // A model that never submitted a valid result still said what it did.
        summary: summary.or_else(|| agent.final_text().map(str::to_string)),
        totals: Totals {
            duration_ms: started.elapsed().as_millis() as u64,
            ..agent.totals()
        },
        checks_passed,
        checks_failed,
        result: agent.result().cloned(),
        // The data an interrupted run's exit code is taken from.
        signal: (status == RunStatus::Interrupted)
            .then(|| cancel.signal())
            .flatten(),
    }
}

/// The run's timeout ran out before the agent's first turn (its MCP
/// servers were still starting): a budget stop, every check skipped.
fn stopped_at_start(exceeded: OutOfTime, job: &JobSpec, bus: &EventBus) -> Verdict {
    let OutOfTime { exceeded, reason } = exceeded;
    bus.emit(EventKind::BudgetExceeded {
        limit: exceeded.limit,
        used: exceeded.used,
        max: exceeded.max,
    });
    checks::skip_checks(&job.checks, &reason, bus);
    Verdict {
        status: RunStatus::BudgetExceeded,
        reason,
        summary: None,
        checks_passed: 0,
        checks_failed: 0,
        failures: Vec::new(),
        agent_finished: false,
    }
}

/// A run that cannot go on (its sandbox is degraded): an error, with every check skipped.
fn refused(job: &JobSpec, reason: String, started: Instant, bus: &EventBus) -> RunCompleted {
    checks::skip_checks(&job.checks, &reason, bus);
    RunCompleted {
        status: RunStatus::Error,
        reason,
        summary: None,
        totals: Totals {
            duration_ms: started.elapsed().as_millis() as u64,
            ..Totals::default()
        },
        checks_passed: 0,
        checks_failed: 0,
        result: None,
        signal: None,
    }
}

/// A resumed run's `run.resumed` event and where its agent goes on from.
fn resume_start(
    resume: Option<Resumption>,
    job: &JobSpec,
    skill: &Skill,
    started: &mut Instant,
) -> (Option<RunResumed>, Option<ResumeFrom>) {
    // A resumed run counts its time from the start of the run it goes on with.
    match resume {
        Some(resumption) => {
            *started = started
                .checked_sub(resumption.elapsed())
                .unwrap_or(*started);
            let budget = sent::budget_in_effect(&job.budget, skill.max_turns);
            let (event, from) = resumption.into_start(budget);
            (Some(event), Some(from))
        }
        None => (None, None),
    }
}

/// The agent works and the checks judge, in up to `checks_rounds` rounds;
/// the last round's verdict is the run's.
async fn work_in_rounds(
    agent: &mut Agent<'_>,
    job: &JobSpec,
    workspace: &Workspace,
    processes: &ProcessRunner,
    bus: &EventBus,
    cancel: &CancelSignal,
    resuming: bool,
) -> Verdict {
    let rounds = job.checks_rounds.max(1);
    // A resumed run goes on in the round it was in, whose start is in the trace.
    let mut round = agent.state().round;
    if rounds > 1 && !resuming {
        bus.emit(EventKind::RoundStarted { round, of: rounds });
    }
    loop {
        // Dropping the agent's work on a signal stops the model call in
        // flight and kills the process groups of running tools.
        let outcome: AgentOutcome = tokio::select! {
            biased;
            reason = cancel.cancelled() => Err(Stop::Interrupted(reason)),
            result = agent.work() => result,
        };
        // Background sessions end with the agent's work, also on a signal:
        // the checks judge the workspace, not a server the model left running.
        agent.end_sessions();
        // Without checks, what the agent did stands in for them.
        let objection = job
            .checks
            .is_empty()
            .then(|| unchecked::objection(agent.state()))
            .flatten();
        let judged = Judged { outcome, objection };
        let verdict = judge(judged, job, workspace, processes, bus, cancel).await;
        if rounds > 1 {
            bus.emit(EventKind::RoundCompleted {
                round,
                of: rounds,
                checks_passed: verdict.checks_passed,
                checks_failed: verdict.checks_failed,
            });
        }
        // Only work the agent finished is worth another round: a run that
        // stopped (budget, signal, provider) stays stopped.
        if round < rounds && verdict.agent_finished && !verdict.failures.is_empty() {
            round += 1;
            bus.emit(EventKind::RoundStarted { round, of: rounds });
            let failures = &verdict.failures;
            agent.add_round(
                rounds::feedback(round, rounds, failures, job.checks.len()),
                rounds::step(failures),
            );
            continue;
        }
        break verdict;
    }
}

/// How one round ended: the agent's outcome, then the checks (run, or
/// recorded as skipped when the agent did not finish).
struct Verdict {
    status: RunStatus,
    reason: String,
    /// The agent's final summary, if it gave one.
    summary: Option<String>,
    checks_passed: u32,
    checks_failed: u32,
    /// The failed checks, as recorded.
    failures: Vec<CheckCompleted>,
    /// The agent finished its work (it was not stopped).
    agent_finished: bool,
}

/// What the checks are to judge: how the agent's work ended and, for a job
/// without checks, why the run cannot pass anyway ([`unchecked::objection`]).
struct Judged {
    outcome: AgentOutcome,
    objection: Option<String>,
}

async fn judge(
    judged: Judged,
    job: &JobSpec,
    workspace: &Workspace,
    processes: &ProcessRunner,
    bus: &EventBus,
    cancel: &CancelSignal,
) -> Verdict {
    let Judged { outcome, objection } = judged;
    let summary = outcome.as_ref().ok().cloned().flatten();
    let agent_finished = outcome.is_ok();
    let run_checks =
        || checks::run_checks_until(&job.checks, workspace.root(), processes, bus, cancel);
    let (status, reason, ran) = match outcome {
        Ok(_) => match run_checks().await {
            Ok(ran) if ran.failed == 0 => match objection {
                Some(reason) => (RunStatus::Failed, reason, ran),
                None => (RunStatus::Passed, passed_reason(ran.passed), ran),
            },
            Ok(ran) => (
                RunStatus::Failed,
                format!(
                    "{} of {} checks failed",
                    ran.failed,
                    ran.passed + ran.failed
                ),
                ran,
            ),
            Err(stopped) => interrupted(stopped),
        },
        Err(Stop::Failed(reason)) => match run_checks().await {
            Ok(ran) => (RunStatus::Failed, reason, ran),
            Err(stopped) => interrupted(stopped),
        },
        Err(Stop::Interrupted(reason)) => {
            checks::skip_checks(&job.checks, &reason, bus);
            (RunStatus::Interrupted, reason, ChecksRan::default())
        }
        Err(Stop::Budget(exceeded)) => {
            bus.emit(EventKind::BudgetExceeded {
                limit: exceeded.limit,
                used: exceeded.used,
                max: exceeded.max,
            });
            let reason = exceeded.reason();
            checks::skip_checks(&job.checks, &reason, bus);
            (RunStatus::BudgetExceeded, reason, ChecksRan::default())
        }
        Err(Stop::ToolsUnavailable(reason)) => {
            checks::skip_checks(&job.checks, &reason, bus);
            // Exit 4 as for the model provider: a service the run needs is unavailable.
            (RunStatus::ProviderUnavailable, reason, ChecksRan::default())
        }
        Err(Stop::Provider(error)) => {
            let status = provider_failure_status(&error);
            let reason = format!("model provider failed: {error}");
            checks::skip_checks(&job.checks, &reason, bus);
            (status, reason, ChecksRan::default())
        }
    };
    Verdict {
        status,
        reason,
        summary,
        checks_passed: ran.passed,
        checks_failed: ran.failed,
        failures: ran.failures,
        agent_finished,
    }
}

/// How a provider failure ends the run.
fn provider_failure_status(error: &ProviderError) -> RunStatus {
    match error {
        ProviderError::Config(_) => RunStatus::Error,
        // Trimming did not make it fit: the run cannot go on, but the
        // provider is fine.
        ProviderError::ContextTooLong(_) => RunStatus::Failed,
        _ => RunStatus::ProviderUnavailable,
    }
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
        Ok(Err(error)) if status == RunStatus::Passed => (RunStatus::Failed, error.to_string()),
        Ok(Err(error)) => (status, format!("{reason}; {error}")),
        Err(why) => (RunStatus::Interrupted, why),
    }
}

fn interrupted(stopped: checks::ChecksStopped) -> (RunStatus, String, ChecksRan) {
    let ran = ChecksRan {
        passed: stopped.passed,
        failed: stopped.failed,
        failures: Vec::new(),
    };
    (RunStatus::Interrupted, stopped.reason, ran)
}

fn passed_reason(checks: u32) -> String {
    match checks {
        0 => "the agent finished; the job has no checks".to_string(),
        1 => "the check passed".to_string(),
        n => format!("all {n} checks passed"),
    }
}
