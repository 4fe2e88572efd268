//! The placeholders skills write for their own folder, replaced by it.
//!
//! Skills name their sibling files by placeholders the tool they were
//! written for fills in: `{baseDir}` (OpenClaw and the skills written for
//! it), `${CLAUDE_SKILL_DIR}` (Claude Code), and `${CLAUDE_PLUGIN_ROOT}`
//! (Claude Code plugins, the folder holding the plugin's `skills/`). This
//! module only rewrites text; which files the model may then reach is the
//! workspace's business ([`crate::tools::Workspace`]).

use std::path::Path;

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
