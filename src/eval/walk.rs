//! Walking a fixture or workspace the way a repository sees it: hidden files
//! included, what `.gitignore` ignores left out, `.git` and agentci's own
//! `.agentci` folder skipped. Copying fixtures and comparing a workspace
//! before and after a run use the same walk, so build output (`target/`) is
//! neither copied nor counted as a change.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    Symlink,
}

#[derive(Debug)]
pub struct Entry {
    pub path: PathBuf,
    /// Relative to the walked root, never empty.
    pub relative: PathBuf,
    pub kind: EntryKind,
}

/// Entries under `root` (not `root` itself), parents before children.
pub fn walk(root: &Path) -> impl Iterator<Item = Result<Entry, ignore::Error>> + use<> {
    let root_owned = root.to_path_buf();
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_global(false)
        .git_exclude(false)
        .git_ignore(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| {
            let name = e.file_name();
            !(e.depth() > 0 && (name == ".git" || name == ".agentci"))
        })
        .build()
        .filter_map(move |entry| {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => return Some(Err(e)),
            };
            if entry.depth() == 0 {
                return None;
            }
            let relative = entry.path().strip_prefix(&root_owned).ok()?.to_path_buf();
            let file_type = entry.file_type()?;
            let kind = if file_type.is_symlink() {
                EntryKind::Symlink
            } else if file_type.is_dir() {
                EntryKind::Dir
            } else {
                EntryKind::File
            };
            Some(Ok(Entry {
                path: entry.into_path(),
                relative,
                kind,
            }))
        })
}
