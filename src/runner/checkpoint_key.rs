//! The key that authenticates checkpoints: 32 random bytes in a file of the
//! user's own, outside every workspace, made once and kept.
//!
//! A checkpoint lies in the run folder, which is often inside the
//! workspace, where the model's commands and tools reach. What a resumed
//! run trusts in it (the conversation, the loop's state, the run it names)
//! must be what agentci wrote, so every record carries an HMAC made with
//! this key ([`super::checkpoint`]), and the sandbox hides the key file
//! from every child ([`crate::sandbox::SandboxPaths::masked`]).
//!
//! The file is `$XDG_STATE_HOME/agentci/checkpoint.key`, else
//! `$HOME/.local/state/agentci/checkpoint.key`, or the path in
//! `AGENTCI_CHECKPOINT_KEY`. A key file that is a symlink, readable or
//! writable by others, or owned by someone else could be known to someone
//! else, and is refused. This module does not decide what a missing or
//! refused key means for a run: the command line does.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The variable that names the key file instead of the default place.
pub const KEY_VARIABLE: &str = "AGENTCI_CHECKPOINT_KEY";
const KEY_BYTES: usize = 32;

/// The HMAC made with the key.
pub type CheckpointMac = Hmac<Sha256>;

/// Why the checkpoint key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "cannot place the checkpoint key: neither XDG_STATE_HOME nor HOME is set; set one of \
         them, or {KEY_VARIABLE} to a file outside the workspace"
    )]
    NoHome,
    #[error(
        "{shown}: the checkpoint key is a symbolic link, which agentci does not follow; remove \
         it (`rm {shown}`) and a new key is made on the next run (checkpoints made with the old \
         key can no longer be resumed)", shown = .0.display()
    )]
    Symlink(PathBuf),
    #[error(
        "{}: the checkpoint key is not a regular file; remove it and a new key is made on the \
         next run", .0.display()
    )]
    NotAFile(PathBuf),
    #[error(
        "{}: the checkpoint key has mode {mode:04o}, so others may read or change it; make it \
         private with `chmod 600 {}`, or remove it to get a new key", .path.display(), .path.display()
    )]
    Mode { path: PathBuf, mode: u32 },
    #[error(
        "{}: the checkpoint key belongs to uid {owner}, not to this user (uid {user}); remove \
         it, or give it to this user with `chown {user} {}`", .path.display(), .path.display()
    )]
    Owner {
        path: PathBuf,
        owner: u32,
        user: u32,
    },
    #[error(
        "{}: the checkpoint key is {len} bytes, not {KEY_BYTES}; remove it and a new key is \
         made on the next run", .path.display()
    )]
    Size { path: PathBuf, len: u64 },
    #[error(
        "{}: the checkpoint key lies in the workspace {}, where the model's tools can read it; \
         set {KEY_VARIABLE} to a file outside it, or unset it for the default place",
        .path.display(), .workspace.display()
    )]
    InWorkspace { path: PathBuf, workspace: PathBuf },
    #[error("cannot {what} the checkpoint key {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

/// Where the key file is, from the environment as `var` reads it.
pub fn key_path(var: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, KeyError> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(path) = set(KEY_VARIABLE) {
        return Ok(path);
    }
    // The XDG spec: a relative value is invalid and ignored.
    let state = match set("XDG_STATE_HOME").filter(|p| p.is_absolute()) {
        Some(state) => state,
        None => set("HOME").ok_or(KeyError::NoHome)?.join(".local/state"),
    };
    Ok(state.join("agentci").join("checkpoint.key"))
}

/// The checkpoint key, read from its file.
#[derive(Clone)]
pub struct CheckpointKey {
    path: PathBuf,
    mac: CheckpointMac,
}

impl std::fmt::Debug for CheckpointKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key itself.
        f.debug_struct("CheckpointKey")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl CheckpointKey {
    /// The key in the file at `path`, made first if there is none.
    pub fn open_or_create(path: &Path) -> Result<CheckpointKey, KeyError> {
        // Two tries: a key made by another run between the two is read on the second.
        for _ in 0..2 {
            match open(path) {
                Err(KeyError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                    create(path)?;
                }
                other => return other,
            }
        }
        open(path)
    }

    /// A key of the given bytes, for tests and benchmarks.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<CheckpointKey, KeyError> {
        let mac = CheckpointMac::new_from_slice(bytes).map_err(|_| KeyError::Size {
            path: path.to_path_buf(),
            len: bytes.len() as u64,
        })?;
        Ok(CheckpointKey {
            path: path.to_path_buf(),
            mac,
        })
    }

    /// Refuse a key inside `workspace`: the sandbox hides it from children,
    /// but the model's file tools read the workspace.
    pub fn outside(self, workspace: &Path) -> Result<CheckpointKey, KeyError> {
        let resolved = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        if resolved.starts_with(&root) {
            return Err(KeyError::InWorkspace {
                path: self.path,
                workspace: workspace.to_path_buf(),
            });
        }
        Ok(self)
    }

    /// The key file, which children of the run must not read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A fresh HMAC with this key.
    pub fn mac(&self) -> CheckpointMac {
        self.mac.clone()
    }
}

/// Read the key at `path`, refusing a file others could know.
fn open(path: &Path) -> Result<CheckpointKey, KeyError> {
    let io = |what| {
        move |source| KeyError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    };
    let meta = std::fs::symlink_metadata(path).map_err(io("read"))?;
    if meta.file_type().is_symlink() {
        return Err(KeyError::Symlink(path.to_path_buf()));
    }
    if !meta.is_file() {
        return Err(KeyError::NotAFile(path.to_path_buf()));
    }
    // O_NOFOLLOW: a symlink put there since the check is not followed either.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => KeyError::Symlink(path.to_path_buf()),
            _ => io("read")(e),
        })?;
    let meta = file.metadata().map_err(io("read"))?;
    check_private(path, &meta)?;
    let mut bytes = Vec::with_capacity(KEY_BYTES);
    Read::by_ref(&mut file)
        .take(KEY_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io("read"))?;
    if bytes.len() != KEY_BYTES {
        return Err(KeyError::Size {
            path: path.to_path_buf(),
            len: meta.len(),
        });
    }
    CheckpointKey::from_bytes(path, &bytes)
}

/// The file is a regular file of this user's, mode 0600.
fn check_private(path: &Path, meta: &std::fs::Metadata) -> Result<(), KeyError> {
    if !meta.is_file() {
        return Err(KeyError::NotAFile(path.to_path_buf()));
    }
    // SAFETY: geteuid only reads the calling process's effective user id.
    let user = unsafe { libc::geteuid() };
    if meta.uid() != user {
        return Err(KeyError::Owner {
            path: path.to_path_buf(),
            owner: meta.uid(),
            user,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode != 0o600 {
        return Err(KeyError::Mode {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// Make a new key at `path`: written whole into a new file (`O_EXCL`, mode
/// 0600) beside it, then linked to `path`, which fails if a key is there
/// already, so no run ever reads a key half written, and two runs starting
/// at once end up with the same key.
fn create(path: &Path) -> Result<(), KeyError> {
    let io = |what| {
        move |source| KeyError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    };
    let folder = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
        .map_err(io("create the folder of"))?;
    let mut bytes = [0u8; KEY_BYTES];
    File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(io("make random bytes for"))?;
    let mut staged = tempfile::Builder::new()
        .prefix(".checkpoint.key.")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .tempfile_in(folder)
        .map_err(io("create"))?;
    staged
        .write_all(&bytes)
        .and_then(|()| staged.as_file().sync_all())
        .map_err(io("write"))?;
    match staged.persist_noclobber(path) {
        Ok(_) => Ok(()),
        // Another run made it first: that key is the one.
        Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io("create")(e.error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_key_is_made_once_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/agentci/checkpoint.key");
        let first = CheckpointKey::open_or_create(&path).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(meta.len(), KEY_BYTES as u64);
        let again = CheckpointKey::open_or_create(&path).unwrap();
        let tag = |key: &CheckpointKey| {
            let mut mac = key.mac();
            mac.update(b"x");
            mac.finalize().into_bytes()
        };
        assert_eq!(tag(&first), tag(&again));
    }

    #[test]
    fn a_key_others_could_know_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint.key");
        CheckpointKey::open_or_create(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = CheckpointKey::open_or_create(&path).unwrap_err();
        assert!(
            matches!(error, KeyError::Mode { mode: 0o644, .. }),
            "{error}"
        );
        assert!(error.to_string().contains("chmod 600"), "{error}");

        let link = dir.path().join("link.key");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let error = CheckpointKey::open_or_create(&link).unwrap_err();
        assert!(matches!(error, KeyError::Symlink(_)), "{error}");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    }

    #[test]
    fn a_key_in_the_workspace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let key = CheckpointKey::open_or_create(&dir.path().join("ws/.key")).unwrap();
        let error = key.clone().outside(&dir.path().join("ws")).unwrap_err();
        assert!(matches!(error, KeyError::InWorkspace { .. }), "{error}");
        assert!(error.to_string().contains(KEY_VARIABLE), "{error}");
        assert!(key.outside(&dir.path().join("other")).is_ok());
    }

    #[test]
    fn the_key_file_is_found_where_the_environment_says() {
        let env = |pairs: &'static [(&str, &str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            key_path(env(&[("HOME", "/home/u")])).unwrap(),
            Path::new("/home/u/.local/state/agentci/checkpoint.key")
        );
        assert_eq!(
            key_path(env(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "/s")])).unwrap(),
            Path::new("/s/agentci/checkpoint.key")
        );
        assert_eq!(
            key_path(env(&[("HOME", "/h"), ("XDG_STATE_HOME", "rel")])).unwrap(),
            Path::new("/h/.local/state/agentci/checkpoint.key")
        );
        assert_eq!(
            key_path(env(&[("HOME", "/h"), (KEY_VARIABLE, "/k/key")])).unwrap(),
            Path::new("/k/key")
        );
        assert!(matches!(key_path(env(&[])), Err(KeyError::NoHome)));
    }
}
