//! Committing the agent's changes on a new branch made from HEAD, the way
//! `git switch -c BRANCH && git add -A && git commit` would: afterwards
//! HEAD is the new branch and the working tree is unchanged.
//!
//! Unlike `git commit`, libgit2 runs nothing the repository names: no hooks
//! (`.git/hooks`, `core.hooksPath`), no `core.fsmonitor` command (libgit2
//! has no fsmonitor support) and no external `filter.*` drivers (only its
//! built-in end-of-line and `ident` filters). The author and committer are
//! the request's, not `user.name`/`user.email`.

use std::path::Path;

use git2::{BranchType, IndexAddOption, Signature};

use super::{GitError, GitWorkspace};

/// What to commit as.
pub struct CommitRequest<'a> {
    pub branch: &'a str,
    /// The whole message, trailers included.
    pub message: &'a str,
    pub author_name: &'a str,
    pub author_email: &'a str,
}

impl GitWorkspace {
    pub fn branch_exists(&self, branch: &str) -> bool {
        self.repo.find_branch(branch, BranchType::Local).is_ok()
    }

    /// Commit the workspace's changes on `request.branch`; returns the
    /// commit id, or `None` when there was nothing to commit (no branch is
    /// made then).
    pub fn commit(&self, request: &CommitRequest<'_>) -> Result<Option<String>, GitError> {
        let failed = |e: git2::Error| GitError::Commit {
            message: e.message().to_string(),
        };
        if self.branch_exists(request.branch) {
            return Err(GitError::BranchExists {
                branch: request.branch.to_string(),
                root: self.root.clone(),
            });
        }
        let parent = match self.repo.head() {
            Ok(head) => Some(head.peel_to_commit().map_err(failed)?),
            Err(_) => None,
        };
        let mut index = self.repo.index().map_err(failed)?;
        let pathspec = if self.prefix.is_empty() {
            "*".to_string()
        } else {
            format!("{}*", self.prefix)
        };
        // 0 stages the path, 1 skips it: agentci's own files stay out.
        let mut only_in_scope = |path: &Path, _: &[u8]| -> i32 {
            i32::from(!self.in_scope(&path.to_string_lossy().replace('\\', "/")))
        };
        index
            .add_all(
                [pathspec.as_str()],
                IndexAddOption::DEFAULT,
                Some(&mut only_in_scope),
            )
            .map_err(failed)?;
        index
            .update_all([pathspec.as_str()], Some(&mut only_in_scope))
            .map_err(failed)?;
        let tree_id = index.write_tree().map_err(failed)?;
        let unchanged = match &parent {
            Some(parent) => parent.tree_id() == tree_id,
            None => index.is_empty(),
        };
        if unchanged {
            // Leave the index as it was on disk.
            index.read(true).map_err(failed)?;
            return Ok(None);
        }
        let tree = self.repo.find_tree(tree_id).map_err(failed)?;
        let author = Signature::now(request.author_name, request.author_email).map_err(failed)?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let commit_id = self
            .repo
            .commit(None, &author, &author, request.message, &tree, &parents)
            .map_err(failed)?;
        let commit = self.repo.find_commit(commit_id).map_err(failed)?;
        self.repo
            .branch(request.branch, &commit, false)
            .map_err(failed)?;
        self.repo
            .set_head(&format!("refs/heads/{}", request.branch))
            .map_err(failed)?;
        index.write().map_err(failed)?;
        Ok(Some(commit_id.to_string()))
    }
}
