//! Running the real binary as root and as an unprivileged user.
//!
//! Root is the usual CI user (containers, self-hosted runners), and GitHub's
//! hosted runners are not root: an attack is tried as both and judged by its
//! side effect each time. Switching users needs root, so a suite run by a
//! normal user tries each attack once, as that user.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use super::harness::{Sandbox, outside_github};

/// The uid and gid the unprivileged runs use (`nobody`).
pub const NOBODY: u32 = 65534;

/// Who runs `agentci` in a test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunAs {
    /// The user running the tests (root in CI containers).
    Current,
    /// `nobody`, switched to with `setpriv` (needs root).
    Unprivileged,
}

impl RunAs {
    /// Every user an attack is tried as: the current one, and `nobody`
    /// too when the tests run as root.
    pub fn each() -> Vec<RunAs> {
        if is_root() {
            vec![RunAs::Current, RunAs::Unprivileged]
        } else {
            eprintln!(
                "note: the tests do not run as root, so attacks run as the current user only"
            );
            vec![RunAs::Current]
        }
    }

    /// How the test's output names this user.
    pub fn label(self) -> &'static str {
        match self {
            RunAs::Current if is_root() => "root",
            RunAs::Current => "the current user",
            RunAs::Unprivileged => "an unprivileged user",
        }
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid only reads the calling process's effective user id.
    unsafe { libc::geteuid() == 0 }
}

/// A copy of the binary every user can run: the build folder may sit in a
/// folder only root can enter.
///
/// Regression: every test process made a new copy (hundreds of megabytes
/// for a debug build) and kept it, until the disk was full. Now each build
/// folder has one folder of copies, holding only the copy of the newest
/// build, which every test process of that build reuses.
fn shared_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        use std::hash::{Hash, Hasher};
        use std::os::unix::fs::MetadataExt;
        let built = Path::new(env!("CARGO_BIN_EXE_agentci"));
        let meta = std::fs::metadata(built).unwrap();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        built.hash(&mut hasher);
        let dir = std::env::temp_dir().join(format!("agentci-bin-{:016x}", hasher.finish()));
        if std::fs::create_dir(&dir).is_ok() {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let dir_meta = std::fs::symlink_metadata(&dir).unwrap();
        // SAFETY: geteuid only reads the calling process's effective user id.
        let me = unsafe { libc::geteuid() };
        assert!(
            dir_meta.is_dir() && dir_meta.uid() == me,
            "{} is not a folder of this user's",
            dir.display()
        );
        let name = format!(
            "agentci-{}-{}-{}",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        );
        let binary = dir.join(&name);
        if !binary.exists() {
            // Copied aside and renamed, so a test process starting at the
            // same time never runs a half-written binary.
            let staged = tempfile::NamedTempFile::new_in(&dir).unwrap();
            std::fs::copy(built, staged.path()).unwrap();
            std::fs::set_permissions(staged.path(), std::fs::Permissions::from_mode(0o755))
                .unwrap();
            staged.persist(&binary).unwrap();
        }
        // Copies of older builds go (a process still running one keeps it).
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let other = entry.file_name();
            if other != name.as_str() && other.to_string_lossy().starts_with("agentci-") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        binary
    })
}

/// Give `path` and everything below it to `nobody`.
pub fn give_to_nobody(path: &Path) {
    let status = Command::new("chown")
        .args(["-R", &format!("{NOBODY}:{NOBODY}")])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "chown -R {}", path.display());
}

impl Sandbox {
    /// Run `agentci` with `args` in the sandbox root as `user`. For
    /// [`RunAs::Unprivileged`] the whole sandbox is handed to `nobody`
    /// first, and `HOME` is a folder of its own inside it.
    pub fn agentci_as(&self, user: RunAs, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = match user {
            RunAs::Current => Command::new(env!("CARGO_BIN_EXE_agentci")),
            RunAs::Unprivileged => {
                let home = self.path().join("home");
                std::fs::create_dir_all(&home).unwrap();
                give_to_nobody(self.path());
                // The temporary folder itself is root's and 0700.
                std::fs::set_permissions(self.path(), std::fs::Permissions::from_mode(0o755))
                    .unwrap();
                let mut cmd = Command::new("setpriv");
                cmd.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
                    .arg(shared_binary())
                    .env("HOME", &home);
                cmd
            }
        };
        outside_github(&mut cmd);
        cmd.args(args)
            .current_dir(self.path())
            .env_remove("OPENAI_API_KEY");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }
}
