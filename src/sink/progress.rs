//! What a person watching a run sees: [`PlainLog`] writes one line per
//! meaningful event (CI logs, pipes, anything that is not a terminal) and
//! [`ProgressBars`] draws a live bar on a terminal's stderr.
//!
//! Both only describe the events they are given; neither decides anything
//! about the run. They tolerate any order of events (a step without a plan, a
//! result without its call) because a display must never be the thing that
//! breaks a run. The GitHub step summary and annotations are not here.
//!
//! This module holds the plain log itself; what each event reads as is in
//! [`lines`], the terminal bar in [`bars`], and the number and text
//! shortening every display shares in [`text`]. Every line is made inert
//! ([`crate::inert`]) on its way out.

mod bars;
mod lines;
mod live;
mod paint;
mod text;

use std::io::Write;

use crate::event::bus::{EventSink, SinkError};
use crate::event::{Event, EventKind};

pub use bars::ProgressBars;
pub(super) use lines::LogLines;
pub(crate) use lines::{budget_amount, describe_call};
pub use paint::Palette;
pub(crate) use paint::Tone;
pub(crate) use text::{one_line, plural, secs, thousands};

pub(super) const PREFIX: &str = "[agentci]";

/// Append `line` and a newline to a log's `text`, made inert: escape
/// sequences gone, a lone `\r` and other controls written out, and each
/// line break inside it (a value of several lines) continued on a line
/// that starts with the prefix too. So nothing from the run starts a line
/// of the log, where a reader (the GitHub runner) could take it for a
/// command.
pub(super) fn push_log_line(text: &mut String, line: &str) {
    for (i, piece) in crate::inert::terminal(line).split('\n').enumerate() {
        if i > 0 {
            text.push_str(PREFIX);
            text.push(' ');
        }
        text.push_str(piece);
        text.push('\n');
    }
}

/// `text` (inert log lines) painted: the prefixes dim, the first line in `tone`.
fn paint_log(text: &str, palette: Palette, tone: Option<Tone>) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let rest = line.strip_prefix(PREFIX).unwrap_or(line);
        let rest = match (i, tone) {
            (0, Some(tone)) => format!(" {}", palette.paint(tone, rest.trim_start())),
            _ => rest.to_string(),
        };
        out.push_str(&palette.paint(Tone::Dim, PREFIX));
        out.push_str(&rest);
        out.push('\n');
    }
    out
}

/// One line per meaningful event, for logs.
pub struct PlainLog {
    out: Box<dyn Write + Send>,
    /// Set after the first failed write: a closed log is reported once, not per event.
    broken: bool,
    lines: LogLines,
    /// Off unless colour was forced (`CLICOLOR_FORCE`): a log is rarely a terminal.
    palette: Palette,
}

impl PlainLog {
    pub fn new(out: Box<dyn Write + Send>) -> PlainLog {
        PlainLog {
            out,
            broken: false,
            lines: LogLines::default(),
            palette: Palette::default(),
        }
    }

    /// Paint each event's first line by what it says (passed, failed, a warning).
    pub fn with_palette(mut self, palette: Palette) -> PlainLog {
        self.palette = palette;
        self
    }
}

/// The colour of an event's first line in the log: outcomes and warnings
/// stand out, everything else is left as it is.
fn tone(kind: &EventKind) -> Option<Tone> {
    use crate::event::{CheckOutcome, Decision, RunStatus, StepStatus};
    match kind {
        EventKind::CheckCompleted(check) => Some(match check.outcome {
            CheckOutcome::Passed => Tone::Good,
            CheckOutcome::Skipped => Tone::Warn,
            CheckOutcome::Failed | CheckOutcome::TimedOut => Tone::Bad,
        }),
        EventKind::StepCompleted { status, .. } => Some(match status {
            StepStatus::Done => Tone::Good,
            StepStatus::Failed => Tone::Bad,
            StepStatus::Blocked => Tone::Warn,
        }),
        EventKind::RunCompleted(done) if done.status == RunStatus::Passed => Some(Tone::Good),
        EventKind::RunCompleted(_) | EventKind::BudgetExceeded { .. } => Some(Tone::Bad),
        EventKind::Warning { .. }
        | EventKind::ModelRetry(_)
        | EventKind::PermissionDecision {
            decision: Decision::Deny,
            ..
        } => Some(Tone::Warn),
        EventKind::PlanCreated { .. } | EventKind::StepStarted { .. } => Some(Tone::Bold),
        _ => None,
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
            push_log_line(&mut text, &format!("{PREFIX} {line}"));
        }
        if self.palette.is_on() {
            text = paint_log(&text, self.palette, tone(&event.kind));
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
