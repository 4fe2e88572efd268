//! Space held back for a run's records (the trace, the JUnit file, the
//! result), so that they are written whole even when the model fills the
//! disk they live on.
//!
//! `sandbox.limits.file_size` caps one file a command writes, not the disk:
//! a model can fill the workspace's filesystem with many files, and the run
//! folder is usually on it. So before the first model turn the runner
//! reserves [`RECORD_RESERVE_BYTES`] on every filesystem that holds a
//! record: an unnamed file (`O_TMPFILE`, or made and unlinked at once) in the
//! record's folder, allocated with `posix_fallocate`. Nothing in the
//! workspace names it, so no command can see, shrink or delete it, and the
//! kernel frees it when agentci exits, however it exits.
//!
//! Why the reserve is given up only at the end, and not at the first write
//! that finds the disk full: at that moment the command that filled it may
//! still be running (a background session, a loop), and it would take the
//! freed space as fast as agentci does. So while the disk is full the trace
//! writer keeps its lines in memory and retries with each event, which
//! writes them as soon as space comes back; just before
//! `run.completed`, when the agent's commands and the checks have ended,
//! the sinks settle what they hold and the reserve is released for them and
//! for the JUnit file. What does not fit even then makes the record
//! incomplete, and the run says so instead of passing.
//!
//! This module only holds and releases space; deciding what to write, and
//! reporting what could not be written, is the sinks' job.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// How much each filesystem holding a record keeps back: the trace's lines
/// of many turns after the disk filled, the JUnit file and the result.
pub const RECORD_RESERVE_BYTES: u64 = 4 << 20;

/// The reserved space of one run; clones share it.
#[derive(Clone, Default)]
pub struct RecordReserve {
    held: Arc<Mutex<Vec<Held>>>,
}

/// One reserve file, on the filesystem `dev`.
struct Held {
    dev: u64,
    file: File,
}

impl RecordReserve {
    /// Reserve `bytes` on the filesystem of each of `folders` that has none
    /// yet; a folder that does not exist (yet) is left out. Returns a line
    /// for the user for each filesystem where nothing could be reserved: the
    /// run goes on, its records unprotected there.
    pub fn hold_beside(&self, folders: &[&Path], bytes: u64) -> Vec<String> {
        let mut problems = Vec::new();
        let mut held = self.lock();
        for folder in folders {
            let Ok(dev) = std::fs::metadata(folder).map(|m| m.dev()) else {
                continue;
            };
            if held.iter().any(|h| h.dev == dev) {
                continue;
            }
            match reserve_in(folder, bytes) {
                Ok(file) => held.push(Held { dev, file }),
                Err(e) => problems.push(format!(
                    "cannot reserve {} MiB for the run's records in {}: {e}; if the disk fills \
                     during the run, the trace and JUnit file may be incomplete",
                    bytes >> 20,
                    folder.display()
                )),
            }
        }
        problems
    }

    /// Give the reserved space back to the filesystems, for the records to
    /// use; `true` when there was any to give.
    pub fn release(&self) -> bool {
        let released: Vec<Held> = std::mem::take(&mut *self.lock());
        // Closing an unlinked file frees its blocks.
        !released.is_empty()
    }

    /// How many bytes are held, on every filesystem together.
    pub fn held_bytes(&self) -> u64 {
        self.lock()
            .iter()
            .filter_map(|h| h.file.metadata().ok())
            .map(|m| m.len())
            .sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Held>> {
        // Only files are held: a panic elsewhere leaves nothing half-done.
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An unnamed file in `folder` with `bytes` allocated to it.
fn reserve_in(folder: &Path, bytes: u64) -> std::io::Result<File> {
    let file = tempfile::tempfile_in(folder)?;
    let length = i64::try_from(bytes).map_err(std::io::Error::other)?;
    nix::fcntl::posix_fallocate(file.as_fd(), 0, length).map_err(std::io::Error::from)?;
    Ok(file)
}

/// The write failed because the filesystem has no room left (`ENOSPC`, or
/// the user's quota: `EDQUOT`), which the reserve can help with.
pub fn out_of_space(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_is_held_once_per_filesystem_and_released() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner");
        std::fs::create_dir(&inner).unwrap();
        let reserve = RecordReserve::default();
        let missing = dir.path().join("missing");
        let problems = reserve.hold_beside(&[dir.path(), &inner, &missing], 1 << 16);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(reserve.held_bytes(), 1 << 16);
        // Nothing in the folder names the reserve.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(reserve.clone().release());
        assert_eq!(reserve.held_bytes(), 0);
        assert!(!reserve.release());
    }

    #[test]
    fn only_a_full_disk_or_quota_counts_as_out_of_space() {
        let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let quota = std::io::Error::from_raw_os_error(libc::EDQUOT);
        let other = std::io::Error::from_raw_os_error(libc::EIO);
        assert!(out_of_space(&full) && out_of_space(&quota));
        assert!(!out_of_space(&other));
    }
}
