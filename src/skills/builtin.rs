//! The skills built into the binary: `general`, what `agentci run --goal`
//! uses when there is neither a job file nor `--skill` (a job file names
//! it as `skill: {builtin: general}`).
//!
//! A built-in skill is loaded like any other: its `SKILL.md` is written
//! into a fresh private temporary folder (made by `tempfile`, mode 0700, a
//! name nobody could have prepared) and read back by
//! [`super::load_skill_dir`], so the prompt, the read-only skill folder,
//! cassettes (which record skill folders as `${SKILL:<name>}`) and
//! checkpoints need no special case. The folder lives as long as the
//! loaded [`Skill`] does. This module does not decide when a run uses a
//! built-in skill; the job's loader does.

use std::sync::Arc;

use super::{Skill, SkillError, load_skill_dir};

/// Each built-in skill's name and `SKILL.md`.
const BUILTINS: &[(&str, &str)] = &[("general", include_str!("builtin/general.md"))];

/// The names of the built-in skills.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(name, _)| *name)
}

/// Is `name` a built-in skill?
pub fn exists(name: &str) -> bool {
    names().any(|known| known == name)
}

/// The `SKILL.md` text of built-in skill `name`.
pub fn skill_md(name: &str) -> Option<&'static str> {
    BUILTINS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, text)| *text)
}

/// Loads built-in skill `name` from a private temporary folder that is
/// removed when the last clone of the returned skill is dropped.
pub fn load(name: &str) -> Result<Skill, SkillError> {
    let fail = |problem: String| SkillError::Builtin {
        message: format!("cannot load the built-in skill `{name}`: {problem}"),
    };
    let text = skill_md(name).ok_or_else(|| {
        let hint = crate::job::suggest::did_you_mean(name, names());
        let known: Vec<&str> = names().collect();
        SkillError::Builtin {
            message: format!(
                "unknown built-in skill `{name}`{hint}; agentci has: {}",
                known.join(", ")
            ),
        }
    })?;
    let holder = tempfile::Builder::new()
        .prefix("agentci-skill-")
        .tempdir()
        .map_err(|e| fail(format!("cannot make a temporary folder for it: {e}")))?;
    let dir = holder.path().join(name);
    std::fs::create_dir(&dir)
        .and_then(|()| std::fs::write(dir.join("SKILL.md"), text))
        .map_err(|e| fail(format!("cannot write it to {}: {e}", dir.display())))?;
    let mut skill = load_skill_dir(&dir)?;
    skill.folder_holder = Some(Arc::new(holder));
    Ok(skill)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_loads_without_warnings_and_keeps_its_folder_while_held() {
        for name in names() {
            let skill = load(name).unwrap();
            assert_eq!(skill.name, name);
            assert!(skill.warnings.is_empty(), "{:?}", skill.warnings);
            assert!(
                skill.allowed_tools.is_none(),
                "a builtin restricts no tools"
            );
            let file = skill.dir.join("SKILL.md");
            assert!(file.is_file());
            let copy = skill.clone();
            drop(skill);
            assert!(file.is_file(), "a clone still holds the folder");
            drop(copy);
            assert!(!file.exists(), "the folder goes with the last clone");
        }
    }

    #[test]
    fn the_ad_hoc_skill_is_built_in() {
        assert!(exists(crate::job::AD_HOC_SKILL));
    }

    #[test]
    fn an_unknown_builtin_names_the_known_ones() {
        let message = load("genral").unwrap_err().to_string();
        assert!(message.contains("general"), "{message}");
    }
}
