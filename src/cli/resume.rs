//! `agentci run JOB --resume RUN_DIR`: what the command line adds to a run
//! so that it can be resumed (the job's fingerprint for its checkpoint), and
//! what it checks before going on with one (the flags that cannot go with a
//! resume, the job, skill and paths the run started with). The job file,
//! workspace and output paths always come from the command line, as for the
//! first run; the checkpoint only has to agree with them.
//!
//! Loading the checkpoint and cutting the trace back to it is
//! [`crate::runner::resume`]'s; this module only joins it to the flags.

use std::path::Path;

use crate::job::{COMMAND_LINE_JOB, Diagnostic, ProviderKind};
use crate::runner::resume::{self, Given, Resumption};
use crate::runner::{
    CheckpointKey, JobFingerprint, Prepared, RunFolder, sha256_hex, skill_fingerprint,
};

use super::args::RunArgs;

/// The job file as the checkpoint records it and the SHA-256 of what made
/// the job: the file's bytes and every flag that shapes the job except the
/// budget's, which a resume may raise, and `--base-url`, which says where
/// the model is, not what the job is (a resumed run may reach it elsewhere).
pub fn job_fingerprint(job_file: &Path, args: &RunArgs, cwd: &Path) -> JobFingerprint {
    let from_flags = job_file == Path::new(COMMAND_LINE_JOB);
    let shown = match from_flags {
        true => COMMAND_LINE_JOB.to_string(),
        false => cwd.join(job_file).display().to_string(),
    };
    let bytes = match from_flags {
        true => Vec::new(),
        false => std::fs::read(cwd.join(job_file)).unwrap_or_default(),
    };
    let flags = &args.job_flags;
    let shaping = format!(
        "{:?}",
        (
            &flags.goal,
            &flags.skill,
            &flags.tools,
            &flags.allow,
            &flags.deny,
            &flags.checks,
            &flags.checks_rounds,
            &args.vars,
            &args.model,
            &args.skills_path,
        )
    );
    JobFingerprint {
        job_file: shown,
        sha256: sha256_hex(&[&bytes, shaping.as_bytes()]),
    }
}

/// Flags a resume cannot take: a cassette holds a run from its start, and
/// a resumed run's trace goes on in the file the run wrote.
pub fn refuse_flags(args: &RunArgs) -> Result<(), Diagnostic> {
    let refused = [
        ("--trace -", args.trace.as_deref() == Some(Path::new("-"))),
        ("--record", args.record.is_some()),
        ("--replay", args.replay.is_some()),
        ("--print-job", args.print_job),
    ];
    let given: Vec<&str> = refused
        .iter()
        .filter(|(_, set)| *set)
        .map(|(flag, _)| *flag)
        .collect();
    if given.is_empty() {
        return Ok(());
    }
    Err(Diagnostic::unplaced(format!(
        "--resume cannot be used with {}: a resumed run goes on writing its trace in the \
         file the run wrote (--json streams its events to stdout as well), and a cassette \
         (--record, --replay) holds a run from its start; drop {}",
        given.join(", "),
        if given.len() == 1 { "it" } else { "them" }
    )))
}

/// A resume names its job as the first run did: the job file, or the
/// `--goal` flags. It never takes the job from the checkpoint.
pub fn require_job(args: &RunArgs, run_dir: &Path) -> Result<(), Diagnostic> {
    if args.job.is_some() || args.job_flags.goal.is_some() {
        return Ok(());
    }
    Err(Diagnostic::flag(
        "--resume",
        format!(
            "give the job file the run started with (`agentci run JOB.yaml --resume {}`), or \
             the --goal flags of a run made from flags, with the run's other flags: a resume \
             never takes the job from the checkpoint",
            run_dir.display()
        ),
    ))
}

/// `--out` with `--resume` must name the folder being resumed: the run
/// folder is the one `--resume` names.
pub fn check_out(args: &RunArgs, run_dir: &Path, cwd: &Path) -> Result<(), Diagnostic> {
    let Some(out) = &args.out else {
        return Ok(());
    };
    let out = cwd.join(out);
    let same = match (std::fs::canonicalize(&out), std::fs::canonicalize(run_dir)) {
        (Ok(a), Ok(b)) => a == b,
        _ => out == run_dir,
    };
    if same {
        return Ok(());
    }
    Err(Diagnostic::flag(
        "--out",
        format!(
            "--out {} is not the run folder --resume names ({}): a resumed run writes in the \
             folder of the run it goes on with; give both the same folder, or drop --out",
            out.display(),
            run_dir.display()
        ),
    ))
}

/// Where a resume goes on, all from the command line, never from the
/// checkpoint.
pub struct ResumeAt<'a> {
    pub run_dir: &'a Path,
    /// `--trace` and `--junit`, absolute.
    pub trace: Option<&'a Path>,
    pub junit: Option<&'a Path>,
}

/// Check that the run in `at.run_dir` may go on with the job `prepared`
/// (made from the command line as `job` fingerprints it), its checkpoint
/// signed with `key`, and get it ready.
pub fn resumption(
    at: &ResumeAt<'_>,
    job: &JobFingerprint,
    key: &CheckpointKey,
    prepared: &Prepared,
) -> Result<Resumption, Diagnostic> {
    if prepared.job.model.provider == ProviderKind::Replay {
        return Err(Diagnostic::unplaced(
            "--resume cannot go on with a replayed run: the cassette holds the run from its \
             start; run the replay again instead",
        ));
    }
    let (skill_file, skill_sha256) = skill_fingerprint(&prepared.skill);
    let workspace = prepared.workspace.root();
    // The run id only names the default folder, and the folder is given.
    let folder = RunFolder::resolve("", workspace, Some(at.run_dir), &prepared.job.outputs);
    let (trace, junit) = folder.trace_and_junit(at.trace, at.junit);
    resume::prepare(
        at.run_dir,
        &Given {
            job_file: &job.job_file,
            job_sha256: &job.sha256,
            skill_file: &skill_file,
            skill_sha256: &skill_sha256,
            workspace,
            trace: &trace,
            junit: &junit,
            key,
        },
    )
    .map_err(|e| Diagnostic::unplaced(e.to_string()))
}
