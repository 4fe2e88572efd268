//! Opening files by descriptor beneath a folder agentci opened once: the
//! workspace root, a skill folder, the run's output folders
//! ([`super::output_folder`]).
//!
//! A path the tools checked is never used again by name from `/`: between
//! the check and the use, a process the agent started can swap a folder on
//! the way for a symlink to somewhere else. Here every path is resolved
//! relative to the folder's descriptor with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)`, so the kernel refuses any step that leaves the
//! folder or goes through a symlink. The tools hand over paths the workspace
//! has already resolved (symlinks that stay inside followed at check time),
//! so a symlink met now was planted since, and is refused. On kernels
//! without `openat2` (before 5.6, `ENOSYS`; `EPERM` from a container's
//! older seccomp profile) the same rule is kept by walking the path one
//! component at a time with `O_NOFOLLOW`.
//!
//! This module decides nothing about which paths are allowed (that is
//! `tools::Workspace`, and for agentci's own outputs the runner); it only
//! makes sure the file opened is the one beneath the folder.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{FileStat, Mode};

/// Set once `openat2` answered `ENOSYS`: every later open walks.
static OPENAT2_MISSING: AtomicBool = AtomicBool::new(false);

/// A folder opened once, beneath which paths are opened by descriptor.
#[derive(Clone, Debug)]
pub struct Beneath {
    dir: Arc<OwnedFd>,
    /// Always resolve by the component walk, as on a kernel without
    /// `openat2` (tests force it); otherwise `openat2` when the kernel has it.
    walk_only: bool,
}

impl Beneath {
    /// Opens the folder at `dir` (absolute, existing).
    pub fn open(dir: &Path) -> io::Result<Self> {
        let fd = nix::fcntl::open(dir, dir_flags(), Mode::empty()).map_err(io::Error::from)?;
        Ok(Beneath {
            dir: Arc::new(fd),
            walk_only: false,
        })
    }

    /// The same folder, always resolved by the component walk, as on a
    /// kernel without `openat2`.
    #[cfg(test)]
    pub(crate) fn walking(mut self) -> Self {
        self.walk_only = true;
        self
    }

    /// Opens `relative` (no `..`, not absolute; `""` is the folder itself)
    /// with `flags`. No step may be a symlink; the last one is not followed
    /// either, so a symlink there fails with `ELOOP` (or, with `O_PATH`, is
    /// opened itself).
    pub fn open_at(&self, relative: &Path, flags: OFlag) -> io::Result<OwnedFd> {
        let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        if relative.as_os_str().is_empty() {
            return reopen_self(self.dir.as_fd(), flags);
        }
        let names = names(relative)?;
        if !self.walk_only && !OPENAT2_MISSING.load(Ordering::Relaxed) {
            let how = OpenHow::new().flags(flags).resolve(
                ResolveFlag::RESOLVE_BENEATH
                    | ResolveFlag::RESOLVE_NO_SYMLINKS
                    | ResolveFlag::RESOLVE_NO_MAGICLINKS,
            );
            match nix::fcntl::openat2(self.dir.as_fd(), relative, how) {
                Err(Errno::ENOSYS) => OPENAT2_MISSING.store(true, Ordering::Relaxed),
                // A rename elsewhere on the system makes the kernel ask for a
                // retry; an older container seccomp profile answers EPERM for
                // a system call it does not know. The walk keeps the same rule.
                Err(Errno::EAGAIN | Errno::EPERM) => {
                    return walk(self.dir.as_fd(), &names, flags);
                }
                other => return other.map_err(io::Error::from),
            }
        }
        walk(self.dir.as_fd(), &names, flags)
    }

    /// A folder opened before, as a root to open paths beneath.
    pub fn from_folder(folder: &Folder) -> Self {
        Beneath {
            dir: Arc::clone(&folder.fd),
            walk_only: false,
        }
    }

    /// The folder itself, to look up, create and replace names in it.
    pub fn folder(&self) -> Folder {
        Folder {
            fd: Arc::clone(&self.dir),
        }
    }

    /// Opens `relative` for reading as a file.
    pub fn open_file(&self, relative: &Path) -> io::Result<File> {
        self.open_at(relative, OFlag::O_RDONLY | OFlag::O_NONBLOCK)
            .map(File::from)
    }

    /// Opens the folder `relative` (to create, replace and look up names in it).
    pub fn open_dir(&self, relative: &Path) -> io::Result<Folder> {
        self.open_at(relative, dir_flags())
            .map(|fd| Folder { fd: Arc::new(fd) })
    }

    /// Opens the folder `relative`, creating whatever of it is missing,
    /// one folder at a time, each made inside the one opened before it.
    pub fn create_dirs(&self, relative: &Path) -> io::Result<Folder> {
        match self.open_dir(relative) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => return other,
        }
        let mut done = std::path::PathBuf::new();
        let mut current = self.open_dir(&done)?;
        for name in names(relative)? {
            done.push(name);
            current = match self.open_dir(&done) {
                Ok(folder) => folder,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    match nix::sys::stat::mkdirat(current.fd.as_fd(), name, new_dir()) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    self.open_dir(&done)?
                }
                Err(e) => return Err(e),
            };
        }
        Ok(current)
    }

    /// What `relative` names beneath the folder, a symlink counting as
    /// itself, or `None` when nothing is there.
    pub fn stat(&self, relative: &Path) -> io::Result<Option<FileStat>> {
        match self.open_at(relative, OFlag::O_PATH) {
            Ok(fd) => nix::sys::stat::fstat(&fd)
                .map(Some)
                .map_err(io::Error::from),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A folder beneath the root, opened: names in it are looked up, created
/// and replaced through its descriptor, never through a path.
#[derive(Clone, Debug)]
pub struct Folder {
    fd: Arc<OwnedFd>,
}

impl Folder {
    /// What `name` is in this folder (not followed), or `None` when nothing is.
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<FileStat>> {
        match nix::sys::stat::fstatat(
            self.fd.as_fd(),
            name,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the file `name` in this folder for reading, never through a symlink.
    pub fn open_file(&self, name: &OsStr) -> io::Result<File> {
        let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        nix::fcntl::openat(self.fd.as_fd(), name, flags, Mode::empty())
            .map(File::from)
            .map_err(io::Error::from)
    }

    /// Creates the file `name`, which must not exist yet (`O_EXCL`, so a
    /// symlink planted there is not followed either), open for reading and
    /// writing.
    pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
        let flags =
            OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        nix::fcntl::openat(self.fd.as_fd(), name, flags, new_file())
            .map(File::from)
            .map_err(io::Error::from)
    }

    /// Renames `from` over `to`, both in this folder.
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        nix::fcntl::renameat(self.fd.as_fd(), from, self.fd.as_fd(), to).map_err(io::Error::from)
    }

    /// Replaces the file `name` with an empty file open for reading and
    /// writing, to stream into: made anew in this folder and renamed over
    /// the name, so whatever was there is replaced, never written through.
    pub fn create_stream(&self, name: &OsStr) -> io::Result<File> {
        let staged_name = staging_name(name);
        let file = self.create_new(&staged_name)?;
        match self.rename(&staged_name, name) {
            Ok(()) => Ok(file),
            Err(e) => {
                let _ = self.remove_file(&staged_name);
                Err(e)
            }
        }
    }

    /// The names in this folder (`.` and `..` left out).
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        let listing = nix::dir::Dir::openat(
            self.fd.as_fd(),
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let mut names = Vec::new();
        for entry in listing {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names
                    .push(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name).to_os_string());
            }
        }
        Ok(names)
    }

    /// Replaces the file `name` with `bytes`: a new file made in this
    /// folder, renamed over the name. A symlink or hard link there is
    /// replaced, never written through (as [`crate::safe_file`] does for
    /// agentci's own outputs). `mode` sets the permission bits exactly;
    /// `None` leaves a new file's (umask applied).
    pub fn replace(&self, name: &OsStr, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
        let staged_name = staging_name(name);
        let mut staged = self.create_new(&staged_name)?;
        let written = std::io::Write::write_all(&mut staged, bytes)
            .and_then(|()| match mode {
                Some(mode) => {
                    staged.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
                }
                None => Ok(()),
            })
            .and_then(|()| self.rename(&staged_name, name));
        if written.is_err() {
            let _ = self.remove_file(&staged_name);
        }
        written
    }

    /// Removes the file `name` from this folder.
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        nix::unistd::unlinkat(
            self.fd.as_fd(),
            name,
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        )
        .map_err(io::Error::from)
    }
}

/// A fresh hidden name beside `name` for a file made before it is renamed over `name`.
fn staging_name(name: &OsStr) -> OsString {
    let mut staged_name = OsString::from(".");
    staged_name.push(name);
    staged_name.push(format!(
        ".{}.tmp",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    ));
    staged_name
}

/// The components of `relative`, which must all be plain names.
fn names(relative: &Path) -> io::Result<Vec<&OsStr>> {
    relative
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::from(Errno::EXDEV)),
        })
        .collect()
}

/// The walk for kernels without `openat2`: every folder on the way opened
/// with `O_NOFOLLOW` from the one before, the last name with `flags`.
fn walk(root: BorrowedFd<'_>, names: &[&OsStr], flags: OFlag) -> io::Result<OwnedFd> {
    let Some((last, folders)) = names.split_last() else {
        return reopen_self(root, flags);
    };
    let mut current: Option<OwnedFd> = None;
    for name in folders {
        let at = current.as_ref().map_or(root, |fd| fd.as_fd());
        current = Some(nix::fcntl::openat(at, *name, dir_flags(), Mode::empty())?);
    }
    let at = current.as_ref().map_or(root, |fd| fd.as_fd());
    nix::fcntl::openat(at, *last, flags, Mode::empty()).map_err(io::Error::from)
}

/// The folder itself, opened again with `flags`.
fn reopen_self(dir: BorrowedFd<'_>, flags: OFlag) -> io::Result<OwnedFd> {
    nix::fcntl::openat(dir, ".", flags, Mode::empty()).map_err(io::Error::from)
}

fn dir_flags() -> OFlag {
    OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// Mode for new folders; the umask applies, as for any new folder.
fn new_dir() -> Mode {
    Mode::from_bits_truncate(0o777)
}

/// Mode for new files; the umask applies, as for any new file.
fn new_file() -> Mode {
    Mode::from_bits_truncate(0o666)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, tempfile::TempDir) {
        let inside = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(inside.path().join("a/b")).unwrap();
        std::fs::write(inside.path().join("a/b/f.txt"), "inside").unwrap();
        std::fs::write(outside.path().join("f.txt"), "outside").unwrap();
        symlink(outside.path(), inside.path().join("a/out")).unwrap();
        symlink("b", inside.path().join("a/in")).unwrap();
        (inside, outside)
    }

    fn read(folder: &Beneath, path: &str) -> io::Result<String> {
        let mut text = String::new();
        folder
            .open_file(Path::new(path))?
            .read_to_string(&mut text)?;
        Ok(text)
    }

    /// Both ways of resolving keep the same rule: plain names only, no symlink on the way.
    fn check(folder: &Beneath) {
        assert_eq!(read(folder, "a/b/f.txt").unwrap(), "inside");
        assert_eq!(read(folder, "./a/b/f.txt").unwrap(), "inside");
        for refused in ["a/out/f.txt", "a/in/f.txt", "a/out", "../x", "/etc/passwd"] {
            assert!(read(folder, refused).is_err(), "{refused} was opened");
        }
        assert!(folder.stat(Path::new("a/out")).unwrap().is_some());
        assert!(folder.stat(Path::new("a/missing")).unwrap().is_none());
        let made = folder.create_dirs(Path::new("a/new/deeper")).unwrap();
        let mut file = made.create_new(OsStr::new("x.txt")).unwrap();
        std::io::Write::write_all(&mut file, b"new").unwrap();
        assert!(folder.create_dirs(Path::new("a/out/new")).is_err());
        assert_eq!(read(folder, "a/new/deeper/x.txt").unwrap(), "new");
    }

    #[test]
    fn openat2_stays_beneath_the_folder() {
        let (inside, outside) = tree();
        check(&Beneath::open(inside.path()).unwrap());
        assert!(!outside.path().join("new").exists());
    }

    #[test]
    fn the_walk_for_old_kernels_keeps_the_same_rule() {
        let (inside, outside) = tree();
        check(&Beneath::open(inside.path()).unwrap().walking());
        assert!(!outside.path().join("new").exists());
    }
}
