//! The run's output folders, opened once before the run: the run folder,
//! its `outputs/` and `checkpoint/`, and the folder of each `outputs.*`
//! file. Which root each one is made beneath is decided here.
//!
//! - A folder inside the workspace is untrusted from the workspace root
//!   down: a checkout (a pull request) can commit `.agentci`,
//!   `.agentci/runs` or `out/` as a symlink. It is made one folder at a time
//!   beneath the workspace's descriptor, and a symlink on the way is a start
//!   error naming it, before anything else runs.
//! - A folder outside the workspace was named by the user (`--out /tmp/x`,
//!   `--trace`, an absolute `outputs.*` in the job file) and is trusted as
//!   written, up to and including the folder itself; what agentci makes
//!   beneath it (`outputs/`, `checkpoint/`) is made by descriptor.
//!
//! The folders are kept open for the run: the trace, JUnit, result, patch,
//! checkpoint and kept outputs are written through them, so a folder swapped
//! for a link during the run redirects nothing. This module does not write
//! any file itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::safe_file::{OutputFile, OutputFolder, OutputFolderError};
use crate::tools::workspace::normalize;

/// The run's output folders, opened.
pub(super) struct OutputFolders {
    workspace: PathBuf,
    opened: BTreeMap<PathBuf, OutputFolder>,
}

impl OutputFolders {
    pub(super) fn new(workspace: &Path) -> OutputFolders {
        OutputFolders {
            workspace: workspace.to_path_buf(),
            opened: BTreeMap::new(),
        }
    }

    /// Opens the folder `dir`, creating what is missing, beneath its root.
    pub(super) fn open(&mut self, dir: &Path) -> Result<OutputFolder, OutputFolderError> {
        let dir = normalize(dir);
        if let Some(folder) = self.opened.get(&dir) {
            return Ok(folder.clone());
        }
        let folder = OutputFolder::beneath_or_trusted(&self.workspace, &dir)?;
        self.opened.insert(dir, folder.clone());
        Ok(folder)
    }

    /// Opens the folder `name` of the opened folder `parent` (made
    /// beneath its descriptor whatever its root).
    pub(super) fn open_child(
        &mut self,
        parent: &OutputFolder,
        name: &str,
    ) -> Result<OutputFolder, OutputFolderError> {
        let dir = normalize(&parent.path().join(name));
        if let Some(folder) = self.opened.get(&dir) {
            return Ok(folder.clone());
        }
        let folder = parent.child(Path::new(name))?;
        self.opened.insert(dir, folder.clone());
        Ok(folder)
    }

    /// Opens the folder of the file `path`.
    pub(super) fn open_parent_of(&mut self, path: &Path) -> Result<OutputFile, OutputFolderError> {
        let path = normalize(path);
        let (folder, name) = crate::safe_file::output_folder::split(&path);
        Ok(self.open(folder)?.file(name))
    }

    /// The file `path` in a folder opened before, or `None`.
    pub(super) fn file(&self, path: &Path) -> Option<OutputFile> {
        let path = normalize(path);
        let (folder, name) = crate::safe_file::output_folder::split(&path);
        self.opened.get(folder).map(|folder| folder.file(name))
    }

    /// The folder `dir`, opened before, or `None`.
    pub(super) fn folder(&self, dir: &Path) -> Option<&OutputFolder> {
        self.opened.get(&normalize(dir))
    }

    /// Whether `path` lies inside the workspace.
    pub(super) fn in_workspace(&self, path: &Path) -> bool {
        let path = normalize(path);
        path != self.workspace && path.starts_with(&self.workspace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn inside_the_workspace_a_link_is_refused_outside_the_named_folder_is_trusted() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), ws.path().join("out")).unwrap();
        let mut folders = OutputFolders::new(ws.path());
        let refused = folders.open(&ws.path().join("out/run")).unwrap_err();
        assert!(
            matches!(&refused, OutputFolderError::Link { link, .. } if link == &ws.path().join("out")),
            "{refused}"
        );
        // A folder the user named outside the workspace may be reached through a link of theirs.
        let named = tempfile::tempdir().unwrap();
        symlink(outside.path(), named.path().join("via")).unwrap();
        let folder = folders.open(&named.path().join("via/run")).unwrap();
        assert!(outside.path().join("run").is_dir());
        assert!(folders.file(&folder.path().join("t.jsonl")).is_some());
    }
}
