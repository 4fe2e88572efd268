//! The agent's changes as a unified diff: the working tree against HEAD,
//! new files included, in the format `git apply` reads.

use git2::{DiffOptions, Patch};

use super::{GitError, GitWorkspace};

/// What a patch holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PatchStats {
    pub files_changed: usize,
    pub insertions: usize,
    pub deletions: usize,
}

impl GitWorkspace {
    /// The diff of the workspace against HEAD (against nothing before the
    /// first commit), with its numbers.
    pub fn diff(&self) -> Result<(Vec<u8>, PatchStats), GitError> {
        let failed = |e: git2::Error| GitError::Diff {
            message: e.message().to_string(),
        };
        let head_tree = match self.repo.head() {
            Ok(head) => Some(head.peel_to_tree().map_err(failed)?),
            // An unborn branch: everything is new.
            Err(_) => None,
        };
        let mut options = DiffOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true)
            .show_binary(true)
            .include_typechange(true);
        if !self.prefix.is_empty() {
            options.pathspec(&self.prefix);
        }
        let diff = self
            .repo
            .diff_tree_to_workdir_with_index(head_tree.as_ref(), Some(&mut options))
            .map_err(failed)?;
        let mut text = Vec::new();
        let mut stats = PatchStats::default();
        for index in 0..diff.deltas().len() {
            let Some(delta) = diff.get_delta(index) else {
                continue;
            };
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            if !self.in_scope(&path) {
                continue;
            }
            let Some(mut patch) = Patch::from_diff(&diff, index).map_err(failed)? else {
                continue;
            };
            let (_, insertions, deletions) = patch.line_stats().map_err(failed)?;
            text.extend_from_slice(&patch.to_buf().map_err(failed)?);
            stats.files_changed += 1;
            stats.insertions += insertions;
            stats.deletions += deletions;
        }
        Ok((text, stats))
    }

    /// Write [`GitWorkspace::diff`] to `out`, through its folder's
    /// descriptor (opened, with no link on the way, before the run),
    /// masked with `secrets` as the trace is: a secret the agent wrote into
    /// a file shows as `***` in the patch (the commit, if any, keeps the
    /// files as they are).
    pub fn write_patch(
        &self,
        out: &crate::safe_file::OutputFile,
        secrets: &crate::redact::Redactor,
    ) -> Result<PatchStats, GitError> {
        let (text, stats) = self.diff()?;
        out.replace(&secrets.mask_bytes(&text), None)
            .map_err(|source| GitError::WritePatch {
                path: out.path(),
                source,
            })?;
        Ok(stats)
    }
}
