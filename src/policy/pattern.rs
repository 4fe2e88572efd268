//! Permission patterns: `tool`, `tool(argument-glob)`, or a glob over tool
//! names such as `mcp__github__get_*`.
//!
//! The argument glob is matched against the call's *subject*: the command of
//! `exec`, the path of the file tools. For commands `*` matches anything,
//! and a trailing ` *` also matches nothing, so `exec(cargo test *)` allows
//! a bare `cargo test`. For paths the glob is a path glob: `*` stays within
//! one folder, `**` crosses folders. For URLs the argument is a URL rule
//! ([`super::url_pattern`]): hosts match by label, paths by segment. A pattern judges one simple command;
//! how a whole `exec` line is judged is [`super::command`]'s business.

use std::fmt;

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde_json::Value;

use super::url_pattern::UrlGlob;
use crate::tools::RuleArgument;

/// A parsed permission pattern. Compares and prints as written.
#[derive(Clone)]
pub struct ToolPattern {
    text: String,
    tool: NameMatcher,
    argument: Option<ArgumentGlob>,
}

#[derive(Clone)]
enum NameMatcher {
    Exact(String),
    Glob(GlobMatcher),
}

#[derive(Clone)]
struct ArgumentGlob {
    raw: String,
    path: GlobMatcher,
    /// The argument read as a URL rule, for `web_fetch(…)`.
    url: Option<UrlGlob>,
}

/// Why a pattern could not be parsed; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission pattern `{pattern}`: {reason}")]
pub struct PatternError {
    pub pattern: String,
    pub reason: String,
}

impl ToolPattern {
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        let err = |reason: &str| PatternError {
            pattern: text.to_string(),
            reason: reason.to_string(),
        };
        let trimmed = text.trim();
        let (name, argument) = match trimmed.find('(') {
            None => {
                if trimmed.contains(')') {
                    return Err(err("a `)` without an opening `(`"));
                }
                (trimmed, None)
            }
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(err(
                        "expected `tool(argument)` with a closing `)` at the end",
                    ));
                };
                if inner.trim().is_empty() {
                    return Err(err(
                        "the argument in `tool(...)` is empty; write just `tool` to match every call",
                    ));
                }
                (&trimmed[..open], Some(inner.trim()))
            }
        };
        if name.is_empty() {
            return Err(err(
                "expected a tool name such as `read` or `exec(cargo test *)`",
            ));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*' || c == '.')
        {
            return Err(err(
                "a tool name may hold letters, digits, `_`, `-`, `.` and `*` only",
            ));
        }
        let tool = if name.contains('*') {
            let glob = Glob::new(name).map_err(|e| err(&e.kind().to_string()))?;
            NameMatcher::Glob(glob.compile_matcher())
        } else {
            NameMatcher::Exact(name.to_string())
        };
        let argument = match argument {
            None => None,
            Some(raw) => {
                let path = GlobBuilder::new(raw.trim_start_matches("./"))
                    .literal_separator(true)
                    .build()
                    .map_err(|e| err(&e.kind().to_string()))?
                    .compile_matcher();
                // A rule for `web_fetch` must read as a URL rule: said at load time.
                let url = if name == "web_fetch" {
                    Some(UrlGlob::parse(raw).map_err(|bad| err(&bad.reason))?)
                } else {
                    UrlGlob::parse(raw).ok()
                };
                Some(ArgumentGlob {
                    raw: raw.to_string(),
                    path,
                    url,
                })
            }
        };
        Ok(ToolPattern {
            text: trimmed.to_string(),
            tool,
            argument,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The tool name part, when it is a plain name (not a glob).
    pub fn tool_name(&self) -> Option<&str> {
        match &self.tool {
            NameMatcher::Exact(name) => Some(name),
            NameMatcher::Glob(_) => None,
        }
    }

    /// The host a URL rule names literally (`web_fetch(http://127.0.0.1:*/**)`
    /// names `127.0.0.1`), as the URL parser prints it; `None` for a host
    /// with a wildcard or a rule that is not a URL rule.
    pub fn literal_url_host(&self) -> Option<String> {
        self.argument.as_ref()?.url.as_ref()?.literal_host()
    }

    /// True when the pattern has no argument part, so it matches every call of its tools.
    pub fn is_bare(&self) -> bool {
        self.argument.is_none()
    }

    /// Does the pattern's tool part match `tool` (ignoring any argument)?
    pub fn matches_tool(&self, tool: &str) -> bool {
        match &self.tool {
            NameMatcher::Exact(name) => name == tool,
            NameMatcher::Glob(glob) => glob.is_match(tool),
        }
    }

    /// Does the pattern match a call of `tool` whose subject (the argument
    /// the tool's spec names as `kind`) is `subject`? A pattern with an
    /// argument never matches a call without a subject.
    pub fn matches(&self, tool: &str, kind: RuleArgument, subject: Option<&str>) -> bool {
        if !self.matches_tool(tool) {
            return false;
        }
        let Some(argument) = &self.argument else {
            return true;
        };
        let Some(subject) = subject else {
            return false;
        };
        match kind {
            RuleArgument::Command => command_glob_matches(&argument.raw, subject),
            // A URL is matched part by part (see `url_pattern`); an
            // argument that is not a URL rule matches no URL.
            RuleArgument::Url => argument.url.as_ref().is_some_and(|u| u.matches(subject)),
            RuleArgument::Path { .. } | RuleArgument::None => argument.path.is_match(subject),
        }
    }
}

impl fmt::Debug for ToolPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ToolPattern({})", self.text)
    }
}

impl PartialEq for ToolPattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

/// What a pattern's argument is matched against for a call whose tool's
/// spec names `kind`: the trimmed command, the normalized path (or the
/// tool's default when the call gives none), the normalized URL.
pub fn call_subject(kind: RuleArgument, args: &Value) -> Option<String> {
    let field = |key: &str| args.get(key).and_then(Value::as_str);
    match kind {
        RuleArgument::Command => field("command").map(|c| c.trim().to_string()),
        RuleArgument::Path { default } => field("path").or(default).map(normalize_path),
        RuleArgument::Url => field("url").map(normalize_url),
        RuleArgument::None => None,
    }
}

/// The URL as `web_fetch` will request it: parsed and printed back, so the
/// host is lower case, the default port is dropped and `/a/../b` is `/b`;
/// `https://docs.rs@evil.example/` is judged with host `evil.example`. A URL
/// that does not parse is judged as written (the tool refuses it anyway).
pub fn normalize_url(url: &str) -> String {
    match reqwest::Url::parse(url.trim()) {
        Ok(parsed) => parsed.to_string(),
        Err(_) => url.trim().to_string(),
    }
}

/// `./a//b/` → `a/b`; `.` stays `.`. Lexical only: `..` is kept for the
/// workspace check to refuse.
/// The path as the tools will resolve it: `.` dropped and `..` folded, so a
/// rule judges `src/../Cargo.toml` as `Cargo.toml`. A path that climbs above
/// the root keeps its leading `..` (the tools refuse it anyway).
pub(super) fn normalize_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

fn command_glob_matches(pattern: &str, command: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix(" *")
        && wildcard_matches(prefix, command)
    {
        return true;
    }
    wildcard_matches(pattern, command)
}

pub(super) fn wildcard_matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Greedy matching with backtracking to the last `*`: linear in practice.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(pattern: &str, tool: &str, args: Value) -> bool {
        let p = ToolPattern::parse(pattern).unwrap();
        let kind = crate::tools::catalog::rule_argument(tool);
        p.matches(tool, kind, call_subject(kind, &args).as_deref())
    }

    // A model that wants a URL no rule allows tries look-alike hosts,
    // userinfo, odd case and dot segments: the rule judges the parsed URL.
    #[test]
    fn url_patterns_judge_the_normalised_url() {
        let rule = "web_fetch(https://docs.rs/**)";
        let fetch = |url: &str| m(rule, "web_fetch", json!({ "url": url }));
        assert!(fetch("https://docs.rs/serde/latest/serde/"));
        assert!(fetch("https://DOCS.rs:443/serde"));
        assert!(fetch("https://docs.rs"));
        assert!(!fetch("https://docs.rs.evil.example/"));
        assert!(!fetch("https://docs.rs@evil.example/"));
        assert!(!fetch("http://docs.rs/serde"));
        assert!(!fetch("https://evil.example/https://docs.rs/"));
        assert!(!m(rule, "web_fetch", json!({})));
    }

    #[test]
    fn command_patterns() {
        assert!(m(
            "exec(cargo test *)",
            "exec",
            json!({"command": "cargo test -p core"})
        ));
        assert!(m(
            "exec(cargo test *)",
            "exec",
            json!({"command": "cargo test"})
        ));
        assert!(!m(
            "exec(cargo test *)",
            "exec",
            json!({"command": "cargo testx"})
        ));
        assert!(!m(
            "exec(cargo test *)",
            "exec",
            json!({"command": "rm -rf / ; cargo test"})
        ));
        assert!(m(
            "exec(git *)",
            "exec",
            json!({"command": "git log --oneline src/x"})
        ));
        assert!(m("exec", "exec", json!({"command": "anything"})));
    }

    #[test]
    fn path_patterns() {
        assert!(m("edit(src/**)", "edit", json!({"path": "src/a/b.rs"})));
        assert!(m("edit(src/**)", "edit", json!({"path": "./src/lib.rs"})));
        assert!(!m("edit(src/**)", "edit", json!({"path": "tests/a.rs"})));
        assert!(!m("edit(src/*)", "edit", json!({"path": "src/a/b.rs"})));
        assert!(m("ls(.)", "ls", json!({})));
    }

    // Regression: `..` was not folded before matching, so `edit(src/**)`
    // allowed `src/../Cargo.toml` and `read(secrets/*)` did not deny
    // `x/../secrets/key`.
    #[test]
    fn path_patterns_judge_the_path_with_dot_dot_folded() {
        assert!(!m(
            "edit(src/**)",
            "edit",
            json!({"path": "src/../Cargo.toml"})
        ));
        assert!(m(
            "edit(src/**)",
            "edit",
            json!({"path": "tests/../src/lib.rs"})
        ));
        assert!(m(
            "read(secrets/*)",
            "read",
            json!({"path": "x/../secrets/key"})
        ));
        assert!(m(
            "read(secrets/*)",
            "read",
            json!({"path": "secrets/./key"})
        ));
        assert!(!m("ls(.)", "ls", json!({"path": "a/../.."})));
    }

    #[test]
    fn tool_name_globs() {
        assert!(m("mcp__github__get_*", "mcp__github__get_issue", json!({})));
        assert!(!m(
            "mcp__github__get_*",
            "mcp__github__create_issue",
            json!({})
        ));
        assert!(!m("read", "write", json!({"path": "a"})));
    }

    #[test]
    fn bad_patterns_say_what_was_expected() {
        for bad in ["exec(cargo", "", "exec()", "ex ec", "read)"] {
            let e = ToolPattern::parse(bad).unwrap_err();
            assert!(!e.reason.is_empty(), "{bad}");
        }
    }

    #[test]
    fn wildcard_backtracks() {
        assert!(wildcard_matches("a*b*c", "axxbyyc"));
        assert!(!wildcard_matches("a*b*c", "axxbyy"));
        assert!(wildcard_matches("*", ""));
    }
}
