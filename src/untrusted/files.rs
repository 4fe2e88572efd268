//! Reading the files a job names in `untrusted_inputs`: paths or globs
//! relative to the workspace (`*` stays within a folder, `**` crosses
//! folders), matched against the workspace when the run starts.
//!
//! A pattern that matches nothing is a warning, not an error: the file may
//! be written only for some runs (an issue text saved by an earlier step).
//! A match that leads outside the workspace (through a symlink) or into
//! agentci's run folders is left out with a warning. The patterns were
//! checked when the job was loaded; this module only reads.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;

use super::UntrustedText;
use crate::tools::Workspace;
use crate::tools::workspace::RUN_FOLDERS;

/// The most files all patterns together may bring in.
pub const MAX_FILES: usize = 100;

/// The files matching `patterns`, sorted by path, each read once; and the
/// warnings for the trace.
pub fn read_untrusted_files(
    workspace: &Workspace,
    patterns: &[String],
) -> (Vec<UntrustedText>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    for pattern in patterns {
        let matched = matching_files(workspace.root(), pattern);
        if matched.is_empty() {
            warnings.push(format!(
                "untrusted_inputs: `{pattern}` matches no file in the workspace"
            ));
        }
        paths.extend(matched);
    }
    paths.sort();
    paths.dedup();
    if paths.len() > MAX_FILES {
        warnings.push(format!(
            "untrusted_inputs match {} files; only the first {MAX_FILES} (by path) are given \
             to the model",
            paths.len()
        ));
        paths.truncate(MAX_FILES);
    }
    let mut texts = Vec::new();
    for relative in paths {
        match read_inside(workspace, &relative) {
            Ok(text) => texts.push(UntrustedText::new(format!("file {relative}"), &text)),
            Err(why) => warnings.push(format!("untrusted_inputs: `{relative}` {why}")),
        }
    }
    (texts, warnings)
}

/// Workspace-relative `/` paths of the regular files `pattern` matches.
fn matching_files(root: &Path, pattern: &str) -> Vec<String> {
    let pattern = pattern.trim_start_matches("./");
    let Ok(glob) = GlobBuilder::new(pattern).literal_separator(true).build() else {
        return Vec::new();
    };
    let matcher = glob.compile_matcher();
    let mut found = Vec::new();
    // No .gitignore filter: an untrusted input is often a file written for
    // this run and ignored by git. Symlinks are not followed while walking.
    let walk = walkdir(root);
    for path in walk {
        let Ok(relative) = path.strip_prefix(root) else {
            continue;
        };
        let relative = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if matcher.is_match(&relative) {
            found.push(relative);
        }
    }
    found
}

/// Every file under `root` (symlinks included, not followed), skipping
/// `.git` and agentci's run folders.
fn walkdir(root: &Path) -> Vec<PathBuf> {
    let skipped = [root.join(".git"), root.join(RUN_FOLDERS)];
    ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(move |entry| !skipped.iter().any(|s| s == entry.path()))
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|kind| !kind.is_dir()))
        .map(ignore::DirEntry::into_path)
        .collect()
}

/// The text of `relative`, refused when it leads outside the workspace
/// or is not a regular file.
fn read_inside(workspace: &Workspace, relative: &str) -> Result<String, String> {
    let path = workspace
        .resolve(relative)
        .map_err(|e| format!("is left out: {e}"))?;
    if !path.is_file() {
        return Err("is left out: it is not a regular file".to_string());
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot be read: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_inside_the_workspace_only() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("notes/deep")).unwrap();
        std::fs::create_dir_all(root.join(".agentci/runs")).unwrap();
        std::fs::write(root.join("notes/a.md"), "a").unwrap();
        std::fs::write(root.join("notes/deep/b.md"), "b").unwrap();
        std::fs::write(root.join(".agentci/runs/c.md"), "c").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("notes/link.md")).unwrap();
        let ws = Workspace::new(root).unwrap();

        let (texts, warnings) = read_untrusted_files(&ws, &["notes/*.md".into()]);
        let sources: Vec<&str> = texts.iter().map(|t| t.source.as_str()).collect();
        assert_eq!(sources, ["file notes/a.md"]);
        assert!(
            warnings[0].contains("notes/link.md` is left out"),
            "{warnings:?}"
        );

        let (texts, _) = read_untrusted_files(&ws, &["**/*.md".into(), "notes/a.md".into()]);
        assert_eq!(texts.len(), 2, "{texts:?}");
        let (texts, warnings) = read_untrusted_files(&ws, &["none/*.md".into()]);
        assert!(texts.is_empty());
        assert!(warnings[0].contains("matches no file"), "{warnings:?}");
    }
}
