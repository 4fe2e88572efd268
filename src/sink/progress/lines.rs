//! What each event reads as in a log: the lines [`LogLines`] gives for an
//! event, without the `[agentci]` prefix, and the one-line descriptions of
//! calls, checks, retries and the run's outcome that the bar reuses.
//!
//! Nothing here writes anywhere; the plain log, the bars and the GitHub log
//! decide where the lines go.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::text::{one_line, plural, secs, thousands};
use crate::event::{
    BudgetLimit, CheckCompleted, CheckOutcome, ContextCompacted, ContextTrimmed, Decision, Event,
    EventKind, ModelRetry, PlanStep, RunCompleted, RunStatus, ToolResultEvent,
};

/// What a log shows for each event, without the prefix; shared by
/// [`PlainLog`] and the GitHub Actions log, which adds groups around it.
#[derive(Default)]
pub(in crate::sink) struct LogLines {
    calls: CallBook,
    plan_len: Option<usize>,
}

impl LogLines {
    /// The lines `event` is shown as; empty for events a log reader does not need.
    pub(in crate::sink) fn lines(&mut self, event: &Event) -> Vec<String> {
        let mut lines = Vec::new();
        match &event.kind {
            EventKind::RunStarted(run) => lines.push(format!(
                "run {}: skill {}, model {}:{}, {} tools",
                run.job_name,
                run.skill,
                run.model.provider,
                run.model.name,
                run.tools.len()
            )),
            EventKind::SkillLoaded(skill) => {
                lines.push(format!("skill {} loaded from {}", skill.name, skill.path));
                for warning in &skill.warnings {
                    lines.push(format!("warning: skill {}: {warning}", skill.name));
                }
            }
            EventKind::Warning { source, message } => {
                lines.push(format!("warning: {source}: {message}"));
            }
            EventKind::RunResumed(resumed) => lines.push(format!(
                "resumed after turn {}{}",
                resumed.from_turn,
                match &resumed.previous_status {
                    Some(status) => format!(" (the run had ended {})", status.as_str()),
                    None => " (the run had been killed)".to_string(),
                }
            )),
            EventKind::PlanCreated { .. }
            | EventKind::PlanUpdated { .. }
            | EventKind::StepStarted { .. }
            | EventKind::StepCompleted { .. } => lines.extend(self.plan_event_lines(&event.kind)),
            EventKind::StepDoneDeclined {
                index, failed_tool, ..
            } => lines.push(format!(
                "step {}: step_done not applied, `{failed_tool}` failed; the step goes on",
                index + 1
            )),
            // The calls' own lines say what ran; the grouping is for the trace.
            EventKind::ModelRequest(_)
            | EventKind::ModelResponse(_)
            | EventKind::ToolBatchStarted(_)
            | EventKind::ToolBatchCompleted(_) => {}
            // Its warning, emitted with it, is the line.
            EventKind::SandboxDegraded(_) => {}
            EventKind::NetworkRequest(record) => {
                lines.push(format!(
                    "network: {}",
                    crate::sink::describe_network(record)
                ));
            }
            EventKind::ModelRetry(retry) => lines.push(retry_line(retry)),
            EventKind::ContextTrimmed(trim) => lines.push(trim_line(trim)),
            EventKind::ReplayDrift(drift) => lines.push(format!("replay: {}", drift.summary())),
            EventKind::ContextCompacted(c) => lines.push(compacted_line(c)),
            EventKind::ToolCall { .. }
            | EventKind::PermissionDecision { .. }
            | EventKind::ToolResult(_)
            | EventKind::SubagentStarted(_)
            | EventKind::SubagentCompleted(_) => lines.extend(self.tool_lines(event)),
            EventKind::BudgetExceeded { limit, used, max } => {
                lines.push(format!(
                    "budget exceeded: {} {} of {}",
                    limit.key(),
                    budget_amount(*limit, *used),
                    budget_amount(*limit, *max)
                ));
            }
            EventKind::CheckCompleted(_)
            | EventKind::RoundStarted { .. }
            | EventKind::RoundCompleted { .. } => lines.extend(checks_lines(&event.kind)),
            EventKind::GitPatch(_) | EventKind::GitCommit { .. } | EventKind::GitPush { .. } => {
                lines.extend(git_line(&event.kind));
            }
            EventKind::McpStartup(startup) => {
                lines.push(crate::sink::describe_mcp_startup(startup));
            }
            EventKind::McpServerDown { .. }
            | EventKind::McpServerRequest { .. }
            | EventKind::McpToolsRefreshed { .. } => lines.extend(mcp_lines(&event.kind)),
            EventKind::RunCompleted(done) => {
                lines.push(run_line(done));
                if done.status != RunStatus::Passed {
                    lines.push(format!("  reason: {}", done.reason));
                }
            }
        }
        lines
    }

    /// The plan's lines: the steps when planned or replanned, each step's start and end.
    fn plan_event_lines(&mut self, kind: &EventKind) -> Vec<String> {
        let mut lines = Vec::new();
        match kind {
            EventKind::PlanCreated { steps } => {
                self.plan_len = Some(steps.len());
                lines.extend(plan_lines("plan".to_string(), steps));
            }
            EventKind::PlanUpdated { steps, from_index } => {
                self.plan_len = Some(steps.len());
                let verb = format!("plan updated from step {}", from_index + 1);
                lines.extend(plan_lines(verb, steps));
            }
            EventKind::StepStarted { index, title } => {
                lines.push(format!(
                    "step {}: {}",
                    step_of(*index, self.plan_len),
                    title
                ));
            }
            EventKind::StepCompleted {
                index,
                summary,
                status,
                ..
            } => lines.push(format!(
                "step {} {}: {}",
                step_of(*index, self.plan_len),
                status.as_str(),
                one_line(summary, 160)
            )),
            _ => {}
        }
        lines
    }

    /// The tool calls' lines: denials, finished calls and sub-agents (a
    /// call's line waits for its result).
    fn tool_lines(&mut self, event: &Event) -> Vec<String> {
        let mut lines = Vec::new();
        // A sub-agent's call ids are its model's, and may repeat the parent's.
        let scoped = |id: &str| match &event.agent {
            Some(agent) => format!("{}/{id}", agent.id),
            None => id.to_string(),
        };
        match &event.kind {
            EventKind::ToolCall {
                call_id,
                tool,
                arguments,
            } => self.calls.called(&scoped(call_id), tool, arguments),
            EventKind::PermissionDecision {
                call_id,
                tool,
                decision: Decision::Deny,
                rule,
                ..
            } => {
                let call = self.calls.denied(&scoped(call_id), tool);
                lines.push(format!("  denied {call} (rule: {rule})"));
            }
            EventKind::PermissionDecision { .. } => {}
            EventKind::ToolResult(result) => {
                lines.extend(self.result_lines(&scoped(&result.call_id), result));
            }
            EventKind::SubagentStarted(_) | EventKind::SubagentCompleted(_) => {
                lines.extend(subagent_line(event));
            }
            _ => {}
        }
        lines
    }

    /// A finished call's line (unless its denial was shown) and, for `todo`, the checklist.
    fn result_lines(&mut self, call_id: &str, result: &ToolResultEvent) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(call) = self.calls.finished(call_id, &result.tool) {
            let outcome = match (&result.ok, &result.error_code) {
                (true, _) => "ok".to_string(),
                (false, Some(code)) => {
                    format!("{code}: {}", one_line(&result.summary, 120))
                }
                (false, None) => format!("error: {}", one_line(&result.summary, 120)),
            };
            lines.push(format!(
                "  {call} -> {outcome} ({})",
                secs(result.duration_ms)
            ));
        }
        if result.ok && result.tool == "todo" {
            lines.extend(todo_line(&result.data));
        }
        lines
    }
}

/// The checks' lines: each check's result, and the rounds they ran in.
fn checks_lines(kind: &EventKind) -> Vec<String> {
    let mut lines = Vec::new();
    match kind {
        EventKind::CheckCompleted(check) => lines.extend(check_lines(check)),
        EventKind::RoundStarted { round, of } => {
            lines.push(format!("round {round} of {of}"));
        }
        EventKind::RoundCompleted {
            round,
            of,
            checks_passed,
            checks_failed,
        } => lines.push(format!(
            "round {round} of {of}: {checks_passed} checks passed, {checks_failed} failed"
        )),
        _ => {}
    }
    lines
}

/// The line a sub-agent's start or end reads as, named by its id.
fn subagent_line(event: &Event) -> Option<String> {
    let id = event.agent.as_ref().map_or("task", |a| a.id.as_str());
    match &event.kind {
        EventKind::SubagentStarted(started) => Some(format!(
            "  {id} started ({}: {})",
            started.kind,
            started.tools.join(", ")
        )),
        EventKind::SubagentCompleted(done) => {
            let outcome = if done.ok {
                "answered".to_string()
            } else {
                format!("gave no answer: {}", one_line(&done.reason, 120))
            };
            let count = |n: u32, what: &str| match n {
                1 => format!("1 {what}"),
                n => format!("{n} {what}s"),
            };
            Some(format!(
                "  {id} {outcome} ({}, {}, {})",
                count(done.turns, "turn"),
                count(done.tool_calls, "tool call"),
                secs(done.duration_ms)
            ))
        }
        _ => None,
    }
}

/// The lines for what an MCP server did outside a tool call.
fn mcp_lines(kind: &EventKind) -> Vec<String> {
    let mut lines = Vec::new();
    match kind {
        EventKind::McpServerDown {
            server,
            reason,
            stderr,
            ..
        } => {
            lines.push(format!("MCP server `{server}` is down: {reason}"));
            lines.extend(
                stderr
                    .iter()
                    .rev()
                    .take(5)
                    .rev()
                    .map(|l| format!("  | {l}")),
            );
        }
        EventKind::McpServerRequest {
            server,
            method,
            outcome,
            detail,
            ..
        } => lines.push(format!(
            "MCP server `{server}` sent `{method}`: {outcome}{}",
            if detail.is_empty() {
                String::new()
            } else {
                format!(" ({detail})")
            }
        )),
        EventKind::McpToolsRefreshed { server, tools } => lines.push(format!(
            "MCP server `{server}` changed its tools: {} now",
            tools.len()
        )),
        _ => {}
    }
    lines
}

/// Remembers each call's description so the result and denial lines can name it.
#[derive(Default)]
pub(super) struct CallBook {
    calls: HashMap<String, String>,
    denied: HashSet<String>,
}

impl CallBook {
    pub(super) fn called(&mut self, call_id: &str, tool: &str, arguments: &Value) {
        self.calls
            .insert(call_id.to_string(), describe_call(tool, arguments));
    }

    pub(super) fn denied(&mut self, call_id: &str, tool: &str) -> String {
        self.denied.insert(call_id.to_string());
        self.calls
            .get(call_id)
            .cloned()
            .unwrap_or_else(|| tool.to_string())
    }

    /// The call's description, or `None` when its denial was already shown.
    pub(super) fn finished(&mut self, call_id: &str, tool: &str) -> Option<String> {
        let call = self
            .calls
            .remove(call_id)
            .unwrap_or_else(|| tool.to_string());
        (!self.denied.remove(call_id)).then_some(call)
    }
}

/// `exec cargo test`, `read src/lib.rs`: the tool and its most telling argument.
pub(crate) fn describe_call(tool: &str, arguments: &Value) -> String {
    const TELLING: [&str; 6] = ["command", "path", "pattern", "url", "prompt", "action"];
    let argument = TELLING
        .iter()
        .find_map(|key| arguments.get(key).and_then(Value::as_str));
    match argument {
        Some(argument) => format!("{tool} {}", one_line(argument, 80)),
        None => tool.to_string(),
    }
}

fn plan_lines(verb: String, steps: &[PlanStep]) -> Vec<String> {
    let mut lines = vec![format!("{verb}: {}", plural(steps.len() as u64, "step"))];
    for (i, step) in steps.iter().enumerate() {
        lines.push(format!("  {}. {}", i + 1, one_line(&step.title, 100)));
    }
    lines
}

/// The line for a git output event.
pub(super) fn git_line(kind: &EventKind) -> Option<String> {
    match kind {
        EventKind::GitPatch(patch) => Some(format!(
            "patch {}: {} files changed, +{} -{}",
            patch.path, patch.files_changed, patch.insertions, patch.deletions
        )),
        EventKind::GitCommit { branch, sha } => Some(format!(
            "committed {} on branch {branch}",
            sha.get(..12).unwrap_or(sha)
        )),
        EventKind::GitPush { remote, branch } => {
            Some(format!("pushed branch {branch} to {remote}"))
        }
        _ => None,
    }
}

pub(crate) fn check_lines(check: &CheckCompleted) -> Vec<String> {
    let time = secs(check.duration_ms);
    let outcome = match (check.outcome, check.exit_code) {
        (CheckOutcome::Passed, _) => format!("passed ({time})"),
        (CheckOutcome::Failed, Some(code)) => format!("failed: exit code {code} ({time})"),
        (CheckOutcome::Failed, None) => format!("failed: killed by a signal ({time})"),
        (CheckOutcome::TimedOut, _) => format!("timed out after {time}"),
        (CheckOutcome::Skipped, _) => "skipped: the agent did not finish".to_string(),
    };
    let mut lines = vec![format!("check \"{}\": {outcome}", check.name)];
    if matches!(check.outcome, CheckOutcome::Failed | CheckOutcome::TimedOut) {
        // The end of the output is where test runners put the verdict.
        let output: Vec<&str> = check.output.lines().collect();
        let tail = &output[output.len().saturating_sub(20)..];
        lines.extend(tail.iter().map(|line| format!("  | {line}")));
    }
    lines
}

pub(super) fn retry_line(retry: &ModelRetry) -> String {
    format!(
        "model call failed (attempt {} of {}): {}; retrying in {}",
        retry.attempt,
        retry.max_attempts,
        one_line(&retry.reason, 200),
        secs(retry.wait_ms)
    )
}

pub(super) fn trim_line(trim: &ContextTrimmed) -> String {
    format!(
        "context too long for the model: trimmed {} to {} messages (~{} to ~{} tokens) and retrying",
        trim.messages_before,
        trim.messages_after,
        thousands(trim.estimated_tokens_before),
        thousands(trim.estimated_tokens_after)
    )
}

pub(super) fn compacted_line(c: &ContextCompacted) -> String {
    format!(
        "context near the model's window: {}",
        crate::sink::describe_compaction(c)
    )
}

pub(crate) fn run_line(done: &RunCompleted) -> String {
    let status = match done.status {
        RunStatus::Passed => "passed",
        RunStatus::Failed => "failed",
        RunStatus::BudgetExceeded => "stopped (budget exceeded)",
        RunStatus::ProviderUnavailable => "stopped (provider unavailable)",
        RunStatus::Error => "stopped (error)",
        RunStatus::Interrupted => "interrupted",
    };
    let t = &done.totals;
    let mut line = format!(
        "run {status} in {}: {}, {}, {} tokens",
        secs(t.duration_ms),
        plural(u64::from(t.turns), "turn"),
        plural(u64::from(t.tool_calls), "tool call"),
        thousands(t.input_tokens + t.output_tokens)
    );
    if let Some(cost) = t.cost_usd {
        line.push_str(&format!(", ${cost:.4}"));
    }
    line
}

pub(super) fn step_of(index: usize, plan_len: Option<usize>) -> String {
    match plan_len {
        Some(len) if index < len => format!("{}/{len}", index + 1),
        _ => format!("{}", index + 1),
    }
}

/// A budget amount in its limit's unit: `$2.0400`, `4.2s`, `3,400`.
pub(crate) fn budget_amount(limit: BudgetLimit, amount: f64) -> String {
    match limit {
        BudgetLimit::MaxCostUsd => format!("${amount:.4}"),
        BudgetLimit::Timeout => format!("{amount:.1}s"),
        _ => thousands(amount as u64),
    }
}

/// The agent's checklist in one line: how much is done and what is under way.
pub(super) fn todo_line(data: &serde_json::Value) -> Option<String> {
    let items = data.get("items")?.as_array()?;
    fn status(item: &serde_json::Value) -> &str {
        item.get("status").and_then(|s| s.as_str()).unwrap_or("")
    }
    let done = items.iter().filter(|i| status(i) == "done").count();
    let current = items
        .iter()
        .find(|i| status(i) == "in_progress")
        .and_then(|i| i.get("text").and_then(|t| t.as_str()))
        .map(|t| format!(", now: {}", one_line(t, 80)))
        .unwrap_or_default();
    Some(format!("  todo: {done}/{} done{current}", items.len()))
}
