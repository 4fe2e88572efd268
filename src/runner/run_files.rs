//! The files one run writes and the sinks that write them: where the trace,
//! the JUnit file and the result go (for a resumed run too, from the command
//! line and the job, never from the checkpoint, which was checked to name
//! the same ones), the event bus over those sinks, and the checkpoint saver.
//!
//! It does not start anything the run executes (processes, MCP servers, the
//! provider) and does not sequence the run; [`super::run_prepared`] does.

use std::path::{Path, PathBuf};

use crate::agent::StateSaver;
use crate::event::OutputPaths;
use crate::event::bus::{EventBus, EventSink};
use crate::job::JobSpec;
use crate::safe_file::OutputFolder;
use crate::sink::reserve::RecordReserve;
use crate::sink::{FileBase, JunitWriter, ResultWriter, TraceWriter};
use crate::skills::Skill;

use super::output_folders::OutputFolders;
use super::resume::Resumption;
use super::run_folder::KEPT_OUTPUTS_DIR;
use super::skill_fingerprint;
use super::{CheckpointOptions, RunFolder, RunOptions, StartError, checkpoint, new_run_id};

/// The run's id and the paths of what it writes.
pub(super) struct RunPaths {
    pub run_id: String,
    pub folder: RunFolder,
    pub trace_path: PathBuf,
    pub junit_path: PathBuf,
    /// Written only for a job with a result schema.
    pub result_path: Option<PathBuf>,
    /// The files the run makes itself, which the workspace checks and the tools leave alone.
    pub own_files: Vec<PathBuf>,
}

impl RunPaths {
    pub(super) fn resolve(job: &JobSpec, workspace: &Path, options: &RunOptions) -> RunPaths {
        let resume = &options.resume;
        let run_id = match resume {
            Some(resumption) => resumption.origin().run_id.clone(),
            None => options.run_id.clone().unwrap_or_else(new_run_id),
        };
        let folder =
            RunFolder::resolve(&run_id, workspace, options.out_dir.as_deref(), &job.outputs);
        let (trace_path, junit_path) =
            folder.trace_and_junit(options.trace.as_deref(), options.junit.as_deref());
        // Written only for a job with a result schema.
        let result_path = job.result_schema.as_ref().map(|_| folder.result.clone());
        // Every output path, written or not this run: none is the model's to make.
        let own_files: Vec<PathBuf> = [&folder.dir, &trace_path, &junit_path, &folder.result]
            .into_iter()
            .chain(job.outputs.patch.as_ref())
            .chain(&options.caller_outputs)
            .cloned()
            .collect();
        RunPaths {
            run_id,
            folder,
            trace_path,
            junit_path,
            result_path,
            own_files,
        }
    }

    /// Make and open the folders that will hold the outputs, before any
    /// child runs and before any model call: the run folder with its
    /// `outputs/` (and `checkpoint/` when `checkpoints`), the folder of the
    /// trace, JUnit, result and patch, and of every other output inside the
    /// workspace. The sandbox binds the top-level entry of each read-only
    /// only if it exists, and a folder a child made first (or a symlink in
    /// its place) would take agentci's write where it points; a symlink
    /// already on the way is refused, naming it ([`OutputFolders`]).
    pub(super) fn create_output_folders(
        &self,
        workspace: &Path,
        patch: Option<&Path>,
        checkpoints: bool,
    ) -> Result<OutputFolders, StartError> {
        let mut folders = OutputFolders::new(workspace);
        let run_dir = folders.open(&self.folder.dir)?;
        folders.open_child(&run_dir, KEPT_OUTPUTS_DIR)?;
        if checkpoints {
            folders.open_child(&run_dir, checkpoint::CHECKPOINT_DIR)?;
        }
        let written = [&self.trace_path, &self.junit_path]
            .into_iter()
            .chain(self.result_path.as_ref())
            .map(PathBuf::as_path)
            .chain(patch);
        for file in written {
            folders.open_parent_of(file)?;
        }
        for file in &self.own_files {
            if folders.in_workspace(file) && file.parent().is_some_and(|p| p != workspace) {
                folders.open_parent_of(file)?;
            }
        }
        Ok(folders)
    }

    /// The folders of the run's records, where space is reserved for them.
    pub(super) fn record_folders(&self) -> Vec<&Path> {
        std::iter::once(self.folder.dir.as_path())
            .chain(self.trace_path.parent())
            .chain(self.junit_path.parent())
            .chain(self.result_path.as_deref().and_then(Path::parent))
            .collect()
    }

    /// The paths as `run.started` reports them.
    pub(super) fn outputs(&self, job: &JobSpec) -> OutputPaths {
        OutputPaths {
            dir: self.folder.dir.display().to_string(),
            trace: Some(self.trace_path.display().to_string()),
            junit: Some(self.junit_path.display().to_string()),
            patch: job.outputs.patch.as_ref().map(|p| p.display().to_string()),
        }
    }
}

/// The bus over the trace, JUnit and result writers (which share `reserve`
/// when the disk is full) and the caller's sinks, and the trace's position
/// that follows it (for the checkpoint).
pub(super) fn open_bus(
    paths: &RunPaths,
    folders: &OutputFolders,
    resume: Option<&mut Resumption>,
    junit_files: FileBase,
    mut extra_sinks: Vec<Box<dyn EventSink>>,
    secrets: crate::redact::Redactor,
    reserve: &RecordReserve,
) -> Result<(EventBus, checkpoint::TracePosition), StartError> {
    let mut sinks: Vec<Box<dyn EventSink>> = Vec::new();
    let opened = |path: &Path| {
        folders.file(path).ok_or_else(|| StartError::RunFolder {
            folder: path.to_path_buf(),
            source: std::io::Error::other("its folder was not opened before the run"),
        })
    };
    let mut junit = JunitWriter::in_folder(opened(&paths.junit_path)?)
        .with_file_base(junit_files)
        .with_reserve(reserve.clone());
    let next_seq = resume.as_ref().map(|resumption| resumption.next_seq());
    match resume {
        // The trace goes on after the checkpoint; the JUnit file is rebuilt from all of it.
        Some(resumption) => {
            let kept = std::mem::take(&mut resumption.trace_kept);
            sinks.push(Box::new(
                TraceWriter::continue_in(opened(&paths.trace_path)?, &kept)
                    .map_err(StartError::Trace)?
                    .with_reserve(reserve.clone()),
            ));
            let history = std::mem::take(&mut resumption.history);
            for event in &history {
                let _ = junit.on_event(event);
                // The caller's sinks (GitHub summary and outputs) cover the whole run too.
                for sink in &mut extra_sinks {
                    sink.on_history(event);
                }
            }
        }
        None => sinks.push(Box::new(
            TraceWriter::create_in(opened(&paths.trace_path)?)
                .map_err(StartError::Trace)?
                .with_reserve(reserve.clone()),
        )),
    }
    sinks.push(Box::new(junit));
    if let Some(path) = &paths.result_path {
        sinks.push(Box::new(
            ResultWriter::new(opened(path)?).with_reserve(reserve.clone()),
        ));
    }
    sinks.extend(extra_sinks);
    let position = checkpoint::TracePosition::starting_at(next_seq.unwrap_or(1));
    sinks.push(position.sink());
    let bus = EventBus::with_redactor(paths.run_id.clone(), sinks, secrets);
    let bus = match next_seq {
        Some(next_seq) => bus.continuing_at(next_seq),
        None => bus,
    };
    Ok((bus, position))
}

/// Saves a checkpoint before every model turn, recording the job file and
/// what made the job, masking `secrets` as the trace does, and signing it
/// with the checkpoint key.
pub(super) fn checkpoint_saver(
    options: CheckpointOptions,
    skill: &Skill,
    workspace: &Path,
    paths: &RunPaths,
    checkpoint_folder: OutputFolder,
    position: &checkpoint::TracePosition,
    secrets: crate::redact::Redactor,
) -> Box<dyn StateSaver> {
    let (skill_file, skill_sha256) = skill_fingerprint(skill);
    let origin = checkpoint::Origin {
        agentci_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: paths.run_id.clone(),
        job_file: options.job.job_file,
        job_sha256: options.job.sha256,
        skill_file,
        skill_sha256,
        workspace: workspace.to_path_buf(),
        run_dir: paths.folder.dir.clone(),
        trace: paths.trace_path.clone(),
        junit: paths.junit_path.clone(),
    };
    let position = position.clone();
    Box::new(checkpoint::CheckpointWriter::new(
        checkpoint_folder,
        origin,
        options.key,
        secrets,
        Box::new(move || position.next_seq()),
    ))
}
