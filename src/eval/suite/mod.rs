//! Suite files: a base job and a list of cases, each a fixture, overrides,
//! cassettes and assertions. Parsed from YAML into private raw structs
//! (`raw`), then validated (`check`) into a [`SuiteSpec`] that the rest
//! of the evaluation trusts.
//!
//! Errors are [`Diagnostic`]s naming the file, line and column, like job
//! files'. Running cases and judging their assertions is not done here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::GlobSet;
use regex::Regex;

use crate::job::diagnostic::{Reporter, has_errors};
use crate::job::load::read_source;
use crate::job::recover;
use crate::job::{BudgetSpec, Diagnostic};

mod check;
mod check_judge;
mod numbers;
mod raw;
mod schema;

pub use schema::suite_schema;

/// A validated suite.
#[derive(Debug, Clone)]
pub struct SuiteSpec {
    /// The suite file, as given.
    pub path: PathBuf,
    /// A name safe to use as a folder name; `name:` or the suite's folder.
    pub name: String,
    /// The base job every case runs, absolute.
    pub job: PathBuf,
    /// The share of cases that must pass for the suite to pass.
    pub min_pass_rate: Option<f64>,
    pub cases: Vec<CaseSpec>,
}

/// One case: a fixture, overrides of the base job, and what must hold afterwards.
#[derive(Debug, Clone)]
pub struct CaseSpec {
    pub name: String,
    /// 0-based position in the suite file; keeps merged shards in file order.
    pub index: usize,
    pub fixture: Fixture,
    pub goal: Option<String>,
    pub vars: BTreeMap<String, String>,
    /// `PROVIDER:NAME`, as `--model` takes it.
    pub model: Option<String>,
    /// The limits the case sets, as the job's checks read them (only these
    /// replace the job's).
    pub budget: BudgetSpec,
    /// The goal, vars and budget as written, each with its place in the
    /// suite file: the job is loaded with them for every attempt.
    pub overrides: crate::job::Overrides,
    /// Absolute cassette paths: attempt `n` replays `cassettes[(n - 1) % len]`.
    /// A case that names none gets what `--record` saved for it, if anything.
    pub cassettes: Vec<PathBuf>,
    /// Where `--record` saves attempt 1 when no cassette is named.
    pub default_cassette: PathBuf,
    /// The share of attempts that must pass for the case to pass (default 1).
    pub min_pass_rate: Option<f64>,
    /// Always holds a `status` assertion (`passed` unless the case says otherwise).
    pub assertions: Vec<Assertion>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Fixture {
    /// A folder, absolute.
    Dir(PathBuf),
    /// A git repository (a local path, absolute, or a URL) at a revision.
    Git { repo: String, rev: String },
}

/// How a run may end for a case to pass (`status:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum ExpectedStatus {
    Passed,
    Failed,
    BudgetExceeded,
}

impl ExpectedStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Debug, Clone)]
pub enum Assertion {
    /// A shell command that must exit 0 in the workspace after the run.
    Run {
        command: String,
        timeout: Duration,
    },
    FileContains {
        path: String,
        pattern: Regex,
    },
    FileNotContains {
        path: String,
        pattern: Regex,
    },
    FileUnchanged {
        path: String,
    },
    DiffTouchesOnly {
        globs: Vec<String>,
        set: GlobSet,
    },
    ToolCalled(String),
    ToolNotCalled(String),
    MaxTurns(u32),
    MaxCostUsd(f64),
    MaxDuration(Duration),
    Status(ExpectedStatus),
    FinalTextMatches(Regex),
    /// A model grades the run against a rubric.
    Judge(JudgeSpec),
}

/// A graded assertion (`judge:`): a model scores the run against a rubric.
#[derive(Debug, Clone)]
pub struct JudgeSpec {
    pub rubric: String,
    /// `PROVIDER:NAME` as written; `None`: the job's model.
    pub model: Option<String>,
    /// `None`: the job's server (or, with another provider, that provider's).
    pub base_url: Option<String>,
    /// The median score at or above which the assertion passes.
    pub pass_score: f64,
    /// How many samples are taken; the median score decides.
    pub judges: u32,
    /// What the judge is shown, in this order.
    pub sees: Vec<JudgeSees>,
}

/// One part of what a judge is shown.
#[derive(Debug, Clone)]
pub enum JudgeSees {
    /// The run's final text.
    FinalText,
    /// What the run changed, as a unified diff.
    Diff,
    /// The run's structured result.
    Result,
    /// How the run ended and the tools it called.
    TraceSummary,
    /// Workspace files matching these globs, as the run left them.
    Files { globs: Vec<String>, set: GlobSet },
}

impl JudgeSees {
    pub fn name(&self) -> &'static str {
        match self {
            JudgeSees::FinalText => "final_text",
            JudgeSees::Diff => "diff",
            JudgeSees::Result => "result",
            JudgeSees::TraceSummary => "trace_summary",
            JudgeSees::Files { .. } => "files",
        }
    }
}

impl Assertion {
    /// Everything that can change the assertion's verdict, for the case's
    /// fingerprint: its label, and a judge's whole settings (its label
    /// shows only the rubric's start).
    pub fn identity(&self) -> String {
        match self {
            Assertion::Judge(j) => {
                let sees: Vec<String> = j
                    .sees
                    .iter()
                    .map(|s| match s {
                        JudgeSees::Files { globs, .. } => format!("files {globs:?}"),
                        other => other.name().to_string(),
                    })
                    .collect();
                format!(
                    "judge: {:?} model {:?} base_url {:?} pass_score {} judges {} sees {sees:?}",
                    j.rubric, j.model, j.base_url, j.pass_score, j.judges
                )
            }
            other => other.label(),
        }
    }

    /// How the assertion is named in reports: its key and its value, short.
    pub fn label(&self) -> String {
        match self {
            Assertion::Run { command, .. } => format!("run: {command}"),
            Assertion::FileContains { path, pattern } => {
                format!("file_contains: {path} =~ /{}/", pattern.as_str())
            }
            Assertion::FileNotContains { path, pattern } => {
                format!("file_not_contains: {path} !~ /{}/", pattern.as_str())
            }
            Assertion::FileUnchanged { path } => format!("file_unchanged: {path}"),
            Assertion::DiffTouchesOnly { globs, .. } => {
                format!("diff_touches_only: [{}]", globs.join(", "))
            }
            Assertion::ToolCalled(tool) => format!("tool_called: {tool}"),
            Assertion::ToolNotCalled(tool) => format!("tool_not_called: {tool}"),
            Assertion::MaxTurns(n) => format!("max_turns: {n}"),
            Assertion::MaxCostUsd(c) => format!("max_cost_usd: {c}"),
            Assertion::MaxDuration(d) => {
                format!(
                    "max_duration: {}",
                    crate::job::duration::format_duration(*d)
                )
            }
            Assertion::Status(s) => format!("status: {}", s.as_str()),
            Assertion::FinalTextMatches(re) => format!("final_text_matches: /{}/", re.as_str()),
            Assertion::Judge(judge) => {
                let first = judge.rubric.lines().next().unwrap_or_default().trim();
                format!("judge: {}", crate::inert::clip(first, 60))
            }
        }
    }
}

/// What loading needs besides the file.
#[derive(Debug, Clone, Default)]
pub struct SuiteLoadOptions {
    /// Relative paths on the command line are resolved against it.
    pub cwd: PathBuf,
    /// `--record`: cassettes will be written, so they need not exist yet.
    pub record: bool,
}

/// Loads and validates a suite file; `Err` holds every problem found.
pub fn load_suite(path: &Path, options: &SuiteLoadOptions) -> Result<SuiteSpec, Vec<Diagnostic>> {
    let source = read_source(path).map_err(|d| vec![d])?;
    let mut reporter = Reporter::new(path, &source, 0);
    if source.trim().is_empty() {
        reporter.error(
            reporter.start(),
            "the suite file is empty; expected a mapping with `job` and `cases`",
        );
        return Err(reporter.diagnostics);
    }
    // Like a job file: structural errors are reported and skipped, so one pass shows them all.
    let Some((raw, blanked)) = recover::parse_recovering::<raw::RawSuite>(&source, &mut reporter)
    else {
        return Err(reporter.diagnostics);
    };
    let absolute = crate::tools::workspace::normalize(&options.cwd.join(path));
    let suite_dir = absolute
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| options.cwd.clone());
    let checker = check::SuiteChecker {
        r: reporter,
        dir: &suite_dir,
        cwd: &options.cwd,
        record: options.record,
    };
    let (suite, mut diagnostics) = checker.check(path, raw);
    recover::drop_consequences(&mut diagnostics, &blanked);
    match suite {
        Some(suite) if !has_errors(&diagnostics) => Ok(suite),
        _ => Err(diagnostics),
    }
}

/// Names used as folder names under `--out`: letters, digits, `.`, `_`, `-`.
pub fn is_valid_case_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A judge's fingerprint holds every setting, though its label shows
    /// only the rubric: a changed pass_score re-runs the case.
    #[test]
    fn a_judge_identity_holds_every_setting() {
        let judge = |pass_score: f64| {
            Assertion::Judge(JudgeSpec {
                rubric: "Says what changed.".into(),
                model: None,
                base_url: None,
                pass_score,
                judges: 1,
                sees: vec![JudgeSees::FinalText],
            })
        };
        assert_eq!(judge(0.7).label(), judge(0.8).label());
        assert_ne!(judge(0.7).identity(), judge(0.8).identity());
    }
}
