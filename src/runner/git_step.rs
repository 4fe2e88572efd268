//! The job's git side around a run: before it, refuse a dirty workspace
//! and outputs that cannot be made; after the checks, write the patch,
//! commit and push as the job asks, each recorded as an event.
//!
//! The rules live here (no commit when the run did not pass unless
//! `on_failure`; a push only after a commit); the git operations are
//! [`crate::git`]'s.

use std::path::{Path, PathBuf};

use crate::event::{EventBus, EventKind, GitPatch, ModelInfo, RunStatus};
use crate::git::{CommitRequest, GitWorkspace, status::first_few};
use crate::spec::{CommitSpec, JobSpec, PushSpec};

/// What the run's git step needs, owned so it can run on a blocking thread.
pub(super) struct GitStep {
    workspace: PathBuf,
    own_files: Vec<PathBuf>,
    patch: Option<PathBuf>,
    commit: Option<CommitSpec>,
    push: Option<PushSpec>,
    trailers: Vec<(&'static str, String)>,
}

impl GitStep {
    /// `None` when the job asks for no git output.
    pub(super) fn new(
        job: &JobSpec,
        workspace: &Path,
        own_files: Vec<PathBuf>,
        skill: String,
        model: &ModelInfo,
        run_id: &str,
    ) -> Option<GitStep> {
        let outputs = &job.outputs;
        if outputs.patch.is_none() && outputs.commit.is_none() {
            return None;
        }
        Some(GitStep {
            workspace: workspace.to_path_buf(),
            own_files,
            patch: outputs.patch.clone(),
            commit: outputs.commit.clone(),
            push: outputs.push.clone(),
            trailers: vec![
                ("Agentci-Job", job.name.clone()),
                ("Agentci-Skill", skill),
                (
                    "Agentci-Model",
                    format!("{}:{}", model.provider, model.name),
                ),
                ("Agentci-Run", run_id.to_string()),
            ],
        })
    }

    /// After the checks: patch, then commit and push when the rules allow.
    pub(super) fn finish(self, status: RunStatus, bus: &EventBus) -> Result<(), String> {
        let git = GitWorkspace::open(&self.workspace, &self.own_files)?
            .ok_or_else(|| not_a_repository(&self.workspace))?;
        if let Some(path) = &self.patch {
            let stats = git.write_patch(path)?;
            bus.emit(EventKind::GitPatch(GitPatch {
                path: path.display().to_string(),
                files_changed: stats.files_changed,
                insertions: stats.insertions,
                deletions: stats.deletions,
            }));
        }
        let Some(commit) = &self.commit else {
            return Ok(());
        };
        if status != RunStatus::Passed && !commit.on_failure {
            bus.emit(EventKind::Warning {
                source: "git".into(),
                message: format!(
                    "no commit: the run {}; set `outputs.commit.on_failure: true` to commit anyway",
                    status.as_str().replace('_', " ")
                ),
            });
            return Ok(());
        }
        let mut message = format!("{}\n\n", commit.message);
        for (key, value) in &self.trailers {
            message.push_str(&format!("{key}: {value}\n"));
        }
        message.push_str(&format!("Agentci-Status: {}\n", status.as_str()));
        let request = CommitRequest {
            branch: &commit.branch,
            message: &message,
            author_name: &commit.author_name,
            author_email: &commit.author_email,
        };
        let Some(sha) = git.commit(&request)? else {
            bus.emit(EventKind::Warning {
                source: "git".into(),
                message: format!(
                    "no commit: the agent changed no files, so branch `{}` was not created",
                    commit.branch
                ),
            });
            return Ok(());
        };
        bus.emit(EventKind::GitCommit {
            branch: commit.branch.clone(),
            sha,
        });
        if let Some(push) = &self.push {
            let token = std::env::var(&push.token_env)
                .ok()
                .filter(|t| !t.is_empty());
            git.push(
                &push.remote,
                &commit.branch,
                token.as_deref(),
                &push.token_env,
            )?;
            bus.emit(EventKind::GitPush {
                remote: push.remote.clone(),
                branch: commit.branch.clone(),
            });
        }
        Ok(())
    }
}

/// Before the run: a clean workspace (unless `allow_dirty`), and a
/// repository, a new branch and a known remote when the job needs them.
pub(super) fn preflight(
    job: &JobSpec,
    workspace: &Path,
    own_files: &[PathBuf],
) -> Result<(), String> {
    let wants_git = job.outputs.patch.is_some() || job.outputs.commit.is_some();
    let Some(git) = GitWorkspace::open(workspace, own_files)? else {
        return match wants_git {
            true => Err(not_a_repository(workspace)),
            false => Ok(()),
        };
    };
    if !job.allow_dirty {
        let dirty = git.dirty_paths()?;
        if !dirty.is_empty() {
            return Err(format!(
                "the workspace {} has uncommitted changes ({}); commit or stash them \
                 (`git stash --include-untracked`), or set `allow_dirty: true` in the job to run \
                 anyway",
                workspace.display(),
                first_few(&dirty)
            ));
        }
    }
    if let Some(commit) = &job.outputs.commit
        && git.branch_exists(&commit.branch)
    {
        return Err(format!(
            "branch `{}` already exists in {}; choose another `outputs.commit.branch` or delete \
             the branch",
            commit.branch,
            git.root().display()
        ));
    }
    if let Some(push) = &job.outputs.push {
        git.check_remote(&push.remote)?;
    }
    Ok(())
}

fn not_a_repository(workspace: &Path) -> String {
    format!(
        "`outputs.patch` and `outputs.commit` need a git repository, and the workspace {} is not \
         in one; run `git init` and commit, or remove those outputs",
        workspace.display()
    )
}
