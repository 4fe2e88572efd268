//! Git as an output of a run, through libgit2: is the workspace clean
//! before the run ([`status`]), the agent's changes as a unified diff
//! ([`patch`]), committed on a new branch ([`commit`]) and pushed
//! ([`push`]); and where the workspace's repositories are, for the sandbox
//! ([`repositories`]). Remotes over `https://` go through `git::https`, on the
//! crate's own TLS; libgit2 itself is built without TLS (and without ssh).
//!
//! Every operation sees only the workspace (which may be a folder inside a
//! larger repository) and never the files agentci writes itself: `.agentci/`
//! and the run's trace, JUnit, patch and run folder. It does not decide
//! when to commit or push; the runner does, from the job and the run's
//! status. Errors are [`GitError`]s, whose messages are lines for the user.

pub mod commit;
mod error;
mod https;
pub mod left_out;
pub mod patch;
pub mod push;
pub mod repositories;
pub mod status;

use std::path::{Path, PathBuf};

use git2::{ErrorCode, Repository};

pub use commit::CommitRequest;
pub use error::GitError;
pub use left_out::{FileLimits, LeftOut, LeftOutReason};
pub use patch::PatchStats;
pub use push::PinnedRemote;

/// How long a git server may take to accept a connection, and then to send
/// anything at all, before a push or a skill fetch gives up: a server that
/// hangs must not hang the job.
pub const CONNECT_TIMEOUT_MS: i32 = 30_000;
pub const SERVER_TIMEOUT_MS: i32 = 60_000;

/// Prepare libgit2 for the network, once, before the first network
/// operation (a push, a skill clone or fetch): its timeouts, and the
/// `https://` transport on agentci's TLS (`git::https`). Done here rather
/// than at start-up, so a run that never touches the network pays nothing.
pub fn ensure_network_setup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: the options are unsynchronized C globals that only network
        // operations read, and every network operation of agentci calls this
        // first: `Once` makes the writes happen before any such read, and no
        // other thread touches these options concurrently. Neither call can
        // fail for these options.
        unsafe {
            let _ = git2::opts::set_server_connect_timeout_in_milliseconds(CONNECT_TIMEOUT_MS);
            let _ = git2::opts::set_server_timeout_in_milliseconds(SERVER_TIMEOUT_MS);
        }
        https::register();
    });
}

/// Whether `workspace` or a folder above it may hold a repository that
/// `Repository::discover` would find: a `.git` entry, or a `HEAD` (the
/// workspace or a parent being a git directory itself); anything unclear
/// (a folder that cannot be read) counts as maybe. When none is there,
/// libgit2 is not asked: a folder with no repository to push from needs
/// none of libgit2's start-up.
fn may_hold_repository(workspace: &Path) -> bool {
    // discover resolves the path as this does, then looks up to the root
    // (across file systems).
    let Ok(start) = std::fs::canonicalize(workspace) else {
        return true;
    };
    start.ancestors().any(|dir| {
        [".git", "HEAD"].iter().any(|name| {
            !matches!(
                dir.join(name).symlink_metadata(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound
            )
        })
    })
}

/// The workspace's repository, with what agentci must leave out of it.
pub struct GitWorkspace {
    repo: Repository,
    /// The repository's working folder.
    root: PathBuf,
    /// The workspace relative to `root`, `/`-separated, ending in `/`; empty at the root.
    prefix: String,
    /// Repository-relative paths agentci writes itself (files, or folders without the `/`).
    own: Vec<String>,
    /// Repository-relative changed files kept out by [`GitWorkspace::leave_out`].
    left_out: Vec<String>,
}

impl GitWorkspace {
    /// The repository holding `workspace`, or `None` when there is none.
    /// `own_files` are absolute paths of files and folders agentci writes
    /// during the run; `.agentci/` is always left out.
    pub fn open(workspace: &Path, own_files: &[PathBuf]) -> Result<Option<GitWorkspace>, GitError> {
        if !may_hold_repository(workspace) {
            return Ok(None);
        }
        let repo = match Repository::discover(workspace) {
            Ok(repo) => repo,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
            Err(e) if e.code() == ErrorCode::Owner => {
                return Err(GitError::NotOwned {
                    workspace: workspace.to_path_buf(),
                });
            }
            Err(e) => {
                return Err(GitError::Open {
                    workspace: workspace.to_path_buf(),
                    message: e.message().to_string(),
                });
            }
        };
        let Some(workdir) = repo.workdir() else {
            return Ok(None);
        };
        let root = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
        let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.into());
        let prefix = match workspace.strip_prefix(&root) {
            Ok(rel) if rel.as_os_str().is_empty() => String::new(),
            Ok(rel) => format!("{}/", slashed(rel)),
            Err(_) => return Ok(None),
        };
        let mut own = vec![format!("{prefix}.agentci")];
        for file in own_files {
            let file = canonical_parent(file);
            if let Ok(rel) = file.strip_prefix(&root)
                && !rel.as_os_str().is_empty()
            {
                own.push(slashed(rel));
            }
        }
        Ok(Some(GitWorkspace {
            repo,
            root,
            prefix,
            own,
            left_out: Vec::new(),
        }))
    }

    /// The repository's working folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The repository's git folder (`.git`, or where a `.git` file points).
    pub fn git_dir(&self) -> &Path {
        self.repo.path()
    }

    /// Whether a repository-relative path belongs to the agent's changes:
    /// inside the workspace, not written by agentci and not left out.
    fn in_scope(&self, path: &str) -> bool {
        path.starts_with(&self.prefix)
            && !self.left_out.iter().any(|file| file == path)
            && !self.own.iter().any(|own| {
                path == own
                    || path
                        .strip_prefix(own.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
    }
}

/// A relative path with `/` separators, as git writes them.
fn slashed(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// `path` with its folder resolved (the file itself may not exist yet).
fn canonical_parent(path: &Path) -> PathBuf {
    if let Ok(full) = std::fs::canonicalize(path) {
        return full;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => canonical_parent(parent).join(name),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_outside_any_repository_is_answered_without_libgit2() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        assert!(!may_hold_repository(&ws));
        assert!(GitWorkspace::open(&ws, &[]).unwrap().is_none());
    }

    #[test]
    fn a_repository_above_or_reached_through_a_link_is_still_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        Repository::init(&root).unwrap();
        let ws = root.join("sub/ws");
        std::fs::create_dir_all(&ws).unwrap();
        assert!(may_hold_repository(&ws));
        assert!(GitWorkspace::open(&ws, &[]).unwrap().is_some());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&ws, &link).unwrap();
        assert!(may_hold_repository(&link));
        // A bare repository (or a git directory) is its own marker.
        let bare = dir.path().join("bare.git");
        Repository::init_bare(&bare).unwrap();
        assert!(may_hold_repository(&bare.join("objects")));
        // A path that cannot be resolved is left to libgit2.
        assert!(may_hold_repository(&dir.path().join("missing")));
    }
}
