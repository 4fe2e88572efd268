//! One attempt of one case, in process: a fresh workspace from the fixture,
//! the base job loaded with the case's overrides, a run through
//! [`crate::runner`] with its own trace and JUnit under the attempt's folder,
//! then the assertions. Every way this can go wrong becomes an `error`
//! result, never a panic or an early return that would stop other attempts.
//! A signal ([`AttemptSettings::cancel`]) ends the run `interrupted` or stops
//! the assertions; the attempt is then an `error` marked `interrupted`, and
//! its workspace is removed before it returns.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::assertions::{Facts, judge};
use super::attempt_patch;
use super::fingerprint::Fingerprint;
use super::fixture::{TempWorkspace, materialize};
use super::isolation::PrivateArea;
use super::judge::Judging;
use super::judge::bench::{Bench, Source};
use super::judge::material::Material;
use super::results::{AttemptResult, Outcome};
use super::snapshot::Snapshot;
use super::suite::{CaseSpec, SuiteSpec};
use crate::agent::CancelSignal;
use crate::event::bus::{EventSink, SinkError};
use crate::event::{Event, EventKind, RunCompleted, RunStatus};
use crate::job::{Given, LoadOptions, Overrides, ProviderKind};
use crate::process::{ProcessRunner, RunnerError};
use crate::provider::replay_drift::ReplayDrift;
use crate::run_env::RunEnv;
use crate::runner::secrets::run_redactor;
use crate::runner::{self, Prepared, RunOptions, RunReport, RunnerExtra};
use crate::sink::FileBase;

/// Settings shared by every attempt of an evaluation.
#[derive(Debug, Clone, Default)]
pub struct AttemptSettings {
    /// Relative paths on the command line are resolved against it.
    pub cwd: PathBuf,
    /// Where temporary workspaces are made.
    pub temp_dir: PathBuf,
    /// `--model PROVIDER:NAME`: run live with this model, beating the case's.
    pub model: Option<String>,
    /// `--base-url URL` for live runs.
    pub base_url: Option<String>,
    /// `--record`: run live and save each attempt's cassette.
    pub record: bool,
    /// `--replay-match`: how replayed attempts match requests.
    pub replay_match: Option<String>,
    /// `--reasoning-effort` and `--thinking-budget` for live runs.
    pub reasoning_effort: Option<String>,
    pub thinking_budget: Option<String>,
    /// `--skills-path`.
    pub skills_path: Vec<PathBuf>,
    /// `--result-schema FILE` (absolute): every case's job gets this schema.
    pub result_schema: Option<PathBuf>,
    /// Fired by SIGINT/SIGTERM: running attempts stop, no new one starts.
    pub cancel: CancelSignal,
    /// agentci's environment, snapshotted by the CLI: every attempt's run,
    /// assertions and judges read their variables from it.
    pub env: RunEnv,
}

/// Where one attempt's files go and what identifies it.
#[derive(Debug, Clone)]
pub struct AttemptPlan {
    pub attempt: u32,
    /// `OUT/<suite>/<case>/<attempt>/`.
    pub dir: PathBuf,
    /// The results folder, for paths relative to it.
    pub out_root: PathBuf,
    pub fingerprint: Fingerprint,
    /// The attempt's span, which its run's exported trace nests under.
    pub trace_parent: Option<crate::telemetry::TraceParent>,
}

/// The cassette attempt `n` replays (`None`: the case runs live).
pub fn replay_cassette(case: &CaseSpec, settings: &AttemptSettings, n: u32) -> Option<PathBuf> {
    if settings.record || settings.model.is_some() || case.cassettes.is_empty() {
        return None;
    }
    let index = (n.saturating_sub(1) as usize) % case.cassettes.len();
    case.cassettes.get(index).cloned()
}

/// Where `--record` saves attempt `n`: the case's cassette for that
/// attempt, else `cassettes/<case>.jsonl` (`<case>-<n>.jsonl` after the first).
pub fn record_cassette(case: &CaseSpec, n: u32) -> PathBuf {
    if let Some(path) = case.cassettes.get(n.saturating_sub(1) as usize) {
        return path.clone();
    }
    if n <= 1 {
        return case.default_cassette.clone();
    }
    let stem = case.default_cassette.with_extension("");
    PathBuf::from(format!("{}-{n}.jsonl", stem.display()))
}

impl AttemptResult {
    /// An attempt that has not produced anything yet: an error with `reason`
    /// until the run and its assertions say otherwise.
    pub fn errored(plan: &AttemptPlan, reason: String, started_at: String) -> AttemptResult {
        AttemptResult {
            attempt: plan.attempt,
            outcome: Outcome::Error,
            run_status: None,
            reason,
            assertions: Vec::new(),
            model: None,
            turns: 0,
            tool_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: None,
            duration_ms: 0,
            run_ms: 0,
            setup_ms: 0,
            changed: Vec::new(),
            trace: None,
            patch: None,
            started_at,
            fingerprint: plan.fingerprint.total.clone(),
            fingerprint_parts: plan.fingerprint.parts.clone(),
            interrupted: false,
            replay_drift: None,
            result: None,
            judge: None,
        }
    }
}

/// Run one attempt to a result.
pub async fn run_attempt(
    suite: &SuiteSpec,
    case: &CaseSpec,
    plan: &AttemptPlan,
    settings: &AttemptSettings,
) -> AttemptResult {
    let started_at = crate::event::bus::now_rfc3339();
    let clock = Instant::now();
    let mut result = AttemptResult::errored(plan, String::new(), started_at);
    if let Err(reason) = run_into(&mut result, suite, case, plan, settings).await {
        result.outcome = Outcome::Error;
        result.reason = reason;
    }
    result.duration_ms = millis(clock.elapsed());
    result
}

async fn run_into(
    result: &mut AttemptResult,
    suite: &SuiteSpec,
    case: &CaseSpec,
    plan: &AttemptPlan,
    settings: &AttemptSettings,
) -> Result<(), String> {
    let setup = Instant::now();
    let (workspace, private, before) = make_workspace(case, settings).await?;
    result.setup_ms = millis(setup.elapsed());

    let prepared = prepare(suite, case, plan.attempt, settings, workspace.path())?;
    // exec, the checks and the `run:` assertions all get the attempt's own
    // temp and build-output folders (see `isolation`).
    let (job_env, _) = prepared.job.resolve_env(|name| settings.env.var(name));
    let own_env = private.env(|name| settings.env.var_os(name).map(Into::into), &job_env);
    let tool_calls = Arc::new(Mutex::new(Vec::new()));
    let drift = Arc::new(Mutex::new(None));
    let sinks: Vec<Box<dyn EventSink>> = vec![
        Box::new(ToolCallLog(Arc::clone(&tool_calls))),
        Box::new(DriftLog(Arc::clone(&drift))),
    ];
    let options = run_options(case, plan, settings, sinks, own_env.clone());
    let report = runner::run_prepared(&prepared, options)
        .await
        .map_err(|e| format!("the run could not start: {e}"))?;
    let completed = report.completed.clone();
    result.trace = Some(shown(&report.trace, &plan.out_root));
    take_run(result, &prepared, &completed);
    result.replay_drift = drift.lock().unwrap_or_else(|p| p.into_inner()).take();
    result.result = completed.result.clone();
    if completed.status == RunStatus::Interrupted {
        interrupted(result, &completed.reason);
        clean_up_now(workspace, private).await;
        return Ok(());
    }

    let root = workspace.path().to_path_buf();
    let after = tokio::task::spawn_blocking(move || Snapshot::take(&root))
        .await
        .map_err(|e| format!("reading the workspace crashed: {e}"))?
        .map_err(|e| e.to_string())?;
    result.changed = before.changed(&after);
    let (patch, diff) = write_patch(
        &before,
        workspace.path(),
        result,
        &prepared,
        plan,
        &settings.env,
    )
    .await?;
    result.patch = patch;
    let events = std::mem::take(&mut *tool_calls.lock().unwrap_or_else(|p| p.into_inner()));
    // Assertion commands run like the agent's: sandboxed, scrubbed
    // environment, secrets masked in what they print (it lands in
    // junit.xml, results.json and attempt.json).
    let processes = assertion_runner(&prepared, workspace.path(), &report, &own_env, settings)?;
    let secrets = processes.secrets().clone();
    let bench = Bench::new(
        prepared.job.model.clone(),
        judge_source(&prepared, case, plan, settings),
        workspace.path(),
        &settings.env,
    );
    let judging = Judging::new(
        Material {
            completed: &completed,
            calls: &events,
            diff: diff.as_deref(),
            after: &after,
            secrets: &secrets,
        },
        &bench,
    );
    let facts = Facts {
        processes: &processes,
        workspace: workspace.path(),
        completed: &completed,
        events: &events,
        changed: &result.changed,
        judging: Some(&judging),
    };
    // A `run:` assertion may take long (a test suite): a signal stops it too.
    let judged = tokio::select! {
        biased;
        reason = settings.cancel.cancelled() => Err(reason),
        assertions = judge(&case.assertions, &facts) => Ok(assertions),
    };
    let assertions = match judged {
        Ok(assertions) => assertions,
        Err(reason) => {
            interrupted(result, &reason);
            clean_up_now(workspace, private).await;
            return Ok(());
        }
    };
    result.assertions = assertions;
    result.judge = judging.totals();
    workspace.remove_in_background();
    remove_in_background(private);

    decide(result, &completed, &report);
    Ok(())
}

/// Where the attempt's judges get their model: the run's cassette when the
/// run replayed one, the cassette being recorded (after the run's
/// exchanges) under `--record`, else the model itself.
fn judge_source(
    prepared: &Prepared,
    case: &CaseSpec,
    plan: &AttemptPlan,
    settings: &AttemptSettings,
) -> Source {
    let model = &prepared.job.model;
    match (&model.cassette, model.provider) {
        (Some(cassette), ProviderKind::Replay) => Source::Replay(cassette.clone()),
        _ if settings.record => Source::Record(record_cassette(case, plan.attempt)),
        _ => Source::Live,
    }
}

/// Where the attempt's run writes, what observes it, and the environment its
/// commands get on top of the job's.
fn run_options(
    case: &CaseSpec,
    plan: &AttemptPlan,
    settings: &AttemptSettings,
    sinks: Vec<Box<dyn EventSink>>,
    extra_env: Vec<(String, String)>,
) -> RunOptions {
    RunOptions {
        out_dir: Some(plan.dir.clone()),
        record: settings.record.then(|| record_cassette(case, plan.attempt)),
        sinks,
        cancel: settings.cancel.clone(),
        junit_files: FileBase {
            cwd: settings.cwd.clone(),
            root: None,
        },
        extra_env,
        trace_parent: plan.trace_parent,
        env: settings.env.clone(),
        ..RunOptions::default()
    }
}

/// The case's fixture copied into a fresh workspace, the attempt's private
/// area, and the workspace as it was before the run (to tell what changed).
async fn make_workspace(
    case: &CaseSpec,
    settings: &AttemptSettings,
) -> Result<(TempWorkspace, PrivateArea, Snapshot), String> {
    let fixture = case.fixture.clone();
    let temp_dir = settings.temp_dir.clone();
    tokio::task::spawn_blocking(move || {
        let workspace = materialize(&fixture, &temp_dir).map_err(|e| e.to_string())?;
        let private = PrivateArea::create(&temp_dir).map_err(|e| e.to_string())?;
        let before = Snapshot::take(workspace.path()).map_err(|e| e.to_string())?;
        Ok::<(TempWorkspace, PrivateArea, Snapshot), String>((workspace, private, before))
    })
    .await
    .map_err(|e| format!("making the workspace crashed: {e}"))?
}

/// What the run reported, as the attempt's: status, reason, model and totals.
fn take_run(result: &mut AttemptResult, prepared: &Prepared, completed: &RunCompleted) {
    result.run_status = Some(completed.status);
    result.reason = completed.reason.clone();
    result.model = Some(format!(
        "{}:{}",
        prepared.job.model.provider.as_str(),
        prepared.job.model.name
    ));
    let totals = &completed.totals;
    result.turns = totals.turns;
    result.tool_calls = totals.tool_calls;
    result.input_tokens = totals.input_tokens;
    result.output_tokens = totals.output_tokens;
    result.cost_usd = totals.cost_usd;
    result.run_ms = totals.duration_ms;
}

/// The attempt's outcome from how the run ended and what the assertions
/// found; results that could not be written make it an error.
fn decide(result: &mut AttemptResult, completed: &RunCompleted, report: &RunReport) {
    // The provider or agentci failed: nothing the case asserts can be trusted.
    let infrastructure = matches!(
        completed.status,
        RunStatus::ProviderUnavailable | RunStatus::Error | RunStatus::Interrupted
    );
    result.outcome = if infrastructure {
        Outcome::Error
    } else if let Some(errored) = result.assertions.iter().find(|a| a.error) {
        // A judge that could not grade: the attempt says nothing either way.
        result.reason = format!(
            "`{}`: {}",
            errored.name,
            errored.message.as_deref().unwrap_or("errored")
        );
        Outcome::Error
    } else if result.assertions.iter().all(|a| a.passed) {
        Outcome::Passed
    } else {
        let (headline, failed) = result.failed_assertions();
        result.reason = format!("{headline} {}", failed.join("; "));
        Outcome::Failed
    };
    if let Some(error) = report.sink_errors.first() {
        result.outcome = Outcome::Error;
        result.reason = format!("cannot write the run's results: {error}");
    }
}

/// Write the attempt's changes to `changes.patch` in its folder (masked
/// like the trace), and return its path as results.json shows it and its
/// text (for the judges); `None` when the run changed nothing.
async fn write_patch(
    before: &Snapshot,
    workspace: &Path,
    result: &AttemptResult,
    prepared: &Prepared,
    plan: &AttemptPlan,
    env: &RunEnv,
) -> Result<(Option<String>, Option<String>), String> {
    if result.changed.is_empty() {
        return Ok((None, None));
    }
    let secrets = run_redactor(&prepared.job, |name| env.var(name));
    let (before, root, changed) = (
        before.clone(),
        workspace.to_path_buf(),
        result.changed.clone(),
    );
    let path = plan.dir.join(attempt_patch::PATCH_FILE);
    let target = path.clone();
    let text = tokio::task::spawn_blocking(move || {
        let text = attempt_patch::diff(&before, &root, &changed, &secrets);
        // `diff` masks with the run's redactor before it caps the patch.
        let masked = crate::redact::Masked::from_masked_parts(text.as_bytes());
        crate::safe_file::replace(&target, &masked, None).map(|()| text)
    })
    .await
    .map_err(|e| format!("writing the patch crashed: {e}"))?
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok((Some(shown(&path, &plan.out_root)), Some(text)))
}

/// Remove the workspace and the private area, and wait for it: an
/// interrupted attempt leaves nothing behind when the process exits.
async fn clean_up_now(workspace: TempWorkspace, private: PrivateArea) {
    workspace.remove_now().await;
    let _ = tokio::task::spawn_blocking(move || drop(private)).await;
}

/// Build output can be large: the private area is removed off the runtime,
/// like the workspace.
fn remove_in_background(private: PrivateArea) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(move || drop(private))),
        Err(_) => drop(private),
    }
}

/// The process runner for a case's `run:` assertions: the job's sandbox,
/// with the run's outputs read-only, and the run's secrets.
fn assertion_runner(
    prepared: &Prepared,
    workspace: &Path,
    report: &runner::RunReport,
    own_env: &[(String, String)],
    settings: &AttemptSettings,
) -> Result<ProcessRunner, String> {
    let job = &prepared.job;
    let extra = RunnerExtra {
        workspace: workspace.to_path_buf(),
        run_id: format!("{}-assertions", crate::runner::new_run_id()),
        protected: vec![
            report.run_dir.clone(),
            report.trace.clone(),
            report.junit.clone(),
        ],
        extra_env: own_env.to_vec(),
        ..RunnerExtra::default()
    };
    ProcessRunner::for_job(job, &settings.env, extra).map_err(|e| match e {
        RunnerError::TempFolder(e) => {
            format!("cannot create the assertions' temporary folder: {e}")
        }
        RunnerError::Writable(e) => e.in_file(&job.path),
        RunnerError::Proxy(e) => format!("cannot start the assertions' network proxy: {e}"),
    })
}

/// Mark an attempt stopped by a signal: an error that is not kept.
fn interrupted(result: &mut AttemptResult, reason: &str) {
    result.outcome = Outcome::Error;
    result.interrupted = true;
    result.reason = if reason.is_empty() {
        "interrupted".to_string()
    } else {
        reason.to_string()
    };
}

/// The base job with the case's overrides for attempt `attempt`, the
/// workspace being the temp copy (or, to fingerprint it, the fixture).
pub(super) fn prepare(
    suite: &SuiteSpec,
    case: &CaseSpec,
    attempt: u32,
    settings: &AttemptSettings,
    workspace: &Path,
) -> Result<Prepared, String> {
    let options = LoadOptions {
        cwd: settings.cwd.clone(),
        workspace: Some(workspace.to_path_buf()),
        skills_path: settings.skills_path.clone(),
        model: settings.model.clone().or_else(|| {
            // A replayed case keeps the job's model: the cassette stands in for it.
            replay_cassette(case, settings, attempt)
                .is_none()
                .then(|| case.model.clone())
                .flatten()
        }),
        base_url: replay_cassette(case, settings, attempt)
            .is_none()
            .then(|| settings.base_url.clone())
            .flatten(),
        replay: replay_cassette(case, settings, attempt),
        replay_match: settings.replay_match.clone(),
        reasoning_effort: settings.reasoning_effort.clone(),
        thinking_budget: settings.thinking_budget.clone(),
        overrides: case_overrides(case, settings),
        ..LoadOptions::default()
    };
    runner::prepare(&suite.job, &options, &settings.env).map_err(|e| {
        let problems: Vec<String> = e
            .diagnostics()
            .iter()
            .map(|d| d.with_severity().to_string())
            .collect();
        format!("cannot load the job: {}", problems.join("; "))
    })
}

/// The case's goal, vars and budget (each naming its place in the suite
/// file), and `--result-schema`: written into the raw job before it is
/// validated, as `--goal` and the budget flags are, so the job a case runs
/// passed every check.
fn case_overrides(case: &CaseSpec, settings: &AttemptSettings) -> Overrides {
    Overrides {
        result_schema: settings
            .result_schema
            .clone()
            .map(|file| Given::flag("--result-schema", file)),
        ..case.overrides.clone()
    }
}

/// Keeps the run's tool calls for `tool_called` / `tool_not_called`.
struct ToolCallLog(Arc<Mutex<Vec<Event>>>);

impl EventSink for ToolCallLog {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        if matches!(event.kind, EventKind::ToolCall { .. }) {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(event.clone());
        }
        Ok(())
    }
}

/// Keeps a sequence replay's `replay.drift` for the attempt's result.
struct DriftLog(Arc<Mutex<Option<ReplayDrift>>>);

impl EventSink for DriftLog {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        if let EventKind::ReplayDrift(drift) = &event.kind {
            *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(drift.clone());
        }
        Ok(())
    }
}

fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
