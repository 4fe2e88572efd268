//! `agentci run [JOB.yaml] [--goal …]`: load the job (or make it from flags), pick the progress display, run it
//! through the [`runner`], and turn the outcome into an exit
//! code. Problems before the run starts are printed here; everything after
//! is in the trace and the JUnit file. SIGINT and SIGTERM end the run as
//! `interrupted` (see [`super::signals`]).

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{CancelTrigger, cancel_pair};
use crate::event::RunStatus;
use crate::event::bus::EventSink;
use crate::job::raw::Scalar;
use crate::job::{self, COMMAND_LINE_JOB, Diagnostic, Given, LoadOptions, Overrides};
use crate::run_env::RunEnv;
use crate::runner::{self, RunOptions};
use crate::sink::{
    FileBase, GithubActions, GithubConfig, PlainLog, ProgressBars, report_start_failure,
};
use crate::untrusted::GithubEvent;

use super::args::{JobFlagArgs, ProgressMode, RunArgs};
use super::json_stream::JsonStdout;
use super::resume;
use super::signals;
use super::{CliError, Exit};

/// `env` is agentci's environment, snapshotted once in `main`: the run
/// reads every variable it needs from it.
pub fn run(args: RunArgs, env: &RunEnv) -> Result<Exit, CliError> {
    let cwd = std::env::current_dir().map_err(CliError::CurrentDir)?;
    let resume_dir = args.resume.as_ref().map(|dir| cwd.join(dir));
    if let Some(dir) = &resume_dir {
        let ready = resume::refuse_flags(&args)
            .and_then(|()| resume::require_job(&args, dir))
            .and_then(|()| resume::check_out(&args, dir, &cwd));
        if let Err(problem) = ready {
            return did_not_start(&[problem], &args, &cwd);
        }
    }
    let overrides = match job_overrides(&args.job_flags) {
        Ok(flags) => flags,
        Err(problem) => return did_not_start(&[*problem], &args, &cwd),
    };
    let options = load_options(&args, &cwd, overrides);
    let job_file = args
        .job
        .clone()
        .unwrap_or_else(|| PathBuf::from(COMMAND_LINE_JOB));
    if args.print_job {
        return print_job(&job_file, &options, &args, &cwd);
    }
    // `--trace -` is stdout, never a file named `-`.
    let trace_to_stdout = args.json || args.trace.as_deref() == Some(Path::new("-"));
    let trace_file = args.trace.clone().filter(|t| t != Path::new("-"));
    // The event that started a GitHub Actions run: its text is untrusted
    // input, and a pull request makes the workspace untrusted.
    let event = match GithubEvent::from_env(|name| env.var(name).filter(|v| !v.is_empty())) {
        Ok(event) => event,
        Err(problem) => {
            return did_not_start(&[Diagnostic::unplaced(problem.to_string())], &args, &cwd);
        }
    };
    let mut prepared = match runner::prepare_for_event(&job_file, &options, env, event.as_ref()) {
        Ok(prepared) => prepared,
        Err(e) => return did_not_start(&e.diagnostics(), &args, &cwd),
    };
    let job = resume::job_fingerprint(&job_file, &args, &cwd);
    let absolute = |p: &Option<PathBuf>| p.as_deref().map(|p| cwd.join(p));
    let (trace_flag, junit_flag) = (absolute(&trace_file), absolute(&args.junit));
    let resume_at = resume_dir.as_deref().map(|run_dir| resume::ResumeAt {
        run_dir,
        trace: trace_flag.as_deref(),
        junit: junit_flag.as_deref(),
    });
    let (key, resumption) = match checkpointing(resume_at, &mut prepared, &job) {
        Ok(ready) => ready,
        Err(problem) => return did_not_start(&[problem], &args, &cwd),
    };
    let (trigger, cancel) = cancel_pair();
    let run_options = RunOptions {
        out_dir: resume_dir.clone().or_else(|| absolute(&args.out)),
        trace: absolute(&trace_file),
        junit: absolute(&args.junit),
        record: absolute(&args.record),
        sinks: {
            let mut sinks = progress_sinks(args.progress, &cwd);
            if trace_to_stdout {
                sinks.push(Box::new(JsonStdout));
            }
            sinks
        },
        run_id: None,
        cancel,
        junit_files: FileBase {
            cwd: cwd.clone(),
            root: env
                .var_os("GITHUB_WORKSPACE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        },
        extra_env: Vec::new(),
        checkpoint: key.map(|key| runner::CheckpointOptions { job, key }),
        resume: resumption,
        caller_outputs: caller_outputs(&args, &cwd),
        trace_parent: None,
        env: env.clone(),
    };
    let report = match execute(&prepared, run_options, trigger)? {
        Ok(Ok(report)) => report,
        Ok(Err(e)) => {
            return did_not_start(&[Diagnostic::unplaced(e.to_string())], &args, &cwd);
        }
        // A second signal: the run was dropped without finishing.
        Err(exit) => return Ok(exit),
    };
    Ok(finish(&args, &cwd, &report, trace_to_stdout))
}

/// Runs the prepared job on its own runtime, SIGINT and SIGTERM cancelling
/// it (the run records which signal came, and its exit code follows). A
/// second signal drops the run unfinished: `Err` with the exit it ends by.
fn execute(
    prepared: &runner::Prepared,
    options: RunOptions,
    trigger: CancelTrigger,
) -> Result<Result<Result<runner::RunReport, runner::StartError>, Exit>, CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let outcome = runtime.block_on(async {
        let received = signals::install(trigger)?;
        let run = runner::run_prepared(prepared, options);
        Ok::<_, std::io::Error>(received.unless_signalled_again(run).await)
    });
    if matches!(outcome, Ok(Err(_))) {
        // Asked twice: nothing more is waited for.
        runtime.shutdown_background();
    } else {
        // Tasks left behind by a cancelled run must not hold up the exit.
        runtime.shutdown_timeout(Duration::from_millis(500));
    }
    outcome.map_err(CliError::Signals)
}

/// The files written after the run, here: the last message and, under
/// GitHub Actions, the step summary and outputs.
fn caller_outputs(args: &RunArgs, cwd: &Path) -> Vec<PathBuf> {
    let github = ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"]
        .into_iter()
        .filter(|_| std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true"))
        .filter_map(|name| std::env::var_os(name).filter(|v| !v.is_empty()));
    args.output_last_message
        .iter()
        .map(|file| cwd.join(file))
        .chain(github.map(|path| cwd.join(PathBuf::from(path))))
        .collect()
}

/// The checkpoint key, and the run to go on with when resuming. Without a
/// usable key a new run goes on without checkpoints (a warning says why);
/// a resume cannot.
fn checkpointing(
    resume_at: Option<resume::ResumeAt<'_>>,
    prepared: &mut runner::Prepared,
    job: &runner::JobFingerprint,
) -> Result<
    (
        Option<runner::CheckpointKey>,
        Option<runner::resume::Resumption>,
    ),
    Diagnostic,
> {
    let workspace = prepared.workspace.root().to_path_buf();
    let key = checkpoint_key().and_then(|key| key.outside(&workspace));
    let key = match (key, &resume_at) {
        (Ok(key), _) => key,
        (Err(e), None) => {
            prepared.warnings.push(format!(
                "no checkpoints are saved, so this run cannot be resumed: {e}"
            ));
            return Ok((None, None));
        }
        (Err(e), Some(_)) => return Err(Diagnostic::unplaced(e.to_string())),
    };
    let resumption = match resume_at {
        Some(at) => Some(resume::resumption(&at, job, &key, prepared)?),
        None => None,
    };
    Ok((Some(key), resumption))
}

/// The checkpoint key, from where the environment says it is; made on
/// first use.
fn checkpoint_key() -> Result<runner::CheckpointKey, runner::KeyError> {
    let path = runner::checkpoint_key::key_path(|name| std::env::var_os(name))?;
    runner::CheckpointKey::open_or_create(&path)
}

/// How the job's flags and the command line's options shape loading the job.
fn load_options(args: &RunArgs, cwd: &Path, overrides: Overrides) -> LoadOptions {
    LoadOptions {
        cwd: cwd.to_path_buf(),
        vars: args.vars.clone(),
        workspace: args.workspace.clone(),
        skills_path: args.skills_path.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        replay: args.replay.clone(),
        replay_match: args.replay_match.clone(),
        reasoning_effort: args.reasoning_effort.clone(),
        thinking_budget: args.thinking_budget.clone(),
        overrides,
        reject_unused_vars: true,
    }
}

/// After the run: the errors of sinks that could not write, the agent's
/// summary (on stdout unless stdout holds the event stream), the
/// `--output-last-message` file, the status line, and the exit code.
fn finish(args: &RunArgs, cwd: &Path, report: &runner::RunReport, trace_to_stdout: bool) -> Exit {
    let mut stderr = std::io::stderr();
    for e in &report.sink_errors {
        let _ = writeln!(stderr, "error: failed to write {e}");
    }
    let completed = &report.completed;
    let github = github_config(args.progress, cwd).is_some();
    if let Some(summary) = &completed.summary {
        if trace_to_stdout {
            // stdout holds only the event stream; the summary is in it too.
            print_model_text(&mut stderr, summary, github);
        } else {
            print_model_text(&mut std::io::stdout().lock(), summary, github);
        }
    }
    let mut unwritten: Vec<String> = report.sink_errors.iter().map(ToString::to_string).collect();
    if let Some(file) = &args.output_last_message {
        let text = completed.summary.clone().unwrap_or_default();
        // The summary of `run.completed`, which the bus masked.
        let text = crate::redact::Masked::from_masked_parts(text.into_bytes());
        // Written through the path: the user names it (it may be `/dev/stdout`).
        if let Err(e) = std::fs::write(cwd.join(file), text.as_bytes()) {
            let _ = writeln!(stderr, "error: failed to write {}: {e}", file.display());
            unwritten.push(format!("write {}: {e}", file.display()));
        }
    }
    // A run whose records could not all be written never reads as a pass:
    // the line names what is missing, and a passing run exits as an error.
    let reason = match (unwritten.is_empty(), report.incomplete_in_reason) {
        (true, _) => completed.reason.clone(),
        // The reason lists what could not be written before `run.completed`.
        (false, true) => std::iter::once(completed.reason.clone())
            .chain(unwritten.iter().map(|e| format!("failed to {e}")))
            .collect::<Vec<_>>()
            .join("; "),
        (false, false) => {
            crate::runner::completion::incomplete_reason(&completed.reason, &unwritten)
        }
    };
    let status = match completed.status {
        RunStatus::Passed if !unwritten.is_empty() => RunStatus::Error,
        other => other,
    };
    let status_line = format!(
        "agentci: {} — {} (trace: {}, junit: {})",
        status.as_str(),
        reason,
        shown(&report.trace, cwd),
        shown(&report.junit, cwd),
    );
    print_model_text(&mut stderr, &status_line, github);
    if status != completed.status {
        // A passing run whose results could not be written is not a pass CI can trust.
        return Exit::Error;
    }
    completed.exit()
}

/// The job-shaping flags as overrides of the job, each naming its flag,
/// with `--goal -` read from stdin. Their values are checked with the job.
fn job_overrides(args: &JobFlagArgs) -> Result<Overrides, Box<Diagnostic>> {
    let goal = match args.goal.as_deref() {
        Some("-") => {
            let mut goal = String::new();
            std::io::stdin().read_to_string(&mut goal).map_err(|e| {
                let message = format!("cannot read the goal from stdin: {e}");
                Box::new(Diagnostic::flag("--goal", message))
            })?;
            Some(goal)
        }
        other => other.map(str::to_string),
    };
    let each = |flag: &'static str, values: &[String]| -> Vec<Given<String>> {
        values
            .iter()
            .map(|value| Given::flag(flag, value.clone()))
            .collect()
    };
    let number = |flag: &'static str, value: &Option<String>| {
        value
            .as_deref()
            .map(|text| Given::flag(flag, Scalar::from_flag(text)))
    };
    Ok(Overrides {
        goal: goal.map(|goal| Given::flag("--goal", goal)),
        skill: args
            .skill
            .clone()
            .map(|skill| Given::flag("--skill", skill)),
        // `--tools read,edit` (repeatable): one entry per tool.
        tools: args
            .tools
            .iter()
            .flat_map(|t| t.split(','))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| Given::flag("--tools", t.to_string()))
            .collect(),
        allow: each("--allow", &args.allow),
        deny: each("--deny", &args.deny),
        checks: each("--check", &args.checks),
        max_turns: number("--max-turns", &args.max_turns),
        max_tool_calls: number("--max-tool-calls", &args.max_tool_calls),
        max_tokens: number("--max-tokens", &args.max_tokens),
        max_cost_usd: number("--max-cost", &args.max_cost),
        timeout: number("--timeout", &args.timeout),
        checks_rounds: number("--checks-rounds", &args.checks_rounds),
        allow_dirty: args.allow_dirty.then(|| Given::flag("--allow-dirty", true)),
        result_schema: args
            .result_schema
            .clone()
            .map(|file| Given::flag("--result-schema", file)),
        vars: Default::default(),
    })
}

/// `--print-job`: the job the file and flags make, as YAML on stdout.
fn print_job(
    job_file: &Path,
    options: &LoadOptions,
    args: &RunArgs,
    cwd: &Path,
) -> Result<Exit, CliError> {
    match job::load_job(job_file, options) {
        Ok((mut job, warnings)) => {
            // `--skills-path` is not part of a job; the saved job must find its skill without it.
            for dir in &options.skills_path {
                let dir = cwd.join(dir);
                if !job.skills_path.contains(&dir) {
                    job.skills_path.push(dir);
                }
            }
            let mut stderr = std::io::stderr();
            for warning in warnings {
                let _ = writeln!(stderr, "{}", warning.with_severity());
            }
            match job::print::job_yaml(&job) {
                Ok(yaml) => {
                    let _ = write!(std::io::stdout().lock(), "{yaml}");
                    let unwritten = job::print::unwritten_keys(&job);
                    if !unwritten.is_empty() {
                        let keys: Vec<String> =
                            unwritten.iter().map(|k| format!("`{k}`")).collect();
                        let _ = writeln!(
                            stderr,
                            "{}: warning: --print-job does not write {} yet; the printed job \
                             runs without them: copy them from this file into it",
                            job_file.display(),
                            keys.join(", ")
                        );
                    }
                    Ok(Exit::Success)
                }
                Err(e) => did_not_start(&[Diagnostic::unplaced(e.to_string())], args, cwd),
            }
        }
        Err(diagnostics) => did_not_start(&diagnostics, args, cwd),
    }
}

/// The problems of a run that did not start, on stderr; under GitHub
/// Actions as annotations, with a summary and the outputs `status=error`
/// and `exit-code=2`.
fn did_not_start(problems: &[Diagnostic], args: &RunArgs, cwd: &Path) -> Result<Exit, CliError> {
    let mode = args.progress;
    let mut stderr = std::io::stderr();
    // `--json` promises JSON on stdout: the problems go there as one event
    // too, the human text stays on stderr.
    let json = args.json || args.trace.as_deref() == Some(Path::new("-"));
    if json && let Err(e) = super::json_stream::not_started(problems) {
        let _ = writeln!(stderr, "error: failed to write to stdout: {e}");
    }
    match github_config(mode, cwd) {
        Some(config) => {
            if let Err(e) = report_start_failure(config, problems) {
                let _ = writeln!(stderr, "error: failed to {e}");
            }
            if mode == ProgressMode::None {
                problems.iter().for_each(|p| {
                    let _ = writeln!(stderr, "{}", p.with_severity());
                });
            }
        }
        None => problems.iter().for_each(|p| {
            let _ = writeln!(stderr, "{}", p.with_severity());
        }),
    }
    Err(CliError::Reported)
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
/// `--progress none`). Colour follows `NO_COLOR`, `CLICOLOR` and
/// `CLICOLOR_FORCE` ([`super::color`]).
fn progress_sinks(mode: ProgressMode, cwd: &Path) -> Vec<Box<dyn EventSink>> {
    if let Some(config) = github_config(mode, cwd) {
        return vec![Box::new(GithubActions::new(config))];
    }
    let terminal = std::io::stderr().is_terminal();
    let palette = super::color::stderr_palette();
    match mode {
        ProgressMode::Auto if terminal => vec![Box::new(ProgressBars::new(palette))],
        ProgressMode::Auto | ProgressMode::Plain => {
            let log = PlainLog::new(Box::new(std::io::stderr())).with_palette(palette);
            vec![Box::new(log)]
        }
        ProgressMode::None => Vec::new(),
    }
}

/// Print `text`, which may hold what the model wrote. Under GitHub Actions a
/// line of it starting with `::` would be run as a workflow command (a fake
/// annotation, `::stop-commands::`), so such text is printed between
/// `::stop-commands::TOKEN` and `::TOKEN::`, which the runner shows as is.
fn print_model_text(out: &mut impl Write, text: &str, github: bool) {
    // Inert first: escape sequences gone, and a lone `\r` (a line break to
    // the runner) written out, so `lines` sees every line the runner would.
    let text = &crate::inert::terminal(text);
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
