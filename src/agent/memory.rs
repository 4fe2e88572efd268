//! The job's memory file (`memory:`): the project's standing notes for
//! agents, such as `AGENTS.md`, read from the workspace once when the run
//! starts and given to the model in the system prompt.
//!
//! This module finds and reads the file (inside the workspace only, never
//! through a symlink that leads out of it), caps its size and says whether
//! it is trusted. How it reads in the prompt is [`super::protocol`]'s job;
//! whether the path exists was checked when the job loaded.

use crate::job::MemorySpec;
use crate::tools::Workspace;

/// The file `memory: auto` uses, at the workspace root.
pub const AUTO_FILE: &str = "AGENTS.md";

/// The most memory text given to the model. The file is in every request,
/// so a large one costs on every turn; Codex caps `AGENTS.md` at the same
/// 32 KiB (`project_doc_max_bytes`).
pub const MAX_MEMORY_BYTES: usize = 32 * 1024;

/// The memory file as the model gets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Memory {
    /// The file, relative to the workspace (`AGENTS.md`).
    pub source: String,
    /// The text, cut to [`MAX_MEMORY_BYTES`].
    pub text: String,
    /// Bytes cut from the end.
    pub cut_bytes: usize,
    /// The workspace is not trusted (a pull request could have written the
    /// file): the text is data for the model, not instructions.
    pub untrusted: bool,
}

/// The memory file `spec` names, read from `workspace`; `Ok(None)` when
/// there is none (no `memory:`, or `auto` without an `AGENTS.md`). The
/// strings beside it are warnings for the trace; `Err` is a problem that
/// stops the run.
pub fn load_memory(
    spec: Option<&MemorySpec>,
    workspace: &Workspace,
    untrusted: bool,
) -> Result<(Option<Memory>, Vec<String>), String> {
    let (relative, required) = match spec {
        None => return Ok((None, Vec::new())),
        Some(MemorySpec::Auto) => (AUTO_FILE, false),
        Some(MemorySpec::File(path)) => (path.as_str(), true),
    };
    let key = match spec {
        Some(MemorySpec::Auto) => "memory: auto".to_string(),
        _ => format!("memory `{relative}`"),
    };
    let path = match workspace.resolve_for_reading(relative) {
        Ok(path) => path,
        Err(e) => return Err(format!("{key}: the file cannot be used: {e}")),
    };
    // `resolve` refused a link that leads out; one inside names a file there.
    let is_file = std::fs::metadata(&path).is_ok_and(|m| m.is_file());
    if !is_file {
        if !required && !path.exists() {
            return Ok((None, Vec::new()));
        }
        return Err(format!(
            "{key}: {} is not a regular file in the workspace",
            path.display()
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("{key}: cannot read the file: {e}"))?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    let mut warnings = Vec::new();
    if text.trim().is_empty() {
        warnings.push(format!(
            "{key}: {relative} is empty; the model gets no memory"
        ));
        return Ok((None, warnings));
    }
    let mut cut_bytes = 0;
    if text.len() > MAX_MEMORY_BYTES {
        let mut end = MAX_MEMORY_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        cut_bytes = text.len() - end;
        text.truncate(end);
        warnings.push(format!(
            "{key}: {relative} holds {} bytes; only the first {MAX_MEMORY_BYTES} are given to \
             the model (it is in every request); move what is rarely needed into files the \
             model can read",
            bytes.len()
        ));
    }
    Ok((
        Some(Memory {
            source: relative.to_string(),
            text,
            cut_bytes,
            untrusted,
        }),
        warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        (tmp, ws)
    }

    #[test]
    fn auto_without_agents_md_is_no_memory() {
        let (_tmp, ws) = workspace();
        let (memory, warnings) = load_memory(Some(&MemorySpec::Auto), &ws, false).unwrap();
        assert_eq!(memory, None);
        assert!(warnings.is_empty());
    }

    #[test]
    fn a_large_file_is_cut_with_a_warning() {
        let (tmp, ws) = workspace();
        std::fs::write(tmp.path().join("AGENTS.md"), "é".repeat(MAX_MEMORY_BYTES)).unwrap();
        let (memory, warnings) = load_memory(Some(&MemorySpec::Auto), &ws, true).unwrap();
        let memory = memory.unwrap();
        assert_eq!(memory.text.len(), MAX_MEMORY_BYTES);
        assert_eq!(memory.cut_bytes, MAX_MEMORY_BYTES);
        assert!(memory.untrusted);
        assert!(warnings[0].contains("only the first 32768"), "{warnings:?}");
    }

    #[test]
    fn a_symlink_out_of_the_workspace_is_refused() {
        let (tmp, ws) = workspace();
        std::os::unix::fs::symlink("/etc/hostname", tmp.path().join("AGENTS.md")).unwrap();
        let error = load_memory(Some(&MemorySpec::Auto), &ws, false).unwrap_err();
        assert!(error.contains("cannot be used"), "{error}");
        let spec = MemorySpec::File("AGENTS.md".into());
        assert!(load_memory(Some(&spec), &ws, false).is_err());
    }
}
