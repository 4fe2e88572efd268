//! `allowed-tools` entries to canonical permission patterns.
//!
//! Skills written for Claude Code name tools its way (`Read`, `Bash(git
//! diff:*)`); agentci's patterns use canonical names (`read`,
//! `exec(git diff *)`). This module maps one to the other and splits the
//! space-separated form. It never drops an entry silently: anything it
//! cannot map comes back as [`UnknownTool`] for the caller to warn about.

use crate::policy::ToolPattern;
use crate::tools::catalog;

/// Claude Code tool names and their canonical equivalents.
const CLAUDE_CODE: &[(&str, &str)] = &[
    ("Read", "read"),
    ("Write", "write"),
    ("Edit", "edit"),
    ("MultiEdit", "edit"),
    ("Glob", "find"),
    ("Grep", "grep"),
    ("LS", "ls"),
    ("Bash", "exec"),
    ("WebFetch", "web_fetch"),
    ("TodoWrite", "todo"),
    ("Task", "task"),
];

/// An `allowed-tools` entry that names no tool agentci knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTool {
    pub written: String,
    pub message: String,
}

/// Maps one entry to a canonical pattern: `Bash(git diff:*)` → `exec(git diff *)`,
/// `Read(src/**)` → `read(src/**)`, `read` → `read`, `mcp__github__get_issue` unchanged.
pub fn to_canonical(written: &str) -> Result<ToolPattern, UnknownTool> {
    let written = written.trim();
    let unknown = |detail: &str| UnknownTool {
        written: written.to_string(),
        message: format!(
            "unknown tool `{written}` in allowed-tools{detail}; expected a canonical name ({}) \
             or a Claude Code name (Read, Write, Edit, Glob, Grep, LS, Bash, Bash(cmd:*), …)",
            catalog::names().join(", ")
        ),
    };
    let (name, argument) = match written.split_once('(') {
        Some((name, rest)) => match rest.strip_suffix(')') {
            Some(argument) => (name.trim(), Some(argument.trim())),
            None => return Err(unknown(" (missing the closing `)`)")),
        },
        None => (written, None),
    };
    let mcp = name.starts_with("mcp__")
        || [
            crate::job::mcp::LIST_RESOURCES,
            crate::job::mcp::READ_RESOURCE,
        ]
        .contains(&name);
    let canonical = if catalog::is_builtin(name) || mcp {
        name
    } else if let Some((_, canonical)) = CLAUDE_CODE.iter().find(|(claude, _)| *claude == name) {
        canonical
    } else {
        return Err(unknown(""));
    };
    let text = match argument {
        None => canonical.to_string(),
        Some(argument) if canonical == "exec" => format!("exec({})", command_glob(argument)),
        Some(argument) => format!("{canonical}({argument})"),
    };
    ToolPattern::parse(&text).map_err(|e| unknown(&format!(" ({})", e.reason)))
}

/// A warning when `pattern` (mapped from `written`) names a tool agentci
/// does not have yet, such as `WebFetch` → `web_fetch` or an MCP tool: the
/// skill gets nothing from it, and that must not happen in silence.
pub fn missing_tool(written: &str, pattern: &ToolPattern) -> Option<String> {
    let matches_a_builtin = catalog::names().iter().any(|t| pattern.matches_tool(t));
    if matches_a_builtin {
        return None;
    }
    let name = pattern.tool_name().unwrap_or(pattern.as_str());
    // MCP tools come from the job's servers, which a skill does not know.
    if name.starts_with("mcp__") || name.starts_with("mcp_") {
        return None;
    }
    let what = if name == written.split('(').next().unwrap_or(written).trim() {
        format!(
            "a tool agentci does not have yet (it has {})",
            catalog::names().join(", ")
        )
    } else {
        format!(
            "agentci's `{name}`, which it does not have yet (it has {})",
            catalog::names().join(", ")
        )
    };
    Some(format!(
        "`{}` in allowed-tools names {what}; the skill gets no tool from it",
        written.trim()
    ))
}

/// Claude Code's prefix form `git diff:*` is agentci's `git diff *` (where a
/// trailing ` *` also matches the bare command).
fn command_glob(argument: &str) -> String {
    match argument.strip_suffix(":*") {
        Some(prefix) => format!("{} *", prefix.trim_end()),
        None => argument.to_string(),
    }
}

/// Splits the spec's space-separated `allowed-tools` string into entries,
/// keeping spaces inside parentheses (`Bash(git diff:*)`) and also
/// accepting commas, which Claude Code skills often use. Each entry comes
/// with its byte offset in `text`.
pub fn split_allowed_tools(text: &str) -> Vec<(usize, &str)> {
    let mut entries = Vec::new();
    let mut depth = 0usize;
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        let separator = depth == 0 && (c.is_whitespace() || c == ',');
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if separator {
            if let Some(s) = start.take() {
                entries.push((s, &text[s..i]));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        entries.push((s, &text[s..]));
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::RuleArgument;

    fn canonical(written: &str) -> String {
        to_canonical(written).unwrap().as_str().to_string()
    }

    #[test]
    fn maps_claude_code_names() {
        for (written, expected) in [
            ("Read", "read"),
            ("Write", "write"),
            ("Edit", "edit"),
            ("MultiEdit", "edit"),
            ("Glob", "find"),
            ("Grep", "grep"),
            ("LS", "ls"),
            ("Bash", "exec"),
            ("WebFetch", "web_fetch"),
            ("TodoWrite", "todo"),
            ("Task", "task"),
            ("Bash(git diff:*)", "exec(git diff *)"),
            ("Bash(npm test)", "exec(npm test)"),
            ("Bash(cargo test:*)", "exec(cargo test *)"),
            ("Read(src/**)", "read(src/**)"),
        ] {
            assert_eq!(canonical(written), expected, "{written}");
        }
    }

    #[test]
    fn canonical_and_mcp_names_pass_through() {
        for name in [
            "read",
            "exec(cargo test *)",
            "web_fetch",
            "mcp__github__get_issue",
        ] {
            assert_eq!(canonical(name), name);
        }
    }

    #[test]
    fn mapped_patterns_match_like_claude_code() {
        let pattern = to_canonical("Bash(git diff:*)").unwrap();
        assert!(pattern.matches("exec", RuleArgument::Command, Some("git diff")));
        assert!(pattern.matches("exec", RuleArgument::Command, Some("git diff --stat")));
        assert!(!pattern.matches("exec", RuleArgument::Command, Some("git push")));
    }

    #[test]
    fn unknown_names_are_reported_not_dropped() {
        for name in ["Foo", "NotebookEdit", "read(", "Bash()"] {
            let e = to_canonical(name).unwrap_err();
            assert_eq!(e.written, name);
            assert!(e.message.contains("unknown tool"), "{}", e.message);
            assert!(e.message.contains("Bash(cmd:*)"), "{}", e.message);
        }
    }

    #[test]
    fn every_mapped_name_is_a_tool_agentci_has() {
        // Every Claude Code name maps to a tool agentci has, and MCP tools come
        // from the job's servers.
        for name in [
            "mcp__github__get_issue",
            "mcp_read_resource",
            "Read",
            "Bash(git diff:*)",
            "exec",
            "WebFetch",
            "TodoWrite",
            "web_fetch",
            "Task",
        ] {
            assert_eq!(missing_tool(name, &to_canonical(name).unwrap()), None);
        }
    }

    #[test]
    fn splits_on_spaces_outside_parentheses_and_commas() {
        let entries = split_allowed_tools("Read  Bash(git diff:*), Grep\tLS");
        let texts: Vec<&str> = entries.iter().map(|(_, t)| *t).collect();
        assert_eq!(texts, ["Read", "Bash(git diff:*)", "Grep", "LS"]);
        assert_eq!(entries[1].0, 6);
        assert!(split_allowed_tools("  ").is_empty());
    }
}
