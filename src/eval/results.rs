//! The results of an evaluation: what every attempt did, summarized per case
//! and per suite. Serialized as `results.json`, which `--baseline` and
//! `agentci report merge` read back, so field names are a contract.
//!
//! Summaries are always recomputed from the attempts ([`CaseResult::new`],
//! [`SuiteResult::new`]), so merged shards give the same figures as one run.
//! Running attempts and writing JUnit or Markdown happen elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::baseline::{Regression, RepeatAdvice};
use super::shard::Shard;
use super::significance::{Interval, wilson};
use super::stats::{pass_at_k, pass_pow_k};
use crate::event::RunStatus;
use crate::provider::replay_drift::ReplayDrift;

pub const RESULTS_VERSION: u32 = 1;

/// Why a `results.json` could not be read, written or merged; each names
/// the file or the case.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot read results {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not an agentci results.json: {source}", path.display())]
    NotResults {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "{} has results version {version}; this agentci reads version {RESULTS_VERSION}",
        path.display()
    )]
    Version { path: PathBuf, version: u32 },
    #[error("cannot serialize results: {0}")]
    Serialize(serde_json::Error),
    #[error("cannot write {}: {source}", path.display())]
    Unwritable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "shards {first} and {other} come from different splits; merge the shards of one \
         --shard I/N matrix"
    )]
    MixedSplits { first: Shard, other: Shard },
    #[error("shard {0} is given more than once; give each shard's results once")]
    ShardTwice(Shard),
    /// `missing` lists them as `I/N, I/N`.
    #[error("shard {missing} is missing; give the results folder of every shard")]
    ShardsMissing { missing: String },
    #[error("case `{suite}/{case}` is in more than one of the results; give each shard once")]
    Duplicate { suite: String, case: String },
}

/// An attempt's result: `error` is an infrastructure failure (the provider
/// was down, a cassette diverged, the workspace could not be made), not a
/// missed assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
    Error,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssertionResult {
    pub name: String,
    pub passed: bool,
    /// Why it failed, or a note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The assertion could not be judged (a judge that errored); never
    /// passed, and the attempt is an `error`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub error: bool,
    /// A graded assertion's scores and reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeOutcome>,
}

/// What a `judge:` assertion's model said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeOutcome {
    /// `PROVIDER:NAME` of the judging model.
    pub model: String,
    /// `pass`, `fail` or `error`.
    pub verdict: String,
    /// The median of the samples' scores; absent when the judge errored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    pub pass_score: f64,
    /// The reasons of the sample whose score is the median (the first one
    /// nearest it, for an even count).
    #[serde(default)]
    pub reasons: Vec<String>,
    /// Every sample taken, in order.
    #[serde(default)]
    pub samples: Vec<JudgeSample>,
    /// Samples whose own verdict disagrees with their score; the score decides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreements: Vec<String>,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// One judge sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSample {
    pub score: f64,
    /// What the sample said: `pass` or `fail`.
    pub verdict: String,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptResult {
    /// 1-based.
    pub attempt: u32,
    pub outcome: Outcome,
    /// How the run ended; `None` when it never started.
    pub run_status: Option<RunStatus>,
    /// One line: why the attempt ended this way.
    pub reason: String,
    pub assertions: Vec<AssertionResult>,
    /// `provider:name`.
    pub model: Option<String>,
    pub turns: u32,
    pub tool_calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
    /// The whole attempt, wall clock: workspace, run, assertions.
    pub duration_ms: u64,
    /// The run itself (agent and checks), as the run measured it.
    pub run_ms: u64,
    /// Making the workspace (copy or checkout).
    pub setup_ms: u64,
    /// The paths the run changed in the workspace.
    #[serde(default)]
    pub changed: Vec<String>,
    /// The trace, relative to the results folder.
    pub trace: Option<String>,
    /// What the run changed in the workspace as a unified diff (secrets
    /// masked, capped), relative to the results folder; absent when it
    /// changed nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    pub started_at: String,
    /// Identifies the case definition and settings the attempt ran with;
    /// resuming re-runs attempts whose fingerprint changed.
    pub fingerprint: String,
    /// The hashes the fingerprint is made of, by part (job, skill files,
    /// fixture, model, …), so a re-run can say which changed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fingerprint_parts: BTreeMap<String, String>,
    /// Stopped by SIGINT/SIGTERM before it finished (an `error`); never
    /// saved for resuming, so the next run into the same folder re-runs it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub interrupted: bool,
    /// A sequence replay's drift from its recording (`replay.drift`);
    /// absent for live runs and strict replays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_drift: Option<ReplayDrift>,
    /// The run's structured result (with a `result_schema` or
    /// `--result-schema`), as in its `run.completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// What the `judge:` assertions' models used, apart from the agent's
    /// figures above; absent without judges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeTotals>,
}

/// Tokens and cost of judge calls, kept apart from the agent's (they never
/// count against the run's budget).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeTotals {
    pub calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `None` when any judge model's price is unknown.
    pub cost_usd: Option<f64>,
}

impl JudgeTotals {
    /// The sum of `totals`; `None` when there are none.
    pub fn sum<'a>(totals: impl Iterator<Item = &'a JudgeTotals>) -> Option<JudgeTotals> {
        let mut sum: Option<JudgeTotals> = None;
        for t in totals {
            let s = sum.get_or_insert_with(|| JudgeTotals {
                cost_usd: Some(0.0),
                ..JudgeTotals::default()
            });
            s.calls += t.calls;
            s.input_tokens += t.input_tokens;
            s.output_tokens += t.output_tokens;
            s.cost_usd = s.cost_usd.zip(t.cost_usd).map(|(a, b)| a + b);
        }
        sum
    }
}

fn is_false(value: &bool) -> bool {
    !value
}

/// The attempts' drift added up: turns, drifted turns and parts summed;
/// the first drifted turn is the earliest of any attempt.
fn total_drift(attempts: &[AttemptResult]) -> Option<ReplayDrift> {
    let mut drifts = attempts.iter().filter_map(|a| a.replay_drift.as_ref());
    let mut total = drifts.next()?.clone();
    for drift in drifts {
        total.turns += drift.turns;
        total.drifted += drift.drifted;
        total.recorded += drift.recorded;
        for (part, turns) in &drift.parts {
            *total.parts.entry(part.clone()).or_default() += turns;
        }
        total.first_drifted_turn = match (total.first_drifted_turn, drift.first_drifted_turn) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    Some(total)
}

/// A case over all its attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    Passed,
    Failed,
    Error,
}

impl CaseStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub name: String,
    /// The model the case ran against when `--model` was given several
    /// times: the same case then appears once per model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Position in the suite file.
    pub index: usize,
    pub status: CaseStatus,
    /// Attempts that ran to a verdict disagree.
    pub flaky: bool,
    pub min_pass_rate: f64,
    pub attempts_passed: u32,
    pub attempts_failed: u32,
    pub attempts_errored: u32,
    /// Passed / (passed + failed); errors do not count.
    pub pass_rate: f64,
    /// The Wilson score interval of `pass_rate` (95% unless
    /// `--regression-confidence` says otherwise); only with 2 or more
    /// attempts that reached a verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_rate_ci: Option<Interval>,
    pub pass_at_1: f64,
    /// k = the attempts that ran to a verdict.
    pub pass_at_k: f64,
    pub pass_pow_k: f64,
    pub k: u32,
    pub turns: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Sum over attempts; `None` when any price is unknown.
    pub cost_usd: Option<f64>,
    /// Sum over attempts.
    pub duration_ms: u64,
    /// The sequence replays' drift over all attempts; absent when no
    /// attempt was a sequence replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_drift: Option<ReplayDrift>,
    /// The judges' use over all attempts; absent without judges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeTotals>,
    pub attempts: Vec<AttemptResult>,
}

/// The confidence of the intervals until `--regression-confidence` sets another.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// The Wilson interval of `passed` of `n`, or `None` below two attempts,
/// where an interval says nothing a single verdict does not.
fn interval(passed: u32, n: u32, confidence: f64) -> Option<Interval> {
    if n < 2 {
        None
    } else {
        wilson(passed, n, confidence)
    }
}

/// Longest part of an assertion's message quoted where it failed.
const SEEN_CHARS: usize = 160;

impl AttemptResult {
    /// What failed: a headline (``1 of 3 assertions failed:``) and each
    /// failed assertion with the first line of what it saw
    /// (`` `status: passed` saw the run failed (…)``).
    pub fn failed_assertions(&self) -> (String, Vec<String>) {
        let failed = self.assertions.iter().filter(|a| !a.passed);
        let noun = match self.assertions.len() {
            1 => "assertion",
            _ => "assertions",
        };
        let headline = format!(
            "{} of {} {noun} failed:",
            failed.clone().count(),
            self.assertions.len()
        );
        let each = failed.map(|a| {
            let name = a.name.replace('\n', " ");
            let seen = a.message.as_deref().and_then(|m| m.lines().next());
            match seen.map(str::trim).filter(|m| !m.is_empty()) {
                Some(seen) => format!(
                    "`{}` saw {}",
                    name.trim(),
                    crate::inert::clip(seen, SEEN_CHARS)
                ),
                None => format!("`{}`", name.trim()),
            }
        });
        (headline, each.collect())
    }
}

impl CaseResult {
    /// Summarize `attempts` (sorted by attempt number here). A case with any
    /// errored attempt is an error: its figures are incomplete until
    /// `--retry-errors` re-runs them.
    pub fn new(
        name: &str,
        index: usize,
        min_pass_rate: f64,
        mut attempts: Vec<AttemptResult>,
    ) -> CaseResult {
        attempts.sort_by_key(|a| a.attempt);
        let count = |o: Outcome| attempts.iter().filter(|a| a.outcome == o).count() as u32;
        let (passed, failed, errored) = (
            count(Outcome::Passed),
            count(Outcome::Failed),
            count(Outcome::Error),
        );
        let n = passed + failed;
        let pass_rate = if n == 0 {
            0.0
        } else {
            f64::from(passed) / f64::from(n)
        };
        let status = if errored > 0 || n == 0 {
            CaseStatus::Error
        } else if pass_rate + 1e-9 >= min_pass_rate {
            CaseStatus::Passed
        } else {
            CaseStatus::Failed
        };
        let cost_usd = attempts
            .iter()
            .map(|a| a.cost_usd)
            .sum::<Option<f64>>()
            .filter(|_| !attempts.is_empty());
        CaseResult {
            name: name.to_string(),
            model: None,
            index,
            status,
            flaky: passed > 0 && failed > 0,
            min_pass_rate,
            attempts_passed: passed,
            attempts_failed: failed,
            attempts_errored: errored,
            pass_rate,
            pass_rate_ci: interval(passed, n, DEFAULT_CONFIDENCE),
            pass_at_1: pass_at_k(n, passed, 1),
            pass_at_k: pass_at_k(n, passed, n),
            pass_pow_k: pass_pow_k(n, passed, n),
            k: n,
            turns: attempts.iter().map(|a| a.turns).sum(),
            input_tokens: attempts.iter().map(|a| a.input_tokens).sum(),
            output_tokens: attempts.iter().map(|a| a.output_tokens).sum(),
            cost_usd,
            duration_ms: attempts.iter().map(|a| a.duration_ms).sum(),
            replay_drift: total_drift(&attempts),
            judge: JudgeTotals::sum(attempts.iter().filter_map(|a| a.judge.as_ref())),
            attempts,
        }
    }

    /// The same case, run against `model` (one of several compared).
    pub fn for_model(mut self, model: Option<String>) -> CaseResult {
        self.model = model;
        self
    }

    /// Mean per attempt that ran (errored ones included: they cost too).
    pub fn per_attempt(&self, total: f64) -> f64 {
        if self.attempts.is_empty() {
            0.0
        } else {
            total / self.attempts.len() as f64
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteResult {
    pub name: String,
    pub file: String,
    /// The gate: the share of cases that must pass.
    pub min_pass_rate: f64,
    pub cases_total: u32,
    pub cases_passed: u32,
    pub cases_failed: u32,
    pub cases_errored: u32,
    pub cases_flaky: u32,
    /// Passed cases / all cases (an errored case is not a pass).
    pub pass_rate: f64,
    /// Means over the cases that ran to a verdict.
    pub pass_at_1: f64,
    pub pass_at_k: f64,
    pub pass_pow_k: f64,
    /// Attempts passed and reaching a verdict, all cases pooled.
    #[serde(default)]
    pub attempts_passed: u32,
    #[serde(default)]
    pub attempts_judged: u32,
    /// The Wilson interval of `attempts_passed / attempts_judged`, when a
    /// case ran two or more attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts_pass_rate_ci: Option<Interval>,
    pub gate_passed: bool,
    pub turns: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
    /// The judges' use over all cases; absent without judges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeTotals>,
    /// Mean per case.
    pub mean_duration_ms: u64,
    pub cases: Vec<CaseResult>,
}

impl SuiteResult {
    pub fn new(name: &str, file: &str, min_pass_rate: f64, mut cases: Vec<CaseResult>) -> Self {
        cases.sort_by(|a, b| (a.index, &a.model).cmp(&(b.index, &b.model)));
        let count = |s: CaseStatus| cases.iter().filter(|c| c.status == s).count() as u32;
        let total = cases.len() as u32;
        let passed = count(CaseStatus::Passed);
        let pass_rate = if total == 0 {
            1.0
        } else {
            f64::from(passed) / f64::from(total)
        };
        let judged: Vec<&CaseResult> = cases.iter().filter(|c| c.k > 0).collect();
        let mean = |f: fn(&CaseResult) -> f64| {
            if judged.is_empty() {
                0.0
            } else {
                judged.iter().map(|c| f(c)).sum::<f64>() / judged.len() as f64
            }
        };
        let attempts_passed = cases.iter().map(|c| c.attempts_passed).sum();
        let attempts_judged = cases.iter().map(|c| c.k).sum();
        let repeated = cases.iter().any(|c| c.k >= 2);
        SuiteResult {
            name: name.to_string(),
            file: file.to_string(),
            attempts_passed,
            attempts_judged,
            attempts_pass_rate_ci: interval(attempts_passed, attempts_judged, DEFAULT_CONFIDENCE)
                .filter(|_| repeated),
            min_pass_rate,
            cases_total: total,
            cases_passed: passed,
            cases_failed: count(CaseStatus::Failed),
            cases_errored: count(CaseStatus::Error),
            cases_flaky: cases.iter().filter(|c| c.flaky).count() as u32,
            pass_rate,
            pass_at_1: mean(|c| c.pass_at_1),
            pass_at_k: mean(|c| c.pass_at_k),
            pass_pow_k: mean(|c| c.pass_pow_k),
            gate_passed: pass_rate + 1e-9 >= min_pass_rate,
            turns: cases.iter().map(|c| c.turns).sum(),
            input_tokens: cases.iter().map(|c| c.input_tokens).sum(),
            output_tokens: cases.iter().map(|c| c.output_tokens).sum(),
            cost_usd: cases.iter().map(|c| c.cost_usd).sum::<Option<f64>>(),
            judge: JudgeTotals::sum(cases.iter().filter_map(|c| c.judge.as_ref())),
            mean_duration_ms: if total == 0 {
                0
            } else {
                cases.iter().map(|c| c.duration_ms).sum::<u64>() / u64::from(total)
            },
            cases,
        }
    }
}

/// The whole `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub version: u32,
    pub agentci_version: String,
    /// `I/N` when this is one shard; `None` for a whole or merged run.
    pub shard: Option<String>,
    /// Attempts per case asked for.
    pub repeat: u32,
    pub suites: Vec<SuiteResult>,
    /// Set when a signal stopped the evaluation: what was cut short. Cases
    /// with no attempt that finished or was interrupted are left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// What regressed against `--baseline` (empty without one).
    #[serde(default)]
    pub regressions: Vec<Regression>,
    /// Drops against the baseline that are not significant at
    /// `--regression-confidence`: reported, but they do not fail the job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub possible_regressions: Vec<Regression>,
    /// Per suite, when `--repeat` is too low to see a 20-point drop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeat_advice: Vec<RepeatAdvice>,
    /// How many attempts were kept from an earlier run into the same folder,
    /// how many ran, and why kept ones ran again; `None` for merged shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<Reuse>,
}

/// What a run into an existing `--out` kept and what it ran again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reuse {
    /// Attempts kept from an earlier run.
    pub kept: usize,
    /// Attempts run now (new ones and re-runs).
    pub ran: usize,
    /// Attempts an earlier run had finished that ran again, grouped by why.
    #[serde(default)]
    pub rerun: Vec<Rerun>,
}

/// Attempts that ran again for one reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rerun {
    pub attempts: usize,
    /// "the skill changed (skills/fix/SKILL.md)", "--fresh", …
    pub why: String,
}

impl Reuse {
    /// Count one more re-run for `why`, next to earlier ones for the same reason.
    pub fn add_rerun(&mut self, why: String) {
        match self.rerun.iter_mut().find(|r| r.why == why) {
            Some(rerun) => rerun.attempts += 1,
            None => self.rerun.push(Rerun { attempts: 1, why }),
        }
    }
}

impl Results {
    pub fn new(shard: Option<String>, repeat: u32, suites: Vec<SuiteResult>) -> Results {
        Results {
            version: RESULTS_VERSION,
            agentci_version: env!("CARGO_PKG_VERSION").to_string(),
            shard,
            repeat,
            suites,
            interrupted: None,
            regressions: Vec::new(),
            possible_regressions: Vec::new(),
            repeat_advice: Vec::new(),
            reuse: None,
        }
    }

    /// Recompute every interval at `confidence` (0.95 for 95%).
    pub fn set_confidence(&mut self, confidence: f64) {
        for suite in &mut self.suites {
            for case in &mut suite.cases {
                case.pass_rate_ci = interval(case.attempts_passed, case.k, confidence);
            }
            if suite.attempts_pass_rate_ci.is_some() {
                suite.attempts_pass_rate_ci =
                    interval(suite.attempts_passed, suite.attempts_judged, confidence);
            }
        }
    }

    /// Every suite's gate passed.
    pub fn gate_passed(&self) -> bool {
        self.suites.iter().all(|s| s.gate_passed)
    }

    /// The models compared side by side, in the order first seen; empty
    /// when each case ran against one model.
    pub fn compared_models(&self) -> Vec<String> {
        let mut models: Vec<String> = Vec::new();
        for case in self.suites.iter().flat_map(|s| &s.cases) {
            if let Some(model) = &case.model
                && !models.contains(model)
            {
                models.push(model.clone());
            }
        }
        models
    }

    /// Passed cases over all cases, every suite together.
    pub fn pass_rate(&self) -> f64 {
        let total: u32 = self.suites.iter().map(|s| s.cases_total).sum();
        let passed: u32 = self.suites.iter().map(|s| s.cases_passed).sum();
        if total == 0 {
            1.0
        } else {
            f64::from(passed) / f64::from(total)
        }
    }

    pub fn read(path: &Path) -> Result<Results, ResultsError> {
        let text = std::fs::read_to_string(path).map_err(|source| ResultsError::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
        let results: Results =
            serde_json::from_str(&text).map_err(|source| ResultsError::NotResults {
                path: path.to_path_buf(),
                source,
            })?;
        if results.version != RESULTS_VERSION {
            return Err(ResultsError::Version {
                path: path.to_path_buf(),
                version: results.version,
            });
        }
        Ok(results)
    }

    /// Write the results as pretty JSON to `out`, a file in an output
    /// folder opened by descriptor (a link at its name is replaced).
    pub fn write_to(&self, out: &crate::safe_file::OutputFile) -> Result<(), ResultsError> {
        let text = serde_json::to_string_pretty(self).map_err(ResultsError::Serialize)?;
        // Made from attempts whose records were masked by their runs.
        let text = crate::redact::Masked::from_masked_parts((text + "\n").into_bytes());
        out.replace(&text, None)
            .map_err(|source| ResultsError::Unwritable {
                path: out.path(),
                source,
            })
    }

    /// Join shard results: suites by name, cases by name; the same case in
    /// two inputs is a mistake (overlapping shards or one folder given twice).
    pub fn merge(parts: Vec<Results>) -> Result<Results, ResultsError> {
        check_shards(&parts)?;
        // An interrupted shard stays visible in the merged report.
        let interrupted: Vec<String> = parts
            .iter()
            .filter_map(|p| {
                let note = p.interrupted.as_ref()?;
                Some(match &p.shard {
                    Some(shard) => format!("shard {shard}: {note}"),
                    None => note.clone(),
                })
            })
            .collect();
        let repeat = parts.iter().map(|p| p.repeat).max().unwrap_or(1);
        let mut suites: Vec<(String, String, f64, Vec<CaseResult>)> = Vec::new();
        for part in parts {
            for suite in part.suites {
                let slot = match suites.iter().position(|s| s.0 == suite.name) {
                    Some(i) => i,
                    None => {
                        suites.push((
                            suite.name.clone(),
                            suite.file.clone(),
                            suite.min_pass_rate,
                            Vec::new(),
                        ));
                        suites.len() - 1
                    }
                };
                for case in suite.cases {
                    if suites[slot]
                        .3
                        .iter()
                        .any(|c| c.name == case.name && c.model == case.model)
                    {
                        return Err(ResultsError::Duplicate {
                            suite: suite.name,
                            case: case.name,
                        });
                    }
                    let case =
                        CaseResult::new(&case.name, case.index, case.min_pass_rate, case.attempts)
                            .for_model(case.model);
                    suites[slot].3.push(case);
                }
            }
        }
        let suites = suites
            .into_iter()
            .map(|(name, file, gate, cases)| SuiteResult::new(&name, &file, gate, cases))
            .collect();
        let mut merged = Results::new(None, repeat, suites);
        merged.interrupted = (!interrupted.is_empty()).then(|| interrupted.join("; "));
        Ok(merged)
    }
}

/// Shard results must come as a full set: a missing shard would merge into
/// a smaller suite that may well pass its gate.
fn check_shards(parts: &[Results]) -> Result<(), ResultsError> {
    let shards: Vec<Shard> = parts
        .iter()
        .filter_map(|p| p.shard.as_deref()?.parse().ok())
        .collect();
    let Some(first) = shards.first() else {
        return Ok(());
    };
    if let Some(other) = shards.iter().find(|s| s.count != first.count) {
        return Err(ResultsError::MixedSplits {
            first: *first,
            other: *other,
        });
    }
    for (i, shard) in shards.iter().enumerate() {
        if shards[..i].contains(shard) {
            return Err(ResultsError::ShardTwice(*shard));
        }
    }
    let missing: Vec<String> = (1..=first.count)
        .filter(|i| !shards.iter().any(|s| s.index == *i))
        .map(|i| format!("{i}/{}", first.count))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ResultsError::ShardsMissing {
            missing: missing.join(", "),
        })
    }
}
