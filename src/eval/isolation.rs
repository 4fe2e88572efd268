//! Keeps the attempts of an evaluation from sharing build output and
//! temporary files.
//!
//! Attempts run side by side (`--jobs`), each in its own copy of a fixture.
//! CI machines often point build output outside the workspace
//! (`CARGO_TARGET_DIR=/cache/target`), and `exec`, the checks and the `run:`
//! assertions inherit that: two attempts of different fixture copies then
//! build into one folder and one runs the other's test binary, so verdicts
//! come out wrong. Each attempt therefore gets a private area outside its
//! workspace: `TMPDIR` always points into it, and every variable that sends
//! build output elsewhere ([`BUILD_OUTPUT_VARS`]) and that the caller or the
//! job sets gets a folder in it too. Left unset, those tools build inside the
//! workspace, which is the attempt's own already.
//!
//! Download caches stay shared (`CARGO_HOME`, `npm_config_cache`,
//! `PIP_CACHE_DIR`): they are keyed by what they hold and safe to share, and
//! sharing them saves every attempt the download. So are content-addressed
//! build caches (`GOCACHE`, `CCACHE_DIR`, `SCCACHE_DIR`).
//!
//! A single `agentci run` does none of this: it keeps the caller's values,
//! which is what a user caching builds between runs wants.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Variables that send build output (or per-source caches that are not
/// content-addressed) outside the workspace, and the folder each gets in
/// the attempt's private area.
pub const BUILD_OUTPUT_VARS: &[(&str, &str)] = &[
    ("CARGO_TARGET_DIR", "cargo-target"),
    ("CARGO_BUILD_TARGET_DIR", "cargo-target"),
    // cargo's `build.build-dir` (intermediate artifacts), stable since 1.91.
    ("CARGO_BUILD_BUILD_DIR", "cargo-build"),
    ("PYTHONPYCACHEPREFIX", "pycache"),
    // Keyed by module path and mtime, not content: copies of one fixture collide.
    ("MYPY_CACHE_DIR", "mypy-cache"),
    ("RUFF_CACHE_DIR", "ruff-cache"),
];

/// Temp folder variables besides `TMPDIR` (always set), set when the caller
/// or the job sets them: Python reads `TEMP`/`TMP`, `go build` `GOTMPDIR`.
const OTHER_TEMP_VARS: &[&str] = &["TMP", "TEMP", "GOTMPDIR"];

/// The attempt's private folder could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot create the attempt's temporary folder {}: {error}", .path.display())]
pub struct IsolationError {
    pub path: PathBuf,
    pub error: std::io::Error,
}

/// One attempt's private folder, outside its workspace; removed on drop.
#[derive(Debug)]
pub struct PrivateArea {
    root: PathBuf,
}

impl PrivateArea {
    /// Make a fresh private area under `temp_dir`.
    pub fn create(temp_dir: &Path) -> Result<PrivateArea, IsolationError> {
        let name = format!(
            "agentci-attempt-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let root = temp_dir.join(name);
        std::fs::create_dir_all(root.join("tmp")).map_err(|error| IsolationError {
            path: root.clone(),
            error,
        })?;
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        Ok(PrivateArea { root })
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The variables an attempt's commands get on top of their usual
    /// environment: `caller` looks up agentci's own environment, `job_env`
    /// is the job's `env:`.
    pub fn env(
        &self,
        caller: impl Fn(&str) -> Option<OsString>,
        job_env: &[(String, String)],
    ) -> Vec<(String, String)> {
        let is_set = |name: &str| {
            caller(name).is_some_and(|v| !v.is_empty())
                || job_env.iter().any(|(k, v)| k == name && !v.is_empty())
        };
        let folder = |name: &str| self.root.join(name).display().to_string();
        let mut env = vec![("TMPDIR".to_string(), folder("tmp"))];
        for name in OTHER_TEMP_VARS {
            if is_set(name) {
                env.push((name.to_string(), folder("tmp")));
            }
        }
        for (name, dir) in BUILD_OUTPUT_VARS {
            if is_set(name) {
                env.push((name.to_string(), folder(dir)));
            }
        }
        env
    }
}

impl Drop for PrivateArea {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(env: &[(String, String)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn only_tmpdir_when_nothing_points_outside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let area = PrivateArea::create(dir.path()).unwrap();
        let env = area.env(|_| None, &[]);
        assert_eq!(names(&env), ["TMPDIR"]);
        assert!(Path::new(&env[0].1).is_dir());
        assert!(env[0].1.starts_with(&area.path().display().to_string()));
    }

    #[test]
    fn build_output_set_by_the_caller_or_the_job_moves_into_the_area() {
        let dir = tempfile::tempdir().unwrap();
        let area = PrivateArea::create(dir.path()).unwrap();
        let caller = |name: &str| {
            matches!(name, "CARGO_TARGET_DIR" | "CARGO_HOME" | "TMP" | "GOCACHE")
                .then(|| OsString::from("/shared"))
        };
        let job = vec![("PYTHONPYCACHEPREFIX".to_string(), "/cache/py".to_string())];
        let env = area.env(caller, &job);
        assert_eq!(
            names(&env),
            ["TMPDIR", "TMP", "CARGO_TARGET_DIR", "PYTHONPYCACHEPREFIX"]
        );
        let root = area.path().display().to_string();
        assert!(env.iter().all(|(_, v)| v.starts_with(&root)), "{env:?}");
    }

    #[test]
    fn two_areas_never_share_a_folder_and_drop_removes_them() {
        let dir = tempfile::tempdir().unwrap();
        let a = PrivateArea::create(dir.path()).unwrap();
        let b = PrivateArea::create(dir.path()).unwrap();
        assert_ne!(a.path(), b.path());
        let kept = a.path().to_path_buf();
        drop(a);
        assert!(!kept.exists());
    }
}
