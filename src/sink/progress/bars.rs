//! The live progress bar on a terminal's stderr: the plan's steps as a bar,
//! the current step and tool (or the tail of the streaming answer) as its
//! message, and, when the bar goes, the plan's outcomes and the checks left
//! on screen. Everything it draws is made inert first ([`crate::inert`]).
//! The plain log for everything that is not a terminal is in the parent
//! module.

use std::collections::HashMap;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::PREFIX;
use super::lines::{
    CallBook, check_lines, compacted_line, describe_call, git_line, retry_line, run_line, step_of,
    todo_line, trim_line,
};
use super::text::{one_line, plural};
use crate::event::{Decision, Event, EventKind, RunCompleted, RunStatus};
use crate::sink::bus::{EventSink, SinkError};

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
        self.bar.set_message(crate::inert::line(&message));
    }

    /// Print `line` above the bar, made inert: it can hold the model's words.
    fn print(&self, line: String) {
        self.bar.println(crate::inert::terminal(&line));
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

    /// The plan's events: the bar's length and position, the current step.
    fn on_plan_event(&mut self, kind: &EventKind) {
        match kind {
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
            _ => {}
        }
    }

    /// The tool calls' events: the call shown beside the bar, denials and
    /// the `todo` checklist printed above it.
    fn on_tool_event(&mut self, kind: &EventKind) {
        match kind {
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
                self.print(format!("{PREFIX}   denied {call} (rule: {rule})"));
            }
            EventKind::ToolResult(result) => {
                self.calls.finished(&result.call_id, &result.tool);
                if result.ok
                    && result.tool == "todo"
                    && let Some(line) = todo_line(&result.data)
                {
                    self.print(format!("{PREFIX}{line}"));
                }
                self.tool = None;
                self.refresh_message();
            }
            _ => {}
        }
    }

    /// The run ended: the bar gives way to the plan, the checks and the totals.
    fn on_run_completed(&mut self, done: &RunCompleted) {
        // The bar's lines vanish with it; the picture a reader wants
        // afterwards is what the plain log shows: plan, checks, totals.
        for line in self.final_picture() {
            self.print(format!("{PREFIX} {line}"));
        }
        self.bar.set_style(style("{msg}"));
        let mut message = format!("{PREFIX} {}", run_line(done));
        if done.status != RunStatus::Passed {
            message.push_str(&format!("\n{PREFIX}   reason: {}", done.reason));
        }
        self.bar
            .finish_with_message(crate::inert::terminal(&message));
    }
}

impl EventSink for ProgressBars {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        match &event.kind {
            EventKind::RunStarted(run) => {
                self.print(format!("{PREFIX} run {}", run.job_name));
                self.refresh_message();
            }
            EventKind::Warning { source, message } => {
                self.print(format!("{PREFIX} warning: {source}: {message}"));
            }
            EventKind::PlanCreated { .. }
            | EventKind::PlanUpdated { .. }
            | EventKind::StepStarted { .. }
            | EventKind::StepCompleted { .. } => self.on_plan_event(&event.kind),
            EventKind::ToolCall { .. }
            | EventKind::PermissionDecision { .. }
            | EventKind::ToolResult(_) => self.on_tool_event(&event.kind),
            EventKind::BudgetExceeded { limit, .. } => {
                self.print(format!("{PREFIX} budget exceeded: {}", limit.key()));
            }
            EventKind::ModelRequest(_) | EventKind::ModelResponse(_) => {
                self.streaming.clear();
                self.refresh_message();
            }
            EventKind::ModelRetry(retry) => {
                // The answer starts over; what streamed so far is not part of it.
                self.streaming.clear();
                self.refresh_message();
                self.print(format!("{PREFIX} {}", retry_line(retry)));
            }
            EventKind::ContextTrimmed(trim) => {
                self.print(format!("{PREFIX} {}", trim_line(trim)));
            }
            EventKind::ContextCompacted(c) => {
                self.print(format!("{PREFIX} {}", compacted_line(c)));
            }
            EventKind::McpStartup(startup) => {
                let line = crate::sink::describe_mcp_startup(startup);
                self.print(format!("{PREFIX} {line}"));
            }
            EventKind::CheckCompleted(check) => {
                self.step = Some(format!("check \"{}\"", check.name));
                self.refresh_message();
                let lines = check_lines(check);
                if let Some(first) = lines.first() {
                    self.print(format!("{PREFIX} {first}"));
                    self.check_results.push(first.clone());
                }
            }
            EventKind::RunCompleted(done) => self.on_run_completed(done),
            EventKind::GitPatch(_) | EventKind::GitCommit { .. } | EventKind::GitPush { .. } => {
                if let Some(line) = git_line(&event.kind) {
                    self.print(format!("{PREFIX} {line}"));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{CheckCompleted, CheckOutcome, PlanStep};

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
    fn streamed_text_shows_the_tail_of_its_last_line() {
        let mut bars = ProgressBars::with_draw_target(ProgressDrawTarget::hidden());
        bars.on_partial_text("model-1", "First line.\nSecond ");
        bars.on_partial_text("model-1", "line grows");
        assert_eq!(bars.streaming, "Second line grows");
        bars.on_partial_text("model-1", &"x".repeat(200));
        assert_eq!(bars.streaming.chars().count(), STREAM_TAIL_CHARS);
    }

    // Regression (issue 20): the streamed answer went to the terminal as
    // it came, escape sequences (a clipboard write, clear screen) included.
    #[test]
    fn streamed_text_reaches_the_terminal_inert() {
        let mut bars = ProgressBars::with_draw_target(ProgressDrawTarget::hidden());
        bars.on_partial_text(
            "model-1",
            "Done\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}[2J\r::error::x",
        );
        let message = bars.bar.message();
        assert_eq!(message, "planning · Done\\r::error::x");
    }
}
