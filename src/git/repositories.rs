//! Every `.git` entry beneath a workspace (the repository's own, nested
//! repositories, submodules' `.git` files), found once at the start of a
//! run so the sandbox can make them read-only: git keeps there the hooks
//! and configuration (`core.fsmonitor`, `core.hooksPath`, remotes) that git
//! commands run later, outside the sandbox, obey.
//!
//! Also the folder `core.hooksPath` names when it lies inside the workspace
//! (husky's `.husky/`): git runs the hooks there, not in `.git/hooks`.
//!
//! It only finds them; it does not judge what they hold.

use std::path::{Path, PathBuf};

/// The `.git` folders and files beneath `workspace`, itself included, in
/// no particular order. Symbolic links are not followed, and nothing is
/// looked for inside a `.git`. Folders that cannot be read are skipped.
pub fn git_entries(workspace: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![workspace.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if entry.file_name() == ".git" {
                if !kind.is_symlink() {
                    found.push(entry.path());
                }
            } else if kind.is_dir() {
                folders.push(entry.path());
            }
        }
    }
    found
}

/// The hooks folder `core.hooksPath` names for the repository `workspace`
/// is in, when it lies inside the workspace (and is not the workspace
/// itself), as a path under `workspace` as given. A relative value is
/// relative to the repository's working folder, as git takes it.
pub fn hooks_folder_in(workspace: &Path) -> Option<PathBuf> {
    // Outside any repository libgit2 is not started (see `may_hold_repository`).
    if !super::may_hold_repository(workspace) {
        return None;
    }
    let repo = git2::Repository::discover(workspace).ok()?;
    let configured = repo.config().ok()?.get_path("core.hooksPath").ok()?;
    let base = repo.workdir().unwrap_or(repo.path());
    let folder = std::fs::canonicalize(base.join(configured)).ok()?;
    let root = std::fs::canonicalize(workspace).ok()?;
    let rel = folder.strip_prefix(&root).ok()?;
    (!rel.as_os_str().is_empty()).then(|| workspace.join(rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_git_entry_and_looks_inside_none() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for folder in [".git/modules/m/.git", "sub/.git", "a/b/c/.git", "plain"] {
            std::fs::create_dir_all(ws.join(folder)).unwrap();
        }
        std::fs::create_dir_all(ws.join("mod")).unwrap();
        std::fs::write(ws.join("mod/.git"), "gitdir: ../.git/modules/m\n").unwrap();
        std::os::unix::fs::symlink(ws.join("sub"), ws.join("link")).unwrap();
        let mut found = git_entries(ws);
        found.sort();
        let expected: Vec<PathBuf> = [".git", "a/b/c/.git", "mod/.git", "sub/.git"]
            .iter()
            .map(|p| ws.join(p))
            .collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn a_hooks_path_inside_the_workspace_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let repo = git2::Repository::init(ws).unwrap();
        assert_eq!(hooks_folder_in(ws), None);
        std::fs::create_dir_all(ws.join(".husky/_")).unwrap();
        repo.config()
            .unwrap()
            .set_str("core.hooksPath", ".husky/_")
            .unwrap();
        assert_eq!(hooks_folder_in(ws), Some(ws.join(".husky/_")));
        repo.config()
            .unwrap()
            .set_str("core.hooksPath", "/usr")
            .unwrap();
        assert_eq!(hooks_folder_in(ws), None);
    }
}
