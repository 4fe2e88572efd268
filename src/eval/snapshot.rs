//! What a workspace holds, file by file, and which files a run changed.
//!
//! A snapshot is taken right after the fixture is copied and again after the
//! run; comparing the two gives the run's diff as a list of paths, which
//! `file_unchanged` and `diff_touches_only` judge. Contents are compared by
//! SHA-256, so a file rewritten with the same bytes is not a change. The
//! before snapshot also keeps the bytes of small files, so the attempt's
//! patch can show what changed in them (see `attempt_patch`).

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::walk::{EntryKind, walk};
use crate::tools::beneath::Beneath;

/// What stands for a FIFO, socket or device: never opened for its content.
const SPECIAL_FILE: &[u8] = b"(not a regular file)";

/// A file's bytes, opened by descriptor beneath the workspace: what the run
/// left (a folder swapped for a symlink since the walk, a FIFO that would
/// block the read) cannot lead the read elsewhere or hold it.
fn read_beneath(beneath: &Beneath, relative: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = beneath.open_file(relative)?;
    if !file.metadata()?.is_file() {
        return Ok(SPECIAL_FILE.to_vec());
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Files larger than this are not kept for the patch (they are named in it).
const KEPT_FILE_BYTES: usize = 256 * 1024;
/// At most this much of a workspace is kept for the patch.
const KEPT_TOTAL_BYTES: usize = 32 * 1024 * 1024;

/// A file or folder of the workspace could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {}: {error}", .path.display())]
pub struct SnapshotError {
    pub path: std::path::PathBuf,
    pub error: String,
}

/// Relative path (with `/`) → content hash (a symlink hashes its target),
/// and the bytes of the small files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    hashes: BTreeMap<String, [u8; 32]>,
    kept: BTreeMap<String, Vec<u8>>,
    /// The paths that are symlinks (their kept bytes are the link's target).
    links: std::collections::BTreeSet<String>,
}

impl Snapshot {
    pub fn take(root: &Path) -> Result<Snapshot, SnapshotError> {
        let mut snapshot = Snapshot::default();
        let mut kept_bytes = 0;
        let unreadable = |path: &Path, error: &dyn std::fmt::Display| SnapshotError {
            path: path.to_path_buf(),
            error: error.to_string(),
        };
        let beneath = Beneath::open(root).map_err(|e| unreadable(root, &e))?;
        for entry in walk(root) {
            let entry = entry.map_err(|e| unreadable(root, &e))?;
            let bytes = match entry.kind {
                EntryKind::Dir => continue,
                EntryKind::File => read_beneath(&beneath, &entry.relative),
                EntryKind::Symlink => std::fs::read_link(&entry.path)
                    .map(|target| target.to_string_lossy().into_owned().into_bytes()),
            }
            .map_err(|e| unreadable(&entry.path, &e))?;
            let key = entry
                .relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            if matches!(entry.kind, EntryKind::Symlink) {
                snapshot.links.insert(key.clone());
            }
            snapshot
                .hashes
                .insert(key.clone(), Sha256::digest(&bytes).into());
            if bytes.len() <= KEPT_FILE_BYTES && kept_bytes + bytes.len() <= KEPT_TOTAL_BYTES {
                kept_bytes += bytes.len();
                snapshot.kept.insert(key, bytes);
            }
        }
        Ok(snapshot)
    }

    /// Every path (files and symlinks), sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.hashes.keys().map(String::as_str)
    }

    /// Whether `path` was a symlink when the snapshot was taken.
    pub fn is_link(&self, path: &str) -> bool {
        self.links.contains(path)
    }

    /// Whether `path` was there when the snapshot was taken.
    pub fn has(&self, path: &str) -> bool {
        self.hashes.contains_key(path)
    }

    /// The bytes of `path` when the snapshot was taken, if it was small enough to keep.
    pub fn content(&self, path: &str) -> Option<&[u8]> {
        self.kept.get(path).map(Vec::as_slice)
    }

    /// Paths added, removed or modified between `self` (before) and `after`, sorted.
    pub fn changed(&self, after: &Snapshot) -> Vec<String> {
        let mut paths: Vec<String> = self
            .hashes
            .iter()
            .filter(|(path, hash)| after.hashes.get(*path) != Some(hash))
            .map(|(path, _)| path.clone())
            .chain(
                after
                    .hashes
                    .keys()
                    .filter(|path| !self.hashes.contains_key(*path))
                    .cloned(),
            )
            .collect();
        paths.sort();
        paths
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_respect_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "/target\n").unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::write(root.join("b.txt"), "b").unwrap();
        let before = Snapshot::take(root).unwrap();
        std::fs::create_dir(root.join("target")).unwrap();
        std::fs::write(root.join("target/out"), "x").unwrap();
        std::fs::write(root.join("a.txt"), "a2").unwrap();
        std::fs::remove_file(root.join("b.txt")).unwrap();
        std::fs::write(root.join("c.txt"), "c").unwrap();
        let after = Snapshot::take(root).unwrap();
        assert_eq!(before.changed(&after), vec!["a.txt", "b.txt", "c.txt"]);
        assert!(after.changed(&after).is_empty());
    }

    #[test]
    fn a_fifo_the_run_left_is_named_not_read_and_never_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        nix::unistd::mkfifo(&root.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(Snapshot::take(&root)));
        let snapshot = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the snapshot blocked on the FIFO")
            .unwrap();
        assert_eq!(snapshot.content("pipe"), Some(SPECIAL_FILE));
        assert_eq!(snapshot.content("a.txt"), Some(&b"a"[..]));
    }
}
