//! The live view on a terminal's stderr: the run's state ([`super::live`]:
//! plan, current step's calls, checks) redrawn above a status line with a
//! spinner, the elapsed time and the spend against the budget; warnings,
//! denials and retries printed above it as they happen; and, when the run
//! ends, the final picture left on screen in its place. Text from the run
//! is made inert ([`crate::inert`]) before the palette paints it. The plain
//! log for everything that is not a terminal is in the parent module.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::PREFIX;
use super::lines::{CallBook, compacted_line, git_line, retry_line, todo_line, trim_line};
use super::live::LiveView;
use super::paint::{Palette, Tone};
use crate::event::bus::{EventSink, SinkError};
use crate::event::{Decision, Event, EventKind, RunCompleted};

/// The live view on stderr for a terminal: the run's state (`LiveView`)
/// above a status line with a spinner, the elapsed time and the spend.
pub struct ProgressBars {
    bar: ProgressBar,
    calls: CallBook,
    view: LiveView,
    palette: Palette,
    /// The tail of the model's answer as it streams in.
    streaming: String,
}

/// How much of a streaming answer the bar shows.
const STREAM_TAIL_CHARS: usize = 80;

/// The view above, then the spinner, the elapsed time and the status.
/// No colour specs: the palette paints, so `NO_COLOR` and `CLICOLOR_FORCE`
/// are decided in one place.
const TEMPLATE: &str = "{prefix}\n{spinner} {elapsed} {wide_msg}";

impl Default for ProgressBars {
    fn default() -> Self {
        Self::new(Palette::new(true))
    }
}

impl ProgressBars {
    pub fn new(palette: Palette) -> ProgressBars {
        Self::with_draw_target(ProgressDrawTarget::stderr(), palette)
    }

    /// For tests and embedding: draw somewhere other than stderr (or nowhere).
    pub fn with_draw_target(target: ProgressDrawTarget, palette: Palette) -> ProgressBars {
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(style(TEMPLATE));
        bar.enable_steady_tick(Duration::from_millis(120));
        let bars = ProgressBars {
            bar,
            calls: CallBook::default(),
            view: LiveView::default(),
            palette,
            streaming: String::new(),
        };
        bars.redraw();
        bars
    }

    fn redraw(&self) {
        self.bar
            .set_prefix(self.view.live_lines(self.palette).join("\n"));
        let mut message = self.view.status();
        if !self.streaming.is_empty() {
            message.push_str(" · ");
            message.push_str(&crate::inert::line(&self.streaming));
        }
        self.bar.set_message(message);
    }

    /// Print `line` above the view, made inert: it can hold the model's
    /// words. The prefix is painted after, so its colour survives.
    fn print(&self, tone: Option<Tone>, line: &str) {
        let text = crate::inert::terminal(line);
        let text = match tone {
            Some(tone) => self.palette.paint(tone, &text),
            None => text,
        };
        self.bar
            .println(format!("{} {text}", self.palette.paint(Tone::Dim, PREFIX)));
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

    /// Denials and the `todo` checklist, printed above the view.
    fn on_tool_event(&mut self, kind: &EventKind) {
        match kind {
            EventKind::ToolCall {
                call_id,
                tool,
                arguments,
            } => self.calls.called(call_id, tool, arguments),
            EventKind::PermissionDecision {
                call_id,
                tool,
                decision: Decision::Deny,
                rule,
                ..
            } => {
                let call = self.calls.denied(call_id, tool);
                self.print(Some(Tone::Warn), &format!("  denied {call} (rule: {rule})"));
            }
            EventKind::ToolResult(result) => {
                self.calls.finished(&result.call_id, &result.tool);
                if result.ok
                    && result.tool == "todo"
                    && let Some(line) = todo_line(&result.data)
                {
                    self.print(None, &line);
                }
            }
            _ => {}
        }
    }

    /// The run ended: the view gives way to the final picture (plan,
    /// checks, totals), which stays on screen.
    fn on_run_completed(&mut self, done: &RunCompleted) {
        let prefix = self.palette.paint(Tone::Dim, PREFIX);
        let picture: Vec<String> = self
            .view
            .final_lines(done, self.palette)
            .into_iter()
            .map(|line| format!("{prefix} {line}"))
            .collect();
        self.bar.set_style(style("{msg}"));
        self.bar.finish_with_message(picture.join("\n"));
    }
}

impl EventSink for ProgressBars {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        if self.view.on_event(event) {
            self.redraw();
        }
        match &event.kind {
            EventKind::Warning { source, message } => {
                self.print(Some(Tone::Warn), &format!("warning: {source}: {message}"));
            }
            EventKind::ToolCall { .. }
            | EventKind::PermissionDecision { .. }
            | EventKind::ToolResult(_) => self.on_tool_event(&event.kind),
            EventKind::BudgetExceeded { limit, .. } => {
                self.print(
                    Some(Tone::Bad),
                    &format!("budget exceeded: {}", limit.key()),
                );
            }
            EventKind::ModelRequest(_) | EventKind::ModelResponse(_) => {
                self.streaming.clear();
                self.redraw();
            }
            EventKind::ModelRetry(retry) => {
                // The answer starts over; what streamed so far is not part of it.
                self.streaming.clear();
                self.redraw();
                self.print(Some(Tone::Warn), &retry_line(retry));
            }
            EventKind::ContextTrimmed(trim) => self.print(None, &trim_line(trim)),
            EventKind::ContextCompacted(c) => self.print(None, &compacted_line(c)),
            EventKind::McpStartup(startup) => {
                self.print(None, &crate::sink::describe_mcp_startup(startup));
            }
            EventKind::RunCompleted(done) => self.on_run_completed(done),
            EventKind::GitPatch(_) | EventKind::GitCommit { .. } | EventKind::GitPush { .. } => {
                if let Some(line) = git_line(&event.kind) {
                    self.print(None, &line);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn on_partial_text(&mut self, _call_id: &str, delta: &str) {
        self.stream_text(delta);
        self.redraw();
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

fn style(template: &str) -> ProgressStyle {
    // The templates are constants; falling back keeps a typo from being a panic.
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_text_shows_the_tail_of_its_last_line() {
        let mut bars =
            ProgressBars::with_draw_target(ProgressDrawTarget::hidden(), Palette::new(false));
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
        let mut bars =
            ProgressBars::with_draw_target(ProgressDrawTarget::hidden(), Palette::new(false));
        bars.on_partial_text(
            "model-1",
            "Done\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}[2J\r::error::x",
        );
        let message = bars.bar.message();
        assert_eq!(message, "planning · turn 0 · 0 tokens · Done\\r::error::x");
    }
}
