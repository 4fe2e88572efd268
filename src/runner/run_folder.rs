//! The run folder: where a run's trace, JUnit and other files go, and the
//! run id that names it.
//!
//! Defaults to `.agentci/runs/<run-id>/` in the workspace; `.agentci/` is
//! added to the repository's `.git/info/exclude` so it never shows up in
//! the agent's diff. Its `outputs/` folder keeps tool outputs too long for
//! the model, whole ([`crate::agent::kept_output`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::job::OutputsSpec;

/// The run folder's folder of kept tool outputs.
pub const KEPT_OUTPUTS_DIR: &str = "outputs";

/// A run id that sorts by start time and is unique across parallel runs.
pub fn new_run_id() -> String {
    let time = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{time}-{}", &random[..8])
}

pub struct RunFolder {
    pub dir: PathBuf,
    pub trace: PathBuf,
    pub junit: PathBuf,
    /// `outputs.result`, else `<dir>/result.json` (written only with a result schema).
    pub result: PathBuf,
    /// `<dir>/outputs`: tool outputs cut for the model, kept whole.
    pub kept_outputs: PathBuf,
}

impl RunFolder {
    /// `out_dir` (`--out`, already absolute) beats `outputs.dir`;
    /// `outputs.trace` and `outputs.junit` beat the folder's defaults (the
    /// CLI's `--trace` and `--junit` are applied by the caller).
    pub fn resolve(
        run_id: &str,
        workspace: &Path,
        out_dir: Option<&Path>,
        outputs: &OutputsSpec,
    ) -> RunFolder {
        let dir = match (out_dir, &outputs.dir) {
            (Some(dir), _) => dir.to_path_buf(),
            (None, Some(dir)) => dir.clone(),
            (None, None) => workspace.join(".agentci").join("runs").join(run_id),
        };
        RunFolder {
            trace: outputs
                .trace
                .clone()
                .unwrap_or_else(|| dir.join("trace.jsonl")),
            junit: outputs
                .junit
                .clone()
                .unwrap_or_else(|| dir.join("junit.xml")),
            result: outputs
                .result
                .clone()
                .unwrap_or_else(|| dir.join("result.json")),
            kept_outputs: dir.join(KEPT_OUTPUTS_DIR),
            dir,
        }
    }

    /// The trace and JUnit paths: the command line's (`--trace`, `--junit`,
    /// already absolute) beat the folder's, which come from the job or the
    /// folder itself.
    pub fn trace_and_junit(
        &self,
        trace: Option<&Path>,
        junit: Option<&Path>,
    ) -> (PathBuf, PathBuf) {
        (
            trace.map_or_else(|| self.trace.clone(), Path::to_path_buf),
            junit.map_or_else(|| self.junit.clone(), Path::to_path_buf),
        )
    }

    /// Keep `.agentci/` out of the workspace's git status (the folder
    /// itself is made by [`super::run_files::RunPaths::create_output_folders`]).
    pub fn exclude_from_git(workspace: &Path) -> Result<(), super::StartError> {
        exclude_from_git(workspace).map_err(|source| super::StartError::GitExclude {
            exclude: workspace.join(".git/info/exclude"),
            source,
        })
    }
}

/// Add `.agentci/` to `.git/info/exclude` when the workspace is a repository root.
fn exclude_from_git(workspace: &Path) -> std::io::Result<()> {
    let git = workspace.join(".git");
    if !git.is_dir() {
        return Ok(());
    }
    let info = git.join("info");
    std::fs::create_dir_all(&info)?;
    let exclude = info.join("exclude");
    let current = std::fs::read_to_string(&exclude).unwrap_or_default();
    if current
        .lines()
        .any(|l| l.trim() == ".agentci/" || l.trim() == "/.agentci/")
    {
        return Ok(());
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&exclude)?;
    if !current.is_empty() && !current.ends_with('\n') {
        writeln!(file)?;
    }
    writeln!(file, "/.agentci/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclude_is_added_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        exclude_from_git(dir.path()).unwrap();
        exclude_from_git(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(".git/info/exclude")).unwrap();
        assert_eq!(text.matches(".agentci/").count(), 1);
    }

    #[test]
    fn flags_beat_job_outputs() {
        let outputs = OutputsSpec {
            dir: Some(PathBuf::from("/ws/out")),
            trace: None,
            junit: Some(PathBuf::from("/ws/j.xml")),
            ..OutputsSpec::default()
        };
        let f = RunFolder::resolve("r", Path::new("/ws"), None, &outputs);
        assert_eq!(f.trace, PathBuf::from("/ws/out/trace.jsonl"));
        assert_eq!(f.junit, PathBuf::from("/ws/j.xml"));
        let f = RunFolder::resolve(
            "r",
            Path::new("/ws"),
            Some(Path::new("/cwd/o")),
            &OutputsSpec::default(),
        );
        assert_eq!(f.dir, PathBuf::from("/cwd/o"));
        let f = RunFolder::resolve("r", Path::new("/ws"), None, &OutputsSpec::default());
        assert_eq!(f.dir, PathBuf::from("/ws/.agentci/runs/r"));
        assert_eq!(f.kept_outputs, PathBuf::from("/ws/.agentci/runs/r/outputs"));
    }
}
