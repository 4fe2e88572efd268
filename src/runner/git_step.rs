//! The job's git side around a run: before it, refuse a dirty workspace
//! and outputs that cannot be made; after the checks, write the patch,
//! commit and push as the job asks, each recorded as an event.
//!
//! The rules live here (no commit when the run did not pass unless
//! `on_failure`; a push only after a commit); the git operations are
//! [`crate::git`]'s.
//!
//! Nothing the run could have changed decides where the work goes: the
//! repository and the push's remote are read before the model's first turn
//! ([`BeforeRun`]), and the commit's author and committer are the job's
//! (`outputs.commit.author`, default agentci), never `user.name` or
//! `user.email` from the repository's configuration.

use std::path::{Path, PathBuf};

use crate::agent::CancelSignal;
use crate::event::bus::EventBus;
use crate::event::{EventKind, GitPatch, RunStatus};
use crate::git::left_out::human_size;
use crate::git::{
    CommitRequest, FileLimits, GitError, GitWorkspace, LeftOut, LeftOutReason, PinnedRemote,
    status::first_few,
};
use crate::job::{CommitSpec, DEFAULT_MAX_FILE_SIZE, JobSpec, PushSpec};
use crate::provider::ModelInfo;
use crate::safe_file::OutputFile;

/// Why the job's git side refused to start the run, or stopped after the checks.
#[derive(Debug, thiserror::Error)]
pub enum GitStepError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(
        "`outputs.patch` and `outputs.commit` need a git repository, and the workspace {} is \
         not in one; run `git init` and commit, or remove those outputs",
        .workspace.display()
    )]
    NotARepository { workspace: PathBuf },
    /// The workspace now lies in another repository than before the run.
    #[error(
        "the workspace {} is now in the git repository {}, not the one it was in before the run; \
         nothing was committed or pushed (a `.git` made during the run is not trusted)",
        .workspace.display(),
        .found.display()
    )]
    RepositoryChanged { workspace: PathBuf, found: PathBuf },
    /// `paths` names the first few changed files.
    #[error(
        "the workspace {} has uncommitted changes ({paths}); commit or stash them \
         (`git stash --include-untracked`), or run anyway with `--allow-dirty` (or `allow_dirty: true` \
         in the job)",
        .workspace.display()
    )]
    Dirty { workspace: PathBuf, paths: String },
    #[error(
        "branch `{branch}` already exists in {}; choose another `outputs.commit.branch` or \
         delete the branch",
        .root.display()
    )]
    BranchExists { branch: String, root: PathBuf },
    /// A signal stopped the step before its next commit or push; the reason names it.
    #[error("{0}")]
    Stopped(String),
    #[error("the git step stopped: {0}")]
    Panicked(String),
}

/// What the run's git step needs, owned so it can run on a blocking thread.
pub(super) struct GitStep {
    workspace: PathBuf,
    own_files: Vec<PathBuf>,
    /// `outputs.patch`, in its folder opened before the run.
    patch: Option<OutputFile>,
    commit: Option<CommitSpec>,
    /// The repository's git folder before the run, canonical.
    repository: Option<PathBuf>,
    /// The job's push and where it goes, pinned before the run.
    push: Option<(PushSpec, PinnedRemote)>,
    limits: FileLimits,
    trailers: Vec<(&'static str, String)>,
    /// The push token (`outputs.push.token_env`), read from the run's
    /// environment snapshot when the step is made; empty counts as none.
    push_token: Option<String>,
}

impl GitStep {
    /// The step, with the push token read from `env`.
    pub(super) fn with_push_token(mut self, env: &crate::run_env::RunEnv) -> GitStep {
        self.push_token = self
            .push
            .as_ref()
            .and_then(|(push, _)| env.var(&push.token_env))
            .filter(|t| !t.is_empty());
        self
    }

    /// The step writing `outputs.patch` to `patch`, its folder opened by
    /// descriptor before the run (see `run_files::create_output_folders`).
    pub(super) fn with_patch(mut self, patch: Option<OutputFile>) -> GitStep {
        self.patch = patch;
        self
    }

    /// `None` when the job asks for no git output. `before` is what
    /// [`preflight`] or [`before_resumed_run`] returned.
    pub(super) fn new(
        job: &JobSpec,
        workspace: &Path,
        own_files: Vec<PathBuf>,
        before: BeforeRun,
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
            patch: None,
            commit: outputs.commit.clone(),
            repository: before.repository,
            push: outputs.push.clone().zip(before.remote),
            limits: FileLimits {
                max_file_size: outputs.max_file_size.unwrap_or(DEFAULT_MAX_FILE_SIZE),
                include_binary: outputs.include_binary,
            },
            trailers: vec![
                ("Agentci-Job", job.name.clone()),
                ("Agentci-Skill", skill),
                (
                    "Agentci-Model",
                    format!("{}:{}", model.provider, model.name),
                ),
                ("Agentci-Run", run_id.to_string()),
            ],
            push_token: None,
        })
    }

    /// After the checks: patch, then commit and push when the rules allow.
    /// A signal (`cancel`) stops it before the next commit or push; libgit2
    /// cannot be stopped halfway, so the one under way finishes.
    pub(super) fn finish(
        self,
        status: RunStatus,
        bus: &EventBus,
        cancel: &CancelSignal,
    ) -> Result<(), GitStepError> {
        let stopped = || {
            cancel
                .reason()
                .map_or(Ok(()), |r| Err(GitStepError::Stopped(r)))
        };
        let mut git = GitWorkspace::open(&self.workspace, &self.own_files)?
            .ok_or_else(|| not_a_repository(&self.workspace))?;
        if let Some(before) = &self.repository
            && canonical(git.git_dir()) != *before
        {
            return Err(GitStepError::RepositoryChanged {
                workspace: self.workspace.clone(),
                found: git.git_dir().to_path_buf(),
            });
        }
        let left_out = git.leave_out(self.limits)?;
        if !left_out.is_empty() {
            bus.emit(EventKind::Warning {
                source: "git".into(),
                message: left_out_message(&left_out, self.limits),
            });
        }
        if let Some(out) = &self.patch {
            let stats = git.write_patch(out, &bus.redactor())?;
            bus.emit(EventKind::GitPatch(GitPatch {
                path: out.path().display().to_string(),
                files_changed: stats.files_changed,
                insertions: stats.insertions,
                deletions: stats.deletions,
            }));
        }
        let Some(commit) = &self.commit else {
            return Ok(());
        };
        stopped()?;
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
            sha: sha.clone(),
        });
        if let Some((push, remote)) = &self.push {
            stopped()?;
            git.push(
                remote,
                &commit.branch,
                &sha,
                self.push_token.as_deref(),
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

/// What the git step keeps from before the run, where the run cannot
/// change it: the repository the workspace is in and where the push goes.
#[derive(Debug, Default)]
pub(super) struct BeforeRun {
    repository: Option<PathBuf>,
    remote: Option<PinnedRemote>,
}

/// Before the run: a clean workspace (unless `allow_dirty`), and a
/// repository, a new branch and a known remote when the job needs them;
/// returns the repository and the push's remote, pinned.
pub(super) fn preflight(
    job: &JobSpec,
    workspace: &Path,
    own_files: &[PathBuf],
) -> Result<BeforeRun, GitStepError> {
    let wants_git = job.outputs.patch.is_some() || job.outputs.commit.is_some();
    let Some(git) = GitWorkspace::open(workspace, own_files)? else {
        return match wants_git {
            true => Err(not_a_repository(workspace)),
            false => Ok(BeforeRun::default()),
        };
    };
    if !job.allow_dirty {
        let dirty = git.dirty_paths()?;
        if !dirty.is_empty() {
            return Err(GitStepError::Dirty {
                workspace: workspace.to_path_buf(),
                paths: first_few(&dirty),
            });
        }
    }
    if let Some(commit) = &job.outputs.commit
        && git.branch_exists(&commit.branch)
    {
        return Err(GitStepError::BranchExists {
            branch: commit.branch.clone(),
            root: git.root().to_path_buf(),
        });
    }
    pin(job, &git)
}

/// Before a resumed run, which skips [`preflight`] (the workspace holds the
/// run's own changes, checked when the run began): the repository and the
/// push's remote, pinned again. The sandbox kept every `.git` read-only
/// meanwhile.
pub(super) fn before_resumed_run(
    job: &JobSpec,
    workspace: &Path,
    own_files: &[PathBuf],
) -> Result<BeforeRun, GitStepError> {
    match GitWorkspace::open(workspace, own_files)? {
        Some(git) => pin(job, &git),
        None => Ok(BeforeRun::default()),
    }
}

fn pin(job: &JobSpec, git: &GitWorkspace) -> Result<BeforeRun, GitStepError> {
    let remote = match &job.outputs.push {
        Some(push) => Some(git.pin_remote(&push.remote)?),
        None => None,
    };
    Ok(BeforeRun {
        repository: Some(canonical(git.git_dir())),
        remote,
    })
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// One line naming every file left out and why, with the keys that let them in.
fn left_out_message(files: &[LeftOut], limits: FileLimits) -> String {
    let listed = files
        .iter()
        .map(|file| match file.reason {
            LeftOutReason::TooLarge { size } => format!(
                "{} ({}, over the {} limit)",
                file.path,
                human_size(size),
                human_size(limits.max_file_size)
            ),
            LeftOutReason::Binary => format!("{} (binary)", file.path),
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "left out of the patch and commit: {listed}; raise `outputs.max_file_size` (bytes) or set \
         `outputs.include_binary: true` to include such files, or add them to .gitignore"
    )
}

fn not_a_repository(workspace: &Path) -> GitStepError {
    GitStepError::NotARepository {
        workspace: workspace.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::cancel_pair;
    use git2::{Repository, Signature};

    // Regression: a signal during the git step did not stop it, so after
    // `run.completed` said "interrupted" the step went on to commit and push.
    #[test]
    fn a_signal_stops_the_git_step_before_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(std::path::Path::new("a.txt")).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "first", &tree, &[])
            .unwrap();
        std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();

        let step = |patch: &str| GitStep {
            workspace: dir.path().to_path_buf(),
            own_files: Vec::new(),
            patch: Some(OutputFile::trusted(&dir.path().join(patch)).unwrap()),
            repository: None,
            commit: Some(CommitSpec {
                branch: "agentci/b".into(),
                message: "m".into(),
                author_name: "a".into(),
                author_email: "a@example.com".into(),
                on_failure: false,
            }),
            push: None,
            limits: FileLimits {
                max_file_size: DEFAULT_MAX_FILE_SIZE,
                include_binary: false,
            },
            trailers: Vec::new(),
            push_token: None,
        };
        let bus = EventBus::new("r", Vec::new());
        let (trigger, cancel) = cancel_pair();
        trigger.cancel("interrupted by SIGTERM");
        let result = step("p1.diff").finish(RunStatus::Passed, &bus, &cancel);
        assert!(
            matches!(&result, Err(GitStepError::Stopped(r)) if r == "interrupted by SIGTERM"),
            "{result:?}"
        );
        assert!(
            repo.find_branch("agentci/b", git2::BranchType::Local)
                .is_err()
        );

        // Without a signal the same step commits.
        let result = step("p2.diff").finish(RunStatus::Passed, &bus, &CancelSignal::never());
        assert!(result.is_ok(), "{result:?}");
        assert!(
            repo.find_branch("agentci/b", git2::BranchType::Local)
                .is_ok()
        );
    }
}
