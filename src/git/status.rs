//! Is the workspace clean: no changes to tracked files and no untracked
//! files that are not ignored. A run starts from a clean workspace so that
//! its patch and commit hold the agent's changes and nothing else.

use git2::{Status, StatusOptions};

use super::{GitError, GitWorkspace};

impl GitWorkspace {
    /// Repository-relative paths with uncommitted changes, in the order git lists them.
    pub fn dirty_paths(&self) -> Result<Vec<String>, GitError> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(false);
        if !self.prefix.is_empty() {
            options.pathspec(&self.prefix);
        }
        let statuses = self
            .repo
            .statuses(Some(&mut options))
            .map_err(|e| GitError::Status {
                root: self.root.clone(),
                message: e.message().to_string(),
            })?;
        Ok(statuses
            .iter()
            .filter(|entry| !entry.status().is_empty() && !entry.status().contains(Status::IGNORED))
            .filter_map(|entry| entry.path().ok().map(str::to_string))
            .filter(|path| self.in_scope(path))
            .collect())
    }
}

/// The first few of `paths` for a message, with how many more there are.
pub fn first_few(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = paths
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}
