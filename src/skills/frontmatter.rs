//! `SKILL.md`: YAML frontmatter between `---` lines, then the Markdown
//! instructions. This module parses and validates one file into a
//! [`Skill`]; finding the file is [`super::discover`]'s job.
//!
//! Keys follow the Agent Skills format (`name`, `description`, `license`,
//! `compatibility`, `metadata`, `allowed-tools`) plus agentci's `model` and
//! `max-turns`. Keys of other tools are warnings, not errors, since the
//! format lets every tool add its own. Positions are lines of SKILL.md,
//! not of the frontmatter alone.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::Skill;
use super::tool_names::{split_allowed_tools, to_canonical};
use crate::spec::diagnostic::{Diagnostic, Reporter};
use crate::spec::raw::Scalar;

const MAX_NAME_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 1024;
const MAX_COMPATIBILITY_CHARS: usize = 500;
const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
    "model",
    "max-turns",
];

/// Parses `text`, the content of `file` (a SKILL.md in folder `dir`).
/// On success returns the skill and its warnings (also copied, as text,
/// into [`Skill::warnings`]); on failure all problems found.
pub fn parse_skill(
    file: &Path,
    text: &str,
    dir: &Path,
) -> Result<(Skill, Vec<Diagnostic>), Vec<Diagnostic>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (yaml, body) = split(file, text)?;
    let mut r = Reporter::new(file, yaml, 1);
    let raw = if yaml.trim().is_empty() {
        RawFrontmatter::default()
    } else {
        let mut options = serde_saphyr::Options::default();
        options.with_snippet = false;
        match serde_saphyr::from_str_with_options::<RawFrontmatter>(yaml, options) {
            Ok(raw) => raw,
            Err(e) => {
                r.yaml_error(&e);
                return Err(r.diagnostics);
            }
        }
    };
    let skill = build(&mut r, raw, body, dir);
    if r.has_errors() {
        return Err(r.diagnostics);
    }
    let mut skill = skill.ok_or_else(|| r.diagnostics.clone())?;
    skill.warnings = r.diagnostics.iter().map(ToString::to_string).collect();
    Ok((skill, r.diagnostics))
}

/// Splits SKILL.md into frontmatter YAML and body.
fn split<'t>(file: &Path, text: &'t str) -> Result<(&'t str, &'t str), Vec<Diagnostic>> {
    let error = |line, message: &str| vec![Diagnostic::error(file, line, 1, message)];
    let Some(first_end) = text.find('\n') else {
        return Err(error(
            1,
            "SKILL.md must start with a `---` line opening the YAML frontmatter",
        ));
    };
    if text[..first_end].trim_end() != "---" {
        return Err(error(
            1,
            "SKILL.md must start with a `---` line opening the YAML frontmatter",
        ));
    }
    let yaml_start = first_end + 1;
    let mut offset = yaml_start;
    for line in text[yaml_start..].split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&text[yaml_start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(error(
        1,
        "the frontmatter opened by `---` on line 1 is never closed; add a `---` line after it",
    ))
}

/// Checks the frontmatter's values and builds the skill (with `warnings` empty).
fn build(r: &mut Reporter<'_>, raw: RawFrontmatter, body: &str, dir: &Path) -> Option<Skill> {
    for key in &raw.unknown {
        let pos = r.pos(&key.referenced);
        r.warning(
            pos,
            format!(
                "unknown key `{}` in SKILL.md frontmatter (ignored); agentci reads: {}",
                key.value,
                KNOWN_KEYS.join(", ")
            ),
        );
    }
    let name = check_name(r, raw.name.as_ref(), dir);
    let description = check_description(r, raw.description.as_ref());
    if let Some(c) = &raw.compatibility
        && c.value.chars().count() > MAX_COMPATIBILITY_CHARS
    {
        let pos = r.pos(&c.referenced);
        r.error(
            pos,
            format!("`compatibility` is longer than {MAX_COMPATIBILITY_CHARS} characters"),
        );
    }
    let allowed_tools = raw.allowed_tools.as_ref().map(|t| allowed_tools(r, t));
    let max_turns = raw.max_turns.as_ref().and_then(|m| match m.value {
        Scalar::Int(n) if n >= 1 && n <= i128::from(u32::MAX) => u32::try_from(n).ok(),
        _ => {
            let pos = r.pos(&m.referenced);
            r.error(
                pos,
                format!(
                    "`max-turns` must be a whole number from 1 to {}, found {} `{}`",
                    u32::MAX,
                    m.value.kind(),
                    m.value.text()
                ),
            );
            None
        }
    });
    if body.trim().is_empty() {
        let pos = (r.start().0, 1);
        r.warning(
            pos,
            "SKILL.md has no instructions after the frontmatter; the body is what the agent follows",
        );
    }
    let metadata = raw
        .metadata
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.text()))
        .collect();
    Some(Skill {
        name: name?,
        description: description?,
        dir: dir.to_path_buf(),
        instructions: body.to_string(),
        allowed_tools,
        license: raw.license.map(|l| l.value),
        compatibility: raw.compatibility.map(|c| c.value),
        metadata,
        model: raw
            .model
            .map(|m| m.value.trim().to_string())
            .filter(|m| !m.is_empty()),
        max_turns,
        warnings: Vec::new(),
        source: None,
    })
}

fn check_name(r: &mut Reporter<'_>, name: Option<&Spanned<String>>, dir: &Path) -> Option<String> {
    let Some(name) = name else {
        let pos = r.start();
        r.error(
            pos,
            "missing required key `name` (the skill's name, equal to its folder's name)",
        );
        return None;
    };
    let pos = r.pos(&name.referenced);
    if let Err(reason) = check_skill_name(&name.value) {
        r.error(
            pos,
            format!("invalid skill name `{}`: {reason}", name.value),
        );
        return None;
    }
    let folder = dir.file_name().map(|f| f.to_string_lossy().into_owned());
    if folder.as_deref() != Some(name.value.as_str()) {
        r.error(
            pos,
            format!(
                "skill name `{}` does not match its folder `{}`; rename one so they are equal",
                name.value,
                folder.unwrap_or_default()
            ),
        );
        return None;
    }
    Some(name.value.clone())
}

/// The Agent Skills naming rule: 1–64 lowercase letters, digits and
/// hyphens, no hyphen at either end and no two in a row.
pub fn check_skill_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("a name has 1 to {MAX_NAME_CHARS} characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err("use lowercase letters, digits and hyphens only".to_string());
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("a name must not start or end with a hyphen".to_string());
    }
    if name.contains("--") {
        return Err("a name must not hold two hyphens in a row".to_string());
    }
    Ok(())
}

fn check_description(
    r: &mut Reporter<'_>,
    description: Option<&Spanned<String>>,
) -> Option<String> {
    let Some(description) = description else {
        let pos = r.start();
        r.error(
            pos,
            "missing required key `description` (what the skill does and when to use it)",
        );
        return None;
    };
    let pos = r.pos(&description.referenced);
    let text = description.value.trim();
    if text.is_empty() {
        r.error(
            pos,
            "`description` is empty; say what the skill does and when to use it",
        );
        return None;
    }
    let chars = text.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        r.error(
            pos,
            format!("`description` has {chars} characters; the limit is {MAX_DESCRIPTION_CHARS}"),
        );
        return None;
    }
    Some(text.to_string())
}

/// Maps every entry to a canonical pattern; unknown ones become warnings at their position.
fn allowed_tools(
    r: &mut Reporter<'_>,
    tools: &Spanned<AllowedTools>,
) -> Vec<crate::policy::ToolPattern> {
    let mut entries: Vec<(String, (u32, u32))> = Vec::new();
    match &tools.value {
        AllowedTools::Text(text) => {
            let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, entry) in split_allowed_tools(text) {
                let nth = seen.entry(entry).or_default();
                let pos = r.pos_in_scalar(&tools.referenced, entry, *nth);
                *nth += 1;
                entries.push((entry.to_string(), pos));
            }
        }
        AllowedTools::List(items) => {
            for item in items {
                entries.push((item.value.clone(), r.pos(&item.referenced)));
            }
        }
    }
    let mut patterns = Vec::new();
    for (entry, pos) in entries {
        match to_canonical(&entry) {
            Ok(pattern) if !patterns.contains(&pattern) => patterns.push(pattern),
            Ok(_) => {}
            Err(unknown) => r.warning(pos, unknown.message),
        }
    }
    patterns
}

/// The frontmatter as written. Deserialized by hand so unknown keys can be
/// collected (with their positions) instead of rejected.
#[derive(Default)]
struct RawFrontmatter {
    name: Option<Spanned<String>>,
    description: Option<Spanned<String>>,
    license: Option<Spanned<String>>,
    compatibility: Option<Spanned<String>>,
    metadata: Option<BTreeMap<String, Scalar>>,
    allowed_tools: Option<Spanned<AllowedTools>>,
    model: Option<Spanned<String>>,
    max_turns: Option<Spanned<Scalar>>,
    unknown: Vec<Spanned<String>>,
}

impl<'de> Deserialize<'de> for RawFrontmatter {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FrontmatterVisitor)
    }
}

struct FrontmatterVisitor;

impl<'de> Visitor<'de> for FrontmatterVisitor {
    type Value = RawFrontmatter;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping of frontmatter keys (name, description, …)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFrontmatter, A::Error> {
        let mut raw = RawFrontmatter::default();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            match key.value.as_str() {
                "name" => raw.name = map.next_value()?,
                "description" => raw.description = map.next_value()?,
                "license" => raw.license = map.next_value()?,
                "compatibility" => raw.compatibility = map.next_value()?,
                "metadata" => raw.metadata = map.next_value()?,
                "allowed-tools" => raw.allowed_tools = map.next_value()?,
                "model" => raw.model = map.next_value()?,
                "max-turns" => raw.max_turns = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    raw.unknown.push(key);
                }
            }
        }
        Ok(raw)
    }
}

/// `allowed-tools: Read Grep Bash(git diff:*)` or a YAML list.
enum AllowedTools {
    Text(String),
    List(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for AllowedTools {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AllowedToolsVisitor)
    }
}

struct AllowedToolsVisitor;

impl<'de> Visitor<'de> for AllowedToolsVisitor {
    type Value = AllowedTools;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("space-separated tool names or a list of them")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<AllowedTools, E> {
        Ok(AllowedTools::Text(v.to_string()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AllowedTools, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<String>>()? {
            items.push(item);
        }
        Ok(AllowedTools::List(items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(folder: &str, text: &str) -> Result<(Skill, Vec<Diagnostic>), Vec<Diagnostic>> {
        let dir = Path::new("/skills").join(folder);
        parse_skill(&dir.join("SKILL.md"), text, &dir)
    }

    fn positions(diagnostics: &[Diagnostic]) -> Vec<(u32, u32, String)> {
        diagnostics
            .iter()
            .map(|d| (d.line, d.column, d.message.clone()))
            .collect()
    }

    #[test]
    fn parses_a_full_skill() {
        let text = "---\nname: fix-it\ndescription: Fixes things.\nlicense: MIT\n\
                    metadata: {author: me, version: 2}\nallowed-tools: Read Bash(git diff:*) Edit\n\
                    model: gpt-4.1-mini\nmax-turns: 12\n---\n# Fix it\nDo the thing.\n";
        let (skill, warnings) = parse("fix-it", text).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(skill.name, "fix-it");
        assert_eq!(skill.description, "Fixes things.");
        assert_eq!(skill.instructions, "# Fix it\nDo the thing.\n");
        assert_eq!(skill.metadata["version"], "2");
        assert_eq!(skill.max_turns, Some(12));
        assert_eq!(skill.model.as_deref(), Some("gpt-4.1-mini"));
        let tools: Vec<&str> = skill
            .allowed_tools
            .as_ref()
            .unwrap()
            .iter()
            .map(|p| p.as_str())
            .collect();
        assert_eq!(tools, ["read", "exec(git diff *)", "edit"]);
    }

    #[test]
    fn list_form_and_unknown_tools_warn_at_their_position() {
        let text = "---\nname: a\ndescription: d\nallowed-tools:\n  - Read\n  - Frobnicate\n\
                    other-tool-key: x\n---\nbody\n";
        let (skill, warnings) = parse("a", text).unwrap();
        assert_eq!(skill.allowed_tools.as_ref().unwrap().len(), 1);
        let found = positions(&warnings);
        assert_eq!(found[0].0, 7);
        assert!(found[0].2.contains("unknown key `other-tool-key`"));
        assert_eq!((found[1].0, found[1].1), (6, 5));
        assert!(found[1].2.contains("unknown tool `Frobnicate`"));
        assert_eq!(skill.warnings.len(), 2);
        assert!(skill.warnings[1].starts_with("/skills/a/SKILL.md:6:5: unknown tool"));
    }

    #[test]
    fn unknown_tool_in_the_string_form_points_at_the_entry() {
        let text = "---\nname: a\ndescription: d\nallowed-tools: Read Foo Grep\n---\nbody\n";
        let (_, warnings) = parse("a", text).unwrap();
        assert_eq!((warnings[0].line, warnings[0].column), (4, 21));
    }

    #[test]
    fn collects_every_semantic_problem() {
        let text = "---\nname: Bad_Name\ndescription: ''\nmax-turns: 0\n---\nbody\n";
        let problems = parse("Bad_Name", text).unwrap_err();
        let found = positions(&problems);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!((found[0].0, found[0].1), (2, 7));
        assert!(found[0].2.contains("lowercase"));
        assert_eq!((found[1].0, found[1].1), (3, 14));
        assert_eq!((found[2].0, found[2].1), (4, 12));
    }

    #[test]
    fn name_must_equal_folder() {
        let problems = parse("other", "---\nname: fix-it\ndescription: d\n---\nb\n").unwrap_err();
        assert!(
            problems[0]
                .message
                .contains("does not match its folder `other`")
        );
        assert_eq!((problems[0].line, problems[0].column), (2, 7));
    }

    #[test]
    fn structural_errors_are_offset_by_the_opening_line() {
        let problems = parse("a", "---\nname: a\ndescription: [x\n---\nb\n").unwrap_err();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].line >= 3, "{problems:?}");
        let problems =
            parse("a", "---\nname: a\nmetadata: [1]\ndescription: d\n---\n").unwrap_err();
        assert_eq!((problems[0].line, problems[0].column), (3, 11));
    }

    #[test]
    fn missing_or_unclosed_frontmatter() {
        let e = parse("a", "# no frontmatter\n").unwrap_err();
        assert!(e[0].message.contains("must start with a `---`"));
        let e = parse("a", "---\nname: a\n").unwrap_err();
        assert!(e[0].message.contains("never closed"));
        let e = parse("a", "---\n---\nbody\n").unwrap_err();
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn skill_names() {
        for good in ["a", "fix-failing-test", "x1-2"] {
            assert!(check_skill_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", &"a".repeat(65)] {
            assert!(check_skill_name(bad).is_err(), "{bad}");
        }
    }
}
