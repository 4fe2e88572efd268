//! `agentci run --resume RUN_DIR`: what the command line adds to a run so
//! that it can be resumed (the job's fingerprint for its checkpoint), and
//! what it checks before going on with one (the flags that cannot go with a
//! resume, the job and skill the run started with).
//!
//! Loading the checkpoint and cutting the trace back to it is
//! [`crate::runner::resume`]'s; this module only joins it to the flags.

use std::path::{Path, PathBuf};

use crate::runner::resume::{self, Given, Resumption};
use crate::runner::{JobFingerprint, Prepared, sha256_hex, skill_fingerprint};
use crate::spec::{COMMAND_LINE_JOB, Diagnostic, ProviderKind};

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

/// Flags a resume cannot take: it writes where the run wrote, and a
/// cassette holds a run from its start.
pub fn refuse_flags(args: &RunArgs) -> Result<(), Diagnostic> {
    let refused = [
        ("--trace", args.trace.is_some()),
        ("--json", args.json),
        ("--junit", args.junit.is_some()),
        ("--out", args.out.is_some()),
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
        "--resume cannot be used with {}: a resumed run writes its trace and JUnit \
         file where the run wrote them, and a cassette (--record, --replay) holds a run from \
         its start; drop {}",
        given.join(", "),
        if given.len() == 1 { "it" } else { "them" }
    )))
}

/// The job file and workspace a resume uses when the command line names
/// none: those of the run it goes on with.
pub fn defaults(args: &mut RunArgs, run_dir: &Path) -> Result<(), Diagnostic> {
    let origin = resume::load_origin(run_dir).map_err(Diagnostic::unplaced)?;
    if args.job.is_none() && args.job_flags.goal.is_none() && origin.job_file != COMMAND_LINE_JOB {
        args.job = Some(PathBuf::from(&origin.job_file));
    }
    if args.workspace.is_none() {
        args.workspace = Some(origin.workspace.clone());
    }
    Ok(())
}

/// Check that the run in `run_dir` may go on with the job `prepared`, and
/// get it ready.
pub fn resumption(
    run_dir: &Path,
    prepared: &Prepared,
    job: &JobFingerprint,
) -> Result<Resumption, Diagnostic> {
    if prepared.job.model.provider == ProviderKind::Replay {
        return Err(Diagnostic::unplaced(
            "--resume cannot go on with a replayed run: the cassette holds the run from its \
             start; run the replay again instead",
        ));
    }
    let (skill_file, skill_sha256) = skill_fingerprint(&prepared.skill);
    resume::prepare(
        run_dir,
        &Given {
            job_file: &job.job_file,
            job_sha256: &job.sha256,
            skill_file: &skill_file,
            skill_sha256: &skill_sha256,
        },
    )
    .map_err(|e| Diagnostic::unplaced(e.to_string()))
}
