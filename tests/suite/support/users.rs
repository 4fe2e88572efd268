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
/// folder only root can enter. One copy per build, in a folder of the
/// current user's under the temporary folder, reused by later test runs;
/// copies of older builds are removed once they are an hour old.
fn shared_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let source = Path::new(env!("CARGO_BIN_EXE_agentci"));
        let meta = std::fs::metadata(source).unwrap();
        let modified = meta
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = copies_folder();
        let binary = dir.join(format!("agentci-{}-{modified}", meta.len()));
        if !binary.exists() {
            let staged = tempfile::NamedTempFile::new_in(&dir).unwrap();
            std::fs::copy(source, staged.path()).unwrap();
            std::fs::set_permissions(staged.path(), std::fs::Permissions::from_mode(0o755))
                .unwrap();
            staged.persist(&binary).unwrap();
        }
        remove_old_copies(&dir, &binary);
        binary
    })
}

/// `agentci-test-bin-UID` in the temporary folder, made 0755 when missing;
/// a fresh folder when that name is taken by something not ours.
fn copies_folder() -> PathBuf {
    // SAFETY: geteuid only reads the calling process's effective user id.
    let uid = unsafe { libc::geteuid() };
    let dir = std::env::temp_dir().join(format!("agentci-test-bin-{uid}"));
    let _ = std::fs::create_dir(&dir);
    let ours = std::fs::symlink_metadata(&dir)
        .is_ok_and(|m| m.is_dir() && std::os::unix::fs::MetadataExt::uid(&m) == uid);
    let dir = if ours {
        dir
    } else {
        tempfile::tempdir().unwrap().keep()
    };
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn remove_old_copies(dir: &Path, keep: &Path) {
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < hour_ago);
        if path != keep && old {
            let _ = std::fs::remove_file(path);
        }
    }
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
        self.agentci_command_as(user, args, env).output().unwrap()
    }

    /// The command [`Sandbox::agentci_as`] runs, for a test that starts it
    /// itself (to add a `pre_exec` step, or to watch the running process:
    /// `setpriv` execs agentci in place, so the child's pid is agentci's).
    pub fn agentci_command_as(&self, user: RunAs, args: &[&str], env: &[(&str, &str)]) -> Command {
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
        cmd
    }
}
