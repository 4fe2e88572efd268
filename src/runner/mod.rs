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
pub mod checkpoint_key;
mod checks;
pub mod completion;
mod git_step;
mod mcp;
mod output_folders;
mod prepare;
mod processes;
pub mod provider_setup;
mod read_denied;
mod replay_prompt;
pub mod resume;
mod rounds;
pub mod run;
mod run_files;
mod run_folder;
pub mod secrets;
mod start;
mod unchecked;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use checkpoint::{CHECKPOINT_DIR, sha256_hex, skill_fingerprint};
pub use checkpoint_key::{CheckpointKey, KeyError};
pub use prepare::{PrepareError, Prepared, prepare, prepare_for_event};
pub use processes::RunnerExtra;
pub use provider_setup::build_provider;
pub use run::{AfterChecks, RunInput};
pub use run_folder::{RunFolder, new_run_id};

use futures_util::FutureExt;

use crate::agent::{CancelSignal, ToolSet};
use crate::event::RunCompleted;
use crate::event::bus::{EventBus, EventSink, SinkError};
use crate::job::JobSpec;
use crate::mcp::RunDeadline;
use crate::process::{ProcessRunner, RunnerError};
use crate::provider::ModelInfo;
use crate::redact::Redactor;
use crate::run_env::RunEnv;
use crate::sink::FileBase;
use crate::sink::reserve::{RECORD_RESERVE_BYTES, RecordReserve};
use crate::skills::Skill;
use crate::tools::{ToolLimits, catalog};
use output_folders::OutputFolders;
use run_files::{RunPaths, checkpoint_saver, open_bus};

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
    /// and the SHA-256 of what made the job (see [`checkpoint::Origin`]),
    /// signed with the checkpoint key, which children cannot read.
    pub checkpoint: Option<CheckpointOptions>,
    /// Go on with a stopped run from its checkpoint (`agentci run --resume`).
    pub resume: Option<resume::Resumption>,
    /// Files the caller writes after the run (`--output-last-message`, the
    /// GitHub step summary and outputs): kept from children like the run's own.
    pub caller_outputs: Vec<PathBuf>,
    /// The span the run's exported trace nests under (an eval attempt's);
    /// `None`: the `TRACEPARENT` variable's, else a trace of its own.
    pub trace_parent: Option<crate::telemetry::TraceParent>,
    /// agentci's environment as the command found it: the model's key, the
    /// job's secrets and `env:`, the push token, the variables children
    /// inherit and the telemetry settings are all read from it.
    pub env: RunEnv,
}

/// The job file (or `<command line>`) and the SHA-256 of what made the job.
#[derive(Clone, Debug)]
pub struct JobFingerprint {
    pub job_file: String,
    pub sha256: String,
}

/// What a run's checkpoint records and is signed with.
pub struct CheckpointOptions {
    pub job: JobFingerprint,
    pub key: CheckpointKey,
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
    /// `run.completed` says the run's records are incomplete already (what
    /// could not be written before it); `sink_errors` holds what else failed.
    pub incomplete_in_reason: bool,
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
    /// An output folder that cannot be made or opened beneath its root: a
    /// symlink on the way (named), a file in the way, an I/O error.
    #[error(transparent)]
    OutputFolder(#[from] crate::safe_file::OutputFolderError),
    #[error("failed to create the trace: {0}")]
    Trace(SinkError),
    /// A dirty workspace, or git outputs that cannot be made.
    #[error(transparent)]
    Git(git_step::GitStepError),
    #[error("cannot create the run's private temporary folder: {0}")]
    TempFolder(std::io::Error),
    /// The proxy `sandbox.network: [hosts]` needs could not start.
    #[error("{0}")]
    Proxy(crate::netproxy::ProxyError),
    /// An entry of `sandbox.writable` that cannot be made writable here.
    #[error("{}", .source.in_file(.job_file))]
    Writable {
        job_file: PathBuf,
        source: crate::sandbox::WritableError,
    },
}

/// The caller's sinks, plus the OTLP span and metrics sinks when the job's `telemetry`
/// or the `OTEL_EXPORTER_OTLP_*` variables name a collector; its flush
/// before `run.completed`, and what to warn about: an exporter that could
/// not start, a `TRACEPARENT` that cannot be read (the run is then a trace
/// of its own).
fn with_telemetry(
    job: &JobSpec,
    run_env: &RunEnv,
    parent: Option<&crate::telemetry::TraceParent>,
    mut sinks: Vec<Box<dyn EventSink>>,
) -> (
    Vec<Box<dyn EventSink>>,
    Option<crate::event::CompletionHook>,
    Vec<String>,
) {
    let env = |name: &str| run_env.var(name);
    let Some(target) = crate::telemetry::OtlpTarget::resolve(&job.telemetry, env) else {
        return (sinks, None, Vec::new());
    };
    let mut problems: Vec<String> = target.warning.iter().cloned().collect();
    let from_env = match parent {
        Some(_) => None,
        None => env("TRACEPARENT")
            .filter(|text| !text.trim().is_empty())
            .and_then(|text| match crate::telemetry::TraceParent::parse(&text) {
                Ok(parent) => Some(parent),
                Err(problem) => {
                    problems.push(format!(
                        "TRACEPARENT: {problem}; the run is exported as a trace of its own"
                    ));
                    None
                }
            }),
    };
    let temporality = env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE");
    let identity = crate::telemetry::RunIdentity {
        job_name: job.name.clone(),
        provider: job.model.provider.as_str().to_string(),
        model: job.model.name.clone(),
    };
    match crate::telemetry::start_run_export(
        &target,
        parent.or(from_env.as_ref()),
        identity,
        temporality.as_deref(),
    ) {
        Ok(export) => {
            sinks.extend(export.sinks);
            (sinks, Some(export.flush), problems)
        }
        Err(problem) => {
            problems.push(problem.to_string());
            (sinks, None, problems)
        }
    }
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
        ..
    } = prepared;
    let prompt = replay_prompt::prompt_input(prepared);
    let paths = RunPaths::resolve(job, workspace.root(), &options);
    let mut resume = options.resume;
    // A resumed run's workspace holds the run's own changes: it was checked when the run began.
    let before_run = match resume.is_none() {
        true => git_step::preflight(job, workspace.root(), &paths.own_files),
        false => git_step::before_resumed_run(job, workspace.root(), &paths.own_files),
    }
    .map_err(StartError::Git)?;
    let folders = paths.create_output_folders(
        workspace.root(),
        job.outputs.patch.as_deref(),
        options.checkpoint.is_some(),
    )?;
    RunFolder::exclude_from_git(workspace.root())?;

    // The checkpoint key is hidden from every child (exec, checks, MCP servers).
    let masked: Vec<PathBuf> = options
        .checkpoint
        .iter()
        .map(|c| c.key.path().to_path_buf())
        .collect();
    let read_only = read_only_in_workspace(job, workspace.root(), skill, further_skills);
    let hidden = Hidden {
        checkpoint_key: masked,
        read_denied: read_denied_in_workspace(job, workspace.root(), skill, further_skills),
    };
    let (processes, secrets, unset_secrets) = start_processes(
        job,
        &options.env,
        workspace.root(),
        &paths,
        read_only,
        &options.extra_env,
        hidden,
    )?;
    let (sinks, telemetry_flush, telemetry_problem) = with_telemetry(
        job,
        &options.env,
        options.trace_parent.as_ref(),
        options.sinks,
    );
    let reserve = RecordReserve::default();
    let (bus, position) = open_bus(
        &paths,
        &folders,
        resume.as_mut(),
        options.junit_files.clone(),
        sinks,
        secrets,
        &reserve,
    )?;
    // Before any child runs: what the model's commands fill later cannot take it.
    let unreserved = reserve.hold_beside(&paths.record_folders(), RECORD_RESERVE_BYTES);
    let mut completion = completion::Completion::default();
    if let Some(flush) = telemetry_flush {
        completion.before(flush);
    }
    let network_bus = bus.clone();
    processes.observe_network(std::sync::Arc::new(move |record| {
        network_bus.emit(crate::event::EventKind::NetworkRequest(record));
    }));
    let saver = options
        .checkpoint
        .zip(folders.folder(&paths.folder.dir.join(checkpoint::CHECKPOINT_DIR)))
        .map(|(checkpoint, folder)| {
            checkpoint_saver(
                checkpoint,
                skill,
                workspace.root(),
                &paths,
                folder.clone(),
                &position,
                bus.redactor(),
            )
        });
    let mut warnings = warnings.clone();
    warnings.extend(unset_secrets);
    warnings.extend(telemetry_problem);
    warnings.extend(unreserved);

    let provider = provider_for(
        prepared,
        &options.env,
        options.record.as_deref(),
        prompt.event_text,
        bus.redactor(),
    );
    let after_checks = git_after_checks(
        prepared,
        &paths,
        &folders,
        before_run,
        &options.env,
        &provider.model_info(),
        options.cancel.clone(),
    );
    let deadline = run_deadline(job, resume.as_ref());
    let (servers, tools) = start_tools(
        job,
        skill,
        workspace.root(),
        &processes,
        &options.env,
        deadline,
        &bus,
    )
    .await;
    let mcp_start = servers.as_ref().map(|servers| servers.start_report());
    if let Some(servers) = &servers {
        // Requests sent during the last tool calls have no next turn.
        completion.before(servers.last_requests());
    }
    let kept_outputs = folders
        .folder(&paths.folder.kept_outputs)
        .map(|folder| folder.beneath().clone())
        .ok_or_else(|| StartError::KeptOutputs {
            folder: paths.folder.kept_outputs.clone(),
            source: std::io::Error::other("the folder was not opened before the run"),
        })?;
    let input = RunInput {
        job,
        skill,
        further_skills,
        provider: provider.as_ref(),
        tools,
        // The kept outputs are read where they are, never written by a tool.
        workspace: workspace
            .clone()
            .with_kept_outputs_opened(&paths.folder.kept_outputs, kept_outputs)
            .map(|ws| ws.with_own_outputs(&paths.own_files))
            .map_err(|source| StartError::KeptOutputs {
                folder: paths.folder.kept_outputs.clone(),
                source,
            })?,
        outputs: paths.outputs(job),
        warnings,
        limits: ToolLimits {
            kept_outputs: Some(paths.folder.kept_outputs.clone()),
            max_file_bytes: job.sandbox.limits.file_size,
            ..ToolLimits::default()
        },
        processes,
        untrusted: &prompt.untrusted,
        memory: prompt.memory.as_ref(),
        cancel: options.cancel,
        after_checks,
        saver,
        resume,
        mcp_start,
        completion,
    };
    let completed = run::run(input, bus.clone()).await;
    if let Some(servers) = servers {
        servers.shutdown().await;
    }
    let sink_errors = bus.finish();
    let incomplete_in_reason = bus.settle_failed();
    Ok(RunReport {
        completed,
        run_dir: paths.folder.dir,
        trace: paths.trace_path,
        junit: paths.junit_path,
        sink_errors,
        incomplete_in_reason,
    })
}

/// The process runner for `exec` and the checks, the secrets the bus masks,
/// and a warning for each secret the job passes through `env:` that is not set.
fn start_processes(
    job: &JobSpec,
    env: &RunEnv,
    workspace: &Path,
    paths: &RunPaths,
    read_only: Vec<PathBuf>,
    extra_env: &[(String, String)],
    hidden: Hidden,
) -> Result<(ProcessRunner, Redactor, Vec<String>), StartError> {
    // Secrets are read once, here, from the run's snapshot: the bus masks
    // them in every event (the runner's set, so children's output and the
    // trace mask the same values), and children get only the ones the job
    // passes through `env:`.
    let extra = RunnerExtra {
        workspace: workspace.to_path_buf(),
        run_id: paths.run_id.clone(),
        protected: paths.own_files.clone(),
        masked: hidden.checkpoint_key,
        read_denied: hidden.read_denied,
        read_only,
        // Later entries win when the command is spawned (eval's per-attempt folders).
        extra_env: extra_env.to_vec(),
    };
    let processes = ProcessRunner::for_job(job, env, extra).map_err(|e| match e {
        RunnerError::TempFolder(e) => StartError::TempFolder(e),
        RunnerError::Proxy(e) => StartError::Proxy(e),
        RunnerError::Writable(source) => StartError::Writable {
            job_file: job.path.clone(),
            source,
        },
    })?;
    let secrets = processes.secrets().clone();
    Ok((processes, secrets, processes::unset_secrets(job, env)))
}

/// What children see empty.
struct Hidden {
    checkpoint_key: Vec<PathBuf>,
    /// What the job's `read(...)` deny rules cover, as found at the start.
    read_denied: Vec<PathBuf>,
}

/// The workspace's files that the job's `read(...)` deny rules cover; none
/// without such rules (the workspace is not walked then).
fn read_denied_in_workspace(
    job: &JobSpec,
    workspace: &Path,
    skill: &Skill,
    further_skills: &[Skill],
) -> Vec<PathBuf> {
    let rules = crate::skills::placeholders::expand_in_rules(
        job.permissions.rules(),
        skill,
        further_skills,
    );
    let policy = crate::policy::PermissionPolicy::new(&rules);
    if policy.denials("read").is_empty() {
        return Vec::new();
    }
    read_denied::read_denied_paths(&policy, workspace)
}

/// What children may read and not write in the workspace, as found before
/// any child starts: every `.git` and the `core.hooksPath` folder (hooks
/// and configuration that git commands outside the sandbox obey), the
/// shell and git start-up files at its top, and the skill folders.
fn read_only_in_workspace(
    job: &JobSpec,
    workspace: &Path,
    skill: &Skill,
    further_skills: &[Skill],
) -> Vec<PathBuf> {
    let loaded: Vec<&Path> = std::iter::once(skill)
        .chain(further_skills)
        .map(|s| s.dir.as_path())
        .collect();
    let mut paths = crate::git::repositories::git_entries(workspace);
    paths.extend(crate::git::repositories::hooks_folder_in(workspace));
    paths.extend(crate::sandbox::startup_files::startup_files_in(workspace));
    paths.extend(crate::skills::in_workspace::skill_folders_in(
        workspace,
        &job.skills_path,
        &loaded,
    ));
    paths
}

/// The job's model, which may read every skill's folder.
fn provider_for(
    prepared: &Prepared,
    env: &RunEnv,
    record: Option<&Path>,
    event_text: bool,
    secrets: crate::redact::Redactor,
) -> Box<dyn crate::provider::ModelProvider> {
    let Prepared {
        job,
        skill,
        further_skills,
        workspace,
        ..
    } = prepared;
    let skill_folders: Vec<(String, PathBuf)> = std::iter::once(skill)
        .chain(further_skills)
        .map(|s| (s.name.clone(), s.dir.clone()))
        .collect();
    build_provider(
        job,
        env,
        workspace.root(),
        &skill_folders,
        record,
        event_text,
        secrets,
    )
}

/// The job's git outputs as the step after the checks; `None` when it asks for none.
fn git_after_checks<'a>(
    prepared: &Prepared,
    paths: &RunPaths,
    folders: &OutputFolders,
    before_run: git_step::BeforeRun,
    env: &RunEnv,
    model: &ModelInfo,
    cancel: CancelSignal,
) -> Option<AfterChecks<'a>> {
    let (job, workspace, skill) = (&prepared.job, prepared.workspace.root(), &prepared.skill);
    let skill_label = match &skill.source {
        Some(source) => format!("{} ({}@{})", skill.name, source.git, source.commit),
        None => skill.name.clone(),
    };
    git_step::GitStep::new(
        job,
        workspace,
        paths.own_files.clone(),
        before_run,
        skill_label,
        model,
        &paths.run_id,
    )
    .map(|step| step.with_push_token(env))
    .map(|step| step.with_patch(job.outputs.patch.as_deref().and_then(|p| folders.file(p))))
    .map(|step| -> AfterChecks<'_> {
        Box::new(move |status, bus| {
            // libgit2 blocks (and a push waits on the network): keep it off the runtime's threads.
            tokio::task::spawn_blocking(move || step.finish(status, &bus, &cancel))
                .map(|joined| {
                    joined.unwrap_or_else(|e| Err(git_step::GitStepError::Panicked(e.to_string())))
                })
                .boxed()
        })
    })
}

/// When the run's `budget.timeout` runs out, counted from now less what a
/// resumed run had spent before.
fn run_deadline(job: &JobSpec, resume: Option<&resume::Resumption>) -> Option<RunDeadline> {
    let timeout = job.budget.timeout?;
    let spent = resume.map_or(Duration::ZERO, resume::Resumption::elapsed);
    Some(RunDeadline {
        at: tokio::time::Instant::now() + timeout.saturating_sub(spent),
        timeout,
    })
}

/// The tools the model may call: the job's built-in ones and those of its
/// MCP servers, which start here within `deadline` (`None` when the job
/// has none).
async fn start_tools(
    job: &JobSpec,
    skill: &Skill,
    workspace: &Path,
    processes: &ProcessRunner,
    env: &RunEnv,
    deadline: Option<RunDeadline>,
    bus: &EventBus,
) -> (Option<Arc<mcp::RunServers>>, ToolSet) {
    // A run that refuses its degraded sandbox starts no child at all.
    let refused = crate::sandbox::refuses(&processes.sandbox_report());
    let servers = match job.mcp.servers.is_empty() || refused {
        true => None,
        false => Some(Arc::new(
            mcp::RunServers::start(job, workspace, processes, env, deadline, bus.clone()).await,
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
    (servers, tools)
}
