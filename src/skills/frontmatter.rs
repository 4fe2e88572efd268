//! `SKILL.md`: YAML frontmatter between `---` lines, then the Markdown
//! instructions. This module parses and validates one file into a
//! [`Skill`]; finding the file is [`super::discover`]'s job.
//!
//! Keys follow the Agent Skills format (`name`, `description`, `license`,
//! `compatibility`, `metadata`, `allowed-tools`) plus agentci's `model` and
//! `max-turns`. Keys of other tools are warnings, not errors, since the
//! format lets every tool add its own. Positions are lines of SKILL.md,
//! not of the frontmatter alone.

mod raw;
mod yaml_error;

use std::collections::BTreeMap;
use std::path::Path;

use serde_saphyr::Spanned;

use self::raw::{KNOWN_KEYS, Node};
use self::yaml_error::explain_yaml_error;
use super::Skill;
use super::placeholders::expand_folder_placeholders;
use super::tool_names::{missing_tool, split_allowed_tools, to_canonical};
use super::tools_left::no_tools_warning;
use crate::job::diagnostic::{Diagnostic, Pos, Reporter};
use crate::job::raw::Scalar;

const MAX_NAME_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 1024;
const MAX_COMPATIBILITY_CHARS: usize = 500;

/// Parses `text`, the content of `file` (a SKILL.md in folder `dir`).
/// On success returns the skill and its warnings (also copied, as text,
/// into [`Skill::warnings`]); on failure all problems found.
pub fn parse_skill(
    file: &Path,
    text: &str,
    dir: &Path,
) -> Result<(Skill, Vec<Diagnostic>), Vec<Diagnostic>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Lines may end in CRLF or, from old Mac editors, CR alone; both become
    // LF, which keeps every line number and column as the user counts them.
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let parts = split(file, &text)?;
    let yaml = parts.yaml;
    let mut r = Reporter::new(file, yaml, 1);
    let root = if yaml.trim().is_empty() {
        None
    } else {
        let mut options = serde_saphyr::Options::default();
        options.with_snippet = false;
        // Only broken YAML fails here: values of a wrong type are the
        // checks' to report, all of them, each at its key.
        match serde_saphyr::from_str_with_options::<Spanned<Node>>(yaml, options) {
            Ok(root) => Some(root),
            Err(e) => {
                r.yaml_error(&e);
                explain_yaml_error(&mut r.diagnostics, yaml, &e);
                return Err(r.diagnostics);
            }
        }
    };
    let fields = match &root {
        None => Fields::default(),
        Some(root) => fields(&mut r, root).ok_or_else(|| r.diagnostics.clone())?,
    };
    let skill = build(&mut r, &fields, &parts, dir);
    if r.has_errors() {
        return Err(r.diagnostics);
    }
    let mut skill = skill.ok_or_else(|| r.diagnostics.clone())?;
    skill.warnings = r.diagnostics.iter().map(ToString::to_string).collect();
    Ok((skill, r.diagnostics))
}

/// SKILL.md cut in two: the frontmatter's YAML and the Markdown body.
struct Parts<'t> {
    yaml: &'t str,
    body: &'t str,
    /// The line the body starts on (the one after the closing `---`).
    body_line: u32,
}

/// A `---` line that opens or closes the frontmatter: `---`, optionally
/// followed by a YAML comment (`--- # skill header`), at the start of the
/// line. An indented `---` (inside a block scalar) is text, not a marker.
fn is_marker(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(|rest| {
        let rest = rest.trim();
        rest.is_empty() || (rest.starts_with('#') && line[3..].starts_with([' ', '\t']))
    })
}

/// Splits SKILL.md (with LF line ends) into frontmatter YAML and body.
fn split<'t>(file: &Path, text: &'t str) -> Result<Parts<'t>, Vec<Diagnostic>> {
    let error = |line, message: &str| vec![Diagnostic::error(file, line, 1, message)];
    let first_end = text.find('\n').unwrap_or(text.len());
    if !is_marker(&text[..first_end]) {
        return Err(error(
            1,
            "SKILL.md must start with a `---` line opening the YAML frontmatter",
        ));
    }
    let yaml_start = (first_end + 1).min(text.len());
    let mut offset = yaml_start;
    for (index, line) in text[yaml_start..].split_inclusive('\n').enumerate() {
        if is_marker(line) {
            return Ok(Parts {
                yaml: &text[yaml_start..offset],
                body: &text[offset + line.len()..],
                body_line: u32::try_from(index).unwrap_or(u32::MAX).saturating_add(3),
            });
        }
        offset += line.len();
    }
    Err(error(
        1,
        "the frontmatter opened by `---` on line 1 is never closed; add a `---` line after it",
    ))
}

/// The node written for each key agentci reads.
#[derive(Default)]
struct Fields<'n> {
    name: Option<&'n Spanned<Node>>,
    description: Option<&'n Spanned<Node>>,
    license: Option<&'n Spanned<Node>>,
    compatibility: Option<&'n Spanned<Node>>,
    metadata: Option<&'n Spanned<Node>>,
    allowed_tools: Option<&'n Spanned<Node>>,
    model: Option<&'n Spanned<Node>>,
    max_turns: Option<&'n Spanned<Node>>,
}

/// The known keys of the frontmatter `root`; other keys are warnings (the
/// format lets every tool add its own). `None` (with the error reported)
/// when the frontmatter is not a mapping.
fn fields<'n>(r: &mut Reporter<'_>, root: &'n Spanned<Node>) -> Option<Fields<'n>> {
    let Node::Map(entries) = &root.value else {
        let pos = r.pos(&root.referenced);
        r.error(
            pos,
            format!(
                "the frontmatter must be a mapping of keys (name, description, …), found {}",
                root.value.kind()
            ),
        );
        return None;
    };
    let mut fields = Fields::default();
    for (key, value) in entries {
        let name = text_of(r, key);
        let slot = match name.as_str() {
            "name" => &mut fields.name,
            "description" => &mut fields.description,
            "license" => &mut fields.license,
            "compatibility" => &mut fields.compatibility,
            "metadata" => &mut fields.metadata,
            "allowed-tools" => &mut fields.allowed_tools,
            "model" => &mut fields.model,
            "max-turns" => &mut fields.max_turns,
            _ => {
                let pos = r.pos(&key.referenced);
                r.warning(
                    pos,
                    format!(
                        "unknown key `{name}` in SKILL.md frontmatter (ignored); agentci reads: {}",
                        KNOWN_KEYS.join(", ")
                    ),
                );
                continue;
            }
        };
        *slot = Some(value);
    }
    Some(fields)
}

/// A scalar's text: a string as YAML gives it, any other scalar as written
/// in the file (`1.10` stays `1.10`); a list or mapping as YAML flow text.
fn text_of(r: &Reporter<'_>, node: &Spanned<Node>) -> String {
    match &node.value {
        Node::Scalar(Scalar::Str(text)) => text.clone(),
        Node::Scalar(scalar) => r
            .source_of(&node.referenced)
            .map(|written| written.trim().to_string())
            .filter(|written| !written.is_empty())
            .unwrap_or_else(|| scalar.text()),
        Node::Null => String::new(),
        Node::List(_) | Node::Map(_) => yaml_text(r, node).to_string(),
    }
}

/// A list or mapping as YAML flow text (JSON, which YAML reads), each
/// scalar in it as written: `tags: [x, y]` stays `["x","y"]`, not a list
/// with YAML 1.1's `y` turned into `true`.
fn yaml_text(r: &Reporter<'_>, node: &Spanned<Node>) -> serde_json::Value {
    use serde_json::Value;
    match &node.value {
        Node::Null => Value::Null,
        Node::Scalar(_) => Value::String(text_of(r, node)),
        Node::List(items) => Value::Array(items.iter().map(|i| yaml_text(r, i)).collect()),
        Node::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (text_of(r, k), yaml_text(r, v)))
                .collect(),
        ),
    }
}

/// A key whose value is text: `Ok(None)` for a key written with no value,
/// `Err(())` (reported) for a list or mapping.
fn text_value(r: &mut Reporter<'_>, key: &str, node: &Spanned<Node>) -> Result<Option<String>, ()> {
    match &node.value {
        Node::Null | Node::Scalar(Scalar::Null) => Ok(None),
        Node::Scalar(_) => Ok(Some(text_of(r, node))),
        other => {
            let pos = r.pos(&node.referenced);
            r.error(
                pos,
                format!(
                    "`{key}`: expected text, found {}; quote text that starts with `[` or `{{`",
                    other.kind()
                ),
            );
            Err(())
        }
    }
}

/// Checks the frontmatter's values and builds the skill (with `warnings` empty).
fn build(
    r: &mut Reporter<'_>,
    fields: &Fields<'_>,
    parts: &Parts<'_>,
    dir: &Path,
) -> Option<Skill> {
    let body = parts.body;
    let name = check_name(r, fields.name, dir);
    let description = check_description(r, fields.description);
    let license = fields
        .license
        .and_then(|l| text_value(r, "license", l).ok().flatten());
    let compatibility = fields.compatibility.and_then(|c| check_compatibility(r, c));
    let tools = fields.allowed_tools.and_then(|t| allowed_tools(r, t, dir));
    let (allowed_tools, unmapped_tools) = match tools {
        Some((patterns, unmapped)) => (Some(patterns), unmapped),
        None => (None, Vec::new()),
    };
    let max_turns = fields.max_turns.and_then(|m| check_max_turns(r, m));
    let model = fields
        .model
        .and_then(|m| text_value(r, "model", m).ok().flatten())
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty());
    let metadata = fields.metadata.map(|m| metadata(r, m)).unwrap_or_default();
    if body.trim().is_empty() {
        let pos = Pos::at(parts.body_line, 1);
        r.warning(
            pos,
            "SKILL.md has no instructions after the frontmatter; the body is what the agent follows",
        );
    }
    let tools_pos = fields
        .allowed_tools
        .filter(|_| allowed_tools.is_some())
        .map(|t| r.pos(&t.referenced));
    let skill = Skill {
        name: name?,
        description: description?,
        dir: dir.to_path_buf(),
        instructions: expand_folder_placeholders(body, dir),
        allowed_tools,
        unmapped_tools,
        license,
        compatibility,
        metadata,
        model,
        max_turns,
        warnings: Vec::new(),
        source: None,
        folder_holder: None,
    };
    if let (Some(pos), Some(message)) = (tools_pos, no_tools_warning(None, &skill)) {
        r.warning(pos, message);
    }
    Some(skill)
}

/// `metadata:`, a mapping of keys to text. A list or mapping as a value
/// (public collections write `tags: [a, b]`) is a warning, and the value is
/// kept as YAML flow text so nothing is lost.
fn metadata(r: &mut Reporter<'_>, node: &Spanned<Node>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let entries = match &node.value {
        Node::Null => return out,
        Node::Map(entries) => entries,
        other => {
            let pos = r.pos(&node.referenced);
            r.error(
                pos,
                format!(
                    "`metadata` must be a mapping of keys to text (`author: me`), found {}",
                    other.kind()
                ),
            );
            return out;
        }
    };
    for (key, value) in entries {
        let key = text_of(r, key);
        let text = text_of(r, value);
        if let Node::List(_) | Node::Map(_) = value.value {
            let pos = r.pos(&value.referenced);
            r.warning(
                pos,
                format!(
                    "`metadata.{key}` is {}, but the Agent Skills format wants text values; the \
                     skill loads with it kept as the YAML text `{text}` (quote it, or write it \
                     as text, to silence this)",
                    value.value.kind()
                ),
            );
        }
        out.insert(key, text);
    }
    out
}

/// `compatibility:`, 1 to 500 characters; an error (but the value kept) otherwise.
fn check_compatibility(r: &mut Reporter<'_>, compatibility: &Spanned<Node>) -> Option<String> {
    let text = text_value(r, "compatibility", compatibility).ok()?;
    let pos = r.pos(&compatibility.referenced);
    let chars = text.as_deref().unwrap_or_default().chars().count();
    if chars == 0 || chars > MAX_COMPATIBILITY_CHARS {
        r.error(
            pos,
            format!(
                "`compatibility` has {chars} characters; it takes 1 to \
                 {MAX_COMPATIBILITY_CHARS} (what the skill needs to run), or leave the key out"
            ),
        );
    }
    text
}

/// `max-turns:`, a whole number from 1 to `u32::MAX`.
fn check_max_turns(r: &mut Reporter<'_>, max_turns: &Spanned<Node>) -> Option<u32> {
    if let Node::Scalar(Scalar::Int(n)) = max_turns.value
        && n >= 1
        && n <= i128::from(u32::MAX)
    {
        return u32::try_from(n).ok();
    }
    let found = match &max_turns.value {
        Node::Scalar(_) => format!("{} `{}`", max_turns.value.kind(), text_of(r, max_turns)),
        other => other.kind().to_string(),
    };
    let pos = r.pos(&max_turns.referenced);
    r.error(
        pos,
        format!(
            "`max-turns` must be a whole number from 1 to {}, found {found}",
            u32::MAX
        ),
    );
    None
}

fn check_name(r: &mut Reporter<'_>, name: Option<&Spanned<Node>>, dir: &Path) -> Option<String> {
    let Some(name) = name else {
        let pos = r.start();
        r.error(
            pos,
            "missing required key `name` (the skill's name, equal to its folder's name)",
        );
        return None;
    };
    let pos = r.pos(&name.referenced);
    let Some(value) = text_value(r, "name", name).ok()? else {
        r.error(
            pos,
            "`name` is present but has no value; write the skill's name (equal to its folder's name)",
        );
        return None;
    };
    if let Err(reason) = check_skill_name(&value) {
        r.error(pos, format!("invalid skill name `{value}`: {reason}"));
        return None;
    }
    // The Agent Skills client guidance: warn about a mismatch, load anyway.
    // The folder is the one the user gave (a symlink's own name, not its target's).
    let folder = dir.file_name().map(|f| f.to_string_lossy().into_owned());
    if folder.as_deref() != Some(value.as_str()) {
        r.warning(
            pos,
            format!(
                "skill name `{value}` differs from its folder `{}`; the skill loads, but the \
                 format wants them equal, so rename one",
                folder.unwrap_or_default()
            ),
        );
    }
    Some(value)
}

/// Which part of the Agent Skills naming rule a name breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadSkillName {
    #[error("a name has 1 to {} characters", MAX_NAME_CHARS)]
    Length,
    #[error("use lowercase letters, digits and hyphens only")]
    Characters,
    #[error("a name must not start or end with a hyphen")]
    HyphenAtEnd,
    #[error("a name must not hold two hyphens in a row")]
    DoubleHyphen,
}

/// The Agent Skills naming rule: 1–64 lowercase letters, digits and
/// hyphens, no hyphen at either end and no two in a row.
pub fn check_skill_name(name: &str) -> Result<(), BadSkillName> {
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(BadSkillName::Length);
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(BadSkillName::Characters);
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(BadSkillName::HyphenAtEnd);
    }
    if name.contains("--") {
        return Err(BadSkillName::DoubleHyphen);
    }
    Ok(())
}

fn check_description(r: &mut Reporter<'_>, description: Option<&Spanned<Node>>) -> Option<String> {
    let Some(description) = description else {
        let pos = r.start();
        r.error(
            pos,
            "missing required key `description` (what the skill does and when to use it)",
        );
        return None;
    };
    let pos = r.pos(&description.referenced);
    let Some(text) = text_value(r, "description", description).ok()? else {
        r.error(
            pos,
            "`description` is present but has no value; say what the skill does and when to use it",
        );
        return None;
    };
    let text = text.trim();
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

/// Maps every entry to a canonical pattern; entries that name no tool
/// agentci has become warnings at their position and are returned as the
/// second list, as written. Folder placeholders are replaced first
/// (`Bash(python {baseDir}/scripts/x.py:*)`).
fn allowed_tools(
    r: &mut Reporter<'_>,
    tools: &Spanned<Node>,
    dir: &Path,
) -> Option<(Vec<crate::policy::ToolPattern>, Vec<String>)> {
    let mut entries: Vec<(String, Pos)> = Vec::new();
    match &tools.value {
        // `allowed-tools:` with no value allows nothing, as `""` does.
        Node::Null => {}
        Node::Scalar(_) => {
            let text = text_of(r, tools);
            let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, entry) in split_allowed_tools(&text) {
                let nth = seen.entry(entry).or_default();
                let pos = r.pos_in_scalar(&tools.referenced, entry, *nth);
                *nth += 1;
                entries.push((entry.to_string(), pos));
            }
        }
        Node::List(items) => {
            for (index, item) in items.iter().enumerate() {
                let pos = r.pos(&item.referenced);
                match &item.value {
                    Node::Scalar(_) => entries.push((text_of(r, item), pos)),
                    other => r.error(
                        pos,
                        format!(
                            "`allowed-tools[{index}]`: expected a tool name such as `Read` or \
                             `Bash(git diff:*)`, found {}",
                            other.kind()
                        ),
                    ),
                }
            }
        }
        Node::Map(_) => {
            let pos = r.pos(&tools.referenced);
            r.error(
                pos,
                "`allowed-tools`: expected space-separated tool names or a list of them, found \
                 a mapping; write `allowed-tools: Read Grep Bash(git diff:*)`",
            );
            return None;
        }
    }
    let mut patterns = Vec::new();
    let mut unmapped = Vec::new();
    for (entry, pos) in entries {
        match to_canonical(&expand_folder_placeholders(&entry, dir)) {
            Ok(pattern) => {
                if let Some(message) = missing_tool(&entry, &pattern) {
                    r.warning(pos, message);
                    unmapped.push(entry);
                }
                if !patterns.contains(&pattern) {
                    patterns.push(pattern);
                }
            }
            Err(unknown) => {
                r.warning(pos, unknown.message);
                unmapped.push(entry);
            }
        }
    }
    Some((patterns, unmapped))
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

    // Regression (issue 22, item 6): one type error hid every other
    // problem and named `metadata`, not the key inside it.
    #[test]
    fn type_errors_are_all_reported_each_at_its_nested_key() {
        let text = "---\nname: a\ndescription: [x]\nlicense: {a: 1}\n\
                    allowed-tools:\n  - Read\n  - Bash: x\nmax-turns: [1]\nmetadata: [1]\n---\nb\n";
        let problems = parse("a", text).unwrap_err();
        let found = positions(&problems);
        assert_eq!(found.len(), 5, "{found:?}");
        assert_eq!((found[0].0, found[0].1), (3, 14));
        assert!(
            found[0]
                .2
                .starts_with("`description`: expected text, found a list")
        );
        assert_eq!((found[1].0, found[1].1), (4, 10));
        assert!(
            found[1]
                .2
                .starts_with("`license`: expected text, found a mapping")
        );
        assert_eq!((found[2].0, found[2].1), (7, 5));
        assert!(
            found[2]
                .2
                .starts_with("`allowed-tools[1]`: expected a tool name")
        );
        assert!(found[3].2.contains("`max-turns` must be a whole number"));
        assert_eq!(found[3].0, 8);
        assert!(found[4].2.starts_with("`metadata` must be a mapping"));
        assert_eq!((found[4].0, found[4].1), (9, 11));
    }

    // Regression (issue 22, item 6): a list or mapping under `metadata`
    // failed the skill; public collections write them often.
    #[test]
    fn metadata_lists_and_maps_warn_and_are_kept_as_yaml() {
        let text = "---\nname: a\ndescription: d\nmetadata:\n  version: 1.10\n  tags: [x, y]\n\
                    \x20 owner:\n    team: docs\n---\nb\n";
        let (skill, warnings) = parse("a", text).unwrap();
        assert_eq!(skill.metadata["version"], "1.10");
        assert_eq!(skill.metadata["tags"], r#"["x","y"]"#);
        assert_eq!(skill.metadata["owner"], r#"{"team":"docs"}"#);
        let found = positions(&warnings);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!((found[0].0, found[0].1), (6, 9));
        assert!(
            found[0].2.starts_with("`metadata.tags` is a list"),
            "{found:?}"
        );
        assert_eq!(found[1].0, 8);
        assert!(
            found[1].2.starts_with("`metadata.owner` is a mapping"),
            "{found:?}"
        );
    }

    #[test]
    fn folder_name_mismatch_warns_and_loads() {
        let (skill, warnings) =
            parse("other", "---\nname: fix-it\ndescription: d\n---\nb\n").unwrap();
        assert_eq!(skill.name, "fix-it");
        assert!(
            warnings[0]
                .message
                .contains("differs from its folder `other`")
        );
        assert_eq!((warnings[0].line, warnings[0].column), (2, 7));
    }

    #[test]
    fn frontmatter_edge_cases() {
        // `--- # comment` opens; CR-only and CRLF files read; an indented `---` stays text.
        for text in [
            "--- # header\nname: a\ndescription: d\n---\nb\n",
            "---\rname: a\rdescription: d\r---\rb\r",
            "---\r\nname: a\r\ndescription: d\r\n---\r\nb\r\n",
            "---\nname: a\ndescription: |\n  x\n  ---\n  y\n---\nb\n",
        ] {
            let (skill, warnings) = parse("a", text).unwrap();
            assert!(warnings.is_empty(), "{text:?}: {warnings:?}");
            assert_eq!(skill.instructions.trim(), "b");
        }
        let e = parse("a", "---\nname: a\ndescription:\n---\nb\n").unwrap_err();
        assert_eq!(e[0].line, 3, "{e:?}");
        assert!(e[0].message.contains("present but has no value"), "{e:?}");
        let e = parse(
            "a",
            "---\nname: a\ndescription: d\ncompatibility: \"\"\n---\nb\n",
        )
        .unwrap_err();
        assert_eq!(e[0].line, 4);
        assert!(e[0].message.contains("1 to 500"), "{e:?}");
        let (_, w) = parse("a", "---\nname: a\ndescription: d\n---\n").unwrap();
        assert_eq!((w[0].line, w[0].column), (5, 1), "{w:?}");
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
    fn library_messages_read_as_text() {
        // Regression: the library's texts came through as `limits breached:
        // Nodes { nodes: 250001 }` and `simple key expected \':\'`.
        let big = format!(
            "---\nname: a\ndescription: d\nx-big: [{}]\n---\nb\n",
            "1,".repeat(260_000)
        );
        let e = parse("a", &big).unwrap_err();
        assert!(
            e[0].message.contains("too large or too deeply nested"),
            "{e:?}"
        );
        let e = parse("a", "---\nname: a\ndescription: d\nfoo bar\n---\nb\n").unwrap_err();
        assert!(!e[0].message.contains('\\'), "{e:?}");
        assert!(!e[0].message.contains("{ "), "{e:?}");
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
