//! What an attempt changed in its workspace, as a unified diff written to
//! `changes.patch` in the attempt's folder, for the HTML transcript and for
//! a person who wants to apply or read it. Fixtures need not be git
//! repositories, so the diff is made from the before snapshot's kept bytes
//! and the files as the run left them, one file at a time, with git's diff
//! machinery. Secrets are masked with the run's own redactor and the patch
//! is capped: it is shown in a report that may be published.

use std::io::Read;
use std::path::Path;

use git2::{DiffOptions, Patch};

use super::snapshot::Snapshot;
use crate::redact::Redactor;
use crate::tools::beneath::Beneath;

/// The file in the attempt's folder.
pub const PATCH_FILE: &str = "changes.patch";
/// Longest patch kept; the rest is cut with a note.
const MAX_PATCH_BYTES: usize = 512 * 1024;
/// Files larger than this after the run are named, not diffed.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The diff of the `changed` paths of the workspace at `root` against
/// `before`, masked by `secrets` and capped.
pub fn diff(before: &Snapshot, root: &Path, changed: &[String], secrets: &Redactor) -> String {
    let mut text = String::new();
    // Read beneath the workspace's descriptor: no step of a changed path may
    // be a symlink the run left, so the patch never shows a file outside.
    let beneath = Beneath::open(root).ok();
    for path in changed {
        text.push_str(&file_diff(before, root, beneath.as_ref(), path));
        if text.len() > MAX_PATCH_BYTES {
            break;
        }
    }
    let mut masked = secrets.redact(&text).into_owned();
    if masked.len() > MAX_PATCH_BYTES {
        let mut end = MAX_PATCH_BYTES;
        while !masked.is_char_boundary(end) {
            end -= 1;
        }
        masked.truncate(end);
        masked.push_str("\n# … cut here: the patch is longer than 512 KiB\n");
    }
    masked
}

/// One file's part of the patch; a file too large to diff is named.
fn file_diff(before: &Snapshot, root: &Path, beneath: Option<&Beneath>, path: &str) -> String {
    let old: Option<&[u8]> = match (before.has(path), before.content(path)) {
        (false, _) => Some(&[]),
        (true, Some(bytes)) => Some(bytes),
        (true, None) => None,
    };
    let new = after(root, beneath, path);
    let (Some(old), Some(new)) = (old, new.as_ref()) else {
        return format!("# {path}: changed (too large to show)\n");
    };
    let mut options = DiffOptions::new();
    options.context_lines(3);
    let name = Path::new(path);
    let patch = Patch::from_buffers(
        old,
        before.has(path).then_some(name),
        new.as_deref().unwrap_or_default(),
        new.is_some().then_some(name),
        Some(&mut options),
    );
    match patch.and_then(|mut p| p.to_buf()) {
        Ok(buf) => String::from_utf8_lossy(&buf).into_owned(),
        Err(e) => format!("# {path}: changed (cannot diff: {})\n", e.message()),
    }
}

/// The file at `path` in the workspace `root` as the run left it:
/// `Some(None)` when it is gone (or cannot be read beneath the workspace),
/// `None` when it is too large; a symlink is its target, never followed.
#[expect(
    clippy::option_option,
    reason = "gone and too large are different answers"
)]
fn after(root: &Path, beneath: Option<&Beneath>, path: &str) -> Option<Option<Vec<u8>>> {
    let full = root.join(path);
    let Ok(meta) = std::fs::symlink_metadata(&full) else {
        return Some(None);
    };
    if meta.file_type().is_symlink() {
        return Some(
            std::fs::read_link(&full)
                .ok()
                .map(|t| t.to_string_lossy().into_owned().into_bytes()),
        );
    }
    let Some(Ok(mut file)) = beneath.map(|b| b.open_file(Path::new(path))) else {
        return Some(None);
    };
    // Judged by the descriptor that is read, not by the name looked at above.
    match file.metadata() {
        Ok(meta) if !meta.is_file() => Some(None),
        Ok(meta) if meta.len() > MAX_FILE_BYTES => None,
        Ok(_) => {
            let mut bytes = Vec::new();
            Some(file.read_to_end(&mut bytes).ok().map(|_| bytes))
        }
        Err(_) => Some(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_added_and_removed_files_are_in_the_patch_with_secrets_masked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "one\ntoken sk-planted\ntwo\n").unwrap();
        std::fs::write(root.join("gone.txt"), "bye\n").unwrap();
        let before = Snapshot::take(root).unwrap();
        std::fs::write(root.join("a.txt"), "one\ntoken sk-planted\nthree\n").unwrap();
        std::fs::remove_file(root.join("gone.txt")).unwrap();
        std::fs::write(root.join("new.txt"), "hello\n").unwrap();
        let after = Snapshot::take(root).unwrap();
        let changed = before.changed(&after);
        let patch = diff(&before, root, &changed, &Redactor::new(["sk-planted"]));
        assert!(patch.contains("-two\n+three\n"), "{patch}");
        assert!(patch.contains("-bye\n"), "{patch}");
        assert!(patch.contains("+hello\n"), "{patch}");
        assert!(!patch.contains("sk-planted"), "{patch}");
    }

    #[test]
    fn a_huge_patch_is_cut_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let before = Snapshot::take(root).unwrap();
        let mut changed = Vec::new();
        for i in 0..12 {
            let name = format!("f{i}.txt");
            std::fs::write(root.join(&name), "x\n".repeat(60_000)).unwrap();
            changed.push(name);
        }
        let patch = diff(
            &before,
            root,
            &changed,
            &Redactor::new(Vec::<String>::new()),
        );
        assert!(patch.len() < MAX_PATCH_BYTES + 200, "{}", patch.len());
        assert!(patch.ends_with("longer than 512 KiB\n"));
    }

    // Attack: a folder of the workspace swapped for a symlink to a folder
    // outside after the file list was taken; the patch reads beneath the
    // workspace's descriptor, so nothing outside reaches it.
    #[test]
    fn a_folder_swapped_for_a_symlink_shows_nothing_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("notes")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("a.txt"), "outside secret\n").unwrap();
        let before = Snapshot::take(&root).unwrap();
        std::fs::write(root.join("notes/a.txt"), "mine\n").unwrap();
        let after = Snapshot::take(&root).unwrap();
        let changed = before.changed(&after);
        assert_eq!(changed, ["notes/a.txt"]);
        std::fs::remove_dir_all(root.join("notes")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("notes")).unwrap();
        let patch = diff(
            &before,
            &root,
            &changed,
            &Redactor::new(Vec::<String>::new()),
        );
        assert!(!patch.contains("outside secret"), "{patch}");
    }
}
