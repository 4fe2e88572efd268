//! How a run starts: what it announces before the agent's first turn
//! (`run.started`, `skill.loaded`, load warnings, a degraded sandbox, a
//! price it cannot enforce, how its MCP servers started), and the model's
//! price.

use super::run::McpStart;
use crate::agent::budget::Exceeded;
use crate::agent::{Agent, sent};
use crate::event::bus::EventBus;
use crate::event::{EventKind, OutputPaths, RunStarted, SCHEMA_VERSION, SkillLoaded};
use crate::job::JobSpec;
use crate::provider::ModelInfo;
use crate::provider::pricing::Price;
use crate::skills::Skill;

/// What the run announces about itself before anything happens.
pub(super) struct Announcement<'a> {
    pub job: &'a JobSpec,
    pub skill: &'a Skill,
    pub model: ModelInfo,
    pub workspace: String,
    pub tools: Vec<String>,
    pub outputs: OutputPaths,
    pub processes: &'a crate::process::ProcessRunner,
    pub warnings: &'a [String],
}

/// `run.started`, `skill.loaded` and the warnings from loading.
pub(super) fn announce(what: Announcement<'_>, bus: &EventBus) {
    let Announcement {
        job,
        skill,
        model,
        workspace,
        tools,
        outputs,
        processes,
        warnings,
    } = what;
    bus.emit(EventKind::RunStarted(RunStarted {
        schema_version: SCHEMA_VERSION,
        agentci_version: env!("CARGO_PKG_VERSION").to_string(),
        job_name: job.name.clone(),
        job_file: job.path.display().to_string(),
        skill: skill.name.clone(),
        goal: job.goal.clone(),
        model,
        workspace,
        tools,
        outputs,
        sandbox: Box::new(processes.sandbox_report()),
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
}

/// Say what the sandbox cannot enforce here (`sandbox.degraded`) and, when
/// the job requires its sandbox (the default), return why the run does not
/// start; a job that accepts the degraded sandbox gets a warning instead,
/// and one naming the variables commands go without for it.
pub(super) fn report_degraded_sandbox(
    processes: &crate::process::ProcessRunner,
    bus: &EventBus,
) -> Option<String> {
    use crate::sandbox::{FULL_SANDBOX, children_reach_agentci};
    let report = processes.sandbox_report();
    let message = crate::sandbox::degraded_message(&report)?;
    let refusal = crate::sandbox::refusal(&report);
    let reach = children_reach_agentci(&report);
    bus.emit(EventKind::SandboxDegraded(report));
    if refusal.is_some() {
        // The reason says it all, once, in `run.completed`.
        return refusal;
    }
    let mut warning = message;
    if reach {
        warning.push_str("; ");
        warning.push_str(FULL_SANDBOX);
    }
    warning.push_str("; the job accepts this with `sandbox.require: false`");
    bus.emit(EventKind::Warning {
        source: crate::sandbox::DEGRADED_WARNING_SOURCE.into(),
        message: warning,
    });
    let withheld = processes.withheld_secrets();
    if !withheld.is_empty() {
        bus.emit(EventKind::Warning {
            source: "env".into(),
            message: withheld_message(withheld),
        });
    }
    None
}

/// The warning naming the variables commands run without.
fn withheld_message(withheld: &[String]) -> String {
    let names: Vec<String> = withheld.iter().map(|n| format!("`{n}`")).collect();
    format!(
        "commands run without the variables that hold a secret, {}: without a PID namespace a \
         command is not contained (it sees every process, and UDP is open); MCP servers keep \
         their own `env:`, which commands can read from `/proc/<pid>/environ` here; {}",
        names.join(", "),
        crate::sandbox::FULL_SANDBOX
    )
}

/// Warn when `budget.max_cost_usd` is set and no price is known for the model.
pub(super) fn warn_unpriced(job: &JobSpec, model: &str, price: Option<Price>, bus: &EventBus) {
    if price.is_none() && job.budget.max_cost_usd.is_some() {
        bus.emit(EventKind::Warning {
            source: "budget".into(),
            message: format!(
                "budget.max_cost_usd cannot be enforced: agentci knows no price for model {model:?}; \
                 set model.price: {{input_per_mtok, output_per_mtok}}"
            ),
        });
    }
}

/// The run's timeout ran out while its MCP servers started.
pub(super) struct OutOfTime {
    pub exceeded: Exceeded,
    pub reason: String,
}

/// Say how the MCP servers started (`mcp.startup`, servers down,
/// warnings); when the run's timeout cut a server's start short, the run
/// is out of time before its first turn.
pub(super) fn report_servers(
    start: McpStart,
    agent: &Agent<'_>,
    bus: &EventBus,
) -> Option<OutOfTime> {
    for event in start.events {
        bus.emit(event);
    }
    if start.timed_out.is_empty() {
        return None;
    }
    let exceeded = agent.state().budget.timeout_exceeded();
    let names: Vec<String> = start.timed_out.iter().map(|n| format!("`{n}`")).collect();
    let reason = format!(
        "{} while the MCP servers started ({} not ready)",
        exceeded.reason(),
        names.join(", ")
    );
    Some(OutOfTime { exceeded, reason })
}
