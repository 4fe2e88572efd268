//! The JUnit XML report of a run, in the Jenkins flavour CI servers read.
//!
//! One `<testsuite>` named after the job holds one `<testcase>` for the agent
//! and one per check. With `checks_rounds`, a check's testcase is its last
//! round; its failures in earlier rounds are `<flakyFailure>`s when the last
//! round passed and `<rerunFailure>`s when it did not (Surefire's and
//! nextest's elements for a test run again). The writer only collects what it needs from the events
//! and writes the file in [`EventSink::finish`], so a run that crashed before
//! `run.completed` still gets a valid report whose agent testcase is an error.
//! It does not decide pass or fail itself: statuses come from the events;
//! what the agent got done (for the agent testcase) is read from them by
//! `agent`.
//!
//! When the disk is full, the file is written with the space reserved for
//! the run's records ([`super::reserve`]).
//!
//! Every `<failure>` and `<error>` has a non-empty `message` and text, and
//! the `file` attribute is relative to the checkout when the job file is in
//! it: that is what the report readers (junitparser, dorny's and EnricoMi's
//! actions, xunit-viewer) need to show a failure and link it.

mod agent;
pub mod attributes;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, FixedOffset};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestRerun, TestSuite};

use super::reserve::{self, RecordReserve};
use crate::event::bus::{EventSink, SinkError};
use crate::event::{
    CheckCompleted, CheckOutcome, Event, EventKind, RunCompleted, RunStarted, RunStatus,
};
use agent::{AgentProgress, or_default};

/// Collects a run's events and writes JUnit XML when the run finishes.
pub struct JunitWriter {
    path: PathBuf,
    started: Option<RunStarted>,
    started_ts: Option<String>,
    last_ts: Option<String>,
    /// The checks of the latest round.
    checks: Vec<CheckCompleted>,
    /// The checks of each earlier round, oldest first.
    earlier_rounds: Vec<Vec<CheckCompleted>>,
    completed: Option<RunCompleted>,
    /// Counted from the events, for a run that never reached `run.completed`.
    counted: Counted,
    agent: AgentProgress,
    files: FileBase,
    /// Space to write the file with when the disk is full.
    reserve: RecordReserve,
}

/// What the `file` attribute is relative to.
#[derive(Clone, Debug, Default)]
pub struct FileBase {
    /// The directory relative paths in events are relative to (the current directory).
    pub cwd: PathBuf,
    /// The checkout (`$GITHUB_WORKSPACE`); `None`: `cwd`.
    pub root: Option<PathBuf>,
}

impl FileBase {
    /// `path` relative to the root when it is inside it, else as it is.
    fn show(&self, path: &str) -> String {
        if self.cwd.as_os_str().is_empty() {
            return path.to_string();
        }
        let full = self.cwd.join(path);
        let root = self.root.as_deref().unwrap_or(&self.cwd);
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        match canonical(&full).strip_prefix(canonical(root)) {
            Ok(inside) => inside.display().to_string(),
            Err(_) => path.to_string(),
        }
    }
}

#[derive(Default)]
struct Counted {
    turns: u64,
    tool_calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    reasoning_tokens: u64,
}

impl JunitWriter {
    pub fn new(path: PathBuf) -> JunitWriter {
        JunitWriter {
            path,
            started: None,
            started_ts: None,
            last_ts: None,
            checks: Vec::new(),
            earlier_rounds: Vec::new(),
            completed: None,
            counted: Counted::default(),
            agent: AgentProgress::default(),
            files: FileBase::default(),
            reserve: RecordReserve::default(),
        }
    }

    /// Write the file with `reserve`'s space when the disk is full.
    pub fn with_reserve(mut self, reserve: RecordReserve) -> JunitWriter {
        self.reserve = reserve;
        self
    }

    /// Write the `file` attribute relative to `files` (by default as the
    /// job file was named).
    pub fn with_file_base(mut self, files: FileBase) -> JunitWriter {
        self.files = files;
        self
    }

    /// The report as XML, from the events seen so far.
    pub fn to_xml(&self) -> Result<String, quick_junit::SerializeError> {
        let mut report = Report::new("agentci");
        report.add_test_suite(self.suite());
        report
            .to_string()
            .map(|xml| attributes::line_breaks_as_references(&xml))
    }

    fn suite(&self) -> TestSuite {
        let name = self
            .started
            .as_ref()
            .map_or("agentci", |s| s.job_name.as_str());
        let mut suite = TestSuite::new(name);
        let timestamp = self
            .started_ts
            .as_deref()
            .or(self.last_ts.as_deref())
            .and_then(parse_ts)
            .unwrap_or_else(|| chrono::Utc::now().fixed_offset());
        suite.set_timestamp(timestamp);
        suite.set_time(self.run_time());
        self.add_properties(&mut suite);

        let mut names = UniqueNames::default();
        suite.add_test_case(self.agent_case(&mut names));
        // A round that never got to its checks leaves the last one standing.
        let (last, earlier) = match (self.checks.is_empty(), self.earlier_rounds.split_last()) {
            (true, Some((last, earlier))) => (last, earlier),
            _ => (&self.checks, self.earlier_rounds.as_slice()),
        };
        for (index, check) in last.iter().enumerate() {
            // The same check (same index and name) in every round, oldest first.
            let rounds: Vec<(usize, &CheckCompleted)> = earlier
                .iter()
                .chain([last])
                .enumerate()
                .filter_map(|(round, checks)| {
                    let same = checks.get(index).filter(|c| c.name == check.name)?;
                    Some((round + 1, same))
                })
                .collect();
            // Its last result: a round stopped before its checks (a signal,
            // the budget) does not hide a failure of the round before.
            let shown = rounds
                .iter()
                .rposition(|(_, c)| c.outcome != CheckOutcome::Skipped)
                .unwrap_or(rounds.len().saturating_sub(1));
            let mut case = self.check_case(rounds.get(shown).map_or(check, |r| r.1), &mut names);
            let before = rounds[..shown]
                .iter()
                .filter_map(|(round, c)| rerun(c, *round));
            case.status.add_reruns(before);
            suite.add_test_case(case);
        }
        suite
    }

    /// The whole run: its own total, or the span of the events seen when it crashed.
    fn run_time(&self) -> Duration {
        if let Some(done) = &self.completed {
            return Duration::from_millis(done.totals.duration_ms);
        }
        match (
            self.started_ts.as_deref().and_then(parse_ts),
            self.last_ts.as_deref().and_then(parse_ts),
        ) {
            (Some(start), Some(last)) => (last - start).to_std().unwrap_or_default(),
            _ => Duration::ZERO,
        }
    }

    fn add_properties(&self, suite: &mut TestSuite) {
        let mut props: Vec<(&str, String)> = Vec::new();
        if let Some(started) = &self.started {
            props.push((
                "model",
                format!("{}:{}", started.model.provider, started.model.name),
            ));
        }
        let (turns, tool_calls, input, output, reasoning, cost) = match &self.completed {
            Some(done) => (
                u64::from(done.totals.turns),
                u64::from(done.totals.tool_calls),
                done.totals.input_tokens,
                done.totals.output_tokens,
                done.totals.reasoning_tokens,
                done.totals.cost_usd,
            ),
            None => (
                self.counted.turns,
                self.counted.tool_calls,
                self.counted.input_tokens,
                self.counted.output_tokens,
                self.counted.reasoning_tokens,
                None,
            ),
        };
        props.push(("turns", turns.to_string()));
        props.push(("tool_calls", tool_calls.to_string()));
        props.push(("input_tokens", input.to_string()));
        props.push(("output_tokens", output.to_string()));
        if reasoning > 0 {
            props.push(("reasoning_tokens", reasoning.to_string()));
        }
        // An unknown price is "unknown", never a misleading zero.
        props.push((
            "cost_usd",
            cost.map_or_else(|| "unknown".to_string(), |c| format!("{c:.4}")),
        ));
        if let Some(trace) = self.started.as_ref().and_then(|s| s.outputs.trace.clone()) {
            props.push(("trace", trace));
        }
        let status = self
            .completed
            .as_ref()
            .map_or("incomplete", |done| done.status.as_str());
        props.push(("status", status.to_string()));
        if let Some(result) = self.completed.as_ref().and_then(|d| d.result.as_ref()) {
            props.push(("agentci.result", result_property(result)));
        }
        for (name, value) in props {
            suite.add_property((name, value.as_str()));
        }
    }

    fn classname(&self) -> &str {
        self.started
            .as_ref()
            .map_or("agentci", |s| s.skill.as_str())
    }

    fn with_location(&self, case: &mut TestCase) {
        case.set_classname(self.classname());
        if let Some(started) = &self.started {
            let file = self.files.show(&started.job_file);
            case.extra.insert("file".into(), file.as_str().into());
        }
    }

    /// The agent testcase reflects the agent, not the checks: a run that
    /// failed only because checks failed has a passing agent testcase (the
    /// failing checks are their own testcases, so the failure is not counted
    /// twice). It fails whenever the agent failed for a reason of its own
    /// (no plan, gave up, context overflow, a step that ended badly; see
    /// [`AgentProgress::own_failure`]), failing checks or not, and is an
    /// error when the agent could not finish (budget, provider, error,
    /// interrupt) or the run never completed.
    fn agent_case(&self, names: &mut UniqueNames) -> TestCase {
        let non_success = |kind, message: &str, ty: &str, done: Option<&RunCompleted>| {
            let mut s = TestCaseStatus::non_success(kind);
            s.set_message(or_default(message, "the run failed"))
                .set_type(ty)
                .set_description(self.agent.story(message, done));
            s
        };
        let status = match &self.completed {
            None => non_success(
                NonSuccessKind::Error,
                "run did not complete",
                "incomplete",
                None,
            ),
            Some(done) => match done.status {
                RunStatus::BudgetExceeded
                | RunStatus::ProviderUnavailable
                | RunStatus::Error
                | RunStatus::Interrupted => non_success(
                    NonSuccessKind::Error,
                    &done.reason,
                    done.status.as_str(),
                    Some(done),
                ),
                RunStatus::Passed | RunStatus::Failed => match self.agent.own_failure(done) {
                    Some(reason) => {
                        non_success(NonSuccessKind::Failure, &reason, "failed", Some(done))
                    }
                    None => TestCaseStatus::success(),
                },
            },
        };
        let mut case = TestCase::new(names.claim("agent"), status);
        self.with_location(&mut case);
        // The agent's share of the run: everything except the checks.
        let checks: Duration = self
            .checks
            .iter()
            .map(|c| Duration::from_millis(c.duration_ms))
            .sum();
        case.set_time(self.run_time().saturating_sub(checks));
        // A step that ended badly in a run that passed is not a failure,
        // but the reader should still learn why it ended.
        let summary = self.completed.as_ref().and_then(|d| d.summary.as_deref());
        let passed = self
            .completed
            .as_ref()
            .is_some_and(|d| d.status == RunStatus::Passed);
        let note = self.agent.ended_badly().filter(|_| passed);
        match (summary, note) {
            (Some(summary), Some(note)) => case.set_system_out(format!("{summary}\n\n{note}")),
            (Some(summary), None) => case.set_system_out(summary),
            (None, Some(note)) => case.set_system_out(note),
            (None, None) => &mut case,
        };
        case
    }

    fn check_case(&self, check: &CheckCompleted, names: &mut UniqueNames) -> TestCase {
        let status = match check.outcome {
            CheckOutcome::Passed => TestCaseStatus::success(),
            CheckOutcome::Failed => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let message = match check.exit_code {
                    Some(code) => format!("check failed: exit code {code}"),
                    None => "check failed: killed by a signal".to_string(),
                };
                s.set_message(message.as_str())
                    .set_type("failed")
                    .set_description(or_default(
                        &check.output,
                        &format!("{message}; it printed nothing"),
                    ));
                s
            }
            CheckOutcome::TimedOut => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let secs = Duration::from_millis(check.duration_ms).as_secs_f64();
                let message = format!("check timed out after {secs:.1}s");
                s.set_message(message.as_str())
                    .set_type("timed_out")
                    .set_description(or_default(
                        &check.output,
                        &format!("{message}; it printed nothing"),
                    ));
                s
            }
            CheckOutcome::Skipped => {
                let mut s = TestCaseStatus::skipped();
                s.set_message("not run: the agent did not finish");
                s
            }
        };
        let mut case = TestCase::new(names.claim(&check.name), status);
        self.with_location(&mut case);
        case.set_time(Duration::from_millis(check.duration_ms));
        if check.outcome == CheckOutcome::Passed && !check.output.is_empty() {
            case.set_system_out(check.output.as_str());
        }
        case
    }

    fn error(&self, source: std::io::Error) -> SinkError {
        SinkError {
            what: "write junit xml to",
            path: self.path.display().to_string(),
            source,
        }
    }
}

impl EventSink for JunitWriter {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        self.last_ts = Some(event.ts.clone());
        self.agent.observe(&event.kind);
        match &event.kind {
            EventKind::RunStarted(started) => {
                self.started = Some(started.clone());
                self.started_ts = Some(event.ts.clone());
            }
            EventKind::ModelRequest(_) => self.counted.turns += 1,
            EventKind::ModelResponse(response) => {
                self.counted.input_tokens += response.usage.input_tokens;
                self.counted.output_tokens += response.usage.output_tokens;
                self.counted.reasoning_tokens += response.usage.reasoning_tokens;
            }
            EventKind::ToolCall { .. } => self.counted.tool_calls += 1,
            EventKind::CheckCompleted(check) => self.checks.push(check.clone()),
            EventKind::RoundStarted { .. } if !self.checks.is_empty() => {
                self.earlier_rounds.push(std::mem::take(&mut self.checks));
            }
            EventKind::RunCompleted(done) => self.completed = Some(done.clone()),
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        let xml = self
            .to_xml()
            .map_err(|e| self.error(std::io::Error::other(e)))?;
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| self.error(e))?;
        }
        // A `junit.xml` the agent planted as a link is replaced, not written through.
        let write = || crate::safe_file::replace(&self.path, xml.as_bytes(), None);
        match write() {
            Err(e) if reserve::out_of_space(&e) && self.reserve.release() => write(),
            written => written,
        }
        .map_err(|e| self.error(e))
    }
}

/// A check's failure in an earlier `round`, for the testcase of its last
/// one; `None` when it passed or was skipped then.
fn rerun(check: &CheckCompleted, round: usize) -> Option<TestRerun> {
    let (message, ty) = match (check.outcome, check.exit_code) {
        (CheckOutcome::Passed | CheckOutcome::Skipped, _) => return None,
        (CheckOutcome::TimedOut, _) => (format!("round {round}: check timed out"), "timed_out"),
        (CheckOutcome::Failed, Some(code)) => (
            format!("round {round}: check failed: exit code {code}"),
            "failed",
        ),
        (CheckOutcome::Failed, None) => (
            format!("round {round}: check failed: killed by a signal"),
            "failed",
        ),
    };
    let mut rerun = TestRerun::new(NonSuccessKind::Failure);
    rerun
        .set_message(message.as_str())
        .set_type(ty)
        .set_time(Duration::from_millis(check.duration_ms))
        .set_description(or_default(
            &check.output,
            &format!("{message}; it printed nothing"),
        ));
    Some(rerun)
}

fn parse_ts(ts: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(ts).ok()
}

/// Testcase names must be unique within a suite; later duplicates get ` (2)`, ` (3)`, ….
#[derive(Default)]
struct UniqueNames(HashSet<String>);

impl UniqueNames {
    fn claim(&mut self, name: &str) -> String {
        let mut candidate = name.to_string();
        let mut n = 2;
        while self.0.contains(&candidate) {
            candidate = format!("{name} ({n})");
            n += 1;
        }
        self.0.insert(candidate.clone());
        candidate
    }
}

/// A JUnit property is one attribute: the result as compact JSON, cut
/// (on a character boundary) so a large result does not bloat the report;
/// the whole result is in `outputs.result`.
fn result_property(result: &serde_json::Value) -> String {
    const MAX_CHARS: usize = 4000;
    let text = result.to_string();
    match text.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}
