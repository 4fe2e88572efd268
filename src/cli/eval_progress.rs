//! Progress of an evaluation on stderr: one bar for the whole run on a
//! terminal, one plain line per finished attempt otherwise. The runs of the
//! attempts get no progress display of their own; this is the only one.

use std::io::Write;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::eval::EvalObserver;
use crate::eval::results::{AttemptResult, Outcome, Reuse};

const PREFIX: &str = "[agentci]";

fn line(suite: &str, case: &str, result: &AttemptResult) -> String {
    let mut text = format!(
        "{PREFIX} {suite}/{case} #{}: {} ({:.1}s)",
        result.attempt,
        result.outcome.as_str(),
        result.duration_ms as f64 / 1000.0
    );
    if result.outcome != Outcome::Passed {
        text.push_str(" — ");
        text.push_str(&result.reason);
    }
    // The reason can quote the model or a check: one inert line.
    crate::inert::line(&text)
}

/// One line per reason attempts finished before run again; the reason can
/// name a file, so each is one inert line.
fn rerun_lines(reuse: &Reuse) -> impl Iterator<Item = String> + '_ {
    reuse.rerun.iter().map(|rerun| {
        crate::inert::line(&format!(
            "{PREFIX} eval: {} re-run: {}",
            rerun.attempts, rerun.why
        ))
    })
}

pub struct PlainProgress;

impl EvalObserver for PlainProgress {
    fn planned(&self, reuse: &Reuse) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "{PREFIX} eval: {} attempts to run, {} kept from before",
            reuse.ran, reuse.kept
        );
        for line in rerun_lines(reuse) {
            let _ = writeln!(err, "{line}");
        }
    }

    fn started(&self, _suite: &str, _case: &str, _attempt: u32) {}

    fn finished(&self, suite: &str, case: &str, result: &AttemptResult) {
        let _ = writeln!(std::io::stderr().lock(), "{}", line(suite, case, result));
    }
}

pub struct NoProgress;

impl EvalObserver for NoProgress {
    fn planned(&self, _reuse: &Reuse) {}
    fn started(&self, _suite: &str, _case: &str, _attempt: u32) {}
    fn finished(&self, _suite: &str, _case: &str, _result: &AttemptResult) {}
}

/// One bar over every attempt of the run; attempts that did not pass are
/// printed above it.
pub struct SuiteBar {
    bar: ProgressBar,
}

impl SuiteBar {
    /// `palette` off (`NO_COLOR`, `CLICOLOR=0`): the same bar without colour.
    pub fn new(palette: crate::sink::Palette) -> SuiteBar {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        let template = if palette.is_on() {
            "{spinner:.cyan} [{elapsed}] {bar:24.cyan/blue} {pos}/{len} {wide_msg}"
        } else {
            "{spinner} [{elapsed}] {bar:24} {pos}/{len} {wide_msg}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        SuiteBar { bar }
    }
}

impl EvalObserver for SuiteBar {
    fn planned(&self, reuse: &Reuse) {
        self.bar.set_length(reuse.ran as u64);
        if reuse.kept > 0 {
            self.bar.println(format!(
                "{PREFIX} eval: {} attempts kept from before",
                reuse.kept
            ));
        }
        for line in rerun_lines(reuse) {
            self.bar.println(line);
        }
    }

    fn started(&self, suite: &str, case: &str, attempt: u32) {
        self.bar
            .set_message(crate::inert::line(&format!("{suite}/{case} #{attempt}")));
    }

    fn finished(&self, suite: &str, case: &str, result: &AttemptResult) {
        if result.outcome != Outcome::Passed {
            self.bar.println(line(suite, case, result));
        }
        self.bar.inc(1);
        if self.bar.position() >= self.bar.length().unwrap_or(0) {
            self.bar.finish_and_clear();
        }
    }
}
