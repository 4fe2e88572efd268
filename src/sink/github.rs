//! GitHub Actions: what a run looks like in a workflow's log, annotations,
//! step summary and step outputs.
//!
//! [`GithubActions`] replaces the progress display when `GITHUB_ACTIONS=true`:
//! the log lines of [`PlainLog`](super::PlainLog) with the planning phase and
//! each plan step folded into `::group::` blocks; failed checks and run
//! errors as `::error file=…,line=…::` annotations; warnings, and a
//! degraded sandbox with how to get the full one in a workflow
//! ([`degraded`]), as `::warning` annotations; a Markdown summary
//! appended to `$GITHUB_STEP_SUMMARY`; and `status`, `exit-code`, `trace`,
//! `junit`, `patch` and `cost-usd` appended to `$GITHUB_OUTPUT`.
//!
//! It only renders events: the CLI reads the environment and passes the
//! paths in a [`GithubConfig`]. Secrets are already masked by the event bus.
//! Every log line starts with `[agentci]` and is made inert (a lone `\r`,
//! which the runner also splits lines on, is written out), and values in
//! workflow commands are escaped, so nothing the model or a check prints
//! can start a line with `::` and pass for a workflow command.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::Value;

use super::progress::{LogLines, PREFIX, one_line, push_log_line};
use crate::event::bus::{EventSink, SinkError};
use crate::event::{
    CheckCompleted, CheckOutcome, Event, EventKind, Phase, PlanStep, RunCompleted, RunResumed,
    RunStarted, RunStatus, StepStatus,
};

/// Where a run under GitHub Actions writes; built by the CLI from the environment.
pub struct GithubConfig {
    /// The grouped log with workflow commands (stderr); `None`: no log.
    pub log: Option<Box<dyn Write + Send>>,
    /// `$GITHUB_STEP_SUMMARY`: the Markdown summary is appended here.
    pub step_summary: Option<PathBuf>,
    /// `$GITHUB_OUTPUT`: the step outputs are appended here.
    pub output: Option<PathBuf>,
    /// The directory relative paths in events are relative to (the current directory).
    pub cwd: PathBuf,
    /// `$GITHUB_WORKSPACE`, the checkout annotations' paths are relative to.
    pub repo_root: Option<PathBuf>,
}

/// The GitHub Actions sink.
pub struct GithubActions {
    config: GithubConfig,
    lines: LogLines,
    /// Set after the first failed log write: reported once, not per event.
    broken: bool,
    group_open: bool,
    report: SummaryFacts,
    /// The job file's text, to point annotations at the right line.
    job_text: String,
    written: bool,
}

mod commands;
mod degraded;
mod outputs;
mod start_failure;
mod summary;

pub use commands::{annotation, escape_data, escape_property};
pub use outputs::output_line;
use outputs::outputs_text;
pub use start_failure::{problem_annotation, report_start_failure};
use summary::summary_markdown;

/// The facts the step summary and the step outputs are made of, collected
/// from the events (not `runner::RunReport`, which is where a run wrote its files).
#[derive(Default)]
pub(crate) struct SummaryFacts {
    started: Option<RunStarted>,
    plan: Vec<PlanStep>,
    step_started: BTreeSet<usize>,
    step_summaries: BTreeMap<usize, (String, StepStatus)>,
    checks: Vec<CheckCompleted>,
    /// Paths of successful `write` and `edit` calls, relative to the workspace.
    changed_files: BTreeSet<String>,
    /// The agent's `todo` list as its last successful call left it.
    todo: Option<Value>,
    completed: Option<RunCompleted>,
    /// Each time `agentci run --resume` went on with the run.
    resumed: Vec<RunResumed>,
    /// The events end without `run.completed` (a trace read back from a
    /// run that was killed), rather than a run that is still writing them.
    cut_short: bool,
}

impl SummaryFacts {
    /// Take in what `event` adds to the report; every other event is ignored.
    fn record(&mut self, event: &Event) {
        match &event.kind {
            EventKind::RunStarted(run) => self.started = Some(run.clone()),
            EventKind::PlanCreated { steps } | EventKind::PlanUpdated { steps, .. } => {
                self.plan = steps.clone();
            }
            EventKind::StepStarted { index, .. } => {
                self.step_started.insert(*index);
            }
            EventKind::StepCompleted {
                index,
                summary,
                status,
                ..
            } => {
                self.step_summaries
                    .insert(*index, (summary.clone(), *status));
            }
            EventKind::ToolResult(result) => {
                if result.ok
                    && crate::tools::catalog::spec(&result.tool).is_some_and(|s| s.changes_files)
                    && let Some(path) = result.data.get("path").and_then(Value::as_str)
                {
                    self.changed_files.insert(path.to_string());
                }
                if result.tool == "todo" && result.data.get("items").is_some() {
                    self.todo = Some(result.data.clone());
                }
            }
            // The summary shows the last round's checks; the trace keeps them all.
            EventKind::RoundStarted { .. } => self.checks.clear(),
            EventKind::CheckCompleted(check) => self.checks.push(check.clone()),
            EventKind::RunCompleted(done) => self.completed = Some(done.clone()),
            EventKind::RunResumed(resumed) => self.resumed.push((**resumed).clone()),
            _ => {}
        }
    }
}

/// The Markdown step summary of a finished (or cut short) run's events:
/// what `agentci trace summary` prints, the same text the GitHub sink
/// appends to `$GITHUB_STEP_SUMMARY`.
pub fn step_summary<'a>(events: impl IntoIterator<Item = &'a Event>) -> String {
    let mut report = SummaryFacts::default();
    for event in events {
        report.record(event);
    }
    report.cut_short = report.completed.is_none();
    summary_markdown(&report)
}

impl GithubActions {
    pub fn new(config: GithubConfig) -> GithubActions {
        GithubActions {
            config,
            lines: LogLines::default(),
            broken: false,
            group_open: false,
            report: SummaryFacts::default(),
            job_text: String::new(),
            written: false,
        }
    }

    /// The workflow-command lines `event` is shown as, and the report updated.
    fn log_lines(&mut self, event: &Event) -> Vec<String> {
        self.report.record(event);
        let mut out = Vec::new();
        let plain: Vec<String> = self
            .lines
            .lines(event)
            .into_iter()
            .map(|l| format!("{PREFIX} {l}"))
            .collect();
        match &event.kind {
            EventKind::RunStarted(run) => {
                self.job_text = std::fs::read_to_string(self.config.cwd.join(&run.job_file))
                    .unwrap_or_default();
                out.extend(plain);
            }
            EventKind::SandboxDegraded(report) => {
                out.extend(plain);
                if let Some(message) = degraded::degraded_annotation(report) {
                    let (file, line) = self.job_location(&["sandbox:"]);
                    let title = Some(degraded::TITLE);
                    out.push(annotation("warning", &file, line, title, &message));
                }
            }
            // Said by the annotation above, in a workflow's terms: a log line here.
            EventKind::Warning { source, .. }
                if source == crate::sandbox::DEGRADED_WARNING_SOURCE =>
            {
                out.extend(plain);
            }
            EventKind::Warning { source, message } => {
                let (file, line) = self.job_location(&[]);
                out.push(annotation(
                    "warning",
                    &file,
                    line,
                    None,
                    &format!("{source}: {message}"),
                ));
            }
            EventKind::ModelRequest(request) => {
                if request.phase == Phase::Plan && !self.group_open && self.report.plan.is_empty() {
                    self.open_group(&mut out, "Plan");
                }
                if request.phase == Phase::Summary {
                    self.close_group(&mut out);
                }
            }
            EventKind::PlanCreated { .. } => {
                self.close_group(&mut out);
                out.extend(plain);
            }
            EventKind::StepStarted { .. } => {
                self.close_group(&mut out);
                let title = plain
                    .first()
                    .map_or("step", |l| l.trim_start_matches(PREFIX).trim());
                let title = title.to_string();
                self.open_group(&mut out, &title);
            }
            EventKind::StepCompleted { .. } => {
                out.extend(plain);
                self.close_group(&mut out);
            }
            EventKind::CheckCompleted(check) => {
                self.close_group(&mut out);
                out.extend(self.check_lines(check, plain));
            }
            EventKind::RunCompleted(done) => {
                self.close_group(&mut out);
                out.extend(plain);
                if done.status != RunStatus::Passed && done.checks_failed == 0 {
                    let key = match done.status {
                        RunStatus::BudgetExceeded => "budget:",
                        RunStatus::ProviderUnavailable | RunStatus::Error => "model:",
                        _ => "goal:",
                    };
                    let (file, line) = self.job_location(&[key]);
                    let title = format!("agentci: {}", done.status.as_str());
                    out.push(annotation("error", &file, line, Some(&title), &done.reason));
                }
            }
            _ => out.extend(plain),
        }
        out
    }

    fn open_group(&mut self, out: &mut Vec<String>, title: &str) {
        out.push(format!("::group::{}", escape_data(&one_line(title, 200))));
        self.group_open = true;
    }

    fn close_group(&mut self, out: &mut Vec<String>) {
        if self.group_open {
            out.push("::endgroup::".to_string());
            self.group_open = false;
        }
    }

    /// A check's line; when it failed, its output folded in a group and an annotation.
    fn check_lines(&self, check: &CheckCompleted, plain: Vec<String>) -> Vec<String> {
        if !matches!(check.outcome, CheckOutcome::Failed | CheckOutcome::TimedOut) {
            return plain;
        }
        let mut out = Vec::new();
        let mut plain = plain.into_iter();
        let headline = plain.next().unwrap_or_default();
        let headline = headline.trim_start_matches(PREFIX).trim().to_string();
        out.push(format!("::group::{}", escape_data(&headline)));
        out.extend(plain);
        out.push("::endgroup::".to_string());
        let (file, line, column) = match self.location_in_output(&check.output) {
            Some(found) => found,
            None => {
                let (file, line) = self.job_location(&[&check.name, "checks:"]);
                (file, line, None)
            }
        };
        let title = format!("check \"{}\" failed", check.name);
        let mut message = headline;
        let output: Vec<&str> = check.output.lines().collect();
        let tail = &output[output.len().saturating_sub(10)..];
        // The verdict of a test runner is often far above its last lines
        // (a panic, then the list of failures and a summary): say why first.
        if let Some(why) = telling_line(&output).filter(|why| !tail.contains(why)) {
            message.push('\n');
            message.push_str(why.trim());
            message.push_str("\n…");
        }
        for l in tail {
            message.push('\n');
            message.push_str(l);
        }
        let mut command = annotation("error", &file, line, Some(&title), &message);
        if let Some(column) = column {
            command = command.replacen(
                &format!(",line={line}"),
                &format!(",line={line},col={column}"),
                1,
            );
        }
        out.push(command);
        out
    }

    /// The first `file:line[:col]` in a check's output that names a file in
    /// the workspace (rustc's `--> src/lib.rs:3:5`, a Rust panic's
    /// `src/lib.rs:3:5`, pytest's `tests/test_x.py:12:`), as a path for annotations.
    fn location_in_output(&self, output: &str) -> Option<(String, usize, Option<usize>)> {
        let workspace = PathBuf::from(&self.report.started.as_ref()?.workspace);
        let pattern =
            Regex::new(r"(?:^|[\s(\[`'])((?:\.?/)?[\w.-]+(?:/[\w.-]+)*\.\w+):(\d+)(?::(\d+))?")
                .ok()?;
        for found in pattern.captures_iter(output) {
            let file = found[1].trim_start_matches("./");
            let Ok(line) = found[2].parse::<usize>() else {
                continue;
            };
            let path = workspace.join(file);
            if line > 0 && path.is_file() {
                let column = found.get(3).and_then(|c| c.as_str().parse().ok());
                return Some((self.repo_relative(&path), line, column));
            }
        }
        None
    }

    /// The job file and the line of the first of `needles` found in it (else line 1).
    fn job_location(&self, needles: &[&str]) -> (String, usize) {
        let Some(started) = &self.report.started else {
            return (String::new(), 1);
        };
        let job_file = self.config.cwd.join(&started.job_file);
        if !job_file.is_file() {
            // A job made from flags has no file to point at: the annotation goes on the run.
            return (String::new(), 0);
        }
        let file = self.repo_relative(&job_file);
        let line = needles
            .iter()
            .find_map(|needle| {
                self.job_text
                    .lines()
                    .position(|l| l.contains(needle))
                    .map(|i| i + 1)
            })
            .unwrap_or(1);
        (file, line)
    }

    /// `path` relative to the checkout when it is inside it, as annotations want.
    fn repo_relative(&self, path: &Path) -> String {
        relative_to(&self.config, path)
    }

    fn write_log(&mut self, lines: &[String]) -> Result<(), SinkError> {
        let Some(log) = self.config.log.as_mut() else {
            return Ok(());
        };
        if self.broken || lines.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for line in lines {
            push_log_line(&mut text, line);
        }
        log.write_all(text.as_bytes())
            .and_then(|()| log.flush())
            .map_err(|source| {
                self.broken = true;
                SinkError {
                    what: "write the GitHub Actions log to",
                    path: "stderr".to_string(),
                    source,
                }
            })
    }

    /// Append the summary and the outputs, once.
    fn write_files(&mut self) -> Result<(), SinkError> {
        if self.written {
            return Ok(());
        }
        self.written = true;
        if let Some(path) = &self.config.step_summary {
            append(
                path,
                &summary_markdown(&self.report),
                "append the step summary to",
            )?;
        }
        if let Some(path) = &self.config.output {
            let delimiter = format!("ghadelimiter_{}", uuid::Uuid::new_v4().simple());
            append(
                path,
                &outputs_text(&self.report, &delimiter),
                "append step outputs to",
            )?;
        }
        Ok(())
    }
}

impl EventSink for GithubActions {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        let lines = self.log_lines(event);
        let logged = self.write_log(&lines);
        if matches!(event.kind, EventKind::RunCompleted(_)) {
            self.write_files()?;
        }
        logged
    }

    // The step summary and outputs describe the whole run, resumed or not;
    // the log and annotations were the stopped run's to write.
    fn on_history(&mut self, event: &Event) {
        self.report.record(event);
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        let mut lines = Vec::new();
        self.close_group(&mut lines);
        let logged = self.write_log(&lines);
        self.write_files()?;
        logged
    }
}

/// The line of a failed check's output that best says why it failed: a
/// panic or assertion message, else the first error line.
fn telling_line<'a>(output: &[&'a str]) -> Option<&'a str> {
    const TELLING: [&str; 4] = ["panicked at", "assertion", "error:", "error["];
    let lower: Vec<String> = output.iter().map(|l| l.to_lowercase()).collect();
    TELLING.iter().find_map(|needle| {
        lower.iter().position(|l| l.contains(needle)).map(|i| {
            // A Rust panic puts its message on the line after `panicked at`.
            let next = output.get(i + 1).filter(|_| *needle == "panicked at");
            next.filter(|n| !n.trim().is_empty())
                .copied()
                .unwrap_or(output[i])
        })
    })
}

/// `path` (relative paths are relative to `config.cwd`) relative to the
/// checkout when it is inside it, as annotations want.
fn relative_to(config: &GithubConfig, path: &Path) -> String {
    let root = config.repo_root.as_deref().unwrap_or(&config.cwd);
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let path = config.cwd.join(path);
    let full = path.canonicalize().unwrap_or(path);
    full.strip_prefix(&root)
        .unwrap_or(&full)
        .display()
        .to_string()
}

fn append(path: &Path, text: &str, what: &'static str) -> Result<(), SinkError> {
    // The summary and the outputs are made from events the bus masked.
    crate::safe_file::append(
        path,
        &crate::redact::Masked::from_masked_parts(text.as_bytes()),
    )
    .map_err(|source| SinkError {
        what,
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_telling_line_of_a_failed_check_is_the_panic_message() {
        let output = [
            "running 3 tests",
            "thread 'adds' panicked at src/lib.rs:9:5:",
            "assertion `left == right` failed: sums differ",
            "test result: FAILED. 2 passed; 1 failed",
        ];
        assert_eq!(
            telling_line(&output),
            Some("assertion `left == right` failed: sums differ")
        );
        assert_eq!(
            telling_line(&["x", "error: could not compile `demo`", "y"]),
            Some("error: could not compile `demo`")
        );
        assert_eq!(telling_line(&["all fine"]), None);
    }
}
