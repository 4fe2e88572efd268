//! Judging an `exec` command line by everything bash will do with it.
//!
//! The line is read by [`super::shell`] with a bash grammar. A deny rule
//! stops the call when it matches any simple command however the program is
//! spelled (`rm`, `\rm`, `/bin/rm`, `r''m`, `command rm`, `X=1 rm`), or when
//! a command hides its program (`eval`, `$(…)` as the program name) so the
//! rule cannot be checked. An allow rule with an argument lets a line
//! through only when the line holds no hazard (comments, escapes, quotes
//! inside words, here-documents, assignments, wrappers, paths, patterns or
//! expansions as program names, process substitutions), every simple
//! command matches an allow rule, and every redirection is a write (or a
//! read) the policy allows inside the workspace. When the rules cannot
//! vouch for a line the job's default decides, and the verdict says why.
//!
//! This is a guard on what the model asks for, not a sandbox: a program an
//! allow rule lets run (`cargo test`, `make`) can itself run anything.

use serde_json::{Value, json};

use super::pattern::normalize_path;
use super::shell::{self, ShellLine};
use super::skill_programs::SkillPrograms;
use super::{DefaultDecision, PermissionPolicy, ToolPattern, Verdict};
use crate::event::{Decision, RuleSource};
use crate::tools::RuleArgument;

/// Redirection targets that are not files of the workspace and are harmless.
const HARMLESS_TARGETS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr"];

/// The policy's verdict on `exec` with `args`.
pub(super) fn decide_exec(policy: &PermissionPolicy, line: &str, args: &Value) -> Verdict {
    let exec_rules = |rules: &[ToolPattern]| -> Vec<ToolPattern> {
        rules
            .iter()
            .filter(|r| r.matches_tool("exec"))
            .cloned()
            .collect()
    };
    let (deny, allow) = (exec_rules(&policy.deny), exec_rules(&policy.allow));
    if let Some(rule) = deny.iter().find(|r| r.is_bare()) {
        return deny_by(rule.as_str(), None);
    }
    let bare_allow = allow.iter().find(|r| r.is_bare());
    let file_deny = policy
        .deny
        .iter()
        .any(|r| r.matches_tool("write") || r.matches_tool("read"));
    let judged_by_parts = deny.iter().any(|r| !r.is_bare())
        || file_deny
        || (bare_allow.is_none() && allow.iter().any(|r| !r.is_bare()));
    if !judged_by_parts {
        return match bare_allow {
            Some(rule) => allow_by(vec![rule.as_str().to_string()]),
            None => default(policy, None),
        };
    }
    let parsed = match shell::parse(line) {
        Ok(parsed) => parsed,
        Err(why) => {
            return Verdict {
                decision: Decision::Deny,
                rule: format!("unjudged: the line cannot be read as bash, {why}"),
                source: RuleSource::Default,
                patterns: Vec::new(),
            };
        }
    };
    let cwd = args.get("cwd").and_then(Value::as_str);
    if let Some(verdict) = denied(policy, &deny, &parsed, cwd) {
        return verdict;
    }
    if let Some(rule) = bare_allow {
        return allow_by(vec![rule.as_str().to_string()]);
    }
    match vouch(&allow, &parsed, &policy.skill_programs).and_then(|rules| {
        let files = redirects_allowed(policy, &parsed, cwd)?;
        Ok(rules.into_iter().chain(files).collect::<Vec<_>>())
    }) {
        Ok(rules) => allow_by(rules),
        Err(why) => default(policy, why),
    }
}

/// The rules of `rules` that together allow the line, or `None`: a bare
/// rule allows any line; rules with an argument only a line without
/// hazards whose every simple command one of them matches. Redirections
/// are the policy's to judge, not these rules'.
pub fn allowing_rules<'r>(
    rules: &'r [ToolPattern],
    line: &str,
    programs: &SkillPrograms,
) -> Option<Vec<&'r ToolPattern>> {
    if let Some(bare) = rules.iter().find(|r| r.is_bare() && r.matches_tool("exec")) {
        return Some(vec![bare]);
    }
    let parsed = shell::parse(line).ok()?;
    if !parsed.hazards_with(programs).is_empty() {
        return None;
    }
    matching_rules(rules, &parsed)
}

fn matching_rules<'r>(
    rules: &'r [ToolPattern],
    parsed: &ShellLine,
) -> Option<Vec<&'r ToolPattern>> {
    if parsed.commands.is_empty() {
        return None;
    }
    let mut used: Vec<&ToolPattern> = Vec::new();
    for command in &parsed.commands {
        if command.opaque.is_some() {
            return None;
        }
        let rule = rules
            .iter()
            .find(|r| r.matches("exec", RuleArgument::Command, Some(&command.text)))?;
        if !used.contains(&rule) {
            used.push(rule);
        }
    }
    Some(used)
}

/// The exec rules that vouch for every command, or why they cannot
/// (`None` when no rule matches a command: the plain default).
fn vouch(
    allow: &[ToolPattern],
    parsed: &ShellLine,
    programs: &SkillPrograms,
) -> Result<Vec<String>, Option<String>> {
    if allow.is_empty() {
        return Err(None);
    }
    if let Some(hazard) = parsed.hazards_with(programs).first() {
        let names: Vec<&str> = allow.iter().map(ToolPattern::as_str).collect();
        return Err(Some(format!(
            "{} cannot vouch for this line: {hazard}",
            names.join(", ")
        )));
    }
    let rules = matching_rules(allow, parsed).ok_or(None)?;
    Ok(rules.iter().map(|r| r.as_str().to_string()).collect())
}

/// The deny verdict the line earns, if any.
fn denied(
    policy: &PermissionPolicy,
    deny: &[ToolPattern],
    parsed: &ShellLine,
    cwd: Option<&str>,
) -> Option<Verdict> {
    for command in &parsed.commands {
        for rule in deny {
            if command
                .deny_forms
                .iter()
                .any(|form| rule.matches("exec", RuleArgument::Command, Some(form)))
            {
                return Some(deny_by(rule.as_str(), None));
            }
        }
        if let (Some(why), Some(rule)) = (&command.opaque, deny.first()) {
            return Some(deny_by(
                rule.as_str(),
                Some(format!("{why}, so this rule cannot be checked")),
            ));
        }
    }
    for redirect in &parsed.redirects {
        let tool = if redirect.write { "write" } else { "read" };
        let Some(path) = &redirect.path else {
            if let Some(rule) = policy.deny.iter().find(|r| r.matches_tool(tool)) {
                return Some(deny_by(
                    rule.as_str(),
                    Some(format!(
                        "the redirection target `{}` is only known when the line runs",
                        redirect.raw
                    )),
                ));
            }
            continue;
        };
        if HARMLESS_TARGETS.contains(&path.as_str()) {
            continue;
        }
        let subject = normalize_path(&in_cwd(cwd, path));
        if let Some(rule) = policy
            .deny
            .iter()
            .find(|r| r.matches(tool, RuleArgument::Path { default: None }, Some(&subject)))
        {
            return Some(deny_by(
                rule.as_str(),
                Some(format!("a redirection {tool}s `{subject}`")),
            ));
        }
    }
    None
}

/// The file rules that allow every redirection, or why one is not allowed.
fn redirects_allowed(
    policy: &PermissionPolicy,
    parsed: &ShellLine,
    cwd: Option<&str>,
) -> Result<Vec<String>, Option<String>> {
    let mut rules = Vec::new();
    for redirect in &parsed.redirects {
        let Some(path) = &redirect.path else {
            return Err(Some(format!(
                "the redirection target `{}` is only known when the line runs; name the file",
                redirect.raw
            )));
        };
        if HARMLESS_TARGETS.contains(&path.as_str()) {
            continue;
        }
        let subject = normalize_path(&in_cwd(cwd, path));
        if path.starts_with('/') || subject == ".." || subject.starts_with("../") {
            return Err(Some(format!(
                "the redirection to `{}` reaches outside the workspace; write inside it \
                 (or to /dev/null)",
                redirect.raw
            )));
        }
        let tool = if redirect.write { "write" } else { "read" };
        let verdict = policy.decide(tool, &json!({ "path": subject }));
        if verdict.decision != Decision::Allow {
            return Err(Some(format!(
                "the redirection `{}` is a {tool} of `{subject}`, which the policy denies ({})",
                redirect.raw, verdict.rule
            )));
        }
        if let Some(rule) = verdict.rule.strip_prefix("allow: ")
            && !rules.iter().any(|r| r == rule)
        {
            rules.push(rule.to_string());
        }
    }
    Ok(rules)
}

fn in_cwd(cwd: Option<&str>, path: &str) -> String {
    match cwd {
        Some(dir) if !path.starts_with('/') => format!("{dir}/{path}"),
        _ => path.to_string(),
    }
}

fn deny_by(rule: &str, why: Option<String>) -> Verdict {
    Verdict {
        decision: Decision::Deny,
        rule: match why {
            Some(why) => format!("deny: {rule} ({why})"),
            None => format!("deny: {rule}"),
        },
        source: RuleSource::Deny,
        patterns: vec![rule.to_string()],
    }
}

fn allow_by(rules: Vec<String>) -> Verdict {
    Verdict {
        decision: Decision::Allow,
        rule: format!("allow: {}", rules.join(", ")),
        source: RuleSource::Allow,
        patterns: rules,
    }
}

fn default(policy: &PermissionPolicy, why: Option<String>) -> Verdict {
    let decision = match policy.default {
        DefaultDecision::Allow => Decision::Allow,
        DefaultDecision::Deny => Decision::Deny,
    };
    Verdict {
        decision,
        rule: match why {
            Some(why) if decision == Decision::Deny => format!("default ({why})"),
            _ => "default".to_string(),
        },
        source: RuleSource::Default,
        patterns: Vec::new(),
    }
}
