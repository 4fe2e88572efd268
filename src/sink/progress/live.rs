//! What the live terminal view shows, as lines: the plan with each step's
//! state, the current step's recent tool calls, the checks as they finish
//! and the spend so far against the budget; and, when the run ends, the
//! final picture (plan, checks with a failed check's last output lines,
//! totals). [`LiveView`] only keeps the state the events describe and turns
//! it into painted lines; [`super::ProgressBars`] decides when they are
//! drawn, and the elapsed time and spinner are the bar's own.
//!
//! Every piece of text that came from the run is made inert before it is
//! painted, so the only escape sequences in a line are the palette's.

use serde_json::Value;

use super::lines::{check_lines, describe_call, run_line};
use super::paint::{Palette, Tone};
use super::text::{one_line, plural, secs, thousands};
use crate::event::{
    BudgetInEffect, CheckCompleted, CheckOutcome, Event, EventKind, RunCompleted, RunStatus,
    StepStatus,
};

/// How many of the current step's calls the view shows (the latest ones).
const RECENT_CALLS: usize = 5;
/// How wide a title, summary or call may be on screen; a line that wraps
/// would break the redraw.
const TITLE_CHARS: usize = 60;
const SUMMARY_CHARS: usize = 60;
/// How many steps of a long plan the live view shows at once.
const SHOWN_STEPS: usize = 10;
/// How many of a failed check's last output lines the final picture keeps:
/// enough for a test runner's verdict, few enough to keep the plan on
/// screen (the trace and JUnit have all of it).
const CHECK_TAIL_LINES: usize = 10;

#[derive(Clone, Debug, PartialEq)]
enum StepState {
    Pending,
    Running,
    Finished(StepStatus, String),
}

#[derive(Clone, Debug)]
struct Step {
    title: String,
    state: StepState,
}

#[derive(Clone, Debug, PartialEq)]
enum CallState {
    Running,
    Ok,
    Failed(String),
    Denied,
}

#[derive(Clone, Debug)]
struct Call {
    id: String,
    what: String,
    state: CallState,
}

/// The state of a run as the live view shows it.
#[derive(Default)]
pub(super) struct LiveView {
    header: String,
    budget: Option<BudgetInEffect>,
    planned: bool,
    steps: Vec<Step>,
    /// The calls of the current step (or of planning), the latest last.
    calls: Vec<Call>,
    checks: Vec<CheckCompleted>,
    checking: bool,
    turns: u32,
    tokens: u64,
    cost: Option<f64>,
}

impl LiveView {
    /// Take in what `event` says; true when the view changed.
    pub(super) fn on_event(&mut self, event: &Event) -> bool {
        // A sub-agent's call ids are its model's, and may repeat the parent's.
        let scoped = |id: &str| match &event.agent {
            Some(agent) => format!("{}/{id}", agent.id),
            None => id.to_string(),
        };
        match &event.kind {
            EventKind::RunStarted(run) => {
                self.header = format!(
                    "run {} · {}:{}",
                    run.job_name, run.model.provider, run.model.name
                );
                self.budget = run.budget.as_deref().cloned();
            }
            EventKind::PlanCreated { steps } => {
                self.planned = true;
                self.steps = steps.iter().map(|s| pending(&s.title)).collect();
                self.calls.clear();
            }
            EventKind::PlanUpdated { steps, from_index } => {
                self.steps.truncate(*from_index);
                self.steps
                    .extend(steps.iter().skip(*from_index).map(|s| pending(&s.title)));
            }
            EventKind::StepStarted { index, .. } => {
                if let Some(step) = self.steps.get_mut(*index) {
                    step.state = StepState::Running;
                }
                self.calls.clear();
            }
            EventKind::StepCompleted {
                index,
                summary,
                status,
                ..
            } => {
                if let Some(step) = self.steps.get_mut(*index) {
                    step.state = StepState::Finished(*status, summary.clone());
                }
            }
            EventKind::ToolCall {
                call_id,
                tool,
                arguments,
            } => self.called(scoped(call_id), tool, arguments),
            EventKind::PermissionDecision {
                call_id,
                decision: crate::event::Decision::Deny,
                ..
            } => self.call_ended(&scoped(call_id), CallState::Denied),
            EventKind::ToolResult(result) => {
                let state = match (&result.ok, &result.error_code) {
                    (true, _) => CallState::Ok,
                    (false, Some(code)) => CallState::Failed(code.to_string()),
                    (false, None) => CallState::Failed("error".to_string()),
                };
                self.call_ended(&scoped(&result.call_id), state);
            }
            EventKind::ModelRequest(_) if event.agent.is_none() => self.turns += 1,
            EventKind::ModelResponse(response) => {
                self.tokens += response.usage.input_tokens + response.usage.output_tokens;
                if let Some(cost) = response.cost_usd {
                    self.cost = Some(self.cost.unwrap_or(0.0) + cost);
                }
            }
            EventKind::CheckCompleted(check) => {
                self.checking = true;
                self.checks.push(check.clone());
            }
            _ => return false,
        }
        true
    }

    fn called(&mut self, id: String, tool: &str, arguments: &Value) {
        self.calls.push(Call {
            id,
            what: crate::inert::line(&describe_call(tool, arguments)),
            state: CallState::Running,
        });
        let extra = self.calls.len().saturating_sub(RECENT_CALLS);
        self.calls.drain(..extra);
    }

    fn call_ended(&mut self, id: &str, state: CallState) {
        // A denied call's result keeps the denial on screen.
        if let Some(call) = self
            .calls
            .iter_mut()
            .find(|c| c.id == id && c.state != CallState::Denied)
        {
            call.state = state;
        }
    }

    /// The lines drawn above the status line while the run goes on.
    pub(super) fn live_lines(&self, p: Palette) -> Vec<String> {
        let mut lines = vec![p.paint(Tone::Bold, &crate::inert::line(&self.header))];
        if !self.planned {
            lines.push(format!("  {}", p.paint(Tone::Active, "planning")));
            lines.extend(self.call_lines(p));
        }
        let shown = self.shown_steps();
        if shown.start > 0 {
            let hidden = format!("  … {} earlier", plural(shown.start as u64, "step"));
            lines.push(p.paint(Tone::Dim, &hidden));
        }
        for (i, step) in self
            .steps
            .iter()
            .enumerate()
            .take(shown.end)
            .skip(shown.start)
        {
            lines.push(step_line(i, step, p, SUMMARY_CHARS));
            if step.state == StepState::Running {
                lines.extend(self.call_lines(p));
            }
        }
        if shown.end < self.steps.len() {
            let more = self.steps.len() - shown.end;
            lines.push(p.paint(
                Tone::Dim,
                &format!("  … {} to come", plural(more as u64, "step")),
            ));
        }
        for check in &self.checks {
            lines.push(check_line(check, p));
        }
        lines
    }

    /// The steps the live view has room for: all of a short plan; of a
    /// long one, a window from just before the current step, so the view
    /// stays shorter than a terminal (a taller one cannot be redrawn).
    fn shown_steps(&self) -> std::ops::Range<usize> {
        let len = self.steps.len();
        if len <= SHOWN_STEPS {
            return 0..len;
        }
        let current = self
            .steps
            .iter()
            .position(|s| s.state == StepState::Running)
            .or_else(|| {
                self.steps
                    .iter()
                    .position(|s| !matches!(s.state, StepState::Finished(..)))
            })
            .unwrap_or(len);
        let start = current.saturating_sub(2).min(len - SHOWN_STEPS);
        start..start + SHOWN_STEPS
    }

    fn call_lines(&self, p: Palette) -> Vec<String> {
        self.calls
            .iter()
            .map(|call| {
                let what = one_line(&call.what, TITLE_CHARS + 10);
                let line = match &call.state {
                    CallState::Running => format!("{} …", p.paint(Tone::Active, &what)),
                    CallState::Ok => p.paint(Tone::Dim, &format!("{what} ok")),
                    CallState::Failed(code) => {
                        format!("{what} {}", p.paint(Tone::Bad, &crate::inert::line(code)))
                    }
                    CallState::Denied => format!("{what} {}", p.paint(Tone::Warn, "denied")),
                };
                format!("      {line}")
            })
            .collect()
    }

    /// The status line beside the spinner and elapsed time: the phase, the
    /// turns and the spend against the budget.
    pub(super) fn status(&self) -> String {
        let budget = self.budget.as_ref();
        let mut parts = Vec::new();
        if let Some(timeout) = budget.and_then(|b| b.timeout_secs) {
            parts.push(format!("of {}", secs((timeout * 1000.0) as u64)));
        }
        let phase = if self.checking {
            "checks".to_string()
        } else {
            match self
                .steps
                .iter()
                .position(|s| s.state == StepState::Running)
            {
                Some(i) => format!("step {}/{}", i + 1, self.steps.len()),
                None if !self.planned => "planning".to_string(),
                None => "working".to_string(),
            }
        };
        parts.push(phase);
        parts.push(match budget {
            Some(b) => format!("turn {} of {}", self.turns, b.max_turns),
            None => format!("turn {}", self.turns),
        });
        parts.push(match budget.and_then(|b| b.max_tokens) {
            Some(max) => format!("{} of {} tokens", thousands(self.tokens), thousands(max)),
            None => format!("{} tokens", thousands(self.tokens)),
        });
        let max_cost = budget.and_then(|b| b.max_cost_usd);
        match (self.cost, max_cost) {
            (Some(cost), Some(max)) => parts.push(format!("${cost:.4} of ${max:.2}")),
            (Some(cost), None) => parts.push(format!("${cost:.4}")),
            (None, Some(max)) => parts.push(format!("cost unknown (budget ${max:.2})")),
            (None, None) => {}
        }
        parts.join(" · ")
    }

    /// What stays on screen when the run is over: the plan with each
    /// step's outcome, the checks (a failed one with its output's last
    /// lines), and the totals.
    pub(super) fn final_lines(&self, done: &RunCompleted, p: Palette) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.header.is_empty() {
            lines.push(p.paint(Tone::Bold, &crate::inert::line(&self.header)));
        }
        if !self.steps.is_empty() {
            lines.push(p.paint(
                Tone::Bold,
                &format!("plan: {}", plural(self.steps.len() as u64, "step")),
            ));
        }
        for (i, step) in self.steps.iter().enumerate() {
            lines.push(step_line(i, step, p, 120));
        }
        for check in &self.checks {
            let output = check_lines(check);
            lines.push(check_line(check, p));
            let tail = output.len().saturating_sub(CHECK_TAIL_LINES).max(1);
            lines.extend(
                output
                    .iter()
                    .skip(tail)
                    .map(|l| p.paint(Tone::Dim, &crate::inert::line(l))),
            );
        }
        let tone = if done.status == RunStatus::Passed {
            Tone::Good
        } else {
            Tone::Bad
        };
        lines.push(p.paint(tone, &run_line(done)));
        if done.status != RunStatus::Passed {
            lines.push(format!("  reason: {}", crate::inert::line(&done.reason)));
        }
        lines
    }
}

fn pending(title: &str) -> Step {
    Step {
        title: title.to_string(),
        state: StepState::Pending,
    }
}

/// `  ✓ 1. Read the code — done: found it`, the mark and outcome in colour.
fn step_line(i: usize, step: &Step, p: Palette, summary_chars: usize) -> String {
    let title = one_line(&step.title, TITLE_CHARS);
    let number = i + 1;
    match &step.state {
        StepState::Pending => p.paint(Tone::Dim, &format!("  · {number}. {title}")),
        StepState::Running => format!(
            "  {} {number}. {}",
            p.paint(Tone::Active, "▸"),
            p.paint(Tone::Bold, &title)
        ),
        StepState::Finished(status, summary) => {
            let (mark, tone) = match status {
                StepStatus::Done => ("✓", Tone::Good),
                StepStatus::Failed => ("✗", Tone::Bad),
                StepStatus::Blocked => ("!", Tone::Warn),
            };
            format!(
                "  {} {number}. {title} — {}: {}",
                p.paint(tone, mark),
                p.paint(tone, status.as_str()),
                one_line(summary, summary_chars)
            )
        }
    }
}

/// A check's first line, its outcome in colour.
fn check_line(check: &CheckCompleted, p: Palette) -> String {
    let tone = match check.outcome {
        CheckOutcome::Passed => Tone::Good,
        CheckOutcome::Failed | CheckOutcome::TimedOut => Tone::Bad,
        CheckOutcome::Skipped => Tone::Warn,
    };
    let first = check_lines(check).into_iter().next().unwrap_or_default();
    p.paint(tone, &crate::inert::line(&first))
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
