//! Which of the agent's changed files stay out of the patch and the commit:
//! files over the job's size limit and binary files (unless the job allows
//! them). A model that writes a build folder, a core dump or a 2 MB blob
//! must not turn a one-line fix into a commit nobody can review.
//!
//! It only finds the files; `GitWorkspace::in_scope` then skips them and
//! the runner reports them. Files deleted by the agent are never left out.

use super::{GitError, GitWorkspace};

/// How git itself tells binary from text: a NUL byte in the first 8000 bytes.
const BINARY_PROBE: usize = 8000;

/// What a job allows into its patch and commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileLimits {
    pub max_file_size: u64,
    pub include_binary: bool,
}

/// Why a file was left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeftOutReason {
    TooLarge { size: u64 },
    Binary,
}

/// A changed file that was left out, repository-relative.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    pub path: String,
    pub reason: LeftOutReason,
}

impl GitWorkspace {
    /// Find the changed files `limits` keep out and leave them out of every
    /// later patch and commit; returns them in git's order.
    pub fn leave_out(&mut self, limits: FileLimits) -> Result<Vec<LeftOut>, GitError> {
        let mut found = Vec::new();
        for path in self.dirty_paths()? {
            let full = self.root.join(&path);
            // Deleted files and folders (submodules) have nothing to measure.
            let Ok(meta) = std::fs::symlink_metadata(&full) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let reason = if meta.len() > limits.max_file_size {
                Some(LeftOutReason::TooLarge { size: meta.len() })
            } else if !limits.include_binary && is_binary(&full)? {
                Some(LeftOutReason::Binary)
            } else {
                None
            };
            if let Some(reason) = reason {
                found.push(LeftOut { path, reason });
            }
        }
        self.left_out
            .extend(found.iter().map(|file| file.path.clone()));
        Ok(found)
    }
}

fn is_binary(path: &std::path::Path) -> Result<bool, GitError> {
    use std::io::Read;
    let mut head = Vec::with_capacity(BINARY_PROBE);
    std::fs::File::open(path)
        .and_then(|file| file.take(BINARY_PROBE as u64).read_to_end(&mut head))
        .map_err(|source| GitError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(head.contains(&0))
}

/// A size for people: `2.0 MB`, `512 KB`, `80 bytes`.
pub fn human_size(bytes: u64) -> String {
    const KB: u64 = 1000;
    const MB: u64 = 1000 * KB;
    if bytes >= MB {
        format!("{:.1} MB", bytes as f64 / MB as f64)
    } else if bytes >= KB {
        format!("{} KB", bytes / KB)
    } else {
        format!("{bytes} bytes")
    }
}
