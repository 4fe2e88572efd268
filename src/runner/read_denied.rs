//! The workspace's files that the job's `read(...)` deny rules cover, found
//! once at the start of the run so the sandbox can mask them for every child
//! (`exec cat .env` then reads nothing, as `read .env` is refused).
//!
//! Only what exists when the run starts is found: a file the agent creates
//! or renames later is judged by the file tools, not masked. `.git` is left
//! out (it is read-only for children, and its objects are not files a rule
//! names). This module finds paths; the sandbox mounts over them.

use std::path::{Path, PathBuf};

use crate::policy::PermissionPolicy;

/// The files and folders under `workspace` that `policy` denies reading,
/// absolute; a denied folder is returned whole, not walked.
pub fn read_denied_paths(policy: &PermissionPolicy, workspace: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(policy, workspace, "", &mut found);
    found
}

fn walk(policy: &PermissionPolicy, folder: &Path, relative: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if name == ".git" {
            continue;
        }
        let path = entry.path();
        let rel = match relative.is_empty() {
            true => name.to_string(),
            false => format!("{relative}/{name}"),
        };
        if policy.read_denied_by(&rel).is_some() {
            found.push(path);
        } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
            walk(policy, &path, &rel, found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{DefaultDecision, PermissionRules, ToolPattern};

    #[test]
    fn denied_files_and_folders_are_found_and_git_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for file in [
            ".env",
            "src/.env",
            "src/main.rs",
            "secrets/a/key",
            ".git/.env",
        ] {
            let path = ws.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let policy = PermissionPolicy::new(&PermissionRules {
            default: DefaultDecision::Allow,
            allow: Vec::new(),
            deny: ["read(**/.env)", "read(secrets)"]
                .iter()
                .map(|r| ToolPattern::parse(r).unwrap())
                .collect(),
        });
        let mut found = read_denied_paths(&policy, ws);
        found.sort();
        assert_eq!(
            found,
            [ws.join(".env"), ws.join("secrets"), ws.join("src/.env")]
        );
    }
}
