//! What a person watching a run sees: [`PlainLog`] writes one line per
//! meaningful event (CI logs, pipes, anything that is not a terminal) and
//! [`ProgressBars`] draws a live bar on a terminal's stderr.
//!
//! Both only describe the events they are given; neither decides anything
//! about the run. They tolerate any order of events (a step without a plan, a
//! result without its call) because a display must never be the thing that
//! breaks a run. The GitHub step summary and annotations are not here.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use crate::event::{
    BudgetLimit, CheckCompleted, CheckOutcome, ContextCompacted, ContextTrimmed, Decision, Event,
    EventKind, ModelRetry, PlanStep, RunCompleted, RunStatus,
};
use crate::sink::bus::{EventSink, SinkError};

pub(super) const PREFIX: &str = "[agentci]";

/// One line per meaningful event, for logs.
pub struct PlainLog {
    out: Box<dyn Write + Send>,
    /// Set after the first failed write: a closed log is reported once, not per event.
    broken: bool,
    lines: LogLines,
}

impl PlainLog {
    pub fn new(out: Box<dyn Write + Send>) -> PlainLog {
        PlainLog {
            out,
            broken: false,
            lines: LogLines::default(),
        }
    }
}

/// What a log shows for each event, without the prefix; shared by
/// [`PlainLog`] and the GitHub Actions log, which adds groups around it.
#[derive(Default)]
pub(super) struct LogLines {
    calls: CallBook,
    plan_len: Option<usize>,
}

impl LogLines {
    /// The lines `event` is shown as; empty for events a log reader does not need.
    pub(super) fn lines(&mut self, event: &Event) -> Vec<String> {
        let mut lines = Vec::new();
        // A sub-agent's call ids are its model's, and may repeat the parent's.
        let scoped = |id: &str| match &event.agent {
            Some(agent) => format!("{}/{id}", agent.id),
            None => id.to_string(),
        };
        match &event.kind {
            EventKind::RunStarted(run) => lines.push(format!(
                "run {}: skill {}, model {}:{}, {} tools",
                run.job_name,
                run.skill,
                run.model.provider,
                run.model.name,
                run.tools.len()
            )),
            EventKind::RunResumed(resumed) => lines.push(format!(
                "resumed after turn {}{}",
                resumed.from_turn,
                match &resumed.previous_status {
                    Some(status) => format!(" (the run had ended {})", status.as_str()),
                    None => " (the run had been killed)".to_string(),
                }
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
            // The calls' own lines say what ran; the grouping is for the trace.
            EventKind::ModelRequest(_)
            | EventKind::ModelResponse(_)
            | EventKind::ToolBatchStarted(_)
            | EventKind::ToolBatchCompleted(_) => {}
            // Its warning, emitted with it, is the line.
            EventKind::SandboxDegraded(_) => {}
            EventKind::ModelRetry(retry) => lines.push(retry_line(retry)),
            EventKind::ContextTrimmed(trim) => lines.push(trim_line(trim)),
            EventKind::ReplayDrift(drift) => lines.push(format!("replay: {}", drift.summary())),
            EventKind::ContextCompacted(c) => lines.push(compacted_line(c)),
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
                if let Some(call) = self.calls.finished(&scoped(&result.call_id), &result.tool) {
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
            }
            EventKind::SubagentStarted(started) => {
                let id = event.agent.as_ref().map_or("task", |a| a.id.as_str());
                lines.push(format!(
                    "  {id} started ({}: {})",
                    started.kind,
                    started.tools.join(", ")
                ));
            }
            EventKind::SubagentCompleted(done) => {
                let id = event.agent.as_ref().map_or("task", |a| a.id.as_str());
                let outcome = if done.ok {
                    "answered".to_string()
                } else {
                    format!("gave no answer: {}", one_line(&done.reason, 120))
                };
                let count = |n: u32, what: &str| match n {
                    1 => format!("1 {what}"),
                    n => format!("{n} {what}s"),
                };
                lines.push(format!(
                    "  {id} {outcome} ({}, {}, {})",
                    count(done.turns, "turn"),
                    count(done.tool_calls, "tool call"),
                    secs(done.duration_ms)
                ));
            }
            EventKind::BudgetExceeded { limit, used, max } => {
                lines.push(format!(
                    "budget exceeded: {} {} of {}",
                    limit.key(),
                    budget_amount(*limit, *used),
                    budget_amount(*limit, *max)
                ));
            }
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
            EventKind::GitPatch(_) | EventKind::GitCommit { .. } | EventKind::GitPush { .. } => {
                lines.extend(git_line(&event.kind));
            }
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
            EventKind::RunCompleted(done) => {
                lines.push(run_line(done));
                if done.status != RunStatus::Passed {
                    lines.push(format!("  reason: {}", done.reason));
                }
            }
        }
        lines
    }
}

impl EventSink for PlainLog {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        let lines = self.lines.lines(event);
        if self.broken || lines.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for line in lines {
            text.push_str(PREFIX);
            text.push(' ');
            text.push_str(&line);
            text.push('\n');
        }
        let written = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush());
        written.map_err(|source| {
            self.broken = true;
            SinkError {
                what: "write the progress log to",
                path: "its output".to_string(),
                source,
            }
        })
    }
}

/// A live progress bar on stderr for a terminal: the plan's steps as a bar,
/// with the current step and tool as its message.
pub struct ProgressBars {
    bar: ProgressBar,
    calls: CallBook,
    plan_len: Option<usize>,
    step: Option<String>,
    tool: Option<String>,
    /// False under `NO_COLOR`: the same bar without colour codes.
    color: bool,
    /// The tail of the model's answer as it streams in.
    streaming: String,
    /// What stays on screen when the bar is gone: the plan's step titles,
    /// each step's outcome, and the checks' lines.
    titles: Vec<String>,
    outcomes: HashMap<usize, String>,
    check_results: Vec<String>,
}

/// How much of a streaming answer the bar shows.
const STREAM_TAIL_CHARS: usize = 80;

impl Default for ProgressBars {
    fn default() -> Self {
        Self::new()
    }
}

impl ProgressBars {
    pub fn new() -> ProgressBars {
        Self::with_draw_target(ProgressDrawTarget::stderr())
    }

    /// For tests and embedding: draw somewhere other than stderr (or nowhere).
    pub fn with_draw_target(target: ProgressDrawTarget) -> ProgressBars {
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_message("starting");
        bar.enable_steady_tick(Duration::from_millis(120));
        let bars = ProgressBars {
            bar,
            calls: CallBook::default(),
            plan_len: None,
            step: None,
            tool: None,
            streaming: String::new(),
            color: true,
            titles: Vec::new(),
            outcomes: HashMap::new(),
            check_results: Vec::new(),
        };
        bars.bar.set_style(bars.style(SPINNER));
        bars
    }

    /// Draw without colours (`NO_COLOR`); the caller decides, the sink never reads the environment.
    pub fn without_color(mut self) -> ProgressBars {
        self.color = false;
        self.bar.set_style(self.style(SPINNER));
        self
    }

    /// `template` with its colour specs (`.cyan`, `.cyan/blue`) removed when colour is off.
    fn style(&self, template: &str) -> ProgressStyle {
        if self.color {
            return style(template);
        }
        style(
            &template
                .replace(":24.cyan/blue}", ":24}")
                .replace(":.cyan}", "}"),
        )
    }

    fn refresh_message(&self) {
        let mut message = self.step.clone().unwrap_or_else(|| "planning".to_string());
        if let Some(tool) = &self.tool {
            message.push_str(" · ");
            message.push_str(tool);
        } else if !self.streaming.is_empty() {
            message.push_str(" · ");
            message.push_str(&self.streaming);
        }
        self.bar.set_message(message);
    }

    /// Keeps the last line of streamed text, cut to the bar's width.
    fn stream_text(&mut self, delta: &str) {
        self.streaming.push_str(delta);
        let last_line = self
            .streaming
            .rsplit('\n')
            .find(|line| !line.trim().is_empty())
            .unwrap_or("")
            .trim_start();
        let skip = last_line.chars().count().saturating_sub(STREAM_TAIL_CHARS);
        self.streaming = last_line.chars().skip(skip).collect();
    }

    /// The plan with each step's outcome, then the checks.
    fn final_picture(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.titles.is_empty() {
            lines.push(format!(
                "plan: {}",
                plural(self.titles.len() as u64, "step")
            ));
        }
        for (i, title) in self.titles.iter().enumerate() {
            let outcome = self
                .outcomes
                .get(&i)
                .cloned()
                .unwrap_or_else(|| "not finished".to_string());
            lines.push(format!("  {}. {} — {outcome}", i + 1, one_line(title, 100)));
        }
        lines.extend(self.check_results.iter().cloned());
        lines
    }

    fn set_plan(&mut self, len: usize, done: usize) {
        self.plan_len = Some(len);
        if len == 0 {
            return;
        }
        self.bar.set_style(self.style(BAR));
        self.bar.set_length(len as u64);
        self.bar.set_position(done.min(len) as u64);
    }
}

impl EventSink for ProgressBars {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        match &event.kind {
            EventKind::RunStarted(run) => {
                self.bar.println(format!("{PREFIX} run {}", run.job_name));
                self.refresh_message();
            }
            EventKind::Warning { source, message } => {
                self.bar
                    .println(format!("{PREFIX} warning: {source}: {message}"));
            }
            EventKind::PlanCreated { steps } => {
                self.titles = steps.iter().map(|s| s.title.clone()).collect();
                self.outcomes.clear();
                self.set_plan(steps.len(), 0);
            }
            EventKind::PlanUpdated { steps, from_index } => {
                self.titles = steps.iter().map(|s| s.title.clone()).collect();
                self.outcomes.retain(|i, _| i < from_index);
                self.set_plan(steps.len(), *from_index);
            }
            EventKind::StepStarted { index, title } => {
                self.step = Some(format!("step {}: {title}", step_of(*index, self.plan_len)));
                self.tool = None;
                self.refresh_message();
            }
            EventKind::StepCompleted {
                index,
                summary,
                status,
                ..
            } => {
                self.outcomes.insert(
                    *index,
                    format!("{}: {}", status.as_str(), one_line(summary, 120)),
                );
                if let Some(len) = self.plan_len.filter(|&len| len > 0) {
                    self.bar.set_position((index + 1).min(len) as u64);
                }
            }
            EventKind::ToolCall {
                call_id,
                tool,
                arguments,
            } => {
                self.calls.called(call_id, tool, arguments);
                self.tool = Some(describe_call(tool, arguments));
                self.refresh_message();
            }
            EventKind::PermissionDecision {
                call_id,
                tool,
                decision: Decision::Deny,
                rule,
                ..
            } => {
                let call = self.calls.denied(call_id, tool);
                self.bar
                    .println(format!("{PREFIX}   denied {call} (rule: {rule})"));
            }
            EventKind::ToolResult(result) => {
                self.calls.finished(&result.call_id, &result.tool);
                if result.ok
                    && result.tool == "todo"
                    && let Some(line) = todo_line(&result.data)
                {
                    self.bar.println(format!("{PREFIX}{line}"));
                }
                self.tool = None;
                self.refresh_message();
            }
            EventKind::BudgetExceeded { limit, .. } => {
                self.bar
                    .println(format!("{PREFIX} budget exceeded: {}", limit.key()));
            }
            EventKind::ModelRequest(_) | EventKind::ModelResponse(_) => {
                self.streaming.clear();
                self.refresh_message();
            }
            EventKind::ModelRetry(retry) => {
                // The answer starts over; what streamed so far is not part of it.
                self.streaming.clear();
                self.refresh_message();
                self.bar.println(format!("{PREFIX} {}", retry_line(retry)));
            }
            EventKind::ContextTrimmed(trim) => {
                self.bar.println(format!("{PREFIX} {}", trim_line(trim)));
            }
            EventKind::ContextCompacted(c) => {
                self.bar.println(format!("{PREFIX} {}", compacted_line(c)));
            }
            EventKind::CheckCompleted(check) => {
                self.step = Some(format!("check \"{}\"", check.name));
                self.refresh_message();
                let lines = check_lines(check);
                if let Some(first) = lines.first() {
                    self.bar.println(format!("{PREFIX} {first}"));
                    self.check_results.push(first.clone());
                }
            }
            EventKind::RunCompleted(done) => {
                // The bar's lines vanish with it; the picture a reader wants
                // afterwards is what the plain log shows: plan, checks, totals.
                for line in self.final_picture() {
                    self.bar.println(format!("{PREFIX} {line}"));
                }
                self.bar.set_style(style("{msg}"));
                let mut message = format!("{PREFIX} {}", run_line(done));
                if done.status != RunStatus::Passed {
                    message.push_str(&format!("\n{PREFIX}   reason: {}", done.reason));
                }
                self.bar.finish_with_message(message);
            }
            EventKind::GitPatch(_) | EventKind::GitCommit { .. } | EventKind::GitPush { .. } => {
                if let Some(line) = git_line(&event.kind) {
                    self.bar.println(format!("{PREFIX} {line}"));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn on_partial_text(&mut self, _call_id: &str, delta: &str) {
        self.stream_text(delta);
        self.refresh_message();
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        if !self.bar.is_finished() {
            self.bar.set_style(style("{msg}"));
            self.bar
                .abandon_with_message(format!("{PREFIX} run did not complete"));
        }
        Ok(())
    }
}

const SPINNER: &str = "{spinner:.cyan} [{elapsed}] {wide_msg}";
const BAR: &str = "{spinner:.cyan} [{elapsed}] {bar:24.cyan/blue} {pos}/{len} {wide_msg}";

fn style(template: &str) -> ProgressStyle {
    // The templates are constants; falling back keeps a typo from being a panic.
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// Remembers each call's description so the result and denial lines can name it.
#[derive(Default)]
struct CallBook {
    calls: HashMap<String, String>,
    denied: HashSet<String>,
}

impl CallBook {
    fn called(&mut self, call_id: &str, tool: &str, arguments: &Value) {
        self.calls
            .insert(call_id.to_string(), describe_call(tool, arguments));
    }

    fn denied(&mut self, call_id: &str, tool: &str) -> String {
        self.denied.insert(call_id.to_string());
        self.calls
            .get(call_id)
            .cloned()
            .unwrap_or_else(|| tool.to_string())
    }

    /// The call's description, or `None` when its denial was already shown.
    fn finished(&mut self, call_id: &str, tool: &str) -> Option<String> {
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
fn git_line(kind: &EventKind) -> Option<String> {
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

fn retry_line(retry: &ModelRetry) -> String {
    format!(
        "model call failed (attempt {} of {}): {}; retrying in {}",
        retry.attempt,
        retry.max_attempts,
        one_line(&retry.reason, 200),
        secs(retry.wait_ms)
    )
}

fn trim_line(trim: &ContextTrimmed) -> String {
    format!(
        "context too long for the model: trimmed {} to {} messages (~{} to ~{} tokens) and retrying",
        trim.messages_before,
        trim.messages_after,
        thousands(trim.estimated_tokens_before),
        thousands(trim.estimated_tokens_after)
    )
}

fn compacted_line(c: &ContextCompacted) -> String {
    format!(
        "context near the model's window: {} earlier messages replaced by a {} (~{} to ~{} tokens of {})",
        c.replaced_messages,
        c.method,
        thousands(c.tokens_before),
        thousands(c.tokens_after),
        thousands(c.window)
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

fn budget_amount(limit: BudgetLimit, amount: f64) -> String {
    match limit {
        BudgetLimit::MaxCostUsd => format!("${amount:.4}"),
        BudgetLimit::Timeout => format!("{amount:.1}s"),
        _ => thousands(amount as u64),
    }
}

pub(crate) fn secs(ms: u64) -> String {
    if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

pub(crate) fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", thousands(n))
    }
}

/// `3400` as `3,400`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The first line of `text`, cut to `max` characters, for a one-line display.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("").trim();
    let mut out: String = first.chars().take(max).collect();
    if first.chars().count() > max || text.trim().lines().count() > 1 {
        out.push('…');
    }
    out
}

/// The agent's checklist in one line: how much is done and what is under way.
fn todo_line(data: &serde_json::Value) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind) -> Event {
        Event {
            seq: 0,
            ts: String::new(),
            run_id: "r".to_string(),
            agent: None,
            kind,
        }
    }

    #[test]
    fn the_bars_leave_the_plan_outcomes_and_checks_behind() {
        let mut bars = ProgressBars::with_draw_target(ProgressDrawTarget::hidden());
        let step = |title: &str| PlanStep {
            title: title.to_string(),
            expected_outcome: String::new(),
        };
        let events = [
            EventKind::PlanCreated {
                steps: vec![step("Read"), step("Fix"), step("Test")],
            },
            EventKind::StepCompleted {
                index: 0,
                title: "Read".into(),
                summary: "found it".into(),
                status: crate::event::StepStatus::Done,
            },
            EventKind::StepCompleted {
                index: 1,
                title: "Fix".into(),
                summary: "cannot edit".into(),
                status: crate::event::StepStatus::Failed,
            },
            EventKind::CheckCompleted(CheckCompleted {
                name: "tests".into(),
                command: "cargo test".into(),
                outcome: CheckOutcome::Failed,
                exit_code: Some(101),
                duration_ms: 1500,
                output: "boom".into(),
                sandbox: "workspace-write".into(),
            }),
        ];
        for kind in events {
            bars.on_event(&event(kind)).unwrap();
        }
        assert_eq!(
            bars.final_picture(),
            [
                "plan: 3 steps",
                "  1. Read — done: found it",
                "  2. Fix — failed: cannot edit",
                "  3. Test — not finished",
                "check \"tests\": failed: exit code 101 (1.5s)",
            ]
        );
    }

    #[test]
    fn numbers_read_like_a_person_wrote_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(3400), "3,400");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(secs(1234), "1.2s");
        assert_eq!(secs(125_000), "2m05s");
        assert_eq!(plural(1, "turn"), "1 turn");
        assert_eq!(plural(12, "tool call"), "12 tool calls");
    }

    #[test]
    fn streamed_text_shows_the_tail_of_its_last_line() {
        let mut bars = ProgressBars::with_draw_target(ProgressDrawTarget::hidden());
        bars.on_partial_text("model-1", "First line.\nSecond ");
        bars.on_partial_text("model-1", "line grows");
        assert_eq!(bars.streaming, "Second line grows");
        bars.on_partial_text("model-1", &"x".repeat(200));
        assert_eq!(bars.streaming.chars().count(), STREAM_TAIL_CHARS);
    }

    #[test]
    fn long_and_multiline_text_is_cut_to_one_line() {
        assert_eq!(one_line("short", 10), "short");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("first\nsecond", 80), "first…");
        assert_eq!(one_line("", 5), "");
    }
}
