//! The placeholders skills write for their own folder, replaced by it.
//!
//! Skills name their sibling files by placeholders the tool they were
//! written for fills in: `{baseDir}` (OpenClaw and the skills written for
//! it), `${CLAUDE_SKILL_DIR}` (Claude Code), and `${CLAUDE_PLUGIN_ROOT}`
//! (Claude Code plugins, the folder holding the plugin's `skills/`). Jobs
//! write the skill-folder ones, and `${SKILL:<name>}`, in permission rules
//! to name a skill's script. This module only rewrites text; which files
//! the model may then reach is the workspace's business
//! ([`crate::tools::Workspace`]), and which programs may run the policy's
//! ([`crate::policy::SkillPrograms`]).

use std::path::Path;

use super::Skill;
use crate::policy::{PermissionRules, ToolPattern};

/// Placeholders that stand for the skill's own folder.
const SKILL_FOLDER: &[&str] = &["${CLAUDE_SKILL_DIR}", "$CLAUDE_SKILL_DIR", "{baseDir}"];

/// Placeholders that stand for the plugin holding the skill.
const PLUGIN_ROOT: &[&str] = &["${CLAUDE_PLUGIN_ROOT}", "$CLAUDE_PLUGIN_ROOT"];

/// `text` with every folder placeholder replaced by `dir` (absolute).
///
/// `${CLAUDE_PLUGIN_ROOT}` is the plugin's root, and skills write
/// `${CLAUDE_PLUGIN_ROOT}/skills/<name>/…`; so for a skill in a folder
/// called `skills` it becomes that folder's parent, and otherwise the
/// skill's folder itself (a skill copied out of its plugin).
pub fn expand_folder_placeholders(text: &str, dir: &Path) -> String {
    if !text.contains('{') && !text.contains('$') {
        return text.to_string();
    }
    let folder = dir.display().to_string();
    let mut out = text.to_string();
    for placeholder in SKILL_FOLDER {
        out = out.replace(placeholder, &folder);
    }
    let in_plugin = dir
        .parent()
        .filter(|parent| parent.file_name().is_some_and(|n| n == "skills"))
        .and_then(Path::parent);
    let root = in_plugin.map_or_else(|| folder.clone(), |root| root.display().to_string());
    for placeholder in PLUGIN_ROOT {
        out = out.replace(placeholder, &root);
    }
    out
}

/// `rules` (the job's permission rules) with the placeholders for a skill's
/// folder replaced, so a rule can name a skill's script wherever the skill
/// was found: `${CLAUDE_SKILL_DIR}` (and its other spellings above) by the
/// folder of `skill`, the run's skill, and `${SKILL:<name>}` (the form
/// cassettes write) by the folder of the loaded skill `name`. Only the
/// folders of loaded skills are ever put in; a `${SKILL:…}` naming no
/// loaded skill stays as written and matches no call.
pub fn expand_in_rules(
    rules: PermissionRules,
    skill: &Skill,
    further: &[Skill],
) -> PermissionRules {
    let expand = |patterns: Vec<ToolPattern>| -> Vec<ToolPattern> {
        patterns
            .into_iter()
            .map(|pattern| {
                let text = expand_in_rule(pattern.as_str(), skill, further);
                match text == pattern.as_str() {
                    true => pattern,
                    false => ToolPattern::parse(&text).unwrap_or(pattern),
                }
            })
            .collect()
    };
    PermissionRules {
        default: rules.default,
        allow: expand(rules.allow),
        deny: expand(rules.deny),
    }
}

fn expand_in_rule(rule: &str, skill: &Skill, further: &[Skill]) -> String {
    if !rule.contains('{') && !rule.contains('$') {
        return rule.to_string();
    }
    let mut out = rule.to_string();
    for loaded in std::iter::once(skill).chain(further) {
        let named = format!("${{SKILL:{}}}", loaded.name);
        out = out.replace(&named, &loaded.dir.display().to_string());
    }
    let folder = skill.dir.display().to_string();
    for placeholder in SKILL_FOLDER {
        out = out.replace(placeholder, &folder);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_each_form() {
        let dir = Path::new("/skills/pdf");
        assert_eq!(
            expand_folder_placeholders("python {baseDir}/scripts/a.py", dir),
            "python /skills/pdf/scripts/a.py"
        );
        assert_eq!(
            expand_folder_placeholders(
                "read ${CLAUDE_SKILL_DIR}/ref.md and $CLAUDE_SKILL_DIR/x",
                dir
            ),
            "read /skills/pdf/ref.md and /skills/pdf/x"
        );
        assert_eq!(
            expand_folder_placeholders("${CLAUDE_PLUGIN_ROOT}/ref.md", Path::new("/p/skills/pdf")),
            "/p/ref.md"
        );
        assert_eq!(
            expand_folder_placeholders("${CLAUDE_PLUGIN_ROOT}/ref.md", Path::new("/x/pdf")),
            "/x/pdf/ref.md"
        );
        assert_eq!(
            expand_folder_placeholders("no {placeholder}", dir),
            "no {placeholder}"
        );
    }
}
