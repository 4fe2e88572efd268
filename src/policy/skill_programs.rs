//! The programs a run's skills ship: files inside the folder of a skill
//! agentci loaded, which an `exec` allow rule may name by absolute path
//! (`exec(/…/skills/pdf/scripts/fill.py *)`, or through a folder
//! placeholder such as `${CLAUDE_SKILL_DIR}` that the skill or the job
//! writes). Any other program given by a path stays one no allow rule can
//! vouch for ([`super::shell`]).
//!
//! Why a skill's script may be trusted by path when a script in the
//! workspace may not: the model cannot change it. The agent's writing
//! tools refuse every path in a skill folder
//! ([`crate::tools::Workspace::resolve`]), and the sandbox keeps the skill
//! folders read-only for every command a run starts: those inside the
//! workspace by a read-only bind mount ([`crate::skills::in_workspace`]),
//! those outside it because Landlock lets commands write only the
//! workspace, the run's temporary folder and the job's `sandbox.writable`
//! roots (a job that opens a skill's folder there, or runs with
//! `sandbox.profile: off`, gives that protection up, as it does every
//! other). A folder that is the workspace or holds it is never trusted:
//! the model writes there. The check resolves symlinks, so a link in a skill
//! folder that leads out of it names a program outside. Each folder is
//! pinned by its device and inode when the run starts: a command that
//! renames a parent of a skill folder inside the workspace and makes a new
//! folder at the same path, with a script of its own, names a folder that
//! is not the skill's, and is refused.
//!
//! This module only answers "is this program a loaded skill's file"; the
//! rules decide whether it may run.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The canonical folders of the run's loaded skills.
#[derive(Clone, Debug, Default)]
pub struct SkillPrograms {
    /// Each folder with the (device, inode) it had when the run started.
    folders: Vec<(PathBuf, (u64, u64))>,
}

/// The device and inode of `path`, following symlinks.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl SkillPrograms {
    /// The skill folders `dirs` of a run in `workspace`, each resolved to
    /// where it really is; a folder that cannot be resolved, or that is the
    /// workspace or holds it, is left out.
    pub fn new<'d>(workspace: &Path, dirs: impl IntoIterator<Item = &'d Path>) -> Self {
        let workspace = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf());
        let mut folders = Vec::new();
        for dir in dirs {
            let Ok(folder) = dir.canonicalize() else {
                continue;
            };
            let Some(id) = identity(&folder) else {
                continue;
            };
            if !workspace.starts_with(&folder) && !folders.iter().any(|(f, _)| *f == folder) {
                folders.push((folder, id));
            }
        }
        SkillPrograms { folders }
    }

    /// Whether `program`, as the command line gives it, is an absolute path
    /// to a file inside one of the skill folders once every symlink on the
    /// way is followed, and that folder is still the one the run started
    /// with.
    pub fn holds(&self, program: &str) -> bool {
        let path = Path::new(program);
        if !path.is_absolute() || self.folders.is_empty() {
            return false;
        }
        let Ok(real) = path.canonicalize() else {
            return false;
        };
        real.is_file()
            && self.folders.iter().any(|(folder, id)| {
                real.starts_with(folder) && real != *folder && identity(folder) == Some(*id)
            })
    }

    /// Whether the run has any skill folder at all.
    pub fn is_empty(&self) -> bool {
        self.folders.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_that_really_are_in_a_skill_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let skill = root.join("skills/pdf");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::fs::write(skill.join("scripts/fill.py"), "").unwrap();
        std::fs::write(root.join("outside.sh"), "").unwrap();
        std::os::unix::fs::symlink(root.join("outside.sh"), skill.join("scripts/out.sh")).unwrap();
        let programs = SkillPrograms::new(&root.join("ws"), [skill.as_path()]);
        let at = |rel: &str| skill.join(rel).display().to_string();
        assert!(programs.holds(&at("scripts/fill.py")));
        assert!(programs.holds(&at("scripts/../scripts/fill.py")));
        for refused in [
            at("scripts/out.sh"),
            at("scripts/../../../outside.sh"),
            at("scripts"),
            at("scripts/missing.py"),
            "scripts/fill.py".to_string(),
            root.join("outside.sh").display().to_string(),
        ] {
            assert!(!programs.holds(&refused), "{refused}");
        }
        // A "skill" at the workspace's root, or above it, vouches for nothing.
        let ws = root.join("ws");
        std::fs::write(ws.join("x.sh"), "").unwrap();
        let above = SkillPrograms::new(&ws, [root.as_path(), ws.as_path()]);
        assert!(above.is_empty());
        assert!(!above.holds(&ws.join("x.sh").display().to_string()));
    }

    // Attack: a command renames a parent of a skill folder inside the
    // workspace and makes a new folder at the same path holding a script of
    // its own; a rule naming the skill's script must not vouch for it.
    #[test]
    fn a_folder_made_again_at_the_skills_path_is_not_the_skill() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap().join("ws");
        let skill = ws.join(".agents/skills/sync");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::write(skill.join("scripts/sync.sh"), "echo sync").unwrap();
        let outside = tmp.path().canonicalize().unwrap().join("elsewhere");
        std::fs::create_dir_all(&outside).unwrap();
        let programs = SkillPrograms::new(&outside, [skill.as_path()]);
        let script = skill.join("scripts/sync.sh").display().to_string();
        assert!(programs.holds(&script));
        std::fs::rename(ws.join(".agents"), ws.join(".agents-moved")).unwrap();
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::write(skill.join("scripts/sync.sh"), "echo forged").unwrap();
        assert!(!programs.holds(&script));
        // Put back, it is the skill again.
        std::fs::remove_dir_all(ws.join(".agents")).unwrap();
        std::fs::rename(ws.join(".agents-moved"), ws.join(".agents")).unwrap();
        assert!(programs.holds(&script));
    }
}
