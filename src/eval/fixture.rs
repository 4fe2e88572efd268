//! Fresh workspaces for attempts: a temporary copy of a fixture folder, or a
//! clean checkout of a git fixture at its revision. The fixture itself is
//! never the workspace, so no attempt can change it or see another's work.
//!
//! The temporary folder is removed when the [`TempWorkspace`] is dropped.
//! What the agent does inside it is not this module's business.

use std::path::{Path, PathBuf};

use super::suite::Fixture;
use super::walk::{EntryKind, walk};

/// A temporary workspace, deleted on drop.
#[derive(Debug)]
pub struct TempWorkspace {
    root: PathBuf,
}

impl TempWorkspace {
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Remove the workspace on a blocking thread, without waiting for it.
    ///
    /// Deleting can wait on the disk: on ext4 mounted with `discard`, every
    /// freed block is discarded synchronously, and the parent folder stays
    /// locked meanwhile. Done inline, that wait blocked a runtime thread and
    /// held the attempt's `--jobs` slot; here it overlaps with the next
    /// attempts. The runtime waits for blocking tasks when it shuts down, so
    /// nothing is left behind when the evaluation ends.
    pub fn remove_in_background(self) {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || drop(self));
            }
            Err(_) => drop(self),
        }
    }
}

impl TempWorkspace {
    /// Remove the workspace on a blocking thread and wait for it: for an
    /// interrupted attempt, whose process is about to exit and must not
    /// leave the folder behind.
    pub async fn remove_now(self) {
        let _ = tokio::task::spawn_blocking(move || drop(self)).await;
    }
}

impl Drop for TempWorkspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A fixture that could not be made into a workspace.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("cannot create a temporary workspace {}: {error}", .path.display())]
    Workspace {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot read fixture {}: {error}", .path.display())]
    Read { path: PathBuf, error: String },
    /// `what` is the step that failed: `create`, `copy`, `read link`, `create link`.
    #[error("cannot copy fixture: {what} {}: {error}", .path.display())]
    Copy {
        what: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot clone git fixture {repo}: {message}")]
    Clone { repo: String, message: String },
    #[error("git fixture {repo} has no revision `{rev}`: {message}")]
    NoRevision {
        repo: String,
        rev: String,
        message: String,
    },
    #[error("`{rev}` in {repo} is not a commit: {message}")]
    NotACommit {
        repo: String,
        rev: String,
        message: String,
    },
    #[error("cannot check out `{rev}` of {repo}: {message}")]
    Checkout {
        repo: String,
        rev: String,
        message: String,
    },
}

/// Make a fresh workspace for `fixture` under `temp_dir`.
pub fn materialize(fixture: &Fixture, temp_dir: &Path) -> Result<TempWorkspace, FixtureError> {
    let name = format!(
        "agentci-eval-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let root = temp_dir.join(name);
    std::fs::create_dir_all(&root).map_err(|error| FixtureError::Workspace {
        path: root.clone(),
        error,
    })?;
    // Canonical, so paths the agent sees match what replay normalizes.
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let workspace = TempWorkspace { root };
    match fixture {
        Fixture::Dir(dir) => copy_tree(dir, workspace.path())?,
        Fixture::Git { repo, rev } => checkout(repo, rev, workspace.path())?,
    }
    Ok(workspace)
}

/// Copy a fixture folder, leaving out what its `.gitignore` ignores (build
/// output such as `target/`), `.git` and `.agentci`.
fn copy_tree(from: &Path, to: &Path) -> Result<(), FixtureError> {
    let fail = |what: &'static str, path: &Path, error: std::io::Error| FixtureError::Copy {
        what,
        path: path.to_path_buf(),
        error,
    };
    for entry in walk(from) {
        let entry = entry.map_err(|e| FixtureError::Read {
            path: from.to_path_buf(),
            error: e.to_string(),
        })?;
        let target = to.join(&entry.relative);
        match entry.kind {
            EntryKind::Dir => {
                std::fs::create_dir_all(&target).map_err(|e| fail("create", &target, e))?;
            }
            EntryKind::File => {
                std::fs::copy(&entry.path, &target).map_err(|e| fail("copy", &entry.path, e))?;
            }
            EntryKind::Symlink => {
                let link = std::fs::read_link(&entry.path)
                    .map_err(|e| fail("read link", &entry.path, e))?;
                symlink(&link, &target).map_err(|e| fail("create link", &target, e))?;
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(link: &Path, target: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(link, target)
}

#[cfg(not(unix))]
fn symlink(_link: &Path, target: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other(format!(
        "symlinks are not supported here ({})",
        target.display()
    )))
}

/// Clone `repo` into `to` and check out `rev` (a commit, tag or branch).
fn checkout(repo: &str, rev: &str, to: &Path) -> Result<(), FixtureError> {
    let cloned = git2::Repository::clone(repo, to).map_err(|e| FixtureError::Clone {
        repo: repo.to_string(),
        message: e.message().to_string(),
    })?;
    let object = cloned
        .revparse_single(rev)
        .or_else(|_| cloned.revparse_single(&format!("origin/{rev}")))
        .map_err(|e| FixtureError::NoRevision {
            repo: repo.to_string(),
            rev: rev.to_string(),
            message: e.message().to_string(),
        })?;
    let commit = object
        .peel_to_commit()
        .map_err(|e| FixtureError::NotACommit {
            repo: repo.to_string(),
            rev: rev.to_string(),
            message: e.message().to_string(),
        })?;
    let checkout_failed = |e: git2::Error| FixtureError::Checkout {
        repo: repo.to_string(),
        rev: rev.to_string(),
        message: e.message().to_string(),
    };
    let mut options = git2::build::CheckoutBuilder::new();
    options.force();
    cloned
        .checkout_tree(commit.as_object(), Some(&mut options))
        .map_err(checkout_failed)?;
    cloned
        .set_head_detached(commit.id())
        .map_err(checkout_failed)?;
    Ok(())
}
