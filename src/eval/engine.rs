//! Running an evaluation: pick the cases (`--filter`, `--shard`), skip the
//! attempts a previous run into the same folder already finished, run the
//! rest in parallel (`--jobs`) on the caller's tokio runtime, and summarize
//! everything into [`Results`]. A crashed attempt is recorded as an error
//! and never stops the others.
//!
//! Each finished attempt is written to `OUT/<suite>/<case>/<n>/attempt.json`
//! at once, so a killed evaluation resumes where it stopped. Showing
//! progress is the [`EvalObserver`]'s job; this module never prints.
//!
//! When the settings' cancel signal fires (SIGINT/SIGTERM), attempts not
//! yet started never start, running ones end `interrupted` and are reported
//! as errors but not saved, so resuming re-runs them; [`Results::interrupted`]
//! says what was cut short.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::GlobMatcher;
use tokio::sync::oneshot;

use super::attempt::{AttemptPlan, AttemptSettings, run_attempt};
use super::results::{AttemptResult, CaseResult, Outcome, Results, Reuse, SuiteResult};
use super::reuse::{Decision, Hashes, decide};
use super::shard::Shard;
use super::suite::SuiteSpec;

pub const ATTEMPT_FILE: &str = "attempt.json";

#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub settings: AttemptSettings,
    /// The results folder, absolute.
    pub out_dir: PathBuf,
    /// Attempts run at once (at least 1).
    pub jobs: usize,
    /// Attempts per case (at least 1).
    pub repeat: u32,
    pub shard: Option<Shard>,
    /// Matched against `CASE` and `SUITE/CASE`.
    pub filter: Option<GlobMatcher>,
    /// Re-run attempts that errored in a previous run into the same folder.
    pub retry_errors: bool,
    /// `--fresh`: re-run every attempt, keeping nothing from a previous run.
    pub fresh: bool,
    /// `--min-pass-rate`, beating every suite's `min_pass_rate`.
    pub min_pass_rate: Option<f64>,
    /// Models compared side by side (`--model` given several times): each
    /// case runs against each, and `settings.model` is ignored. Empty (or
    /// one) for a usual run.
    pub models: Vec<String>,
    /// The evaluation's spans, when a collector is named.
    pub spans: Option<Arc<super::spans::EvalSpans>>,
}

/// Told about progress; implemented by the CLI's display.
pub trait EvalObserver: Send + Sync {
    /// Before anything runs: attempts to run, attempts kept from before, and
    /// why attempts an earlier run had finished run again.
    fn planned(&self, reuse: &Reuse);
    fn started(&self, suite: &str, case: &str, attempt: u32);
    fn finished(&self, suite: &str, case: &str, result: &AttemptResult);
}

/// The `(suite, case)` positions selected by `filter` and then `shard`.
pub fn select_cases(
    suites: &[SuiteSpec],
    filter: Option<&GlobMatcher>,
    shard: Option<Shard>,
) -> Vec<(usize, usize)> {
    let matching: Vec<(usize, usize)> = suites
        .iter()
        .enumerate()
        .flat_map(|(s, suite)| {
            suite.cases.iter().enumerate().filter_map(move |(c, case)| {
                let full = format!("{}/{}", suite.name, case.name);
                let keep = filter.is_none_or(|f| f.is_match(&case.name) || f.is_match(&full));
                keep.then_some((s, c))
            })
        })
        .collect();
    match shard {
        Some(shard) => shard
            .select(matching.len())
            .into_iter()
            .filter_map(|j| matching.get(j).copied())
            .collect(),
        None => matching,
    }
}

fn attempt_dir(out: &Path, suite: &str, case: &str, model: Option<&str>, n: u32) -> PathBuf {
    let case_dir = out.join(suite).join(case);
    match model {
        // `openai:gpt-4o` → `openai_gpt-4o`: one folder level, on every OS.
        Some(model) => case_dir
            .join(
                model
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect::<String>(),
            )
            .join(n.to_string()),
        None => case_dir.join(n.to_string()),
    }
}

struct Job {
    suite: usize,
    case: usize,
    plan: AttemptPlan,
    settings: Arc<AttemptSettings>,
    /// The case as progress names it: `case [model]` when models are compared.
    label: String,
}

/// One case under one compared model (`None`: the usual single model),
/// as indices into the suites.
type Slot = ((usize, usize), Option<String>);

/// What is left to run, next to what an earlier run already finished.
struct Planned {
    slots: Vec<Slot>,
    /// Per slot, the attempts kept from an earlier run into the same folder.
    done: Vec<Vec<AttemptResult>>,
    /// The attempts to run, each with its slot.
    jobs: Vec<(usize, Job)>,
    /// How many were kept, how many run, and why kept ones run again.
    reuse: Reuse,
}

/// Run the selected cases of `suites` and summarize them. Results files are
/// written by the caller ([`super::report::write_all`]).
pub async fn run_eval(
    suites: Arc<Vec<SuiteSpec>>,
    options: &EvalOptions,
    observer: Arc<dyn EvalObserver>,
) -> Results {
    let repeat = options.repeat.max(1);
    let Planned {
        slots,
        mut done,
        jobs,
        reuse,
    } = plan(&suites, options, repeat);
    observer.planned(&reuse);

    let permits = Arc::new(tokio::sync::Semaphore::new(options.jobs.max(1)));
    let mut turn: Option<oneshot::Receiver<()>> = None;
    let handles: Vec<_> = jobs
        .into_iter()
        .map(|(slot, job)| {
            let plan = job.plan.clone();
            let (started, next_turn) = oneshot::channel();
            let queue = Queue {
                permits: Arc::clone(&permits),
                turn: turn.replace(next_turn),
                started,
            };
            let handle = spawn_attempt(&suites, queue, &observer, options.spans.clone(), job);
            (slot, plan, handle)
        })
        .collect();
    let (mut stopped, mut not_started) = (0, 0);
    for (slot, plan, handle) in handles {
        let result = match handle.await {
            Ok(Some(result)) => result,
            Ok(None) => {
                not_started += 1;
                continue;
            }
            Err(e) => save(&plan, crashed(&plan, &e.to_string())),
        };
        if result.interrupted {
            stopped += 1;
        }
        let ((s, c), model) = &slots[slot];
        let (suite, case) = (&suites[*s], &suites[*s].cases[*c]);
        observer.finished(&suite.name, &label(&case.name, model.as_deref()), &result);
        done[slot].push(result);
    }

    let suite_results = summarize(&suites, &slots, done, options);
    let mut results = Results::new(options.shard.map(|s| s.to_string()), repeat, suite_results);
    results.reuse = Some(reuse);
    results.interrupted = options.settings.cancel.reason().map(|reason| {
        format!(
            "{reason}: {stopped} attempts stopped (errors), {not_started} not started (left \
             out); run again with the same --out to finish them"
        )
    });
    results
}

/// The selected cases times the compared models times `repeat`, split into
/// attempts an earlier run already finished (with the same fingerprint) and
/// attempts to run.
fn plan(suites: &[SuiteSpec], options: &EvalOptions, repeat: u32) -> Planned {
    let selected = select_cases(suites, options.filter.as_ref(), options.shard);
    // One slot per case and compared model; `None`: the usual single model.
    let models: Vec<Option<String>> = if options.models.len() > 1 {
        options.models.iter().cloned().map(Some).collect()
    } else {
        vec![None]
    };
    let slots: Vec<Slot> = selected
        .iter()
        .flat_map(|&at| models.iter().map(move |m| (at, m.clone())))
        .collect();
    let mut done: Vec<Vec<AttemptResult>> = vec![Vec::new(); slots.len()];
    let mut jobs = Vec::new();
    let mut reuse = Reuse::default();
    let mut hashes = Hashes::default();
    for (slot, ((s, c), model)) in slots.iter().enumerate() {
        let (suite, case) = (&suites[*s], &suites[*s].cases[*c]);
        let mut settings = options.settings.clone();
        if model.is_some() {
            settings.model = model.clone();
        }
        let settings = Arc::new(settings);
        for n in 1..=repeat {
            let fingerprint = hashes.fingerprint(suite, case, n, &settings, &options.out_dir);
            let dir = attempt_dir(
                &options.out_dir,
                &suite.name,
                &case.name,
                model.as_deref(),
                n,
            );
            let rerun = match decide(
                &dir.join(ATTEMPT_FILE),
                &fingerprint,
                options.retry_errors,
                options.fresh,
            ) {
                Decision::Keep(result) => {
                    reuse.kept += 1;
                    done[slot].push(*result);
                    continue;
                }
                Decision::Run { rerun } => rerun,
            };
            reuse.ran += 1;
            if let Some(why) = rerun {
                reuse.add_rerun(why);
            }
            jobs.push((
                slot,
                Job {
                    suite: *s,
                    case: *c,
                    plan: AttemptPlan {
                        attempt: n,
                        dir,
                        out_root: options.out_dir.clone(),
                        fingerprint,
                        trace_parent: None,
                    },
                    settings: Arc::clone(&settings),
                    label: label(&case.name, model.as_deref()),
                },
            ));
        }
    }
    Planned {
        slots,
        done,
        jobs,
        reuse,
    }
}

/// An attempt's place in the queue for a `--jobs` permit. Attempts take
/// permits in the order the plan lists them: each waits until the one
/// before it has its permit (the semaphore is first come, first served),
/// so `--jobs 1` runs cases in the suite's order however the runtime
/// schedules the tasks.
struct Queue {
    permits: Arc<tokio::sync::Semaphore>,
    /// Closed once the attempt before this one holds its permit or ended.
    turn: Option<oneshot::Receiver<()>>,
    /// Closed once this attempt holds its permit, for the next one.
    started: oneshot::Sender<()>,
}

/// Runs one attempt on the runtime once a `--jobs` permit is free; `None`
/// when a signal came first and the attempt never started.
fn spawn_attempt(
    suites: &Arc<Vec<SuiteSpec>>,
    queue: Queue,
    observer: &Arc<dyn EvalObserver>,
    spans: Option<Arc<super::spans::EvalSpans>>,
    mut job: Job,
) -> tokio::task::JoinHandle<Option<AttemptResult>> {
    let (suites, settings, observer) = (
        Arc::clone(suites),
        Arc::clone(&job.settings),
        Arc::clone(observer),
    );
    let cancel = settings.cancel.clone();
    tokio::spawn(async move {
        let Queue {
            permits,
            turn,
            started,
        } = queue;
        // `None`: a signal came first, the attempt never started.
        let _permit = tokio::select! {
            biased;
            _ = cancel.cancelled() => return None,
            permit = async {
                if let Some(turn) = turn {
                    // An error only says the attempt before ended: the turn is ours.
                    let _ = turn.await;
                }
                permits.acquire_owned().await
            } => permit.ok(),
        };
        drop(started);
        let suite = &suites[job.suite];
        let case = &suite.cases[job.case];
        observer.started(&suite.name, &job.label, job.plan.attempt);
        let span = spans
            .as_ref()
            .map(|spans| spans.attempt_started(&suite.name, &job.label, job.plan.attempt));
        job.plan.trace_parent = span.as_ref().map(crate::telemetry::OpenSpan::trace_parent);
        // A result left from an earlier try must not survive a crash of this one.
        let _ = std::fs::remove_file(job.plan.dir.join(ATTEMPT_FILE));
        let result = run_attempt(suite, case, &job.plan, &settings).await;
        if let Some(span) = &span {
            super::spans::EvalSpans::attempt_finished(span, &result);
        }
        Some(if result.interrupted {
            result
        } else {
            save(&job.plan, result)
        })
    })
}

/// Each slot's attempts as a case result, grouped by suite under its gate;
/// suites none of whose cases ran are left out.
fn summarize(
    suites: &[SuiteSpec],
    slots: &[Slot],
    done: Vec<Vec<AttemptResult>>,
    options: &EvalOptions,
) -> Vec<SuiteResult> {
    let mut per_suite: Vec<Vec<CaseResult>> = vec![Vec::new(); suites.len()];
    for (slot, attempts) in done.into_iter().enumerate() {
        // Only after a signal: none of the case's attempts ran.
        if attempts.is_empty() {
            continue;
        }
        let ((s, c), model) = &slots[slot];
        let case = &suites[*s].cases[*c];
        per_suite[*s].push(
            CaseResult::new(
                &case.name,
                case.index,
                case.min_pass_rate.unwrap_or(1.0),
                attempts,
            )
            .for_model(model.clone()),
        );
    }
    suites
        .iter()
        .zip(per_suite)
        .filter(|(_, cases)| !cases.is_empty())
        .map(|(suite, cases)| {
            let gate = options.min_pass_rate.or(suite.min_pass_rate).unwrap_or(1.0);
            SuiteResult::new(&suite.name, &suite.path.display().to_string(), gate, cases)
        })
        .collect()
}

fn label(case: &str, model: Option<&str>) -> String {
    match model {
        Some(model) => format!("{case} [{model}]"),
        None => case.to_string(),
    }
}

/// Write `attempt.json`; a result that cannot be saved is an error result.
fn save(plan: &AttemptPlan, mut result: AttemptResult) -> AttemptResult {
    let write = std::fs::create_dir_all(&plan.dir).and_then(|()| {
        let text = serde_json::to_string_pretty(&result).map_err(std::io::Error::other)?;
        // Made from the run's `run.completed` and the attempt's masked patch.
        let text = crate::redact::Masked::from_masked_parts(text.as_bytes());
        crate::safe_file::replace(&plan.dir.join(ATTEMPT_FILE), &text, None)
    });
    if let Err(e) = write {
        result.outcome = Outcome::Error;
        result.reason = format!(
            "cannot write {}: {e}",
            plan.dir.join(ATTEMPT_FILE).display()
        );
    }
    result
}

fn crashed(plan: &AttemptPlan, why: &str) -> AttemptResult {
    AttemptResult::errored(
        plan,
        format!("the attempt crashed: {why}"),
        crate::event::bus::now_rfc3339(),
    )
}
