//! `agentci eval SUITE.yaml...`: load the suites, run their cases through
//! [`crate::eval`] with one progress display, write `results.json`,
//! `junit.xml` and `summary.md` into `--out`, compare with `--baseline`, and
//! turn the gates into an exit code: 0 every suite met its pass rate and
//! nothing regressed, 1 otherwise, 2 bad input. SIGINT/SIGTERM stop the
//! evaluation (see [`crate::eval::engine`]); the results of what finished
//! are still written, and the exit code is 130/143 (see [`super::signals`]).

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::agent::cancel_pair;
use crate::eval::attempt::record_cassette;
use crate::eval::cost_guard::{CostGuard, estimate};
use crate::eval::spans::EvalSpans;
use crate::eval::{
    AttemptSettings, EvalObserver, EvalOptions, Results, SuiteLoadOptions, SuiteSpec, Thresholds,
    compare, load_suite, run_eval, select_cases,
};
use crate::job::TelemetrySpec;
use crate::job::load::{check_base_url, parse_model_flag};
use crate::telemetry::{OtlpTarget, TraceParent};

use super::args::{BaselineArgs, EvalArgs, ProgressMode};
use super::baseline::read_baseline;
use super::eval_progress::{NoProgress, PlainProgress, SuiteBar};
use super::signals;
use super::{CliError, Exit};
use crate::run_env::RunEnv;
use crate::safe_file::OutputFolder;

/// `env` is agentci's environment, snapshotted once in `main`: every
/// attempt reads its variables from it.
pub fn eval(args: EvalArgs, env: &RunEnv) -> Result<Exit, CliError> {
    let cwd = std::env::current_dir().map_err(CliError::CurrentDir)?;
    let mut options = options(&args, &cwd)?;
    let (trigger, cancel) = cancel_pair();
    options.settings.cancel = cancel.clone();
    options.settings.env = env.clone();
    let thresholds = thresholds(&args.baseline)?;
    let baseline = read_baseline(args.baseline.baseline.as_ref(), &cwd, &options.out_dir)?;
    let suites = load_suites(&args.suites, &cwd, args.record)?;
    check_selection(&suites, &options, args.filter.as_deref())?;
    options.spans = eval_spans(&args, env);
    // Opened before any case runs (after the suites were read, so a
    // mistake there leaves no folder behind): a link on the way is refused now, by name.
    let out = open_output_folder(&cwd, &options.out_dir, "--out")?;
    let html = args
        .html
        .as_ref()
        .map(|dir| open_output_folder(&cwd, &cwd.join(dir), "--html"))
        .transpose()?;

    if let Some(limit) = args.max_cost_usd
        && let Some(refused) = cost_estimate_over(&suites, &options, baseline.as_ref(), limit)
    {
        let _ = writeln!(std::io::stderr(), "{refused}");
        return Ok(Exit::BudgetExceeded);
    }

    let mut observer: Arc<dyn EvalObserver> = match args.progress {
        ProgressMode::Auto if std::io::stderr().is_terminal() => {
            Arc::new(SuiteBar::new(super::color::stderr_palette()))
        }
        ProgressMode::Auto | ProgressMode::Plain => Arc::new(PlainProgress),
        ProgressMode::None => Arc::new(NoProgress),
    };
    let guard = args.max_cost_usd.map(|limit| {
        let guard = Arc::new(CostGuard::new(observer.clone(), limit, trigger.clone()));
        observer = guard.clone();
        guard
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let (results, received) = runtime
        .block_on(async {
            let received = signals::install(trigger)?;
            let eval = run_eval(Arc::new(suites), &options, observer);
            let results = received.unless_signalled_again(eval).await;
            Ok::<_, std::io::Error>((results, received))
        })
        .map_err(CliError::Signals)?;
    let results = match results {
        Ok(results) => results,
        Err(exit) => {
            // A second signal: the evaluation was dropped; nothing more is waited for.
            runtime.shutdown_background();
            return Ok(exit);
        }
    };
    if cancel.reason().is_some() {
        // Interrupted attempts removed their workspaces already; give the
        // background removals of finished ones a moment, not forever.
        runtime.shutdown_timeout(Duration::from_secs(2));
    } else {
        // Waits for every workspace removal still under way.
        drop(runtime);
    }
    if let Some(problem) = options
        .spans
        .as_ref()
        .and_then(|spans| spans.finish(&results))
    {
        let _ = writeln!(
            std::io::stderr(),
            "agentci: warning: telemetry: {problem}: the evaluation's spans were not exported; \
             check OTEL_EXPORTER_OTLP_ENDPOINT"
        );
    }
    let interrupted = results.interrupted.clone();
    let exit = finish(
        results,
        &out,
        baseline.as_ref(),
        &thresholds,
        &cwd,
        html.as_ref(),
    );
    if let Some(guard) = guard.filter(|g| g.reached())
        && received.signal().is_none()
    {
        // Stopped by the cost limit, not a signal: a budget ran out.
        if let Err(e) = &exit {
            super::exit::print(e);
        }
        let _ = writeln!(
            std::io::stderr(),
            "agentci: {}",
            interrupted
                .as_deref()
                .unwrap_or("stopped by --max-cost-usd")
        );
        let _ = writeln!(
            std::io::stderr(),
            "agentci: the evaluation cost ${:.4}, reaching --max-cost-usd {}; the results of \
             what finished are kept",
            guard.spent(),
            args.max_cost_usd.unwrap_or_default()
        );
        return Ok(Exit::BudgetExceeded);
    }
    match &interrupted {
        Some(note) => {
            // The run was stopped: its exit code says so, whatever else went wrong.
            if let Err(e) = &exit {
                super::exit::print(e);
            }
            let _ = writeln!(std::io::stderr(), "agentci: {note}");
            Ok(received.exit())
        }
        None => exit,
    }
}

/// The evaluation's own spans (`eval`, suites, attempts) when the
/// `OTEL_EXPORTER_OTLP_*` variables name a collector, nested under
/// `TRACEPARENT` when that is set. A problem is a warning: the evaluation
/// runs the same without them.
fn eval_spans(args: &EvalArgs, run_env: &RunEnv) -> Option<Arc<EvalSpans>> {
    let env = |name: &str| run_env.var(name).filter(|v| !v.trim().is_empty());
    let target = OtlpTarget::resolve(&TelemetrySpec::default(), env)?;
    let warn = |problem: String| {
        let _ = writeln!(std::io::stderr(), "agentci: warning: {problem}");
    };
    if let Some(problem) = &target.warning {
        warn(problem.clone());
    }
    let parent = env("TRACEPARENT").and_then(|text| {
        TraceParent::parse(&text)
            .map_err(|problem| {
                warn(format!(
                    "TRACEPARENT: {problem}; the evaluation is exported as a trace of its own"
                ));
            })
            .ok()
    });
    let shard = args.shard.map(|s| s.to_string());
    match EvalSpans::start(&target, parent.as_ref(), args.repeat, shard) {
        Ok(spans) => Some(Arc::new(spans)),
        Err(problem) => {
            warn(problem);
            None
        }
    }
}

fn options(args: &EvalArgs, cwd: &Path) -> Result<EvalOptions, Vec<String>> {
    let mut problems = Vec::new();
    if args.repeat == 0 {
        problems.push("error: --repeat: must be at least 1".to_string());
    }
    if args.jobs == Some(0) {
        problems.push("error: --jobs: must be at least 1".to_string());
    }
    if let Some(usd) = args.max_cost_usd
        && !(usd.is_finite() && usd > 0.0)
    {
        problems.push(format!(
            "error: --max-cost-usd: {usd} is not an amount above 0, e.g. 2.50"
        ));
    }
    if let Some(rate) = args.min_pass_rate
        && !(0.0..=1.0).contains(&rate)
    {
        problems.push(format!(
            "error: --min-pass-rate: {rate} is not a share from 0 to 1, e.g. 0.8"
        ));
    }
    model_problems(args, &mut problems);
    if let Some(mode) = &args.replay_match
        && crate::provider::replay::ReplayMatch::parse(mode).is_none()
    {
        problems.push(format!(
            "error: --replay-match: unknown replay match `{mode}`; expected `strict` or `sequence`"
        ));
    }
    if let Some(problem) = args
        .result_schema
        .as_ref()
        .and_then(|file| crate::job::schema_file_problem(&cwd.join(file)))
    {
        problems.push(format!("error: --result-schema: {problem}"));
    }
    if let Some(Err(e)) = args.base_url.as_deref().map(check_base_url) {
        problems.push(format!("error: --base-url: {e}"));
    }
    let filter = match &args.filter {
        None => None,
        Some(glob) => match globset::Glob::new(glob) {
            Ok(glob) => Some(glob.compile_matcher()),
            Err(e) => {
                problems.push(format!("error: --filter: bad glob `{glob}`: {e}"));
                None
            }
        },
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
    Ok(EvalOptions {
        settings: AttemptSettings {
            cwd: cwd.to_path_buf(),
            temp_dir: std::env::temp_dir(),
            model: args
                .model
                .first()
                .filter(|_| args.model.len() == 1)
                .cloned(),
            base_url: args.base_url.clone(),
            record: args.record,
            replay_match: args.replay_match.clone(),
            reasoning_effort: args.reasoning_effort.clone(),
            thinking_budget: args.thinking_budget.clone(),
            skills_path: args.skills_path.iter().map(|p| cwd.join(p)).collect(),
            result_schema: args.result_schema.as_ref().map(|p| cwd.join(p)),
            cancel: crate::agent::CancelSignal::never(),
            env: RunEnv::default(),
        },
        out_dir: cwd.join(&args.out),
        jobs,
        repeat: args.repeat,
        shard: args.shard,
        filter,
        retry_errors: args.retry_errors,
        fresh: args.fresh,
        min_pass_rate: args.min_pass_rate,
        models: args.model.clone(),
        spans: None,
    })
}

/// The refusal to start, when the estimated cost of the selected cases is
/// over `--max-cost-usd`.
fn cost_estimate_over(
    suites: &[SuiteSpec],
    options: &EvalOptions,
    baseline: Option<&Results>,
    limit: f64,
) -> Option<String> {
    let selected = select_cases(suites, options.filter.as_ref(), options.shard);
    let estimate = estimate(suites, &selected, options.repeat, &options.models, baseline);
    let unknown = if estimate.unknown > 0 {
        format!(", and {} more without an estimate", estimate.unknown)
    } else {
        String::new()
    };
    if estimate.usd <= limit {
        let _ = writeln!(
            std::io::stderr(),
            "agentci: estimated cost ${:.4} for {} case runs{unknown}, within --max-cost-usd \
             {limit}; finished attempts are counted against it as they end",
            estimate.usd,
            estimate.estimated,
        );
        return None;
    }
    Some(format!(
        "agentci: error: --max-cost-usd {limit}: this evaluation is estimated at ${:.4} \
         ({} case runs × {} attempts, from the baseline's cost per attempt or the cassettes' \
         recorded usage at list price{unknown}); nothing was run. Raise the limit, or run fewer \
         cases (--filter, --shard, a lower --repeat)",
        estimate.usd,
        estimate.estimated,
        options.repeat.max(1),
    ))
}

/// What is wrong with the `--model` flags: each checked by the same rules as
/// `agentci run --model`, before any case runs; none twice; one with `--record`.
fn model_problems(args: &EvalArgs, problems: &mut Vec<String>) {
    for (i, model) in args.model.iter().enumerate() {
        if let Err(e) = parse_model_flag(model) {
            problems.push(format!("error: --model {model}: {e}"));
        }
        if args.model[..i].contains(model) {
            problems.push(format!(
                "error: --model {model} is given twice; give each model to compare once"
            ));
        }
    }
    if args.record && args.model.len() > 1 {
        problems.push(
            "error: --record with several --model: a case records one cassette; record with \
             one model at a time"
                .to_string(),
        );
    }
}

pub(super) fn thresholds(args: &BaselineArgs) -> Result<Thresholds, Vec<String>> {
    let mut problems = Vec::new();
    for (flag, value) in [
        ("--max-pass-rate-drop", args.max_pass_rate_drop),
        ("--max-cost-increase", args.max_cost_increase),
        ("--max-duration-increase", args.max_duration_increase),
    ] {
        if !(value.is_finite() && value >= 0.0) {
            problems.push(format!("error: {flag}: must be a number of 0 or more"));
        }
    }
    let confidence = args.regression_confidence;
    if !(confidence.is_finite() && confidence > 0.0 && confidence < 1.0) {
        problems.push(
            "error: --regression-confidence: must be a number between 0 and 1 (0.95 for 95%)"
                .to_string(),
        );
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Thresholds {
        pass_rate_drop: args.max_pass_rate_drop,
        cost_increase: args.max_cost_increase,
        duration_increase: args.max_duration_increase,
        confidence,
    })
}

fn load_suites(paths: &[PathBuf], cwd: &Path, record: bool) -> Result<Vec<SuiteSpec>, Vec<String>> {
    let options = SuiteLoadOptions {
        cwd: cwd.to_path_buf(),
        record,
    };
    let mut suites: Vec<SuiteSpec> = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        match load_suite(path, &options) {
            Ok(suite) => {
                if suites.iter().any(|s| s.name == suite.name) {
                    problems.push(format!(
                        "{}: error: suite name `{}` is used by another suite given; set `name:`",
                        path.display(),
                        suite.name
                    ));
                }
                suites.push(suite);
            }
            Err(diagnostics) => {
                problems.extend(diagnostics.iter().map(|d| d.with_severity().to_string()));
            }
        }
    }
    if problems.is_empty() {
        Ok(suites)
    } else {
        Err(problems)
    }
}

/// Mistakes only visible once the suites are loaded: a `--filter` that
/// matches no case (a CI job that would pass having run nothing), and
/// `--record` writing two attempts into one cassette (the last would win,
/// or concurrent attempts would interleave their lines).
fn check_selection(
    suites: &[SuiteSpec],
    options: &EvalOptions,
    filter: Option<&str>,
) -> Result<(), Vec<String>> {
    if let Some(glob) = filter
        && select_cases(suites, options.filter.as_ref(), None).is_empty()
    {
        return Err(vec![format!(
            "error: --filter: `{glob}` matches no case; it is matched against CASE and \
             SUITE/CASE, e.g. --filter 'fix-*' or --filter 'my-suite/*'"
        )]);
    }
    if !options.settings.record {
        return Ok(());
    }
    let mut writers: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut problems = Vec::new();
    for (s, c) in select_cases(suites, options.filter.as_ref(), options.shard) {
        let (suite, case) = (&suites[s], &suites[s].cases[c]);
        let repeat = options.repeat.max(1);
        // Replay cycles through the cassettes a case names, so attempts
        // recorded past them would never be replayed.
        if !case.cassettes.is_empty() && (case.cassettes.len() as u32) < repeat {
            problems.push(format!(
                "{}: error: --record: case `{}` names {} cassette(s) but --repeat {repeat} \
                 records {repeat} attempts, and replay would never use the extra ones; list \
                 {repeat} files under `cassettes:`, or leave `cassette` out to record into \
                 cassettes/{}.jsonl, {}-2.jsonl, …",
                suite.path.display(),
                case.name,
                case.cassettes.len(),
                case.name,
                case.name,
            ));
            continue;
        }
        for n in 1..=repeat {
            let path = record_cassette(case, n);
            let who = format!("`{}/{}` attempt {n}", suite.name, case.name);
            if let Some(first) = writers.get(&path) {
                problems.push(format!(
                    "{}: error: --record: {first} and {who} would both record to {}; give each \
                     case its own `cassette` (or one per attempt under `cassettes:`), or record \
                     them one at a time with --filter",
                    suite.path.display(),
                    path.display()
                ));
            } else {
                writers.insert(path, who);
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Write the result files (and the HTML report when asked), show the
/// summary (Markdown on stdout, or a table on stderr when stdout is a
/// terminal), compare with the baseline, and pick the exit code. Shared with
/// `agentci report merge`.
pub(super) fn finish(
    mut results: Results,
    out: &OutputFolder,
    baseline: Option<&Results>,
    thresholds: &Thresholds,
    cwd: &Path,
    html: Option<&OutputFolder>,
) -> Result<Exit, CliError> {
    let out_dir = out.path();
    let mut stderr = std::io::stderr();
    compare_with(&mut results, baseline, thresholds);
    crate::eval::report::write_all(&results, out).map_err(CliError::input)?;
    let shown = |path: &Path| path.strip_prefix(cwd).unwrap_or(path).display().to_string();
    let summary = crate::eval::report::markdown::summary(&results);
    if std::io::stdout().is_terminal() {
        // A person is reading: a table, not Markdown's pipes; stdout stays
        // for the Markdown when it goes to a file or a pipe.
        let _ = write!(stderr, "{}", crate::eval::report::table::render(&results));
    } else {
        let _ = write!(
            std::io::stdout().lock(),
            "{}",
            crate::inert::terminal(&summary)
        );
    }
    github(&results, &summary, &out_dir.join("results.json"));
    let mut exit = Exit::Success;
    for suite in &results.suites {
        let _ = writeln!(
            stderr,
            "agentci: {}: {}/{} cases passed ({:.0}%, gate {:.0}%){}{}",
            suite.name,
            suite.cases_passed,
            suite.cases_total,
            suite.pass_rate * 100.0,
            suite.min_pass_rate * 100.0,
            crate::eval::report::markdown::attempts_note(suite),
            if suite.gate_passed {
                ""
            } else {
                " — below the gate"
            }
        );
        if !suite.gate_passed {
            exit = Exit::Failed;
        }
    }
    if baseline.is_some() {
        for r in &results.regressions {
            let _ = writeln!(stderr, "regression: {}", crate::inert::line(&r.message));
        }
        for r in &results.possible_regressions {
            let _ = writeln!(
                stderr,
                "possible regression: {}",
                crate::inert::line(&r.message)
            );
        }
        for advice in &results.repeat_advice {
            let _ = writeln!(stderr, "agentci: {}", crate::inert::line(&advice.message));
        }
        if results.regressions.is_empty() {
            let _ = writeln!(stderr, "agentci: no regression against the baseline");
        } else {
            exit = Exit::Failed;
        }
    }
    let _ = writeln!(
        stderr,
        "agentci: results in {}/ (results.json, junit.xml, summary.md)",
        shown(out_dir)
    );
    if let Some(dir) = html {
        match crate::eval::report::html::write(&results, baseline, out_dir, dir) {
            Ok(index) => {
                let _ = writeln!(stderr, "agentci: HTML report in {}", shown(&index));
            }
            Err(e) => return Err(CliError::input(format!("--html: {e}"))),
        }
    }
    Ok(exit)
}

/// The report folder `dir` (`--out`, `--html`), opened by descriptor: beneath
/// the current folder when it lies inside it (a checkout can commit a link
/// there), else trusted as the user wrote it. A link on the way is an
/// error naming it and the flag.
pub(super) fn open_output_folder(
    cwd: &Path,
    dir: &Path,
    flag: &str,
) -> Result<OutputFolder, CliError> {
    let dir = crate::tools::workspace::normalize(dir);
    OutputFolder::beneath_or_trusted(cwd, &dir).map_err(|e| CliError::input(format!("{flag}: {e}")))
}

/// Set the intervals at the chosen confidence and, with a baseline, the
/// regressions, possible regressions and `--repeat` advice.
pub(super) fn compare_with(
    results: &mut Results,
    baseline: Option<&Results>,
    thresholds: &Thresholds,
) {
    results.set_confidence(thresholds.confidence);
    if let Some(baseline) = baseline {
        let found = compare(baseline, results, thresholds);
        results.regressions = found.regressions;
        results.possible_regressions = found.possible;
        results.repeat_advice = found.advice;
    }
}

/// Under GitHub Actions (`GITHUB_ACTIONS=true`): the Markdown to the step
/// summary, annotations on stdout, and the step outputs. Failing to write
/// them is a warning: the results are already on disk.
fn github(results: &Results, summary: &str, results_json: &Path) {
    if !std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true") {
        return;
    }
    let mut stderr = std::io::stderr();
    let append = |var: &str, text: &str| {
        let Some(path) = std::env::var_os(var) else {
            return;
        };
        // Made from the results, written masked by each attempt's run.
        let text = crate::redact::Masked::from_masked_parts(text.as_bytes());
        let appended = crate::safe_file::append(path.as_ref(), &text);
        if let Err(e) = appended {
            let _ = writeln!(std::io::stderr(), "warning: cannot append to {var}: {e}");
        }
    };
    append("GITHUB_STEP_SUMMARY", &format!("{summary}\n"));
    let mut stdout = std::io::stdout().lock();
    for line in crate::eval::report::github::eval_annotations(results) {
        let _ = writeln!(stdout, "{line}");
    }
    drop(stdout);
    let delimiter = format!("ghadelimiter_{}", uuid::Uuid::new_v4().simple());
    append(
        "GITHUB_OUTPUT",
        &crate::eval::report::github::eval_outputs(results, results_json, &delimiter),
    );
    let _ = stderr.flush();
}
