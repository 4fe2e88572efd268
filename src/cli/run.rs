//! `agentci run JOB.yaml`: load the job, pick the progress display, run it
//! through the [`runner`](crate::runner), and turn the outcome into an exit
//! code. Problems before the run starts are printed here; everything after
//! is in the trace and the JUnit file. SIGINT and SIGTERM end the run as
//! `interrupted` (see [`super::signals`]).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::cancel_pair;
use crate::event::{EventSink, RunStatus};
use crate::runner::{self, RunOptions};
use crate::sink::{
    FileBase, GithubActions, GithubConfig, PlainLog, ProgressBars, report_start_failure,
};
use crate::spec::LoadOptions;
use crate::untrusted::GithubEvent;

use super::EXIT_BAD_INPUT;
use super::args::{ProgressMode, RunArgs};
use super::signals;

pub fn run(args: RunArgs) -> u8 {
    let mut stderr = std::io::stderr();
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            let _ = writeln!(stderr, "error: cannot read the current directory: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let options = LoadOptions {
        cwd: cwd.clone(),
        vars: args.vars.clone(),
        workspace: args.workspace.clone(),
        skills_path: args.skills_path.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        replay: args.replay.clone(),
    };
    // The event that started a GitHub Actions run: its text is untrusted
    // input, and a pull request makes the workspace untrusted.
    let event = match GithubEvent::from_env(|name| {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }) {
        Ok(event) => event,
        Err(problem) => return did_not_start(&[format!("error: {problem}")], args.progress, &cwd),
    };
    let prepared = match runner::prepare_for_event(&args.job, &options, event.as_ref()) {
        Ok(prepared) => prepared,
        Err(problems) => return did_not_start(&problems, args.progress, &cwd),
    };
    let absolute = |p: &Option<PathBuf>| p.as_deref().map(|p| cwd.join(p));
    let (trigger, cancel) = cancel_pair();
    let run_options = RunOptions {
        out_dir: absolute(&args.out),
        trace: absolute(&args.trace),
        junit: absolute(&args.junit),
        record: absolute(&args.record),
        sinks: progress_sinks(args.progress, &cwd),
        run_id: None,
        cancel,
        junit_files: FileBase {
            cwd: cwd.clone(),
            root: std::env::var_os("GITHUB_WORKSPACE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        },
        extra_env: Vec::new(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(stderr, "error: cannot start the async runtime: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let outcome = runtime.block_on(async {
        let received = signals::install(trigger)?;
        Ok::<_, std::io::Error>((runner::run_prepared(&prepared, run_options).await, received))
    });
    // Tasks left behind by a cancelled run must not hold up the exit.
    runtime.shutdown_timeout(Duration::from_millis(500));
    let (report, received) = match outcome {
        Ok((Ok(report), received)) => (report, received),
        Ok((Err(e), _)) => {
            return did_not_start(&[format!("error: {e}")], args.progress, &cwd);
        }
        Err(e) => {
            let _ = writeln!(stderr, "error: cannot listen for signals: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    for e in &report.sink_errors {
        let _ = writeln!(stderr, "error: failed to write {e}");
    }
    let completed = &report.completed;
    let github = github_config(args.progress, &cwd).is_some();
    if let Some(summary) = &completed.summary {
        print_model_text(&mut std::io::stdout().lock(), summary, github);
    }
    let status_line = format!(
        "agentci: {} — {} (trace: {}, junit: {})",
        completed.status.as_str(),
        completed.reason,
        shown(&report.trace, &cwd),
        shown(&report.junit, &cwd),
    );
    print_model_text(&mut stderr, &status_line, github);
    if !report.sink_errors.is_empty() && completed.status == RunStatus::Passed {
        // A passing run whose results could not be written is not a pass CI can trust.
        return RunStatus::Error.exit_code();
    }
    if completed.status == RunStatus::Interrupted {
        return received.exit_code();
    }
    completed.status.exit_code()
}

/// The problems of a run that did not start, on stderr; under GitHub
/// Actions as annotations, with a summary and the outputs `status=error`
/// and `exit-code=2`.
fn did_not_start(problems: &[String], mode: ProgressMode, cwd: &Path) -> u8 {
    let mut stderr = std::io::stderr();
    match github_config(mode, cwd) {
        Some(config) => {
            if let Err(e) = report_start_failure(config, problems) {
                let _ = writeln!(stderr, "error: failed to {e}");
            }
            if mode == ProgressMode::None {
                problems.iter().for_each(|p| {
                    let _ = writeln!(stderr, "{p}");
                });
            }
        }
        None => problems.iter().for_each(|p| {
            let _ = writeln!(stderr, "{p}");
        }),
    }
    EXIT_BAD_INPUT
}

/// Where the GitHub sink writes, when running under GitHub Actions
/// (`GITHUB_ACTIONS=true`); the log is stderr unless `--progress none`.
fn github_config(mode: ProgressMode, cwd: &Path) -> Option<GithubConfig> {
    if !std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true") {
        return None;
    }
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let log: Option<Box<dyn Write + Send>> = match mode {
        ProgressMode::None => None,
        ProgressMode::Auto | ProgressMode::Plain => Some(Box::new(std::io::stderr())),
    };
    Some(GithubConfig {
        log,
        step_summary: env("GITHUB_STEP_SUMMARY").map(PathBuf::from),
        output: env("GITHUB_OUTPUT").map(PathBuf::from),
        cwd: cwd.to_path_buf(),
        repo_root: env("GITHUB_WORKSPACE").map(PathBuf::from),
    })
}

/// The display of a run. Under GitHub Actions (`GITHUB_ACTIONS=true`) the
/// GitHub sink replaces bars and plain logs: grouped log lines and
/// annotations, plus the step summary and outputs (written even with
/// `--progress none`). `NO_COLOR` turns the bars' colours off.
fn progress_sinks(mode: ProgressMode, cwd: &Path) -> Vec<Box<dyn EventSink>> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(config) = github_config(mode, cwd) {
        return vec![Box::new(GithubActions::new(config))];
    }
    let terminal = std::io::stderr().is_terminal();
    match mode {
        ProgressMode::Auto if terminal => {
            let bars = ProgressBars::new();
            // https://no-color.org: any non-empty value turns colour off.
            let bars = if env("NO_COLOR").is_some() {
                bars.without_color()
            } else {
                bars
            };
            vec![Box::new(bars)]
        }
        ProgressMode::Auto | ProgressMode::Plain => {
            vec![Box::new(PlainLog::new(Box::new(std::io::stderr())))]
        }
        ProgressMode::None => Vec::new(),
    }
}

/// Print `text`, which may hold what the model wrote. Under GitHub Actions a
/// line of it starting with `::` would be run as a workflow command (a fake
/// annotation, `::stop-commands::`), so such text is printed between
/// `::stop-commands::TOKEN` and `::TOKEN::`, which the runner shows as is.
fn print_model_text(out: &mut impl Write, text: &str, github: bool) {
    let commands = github && text.lines().any(|l| l.trim_start().starts_with("::"));
    if !commands {
        let _ = writeln!(out, "{text}");
        return;
    }
    let token = uuid::Uuid::new_v4().simple().to_string();
    let _ = writeln!(out, "::stop-commands::{token}\n{text}\n::{token}::");
}

/// A path relative to the current directory when it is inside it, for shorter messages.
fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}
