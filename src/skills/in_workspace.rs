//! The skill folders that lie inside a run's workspace, found once at the
//! start of the run so the sandbox can make them read-only: `exec` must not
//! rewrite the instructions and scripts of the skill being run, nor plant
//! skills that a later step (or agent) would load.
//!
//! It only finds folders; loading skills is [`super::discover`]'s.

use std::path::{Path, PathBuf};

/// Skill folders inside `workspace`, as paths under `workspace` as given:
/// the workspace's `.agents/skills/` and `.claude/skills/` whole (they hold
/// nothing but skills); each skill folder (one holding `SKILL.md`) in its
/// `skills/` and in each of `skills_path` that lies inside it; and `loaded`,
/// the run's own skills, where they lie inside it (a symbolic link counts
/// where it points). The workspace itself is never one.
pub fn skill_folders_in(
    workspace: &Path,
    skills_path: &[PathBuf],
    loaded: &[&Path],
) -> Vec<PathBuf> {
    let Ok(root) = std::fs::canonicalize(workspace) else {
        return Vec::new();
    };
    let inside = |path: &Path| -> Option<PathBuf> {
        let full = std::fs::canonicalize(path).ok()?;
        let rel = full.strip_prefix(&root).ok()?;
        (!rel.as_os_str().is_empty()).then(|| workspace.join(rel))
    };
    let whole = [
        workspace.join(".agents").join("skills"),
        workspace.join(".claude").join("skills"),
    ];
    let searched = std::iter::once(workspace.join("skills")).chain(skills_path.iter().cloned());
    let in_roots = searched
        .filter_map(|root| std::fs::read_dir(root).ok())
        .flat_map(|entries| entries.flatten().map(|entry| entry.path()))
        .filter(|folder| folder.join("SKILL.md").is_file());
    let mut folders: Vec<PathBuf> = Vec::new();
    let candidates = whole
        .into_iter()
        .chain(in_roots)
        .chain(loaded.iter().map(|dir| dir.to_path_buf()));
    for folder in candidates.filter_map(|c| inside(&c)) {
        if !folders.iter().any(|f| folder.starts_with(f)) {
            folders.retain(|f| !f.starts_with(&folder));
            folders.push(folder);
        }
    }
    folders
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), "---\nname: x\n---\n").unwrap();
    }

    #[test]
    fn skill_roots_and_skill_folders_inside_the_workspace() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        skill(&ws.join(".agents/skills/a"));
        skill(&ws.join(".claude/skills/b"));
        skill(&ws.join("skills/c"));
        std::fs::create_dir_all(ws.join("skills/not-a-skill")).unwrap();
        skill(&ws.join("tools/skills/d"));
        skill(&tmp.path().join("outside/e"));
        std::os::unix::fs::symlink(ws.join("skills/c"), ws.join("linked")).unwrap();

        let mut found = skill_folders_in(
            &ws,
            &[ws.join("tools/skills"), tmp.path().join("outside")],
            &[
                &ws.join(".agents/skills/a"),
                &ws.join("linked"),
                &tmp.path().join("outside/e"),
            ],
        );
        found.sort();
        let expected: Vec<PathBuf> = [
            ".agents/skills",
            ".claude/skills",
            "skills/c",
            "tools/skills/d",
        ]
        .iter()
        .map(|p| ws.join(p))
        .collect();
        assert_eq!(found, expected);
    }
}
