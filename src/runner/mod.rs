//! Wiring one run: a validated job and skill, a provider, the run folder and
//! the sinks, around [`run::run`], which sequences the agent, the checks and
//! the git step.
//!
//! Shared by `agentci run` and the evaluation of suites, which runs many of
//! these at once in one process. It never prints: problems before the sinks
//! exist are returned, everything after goes through the event stream, so
//! the trace and the JUnit file are written whatever happens. The job's git
//! outputs run inside the run, after the checks, so they are in the trace.

pub mod checkpoint;
mod checks;
mod git_step;
mod mcp;
mod prepare;
mod provider_setup;
pub mod resume;
mod rounds;
pub mod run;
mod run_folder;
pub mod secrets;
mod start;

use std::path::PathBuf;
use std::sync::Arc;

pub use checkpoint::{CHECKPOINT_DIR, sha256_hex, skill_fingerprint};
pub use prepare::{PrepareError, Prepared, prepare, prepare_for_event};
pub use provider_setup::build_provider;
pub use run::{AfterChecks, RunInput};
pub use run_folder::{RunFolder, new_run_id};

use futures_util::FutureExt;

use crate::agent::{CancelSignal, ToolSet};
use crate::event::{OutputPaths, RunCompleted};
use crate::process::{ProcessRunner, RunnerConfig};
use crate::redact::Redactor;
use crate::sink::bus::{EventBus, EventSink, SinkError};
use crate::sink::{FileBase, JunitWriter, ResultWriter, TraceWriter};
use crate::tools::{ToolLimits, catalog};
use secrets::secret_values;

/// Where one run's files go and what else observes it.
#[derive(Default)]
pub struct RunOptions {
    /// The run folder (`--out`); `None`: `outputs.dir` or `.agentci/runs/<run-id>/`.
    pub out_dir: Option<PathBuf>,
    /// Trace path (`--trace`), beating `outputs.trace`.
    pub trace: Option<PathBuf>,
    /// JUnit path (`--junit`), beating `outputs.junit`.
    pub junit: Option<PathBuf>,
    /// Save the model exchanges to this cassette.
    pub record: Option<PathBuf>,
    /// Sinks besides the trace and JUnit writers (progress, GitHub, eval).
    pub sinks: Vec<Box<dyn EventSink>>,
    /// A run id to use instead of a fresh one.
    pub run_id: Option<String>,
    /// Stops the run early (signals); the run then ends `interrupted`.
    pub cancel: CancelSignal,
    /// What the JUnit `file` attribute is relative to.
    pub junit_files: FileBase,
    /// Variables set for `exec` and the checks on top of the job's `env:`
    /// (an eval attempt's own temp and build-output folders); empty for a
    /// plain run, which keeps the caller's values.
    pub extra_env: Vec<(String, String)>,
    /// Save a checkpoint before every model turn, recording this job file
    /// and the SHA-256 of what made the job (see [`checkpoint::Origin`]).
    pub checkpoint: Option<JobFingerprint>,
    /// Go on with a stopped run from its checkpoint (`agentci run --resume`).
    pub resume: Option<resume::Resumption>,
}

/// The job file (or `<command line>`) and the SHA-256 of what made the job.
#[derive(Clone, Debug)]
pub struct JobFingerprint {
    pub job_file: String,
    pub sha256: String,
}

/// What a finished run left behind.
#[derive(Debug)]
pub struct RunReport {
    pub completed: RunCompleted,
    pub run_dir: PathBuf,
    pub trace: PathBuf,
    pub junit: PathBuf,
    /// Sinks that could not write; the run itself went on.
    pub sink_errors: Vec<SinkError>,
}

/// Why a run could not start at all.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create the run folder {}: {source}", .folder.display())]
    RunFolder {
        folder: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot add .agentci/ to {}: {source}", .exclude.display())]
    GitExclude {
        exclude: PathBuf,
        source: std::io::Error,
    },
    /// The run's kept outputs cannot be made readable to the tools.
    #[error("{}: {source}", .folder.display())]
    KeptOutputs {
        folder: PathBuf,
        source: std::io::Error,
    },
    #[error("failed to create the trace: {0}")]
    Trace(SinkError),
    /// A dirty workspace, or git outputs that cannot be made.
    #[error(transparent)]
    Git(git_step::GitStepError),
    #[error("cannot create the run's private temporary folder: {0}")]
    TempFolder(std::io::Error),
}

/// Run a prepared job to the end.
pub async fn run_prepared(
    prepared: &Prepared,
    options: RunOptions,
) -> Result<RunReport, StartError> {
    let Prepared {
        job,
        skill,
        further_skills,
        workspace,
        warnings,
        untrusted,
        memory,
    } = prepared;
    let mut resume = options.resume;
    let run_id = match &resume {
        Some(resumption) => resumption.origin().run_id.clone(),
        None => options.run_id.clone().unwrap_or_else(new_run_id),
    };
    let folder = RunFolder::resolve(
        &run_id,
        workspace.root(),
        options.out_dir.as_deref(),
        &job.outputs,
    );
    // A resumed run writes where the run it goes on with wrote.
    let (trace_path, junit_path) = match &resume {
        Some(resumption) => (
            resumption.origin().trace.clone(),
            resumption.origin().junit.clone(),
        ),
        None => (
            options
                .trace
                .clone()
                .unwrap_or_else(|| folder.trace.clone()),
            options
                .junit
                .clone()
                .unwrap_or_else(|| folder.junit.clone()),
        ),
    };
    // Written only for a job with a result schema.
    let result_path = job.result_schema.as_ref().map(|_| folder.result.clone());
    let own_files: Vec<PathBuf> = [&folder.dir, &trace_path, &junit_path]
        .into_iter()
        .chain(job.outputs.patch.as_ref())
        .chain(result_path.as_ref())
        .cloned()
        .collect();
    // A resumed run's workspace holds the run's own changes: it was checked when the run began.
    if resume.is_none() {
        git_step::preflight(job, workspace.root(), &own_files).map_err(StartError::Git)?;
    }
    folder.create(workspace.root())?;

    // Secrets are read once, here: the bus masks them in every event, and
    // children get only the ones the job passes through `env:`.
    let lookup = |name: &str| std::env::var(name).ok();
    let secrets = Redactor::new(
        secret_values(job, lookup)
            .into_iter()
            .chain(mcp::secret_values(job, lookup)),
    );
    let (mut exec_env, missing) = job.resolve_env(lookup);
    // Later entries win when the command is spawned (eval's per-attempt folders).
    exec_env.extend(options.extra_env.iter().cloned());
    let processes = ProcessRunner::new(RunnerConfig {
        sandbox: job.sandbox,
        workspace: workspace.root().to_path_buf(),
        run_id: run_id.clone(),
        protected: own_files.clone(),
        extra_env: exec_env,
        secrets: secrets.clone(),
    })
    .map_err(StartError::TempFolder)?;
    let mut sinks: Vec<Box<dyn EventSink>> = Vec::new();
    let mut junit =
        JunitWriter::new(junit_path.clone()).with_file_base(options.junit_files.clone());
    match resume.as_mut() {
        // The trace goes on after the checkpoint; the JUnit file is rebuilt from all of it.
        Some(resumption) => {
            let kept = std::mem::take(&mut resumption.trace_kept);
            sinks.push(Box::new(
                TraceWriter::continue_from(&trace_path, &kept).map_err(StartError::Trace)?,
            ));
            for event in &resumption.history {
                let _ = junit.on_event(event);
            }
        }
        None => sinks.push(Box::new(
            TraceWriter::create(&trace_path).map_err(StartError::Trace)?,
        )),
    }
    sinks.push(Box::new(junit));
    if let Some(path) = &result_path {
        sinks.push(Box::new(ResultWriter::new(path.clone())));
    }
    let mut caller_sinks = options.sinks;
    // The caller's sinks (GitHub summary and outputs) cover the whole run too.
    if let Some(resumption) = resume.as_mut() {
        for event in std::mem::take(&mut resumption.history) {
            for sink in &mut caller_sinks {
                sink.on_history(&event);
            }
        }
    }
    sinks.extend(caller_sinks);
    let bus = EventBus::with_redactor(run_id.clone(), sinks, secrets);
    let bus = match &resume {
        Some(resumption) => bus.continuing_at(resumption.next_seq()),
        None => bus,
    };
    let saver = options.checkpoint.map(|job_file| {
        let (skill_file, skill_sha256) = skill_fingerprint(skill);
        let origin = checkpoint::Origin {
            agentci_version: env!("CARGO_PKG_VERSION").to_string(),
            run_id: run_id.clone(),
            job_file: job_file.job_file,
            job_sha256: job_file.sha256,
            skill_file,
            skill_sha256,
            workspace: workspace.root().to_path_buf(),
            trace: trace_path.clone(),
            junit: junit_path.clone(),
        };
        let seq = bus.clone();
        Box::new(checkpoint::CheckpointWriter::new(
            &folder.dir,
            origin,
            Box::new(move || seq.next_seq()),
        )) as Box<dyn crate::agent::StateSaver>
    });
    let mut warnings = warnings.clone();
    warnings.extend(missing.iter().map(|name| {
        format!("secret `{name}` is not set in the environment; `env` passes nothing for it")
    }));

    let skill_folders: Vec<(String, PathBuf)> = std::iter::once(skill)
        .chain(further_skills)
        .map(|s| (s.name.clone(), s.dir.clone()))
        .collect();
    let provider = build_provider(
        job,
        workspace.root(),
        &skill_folders,
        options.record.as_deref(),
    );
    let skill_label = match &skill.source {
        Some(source) => format!("{} ({}@{})", skill.name, source.git, source.commit),
        None => skill.name.clone(),
    };
    let after_checks = git_step::GitStep::new(
        job,
        workspace.root(),
        own_files,
        skill_label,
        &provider.model_info(),
        &run_id,
    )
    .map(|step| -> AfterChecks<'_> {
        let cancel = options.cancel.clone();
        Box::new(move |status, bus| {
            // libgit2 blocks (and a push waits on the network): keep it off the runtime's threads.
            tokio::task::spawn_blocking(move || step.finish(status, &bus, &cancel))
                .map(|joined| {
                    joined.unwrap_or_else(|e| Err(git_step::GitStepError::Panicked(e.to_string())))
                })
                .boxed()
        })
    });
    let servers = match job.mcp.servers.is_empty() {
        true => None,
        false => Some(Arc::new(
            mcp::RunServers::start(job, workspace.root(), &processes, bus.clone()).await,
        )),
    };
    let tools = ToolSet::from_tools(
        catalog::for_job(job.tools.as_deref()),
        skill.allowed_tools.as_deref(),
    );
    let tools = match &servers {
        Some(servers) => tools.with_live(servers.tools(), Some(servers.live())),
        None => tools,
    };
    let input = RunInput {
        job,
        skill,
        further_skills,
        provider: provider.as_ref(),
        tools,
        // The kept outputs are read where they are, never written by a tool.
        workspace: workspace
            .clone()
            .with_kept_outputs(&folder.kept_outputs)
            .map_err(|source| StartError::KeptOutputs {
                folder: folder.kept_outputs.clone(),
                source,
            })?,
        outputs: OutputPaths {
            dir: folder.dir.display().to_string(),
            trace: Some(trace_path.display().to_string()),
            junit: Some(junit_path.display().to_string()),
            patch: job.outputs.patch.as_ref().map(|p| p.display().to_string()),
        },
        warnings,
        limits: ToolLimits {
            kept_outputs: Some(folder.kept_outputs.clone()),
            ..ToolLimits::default()
        },
        processes,
        untrusted,
        memory: memory.as_ref(),
        cancel: options.cancel,
        after_checks,
        saver,
        resume,
    };
    let completed = run::run(input, bus.clone()).await;
    if let Some(servers) = servers {
        servers.shutdown().await;
    }
    let sink_errors = bus.finish();
    Ok(RunReport {
        completed,
        run_dir: folder.dir,
        trace: trace_path,
        junit: junit_path,
        sink_errors,
    })
}
