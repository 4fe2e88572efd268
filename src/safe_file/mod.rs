//! Writing a file so that whatever already sits at its path cannot redirect
//! the write: agentci's own outputs (trace, JUnit, patch, results, summary,
//! attempt files, cassettes). The agent's `write` and `edit` do the same
//! through a folder descriptor beneath the workspace
//! (`tools/beneath.rs`).
//!
//! The agent can run commands, so by the time agentci writes a file the path
//! may hold a symlink to a file outside the workspace, or a hard link to
//! one. Opening the path and truncating it would write through either. So a
//! file is never opened by its path: the content goes into a new file made
//! in the same folder with `O_CREAT|O_EXCL` (which never follows a symlink,
//! and never opens an existing file), and that file is renamed over the
//! path. The rename replaces a planted link itself, not what it points to.
//!
//! What it writes is [`Masked`] and nothing else: every record that leaves
//! the process went through the run's masker (see [`crate::redact::Masked`]),
//! so a new writer cannot forget it.
//!
//! This module does not judge whether a path is allowed (the workspace and
//! the policy do). The path-based functions here do not guard the folders
//! above the file; agentci's run outputs are written through folders opened
//! by descriptor instead ([`output_folder`], on [`beneath`]), so a folder on
//! the way planted or swapped for a symlink redirects nothing.

use std::fs::{File, Permissions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

pub mod beneath;
pub mod output_folder;

pub use output_folder::{OutputFile, OutputFolder, OutputFolderError};

use crate::redact::Masked;

/// Mode for new files; the process umask is applied on top, as for any new file.
const NEW_FILE_MODE: u32 = 0o666;

/// Replace the file at `path` with `bytes`. A symlink or hard link at `path`
/// is replaced, never written through. `mode` keeps an existing file's
/// permission bits (see [`permission_bits`]); `None` makes a new file's.
/// The folder must exist.
pub fn replace(path: &Path, bytes: &Masked<'_>, mode: Option<u32>) -> io::Result<()> {
    let mut staged = staging_file(path)?;
    staged.write_all(bytes.as_bytes())?;
    if let Some(mode) = mode {
        // The umask applied when the file was made; set the bits exactly.
        staged
            .as_file()
            .set_permissions(Permissions::from_mode(mode))?;
    }
    staged.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Create an empty file at `path` to stream into (the live trace, a
/// cassette), replacing whatever was there without following it. The
/// returned file is open for reading and writing.
pub fn create_stream(path: &Path) -> io::Result<MaskedStream> {
    let file = staging_file(path)?.persist(path).map_err(|e| e.error)?;
    Ok(MaskedStream { file })
}

/// Append `bytes` to the file at `path`, creating it: a file another
/// program hands agentci to add to (GitHub's step summary and outputs).
pub fn append(path: &Path, bytes: &Masked<'_>) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(bytes.as_bytes())
}

/// Open the existing file at `path` to append to it, refusing a symlink at
/// the path itself (a cassette a judge adds its exchanges to).
pub fn append_stream_nofollow(path: &Path) -> io::Result<MaskedStream> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    Ok(MaskedStream { file })
}

/// A file agentci streams a record into: written only with [`Masked`]
/// bytes, read back and sought freely (the trace checks its own bytes).
#[derive(Debug)]
pub struct MaskedStream {
    file: File,
}

impl MaskedStream {
    /// A stream over any open file, for tests that put a failing file
    /// (`/dev/full`) under a writer.
    #[cfg(test)]
    pub fn over(file: File) -> MaskedStream {
        MaskedStream { file }
    }

    /// Write all of `bytes` in one call (a kill leaves at most this write cut).
    pub fn write_masked(&mut self, bytes: &Masked<'_>) -> io::Result<()> {
        self.file.write_all(bytes.as_bytes())
    }

    /// Write some of `bytes`, as `write(2)` does: how many were written.
    /// A full disk leaves the rest for the caller to hold and retry.
    pub fn write_some(&mut self, bytes: &Masked<'_>) -> io::Result<usize> {
        self.file.write(bytes.as_bytes())
    }

    /// Cut the file to `len` bytes (what a record counts, after a write the
    /// disk cut short).
    pub fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    /// Which file this is, to tell whether its path still names it.
    pub fn identity(&self) -> io::Result<FileIdentity> {
        FileIdentity::of_file(&self.file)
    }
}

impl Read for MaskedStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }
}

impl Seek for MaskedStream {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        self.file.seek(pos)
    }
}

/// The permission bits (`rwx` for user, group, others) of the file at
/// `path` when it is a regular file; set-id and sticky bits are not kept.
pub fn permission_bits(path: &Path) -> Option<u32> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.is_file().then_some(meta.mode() & 0o777)
}

/// Which file a path or an open file is, to tell whether the path still
/// names the file agentci opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    dev: u64,
    ino: u64,
}

impl FileIdentity {
    pub fn of_file(file: &File) -> io::Result<Self> {
        let meta = file.metadata()?;
        Ok(FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    /// The file a `stat` describes.
    pub fn from_stat(stat: &nix::sys::stat::FileStat) -> Self {
        FileIdentity {
            dev: stat.st_dev,
            ino: stat.st_ino,
        }
    }

    /// What `path` itself names now (a symlink counts as itself).
    pub fn of_path(path: &Path) -> io::Result<Self> {
        let meta = std::fs::symlink_metadata(path)?;
        Ok(FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
}

/// A new, empty file next to `path`, made with `O_CREAT|O_EXCL`; removed
/// again if it is dropped before being renamed into place.
fn staging_file(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(NEW_FILE_MODE))
        .tempfile_in(folder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_symlink_at_the_path_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "precious").unwrap();
        let target = dir.path().join("junit.xml");
        symlink(&outside, &target).unwrap();
        replace(&target, &Masked::from_masked_parts(&b"<xml/>"[..]), None).unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&target).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "<xml/>");
    }

    #[test]
    fn a_hard_link_is_replaced_and_the_mode_kept() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.sh");
        std::fs::write(&outside, "echo hi").unwrap();
        std::fs::set_permissions(&outside, Permissions::from_mode(0o751)).unwrap();
        let inside = dir.path().join("inside.sh");
        std::fs::hard_link(&outside, &inside).unwrap();
        let mode = permission_bits(&inside);
        replace(
            &inside,
            &Masked::from_masked_parts(&b"echo changed"[..]),
            mode,
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "echo hi");
        assert_eq!(std::fs::read_to_string(&inside).unwrap(), "echo changed");
        assert_eq!(permission_bits(&inside), Some(0o751));
    }

    #[test]
    fn a_stream_replaces_a_planted_link_and_no_staging_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "precious").unwrap();
        let trace = dir.path().join("trace.jsonl");
        symlink(&outside, &trace).unwrap();
        let mut file = create_stream(&trace).unwrap();
        file.write_masked(&Masked::from_masked_parts(&b"{}\n"[..]))
            .unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), "{}\n");
        assert_eq!(
            file.identity().unwrap(),
            FileIdentity::of_path(&trace).unwrap()
        );
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "only outside.txt and trace.jsonl remain");
    }
}
