//! What `agentci init` needs to know about the repository it stands in:
//! its root (from git), its language and test command (from the files at
//! the root), and the tracked files that make the eval fixture. It reads;
//! it writes nothing (that is [`super::init`]'s job) and renders no file
//! (that is [`super::init_files`]'s).

use std::path::{Path, PathBuf};

/// The most a fixture copied from the repository may hold: a suite copies
/// its fixture for every attempt, so a big one makes every case slow.
const MAX_FIXTURE_FILES: usize = 2000;
const MAX_FIXTURE_BYTES: u64 = 20 * 1024 * 1024;

/// The project's language, as its files at the root tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// `Cargo.toml`.
    Rust,
    /// `package.json`.
    Node,
    /// `pyproject.toml`, `setup.py`, `setup.cfg`, `pytest.ini` or `requirements.txt`.
    Python,
    /// `go.mod`.
    Go,
}

impl Language {
    /// The language of the project at `root`, by the first marker file found.
    pub fn detect(root: &Path) -> Option<Language> {
        let has = |name: &str| root.join(name).is_file();
        if has("Cargo.toml") {
            Some(Language::Rust)
        } else if has("package.json") {
            Some(Language::Node)
        } else if [
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "pytest.ini",
            "requirements.txt",
        ]
        .iter()
        .any(|name| has(name))
        {
            Some(Language::Python)
        } else if has("go.mod") {
            Some(Language::Go)
        } else {
            None
        }
    }

    /// The command that runs the project's tests.
    pub fn test_command(self) -> &'static str {
        match self {
            Language::Rust => "cargo test",
            Language::Node => "npm test",
            Language::Python => "python -m pytest",
            Language::Go => "go test ./...",
        }
    }

    /// The start of the test command an `exec` allow rule names, with `*`
    /// for whatever arguments the agent adds (`go test ./pkg/...`).
    pub fn test_rule(self) -> &'static str {
        match self {
            Language::Go => "go test",
            other => other.test_command(),
        }
    }

    /// How people call it.
    pub fn label(self) -> &'static str {
        match self {
            Language::Rust => "Rust (cargo)",
            Language::Node => "JavaScript (npm)",
            Language::Python => "Python (pytest)",
            Language::Go => "Go",
        }
    }
}

/// The repository `init` writes into.
#[derive(Debug)]
pub struct Project {
    /// The root of the working tree.
    pub root: PathBuf,
    /// The folder's name, for job and fixture descriptions.
    pub name: String,
    pub language: Option<Language>,
    /// Tracked regular files, relative to the root, for the fixture.
    pub tracked: Vec<PathBuf>,
}

/// Why `init` cannot work here.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error(
        "{} is not inside a git repository; run `git init` (and commit the project) first, \
         then `agentci init`",
        .dir.display()
    )]
    NotARepository { dir: PathBuf },
    #[error("{} is a bare repository; run `agentci init` in a working tree", .dir.display())]
    Bare { dir: PathBuf },
    #[error("cannot read the repository's index: {0}")]
    Index(String),
    #[error(
        "the repository tracks {files} files ({mib} MiB) for the eval fixture, more than {max_files} \
         files or {max_mib} MiB; commit a smaller project, or copy a small part of it into \
         agentci/eval/fixtures/ by hand"
    )]
    TooBig {
        files: usize,
        mib: u64,
        max_files: usize,
        max_mib: u64,
    },
}

impl Project {
    /// The repository holding `dir`, with the files it tracks (outside
    /// the folders `init` writes into), checked to fit in a fixture.
    pub fn open(dir: &Path) -> Result<Project, ProjectError> {
        let repo = git2::Repository::discover(dir).map_err(|_| ProjectError::NotARepository {
            dir: dir.to_path_buf(),
        })?;
        let root = repo
            .workdir()
            .ok_or_else(|| ProjectError::Bare {
                dir: dir.to_path_buf(),
            })?
            .to_path_buf();
        let index = repo
            .index()
            .map_err(|e| ProjectError::Index(e.message().to_string()))?;
        let mut tracked = Vec::new();
        let mut bytes = 0;
        for entry in index.iter() {
            let relative = PathBuf::from(String::from_utf8_lossy(&entry.path).into_owned());
            if !fixture_file(&relative) {
                continue;
            }
            // Only regular files as they are now: a symlink or a deleted
            // file is not copied (nothing outside the tree is read).
            let Ok(meta) = std::fs::symlink_metadata(root.join(&relative)) else {
                continue;
            };
            if !meta.file_type().is_file() {
                continue;
            }
            bytes += meta.len();
            tracked.push(relative);
        }
        if tracked.len() > MAX_FIXTURE_FILES || bytes > MAX_FIXTURE_BYTES {
            return Err(ProjectError::TooBig {
                files: tracked.len(),
                mib: bytes.div_ceil(1024 * 1024),
                max_files: MAX_FIXTURE_FILES,
                max_mib: MAX_FIXTURE_BYTES / (1024 * 1024),
            });
        }
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "project".to_string());
        Ok(Project {
            language: Language::detect(&root),
            root,
            name,
            tracked,
        })
    }
}

/// Is this tracked file part of the project the fixture copies? Not
/// agentci's own files (what `init` writes, the run folders) nor the
/// CI workflows.
fn fixture_file(relative: &Path) -> bool {
    let first = relative.components().next();
    !matches!(
        first.and_then(|c| c.as_os_str().to_str()),
        Some("agentci" | ".agentci" | ".github")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_marker_decides_the_language() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Language::detect(dir.path()), None);
        std::fs::write(dir.path().join("go.mod"), "module x\n").unwrap();
        assert_eq!(Language::detect(dir.path()), Some(Language::Go));
        std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
        assert_eq!(Language::detect(dir.path()), Some(Language::Python));
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        assert_eq!(Language::detect(dir.path()), Some(Language::Rust));
    }

    #[test]
    fn agentci_and_workflow_files_stay_out_of_the_fixture() {
        assert!(fixture_file(Path::new("src/lib.rs")));
        assert!(fixture_file(Path::new("agentci.md")));
        assert!(!fixture_file(Path::new("agentci/fix-tests.yaml")));
        assert!(!fixture_file(Path::new(".github/workflows/ci.yml")));
    }
}
