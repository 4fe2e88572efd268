//! What `agentci validate` shows of a job's `sandbox.writable`: the
//! folders its entries lead to in this machine's environment, as a run
//! started here would resolve them, so a preset's folders can be seen
//! before anything runs. Nothing is created; the run resolves, judges and
//! creates them again at start (`crate::sandbox::writable::prepare`),
//! where what it finds (the repositories, the checkpoint key) is known too.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::job::{Diagnostic, JobSpec};
use crate::process::is_inherited;
use crate::sandbox::SandboxProfile;
use crate::sandbox::writable::{self, Env, Problem, WritableError, WritablePath};

/// The lines `validate` prints under a valid job (`writable: FOLDER
/// (ENTRY)`), and a warning for each entry that would stop a run here.
pub fn writable_roots(job: &JobSpec) -> (Vec<String>, Vec<Diagnostic>) {
    if job.sandbox.profile != SandboxProfile::WorkspaceWrite || job.sandbox.writable.is_empty() {
        return (Vec::new(), Vec::new());
    }
    // The environment a child would get: the job's `env:` over the
    // variables children inherit from agentci's.
    let (job_env, _) = job.resolve_env(|name| std::env::var(name).ok());
    let lookup = |name: &str| -> Option<OsString> {
        match job_env.iter().rev().find(|(k, _)| k == name) {
            Some((_, value)) => Some(value.into()),
            None if is_inherited(name) => std::env::var_os(name),
            None => None,
        }
    };
    let warn = |e: &WritableError| {
        Diagnostic::warning(
            &job.path,
            e.line,
            e.column,
            format!("{e} (in this environment; a run checks again at start)"),
        )
    };
    let resolved = match writable::resolve(&job.sandbox.writable, &Env::new(&lookup)) {
        Ok(resolved) => resolved,
        Err(e) => return (Vec::new(), vec![warn(&e)]),
    };
    let mut kept = job.writable_kept_paths();
    kept.home = lookup("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    for root in resolved {
        match kept.refusal(&root.folder) {
            Some(refusal) => warnings.push(warn(&WritableError {
                entry: root.root.path.clone(),
                line: root.root.line,
                column: root.root.column,
                problem: Problem::Refused {
                    folder: root.folder.clone(),
                    refusal,
                },
            })),
            None => lines.push(match &root.root.path {
                WritablePath::Absolute(_) => format!("writable: {}", root.folder.display()),
                entry => format!("writable: {} ({entry})", root.folder.display()),
            }),
        }
    }
    (lines, warnings)
}
