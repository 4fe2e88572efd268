//! `agentci report merge OUT_DIR...`: join the results folders of shards
//! into one `results.json`, `junit.xml` and `summary.md`, recomputing every
//! figure from the attempts, so the totals equal those of an unsharded run.
//! Takes `--baseline` (and `--html`) like `agentci eval`, and exits the same way.
//!
//! `agentci report html RESULTS... --out DIR`: the HTML report of earlier
//! results (several are merged as shards are), with the transcripts read
//! from each results folder's traces.
//!
//! `agentci report comment RESULTS --pr N`: the pull request comment, see
//! `super::comment`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::eval::{Results, Thresholds};
use crate::safe_file::OutputFolder;

use super::args::{BaselineArgs, HtmlArgs, MergeArgs, ReportArgs, ReportCommand};
use super::baseline::read_baseline;
use super::eval::{finish, open_output_folder, thresholds};
use super::{CliError, Exit};

pub fn report(args: ReportArgs) -> Result<Exit, CliError> {
    match args.command {
        ReportCommand::Merge(args) => merge(args),
        ReportCommand::Html(args) => html(args),
        ReportCommand::Comment(args) => super::comment::comment(args),
    }
}

/// `DIR/results.json`, or the file itself.
pub(super) fn results_file(path: &Path) -> PathBuf {
    if path.is_file() {
        path.to_path_buf()
    } else {
        path.join("results.json")
    }
}

/// What `report html` and `report merge` both start from: the current
/// directory, the regression thresholds and the baseline, if one was given
/// (one from GitHub is kept in `out`).
pub(super) fn baseline_inputs(
    args: &BaselineArgs,
    out: &Path,
) -> Result<(PathBuf, Thresholds, Option<Results>), Vec<String>> {
    let cwd = std::env::current_dir()
        .map_err(|e| vec![format!("error: cannot read the current directory: {e}")])?;
    let thresholds = thresholds(args)?;
    let baseline = read_baseline(args.baseline.as_ref(), &cwd, &cwd.join(out))?;
    Ok((cwd, thresholds, baseline))
}

/// The results in `path` (a file or its folder), with their trace paths made
/// absolute: traces are relative to their own results folder and, once
/// merged, only absolute paths still find them.
fn read_with_traces(path: &Path) -> Result<Results, CliError> {
    let file = results_file(path);
    let mut results = Results::read(&file).map_err(CliError::input)?;
    let folder = file.parent().map(Path::to_path_buf).unwrap_or_default();
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
    Ok(results)
}

/// Write the HTML report of `parts` (merged when several) into `out`.
fn write_html(
    mut parts: Vec<Results>,
    baseline: Option<&Results>,
    thresholds: &Thresholds,
    cwd: &Path,
    out: &OutputFolder,
) -> Result<(), CliError> {
    let mut results = if parts.len() == 1 {
        parts.remove(0)
    } else {
        Results::merge(parts).map_err(CliError::input)?
    };
    super::eval::compare_with(&mut results, baseline, thresholds);
    let index =
        crate::eval::report::html::write(&results, baseline, cwd, out).map_err(CliError::input)?;
    let shown = index
        .strip_prefix(cwd)
        .unwrap_or(&index)
        .display()
        .to_string();
    let _ = writeln!(std::io::stderr(), "agentci: HTML report in {shown}");
    Ok(())
}

fn html(args: HtmlArgs) -> Result<Exit, CliError> {
    let (cwd, thresholds, baseline) =
        baseline_inputs(&args.baseline, &args.out).map_err(CliError::Input)?;
    let parts = args
        .results
        .iter()
        .map(|path| read_with_traces(&cwd.join(path)))
        .collect::<Result<Vec<_>, _>>()?;
    // Made only once the results were read: a mistake there leaves no folder behind.
    let out = open_output_folder(&cwd, &cwd.join(&args.out), "--out")?;
    write_html(parts, baseline.as_ref(), &thresholds, &cwd, &out)?;
    Ok(Exit::Success)
}

fn merge(args: MergeArgs) -> Result<Exit, CliError> {
    let (cwd, thresholds, baseline) =
        baseline_inputs(&args.baseline, &args.out).map_err(CliError::Input)?;
    let mut parts = Vec::new();
    for dir in &args.dirs {
        let file = results_file(&cwd.join(dir));
        match Results::read(&file) {
            Ok(results) => parts.push(results),
            Err(e) => return Err(CliError::input(e)),
        }
    }
    let merged = Results::merge(parts).map_err(CliError::input)?;
    // Opened before anything is written, once the shards were read and merged.
    let out = open_output_folder(&cwd, &cwd.join(&args.out), "--out")?;
    let html = args
        .html
        .as_ref()
        .map(|dir| open_output_folder(&cwd, &cwd.join(dir), "--html"))
        .transpose()?;
    let incomplete = merged.interrupted.clone();
    let mut exit = finish(merged, &out, baseline.as_ref(), &thresholds, &cwd, None)?;
    if let Some(html) = &html {
        let parts = args
            .dirs
            .iter()
            .map(|dir| read_with_traces(&cwd.join(dir)))
            .collect::<Result<Vec<_>, _>>()?;
        write_html(parts, baseline.as_ref(), &thresholds, &cwd, html)?;
    }
    // A shard that was stopped (a signal, --max-cost-usd) left cases out:
    // the merged verdict cannot pass on what did not run.
    if let Some(note) = incomplete {
        let _ = writeln!(
            std::io::stderr(),
            "agentci: incomplete: {}; the merged results leave out what did not run",
            crate::inert::line(&note)
        );
        if exit == Exit::Success {
            exit = Exit::Failed;
        }
    }
    Ok(exit)
}
