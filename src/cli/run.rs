//! `agentci run JOB.yaml`: load and validate, wire up the provider and the
//! sinks, run the agent, and turn the outcome into an exit code.
//!
//! Once the sinks exist, every failure goes through the event stream, so the
//! trace and the JUnit file are written whatever happens; only problems found
//! before that (a bad job, a missing skill) are printed directly.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::agent::{self, RunInput};
use crate::event::{EventBus, EventSink, OutputPaths, RunStatus};
use crate::sink::{JunitWriter, PlainLog, ProgressBars, TraceWriter};
use crate::skills::{self, Skill};
use crate::spec::{self, JobSpec, LoadOptions, SkillRef};
use crate::tools::{ToolLimits, Workspace};

use super::EXIT_BAD_INPUT;
use super::args::{ProgressMode, RunArgs};
use super::provider_setup::build_provider;
use super::run_folder::{RunFolder, new_run_id};

pub fn run(args: RunArgs) -> u8 {
    let mut stderr = std::io::stderr();
    match prepare(&args) {
        Ok(prepared) => execute(prepared, &args),
        Err(problems) => {
            for problem in problems {
                let _ = writeln!(stderr, "{problem}");
            }
            EXIT_BAD_INPUT
        }
    }
}

/// A job that loaded, with its skill and workspace.
struct Prepared {
    job: JobSpec,
    skill: Skill,
    workspace: Workspace,
    warnings: Vec<String>,
}

fn prepare(args: &RunArgs) -> Result<Prepared, Vec<String>> {
    let cwd = std::env::current_dir()
        .map_err(|e| vec![format!("cannot read the current directory: {e}")])?;
    let options = LoadOptions {
        cwd: cwd.clone(),
        vars: args.vars.clone(),
        workspace: args.workspace.clone(),
        skills_path: args.skills_path.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        replay: args.replay.clone(),
    };
    let (job, load_warnings) = spec::load_job(&args.job, &options).map_err(|diagnostics| {
        diagnostics
            .iter()
            .map(|d| d.with_severity().to_string())
            .collect::<Vec<_>>()
    })?;
    let skill = match &job.skill {
        SkillRef::Name(name) => {
            skills::find_skill(name, &skills::skill_search_paths(&job, &args.skills_path))
        }
        SkillRef::Path(dir) => skills::load_skill_dir(dir),
    }
    .map_err(|e| vec![format!("error: {e}")])?;
    let workspace = Workspace::new(&job.workspace).map_err(|e| {
        vec![format!(
            "error: workspace {} cannot be used: {e}; create it or pass --workspace DIR",
            job.workspace.display()
        )]
    })?;
    Ok(Prepared {
        warnings: load_warnings.iter().map(ToString::to_string).collect(),
        job,
        skill,
        workspace,
    })
}

fn execute(prepared: Prepared, args: &RunArgs) -> u8 {
    let mut stderr = std::io::stderr();
    let Prepared {
        job,
        skill,
        workspace,
        warnings,
    } = prepared;
    let cwd = std::env::current_dir().unwrap_or_default();
    let run_id = new_run_id();
    let folder = RunFolder::resolve(
        &run_id,
        workspace.root(),
        &cwd,
        args.out.as_deref(),
        &job.outputs,
    );
    let trace_path = flag_or(&cwd, args.trace.as_deref(), &folder.trace);
    let junit_path = flag_or(&cwd, args.junit.as_deref(), &folder.junit);
    if let Err(e) = folder.create(workspace.root()) {
        let _ = writeln!(stderr, "error: {e}");
        return EXIT_BAD_INPUT;
    }

    let mut sinks: Vec<Box<dyn EventSink>> = Vec::new();
    match TraceWriter::create(&trace_path) {
        Ok(writer) => sinks.push(Box::new(writer)),
        Err(e) => {
            let _ = writeln!(stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    }
    sinks.push(Box::new(JunitWriter::new(junit_path.clone())));
    match progress_mode(args.progress) {
        ProgressMode::Auto => sinks.push(Box::new(ProgressBars::new())),
        ProgressMode::Plain => sinks.push(Box::new(PlainLog::new(Box::new(std::io::stderr())))),
        ProgressMode::None => {}
    }
    let bus = EventBus::new(run_id, sinks);

    let provider = build_provider(&job, workspace.root(), args.record.as_deref());
    let input = RunInput {
        job: &job,
        skill: &skill,
        provider: provider.as_ref(),
        workspace: workspace.clone(),
        outputs: OutputPaths {
            dir: folder.dir.display().to_string(),
            trace: Some(trace_path.display().to_string()),
            junit: Some(junit_path.display().to_string()),
        },
        warnings,
        limits: ToolLimits::default(),
    };
    let completed = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(agent::run(input, bus.clone())),
        Err(e) => {
            let _ = writeln!(stderr, "error: cannot start the async runtime: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let sink_errors = bus.finish();
    for e in &sink_errors {
        let _ = writeln!(stderr, "error: failed to write {e}");
    }

    if let Some(summary) = &completed.summary {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{summary}");
    }
    let _ = writeln!(
        stderr,
        "agentci: {} — {} (trace: {}, junit: {})",
        completed.status.as_str(),
        completed.reason,
        trace_path.display(),
        junit_path.display()
    );
    if !sink_errors.is_empty() && completed.status == RunStatus::Passed {
        // A passing run whose results could not be written is not a pass CI can trust.
        return RunStatus::Error.exit_code();
    }
    completed.status.exit_code()
}

/// A path given as a flag is relative to the current directory.
fn flag_or(cwd: &Path, flag: Option<&Path>, default: &Path) -> PathBuf {
    match flag {
        Some(p) => cwd.join(p),
        None => default.to_path_buf(),
    }
}

fn progress_mode(mode: ProgressMode) -> ProgressMode {
    match mode {
        ProgressMode::Auto if std::io::stderr().is_terminal() => ProgressMode::Auto,
        ProgressMode::Auto => ProgressMode::Plain,
        other => other,
    }
}
