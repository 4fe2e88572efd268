//! Files that other programs read and obey when they start, which nothing
//! the agent runs may write even inside the workspace: shell start-up files
//! (a workflow step or a developer whose `HOME` is the checkout sources
//! them), git's per-user configuration (`include`, `core.fsmonitor`,
//! `core.sshCommand`: commands), and `.envrc` (direnv runs it on `cd`).
//!
//! The sandbox binds those found at the start of the run read-only; the
//! file tools refuse them at any depth ([`is_startup_file`]). Commits and
//! repositories themselves are guarded elsewhere (`.git`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The names, as files of a folder.
pub const STARTUP_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".gitconfig",
    ".envrc",
];

/// Whether a file named `name` is one of [`STARTUP_FILES`].
pub fn is_startup_file(name: &OsStr) -> bool {
    STARTUP_FILES.iter().any(|f| OsStr::new(f) == name)
}

/// The start-up files at the top of `workspace`, where a `HOME` set to the
/// checkout would find them (not symlinks: a link is bound by its target).
pub fn startup_files_in(workspace: &Path) -> Vec<PathBuf> {
    STARTUP_FILES
        .iter()
        .map(|name| workspace.join(name))
        .filter(|path| path.symlink_metadata().is_ok_and(|m| m.is_file()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_existing_plain_files_are_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".bashrc"), "").unwrap();
        std::fs::create_dir(dir.path().join(".zshrc")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join(".profile")).unwrap();
        assert_eq!(startup_files_in(dir.path()), [dir.path().join(".bashrc")]);
        assert!(is_startup_file(OsStr::new(".envrc")));
        assert!(!is_startup_file(OsStr::new("bashrc")));
    }
}
