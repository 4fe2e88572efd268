//! `agentci report merge OUT_DIR...`: join the results folders of shards
//! into one `results.json`, `junit.xml` and `summary.md`, recomputing every
//! figure from the attempts, so the totals equal those of an unsharded run.
//! Takes `--baseline` like `agentci eval`, and exits the same way.

use std::io::Write;

use crate::eval::Results;

use super::EXIT_BAD_INPUT;
use super::args::{MergeArgs, ReportArgs, ReportCommand};
use super::eval::{finish, read_baseline, thresholds};

pub fn report(args: ReportArgs) -> u8 {
    match args.command {
        ReportCommand::Merge(args) => merge(args),
    }
}

fn merge(args: MergeArgs) -> u8 {
    let mut stderr = std::io::stderr();
    let fail = |problems: Vec<String>| {
        let mut stderr = std::io::stderr();
        for problem in problems {
            let _ = writeln!(stderr, "{problem}");
        }
        EXIT_BAD_INPUT
    };
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            return fail(vec![format!(
                "error: cannot read the current directory: {e}"
            )]);
        }
    };
    let thresholds = match thresholds(&args.baseline) {
        Ok(t) => t,
        Err(problems) => return fail(problems),
    };
    let baseline = match read_baseline(&args.baseline, &cwd) {
        Ok(b) => b,
        Err(problems) => return fail(problems),
    };
    let mut parts = Vec::new();
    for dir in &args.dirs {
        let dir = cwd.join(dir);
        let file = if dir.is_file() {
            dir
        } else {
            dir.join("results.json")
        };
        match Results::read(&file) {
            Ok(results) => parts.push(results),
            Err(e) => return fail(vec![format!("error: {e}")]),
        }
    }
    let merged = match Results::merge(parts) {
        Ok(merged) => merged,
        Err(e) => {
            let _ = writeln!(stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    finish(
        &merged,
        &cwd.join(&args.out),
        baseline.as_ref(),
        &thresholds,
        &cwd,
    )
}
