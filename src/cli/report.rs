//! `agentci report merge OUT_DIR...`: join the results folders of shards
//! into one `results.json`, `junit.xml` and `summary.md`, recomputing every
//! figure from the attempts, so the totals equal those of an unsharded run.
//! Takes `--baseline` like `agentci eval`, and exits the same way.
//!
//! `agentci report html RESULTS... --out DIR`: the HTML report of earlier
//! results (several are merged as shards are), with the transcripts read
//! from each results folder's traces.

use std::io::Write;
use std::path::PathBuf;

use crate::eval::{Results, Thresholds};

use super::args::{BaselineArgs, HtmlArgs, MergeArgs, ReportArgs, ReportCommand};
use super::eval::{finish, read_baseline, thresholds};
use super::{CliError, Exit};

pub fn report(args: ReportArgs) -> Result<Exit, CliError> {
    match args.command {
        ReportCommand::Merge(args) => merge(args),
        ReportCommand::Html(args) => html(args),
    }
}

/// `DIR/results.json`, or the file itself.
fn results_file(path: &std::path::Path) -> std::path::PathBuf {
    if path.is_file() {
        path.to_path_buf()
    } else {
        path.join("results.json")
    }
}

/// What `report html` and `report merge` both start from: the current
/// directory, the regression thresholds and the baseline, if one was given.
fn baseline_inputs(
    args: &BaselineArgs,
) -> Result<(PathBuf, Thresholds, Option<Results>), Vec<String>> {
    let cwd = std::env::current_dir()
        .map_err(|e| vec![format!("error: cannot read the current directory: {e}")])?;
    let thresholds = thresholds(args)?;
    let baseline = read_baseline(args, &cwd)?;
    Ok((cwd, thresholds, baseline))
}

fn html(args: HtmlArgs) -> Result<Exit, CliError> {
    let (cwd, thresholds, baseline) = baseline_inputs(&args.baseline).map_err(CliError::Input)?;
    let mut parts = Vec::new();
    for path in &args.results {
        let file = results_file(&cwd.join(path));
        let mut results = match Results::read(&file) {
            Ok(results) => results,
            Err(e) => return Err(CliError::input(e)),
        };
        // Traces are relative to their own results folder; once merged,
        // only absolute paths still find them.
        let folder = file
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        for attempt in results
            .suites
            .iter_mut()
            .flat_map(|s| s.cases.iter_mut())
            .flat_map(|c| c.attempts.iter_mut())
        {
            if let Some(trace) = &attempt.trace {
                attempt.trace = Some(folder.join(trace).display().to_string());
            }
        }
        parts.push(results);
    }
    let mut results = if parts.len() == 1 {
        parts.remove(0)
    } else {
        match Results::merge(parts) {
            Ok(merged) => merged,
            Err(e) => return Err(CliError::input(e)),
        }
    };
    super::eval::compare_with(&mut results, baseline.as_ref(), &thresholds);
    let out = cwd.join(&args.out);
    match crate::eval::report::html::write(&results, baseline.as_ref(), &cwd, &out) {
        Ok(index) => {
            let shown = index
                .strip_prefix(&cwd)
                .unwrap_or(&index)
                .display()
                .to_string();
            let _ = writeln!(std::io::stderr(), "agentci: HTML report in {shown}");
            Ok(Exit::Success)
        }
        Err(e) => Err(CliError::input(e)),
    }
}

fn merge(args: MergeArgs) -> Result<Exit, CliError> {
    let (cwd, thresholds, baseline) = baseline_inputs(&args.baseline).map_err(CliError::Input)?;
    let mut parts = Vec::new();
    for dir in &args.dirs {
        let file = results_file(&cwd.join(dir));
        match Results::read(&file) {
            Ok(results) => parts.push(results),
            Err(e) => return Err(CliError::input(e)),
        }
    }
    let merged = Results::merge(parts).map_err(CliError::input)?;
    finish(
        merged,
        &cwd.join(&args.out),
        baseline.as_ref(),
        &thresholds,
        &cwd,
        None,
    )
}
