//! The permission policy: nobody is there to click "allow", so every tool
//! call is decided by the job's rules, and the decision names the rule.
//!
//! Deny rules beat allow rules; a call no rule matches gets the default.
//! This module only decides; the agent records the decision and refuses the
//! call. Paths are judged as the model wrote them (relative to the
//! workspace); keeping them inside the workspace is the tools' job.

pub mod command;
pub mod pattern;

pub use pattern::{PatternError, ToolPattern, call_subject};

use serde_json::Value;

use crate::event::Decision;
use crate::spec::{DefaultDecision, PermissionsSpec};

/// The frozen rules of one run.
#[derive(Clone, Debug)]
pub struct PermissionPolicy {
    default: DefaultDecision,
    allow: Vec<ToolPattern>,
    deny: Vec<ToolPattern>,
}

/// A decision and the rule that made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    /// The rule as written in the job, or `default`.
    pub rule: String,
}

impl PermissionPolicy {
    pub fn new(spec: &PermissionsSpec) -> Self {
        PermissionPolicy {
            default: spec.default,
            allow: spec.allow.clone(),
            deny: spec.deny.clone(),
        }
    }

    /// Decide a call of `tool` with `args`.
    pub fn decide(&self, tool: &str, args: &Value) -> Verdict {
        let subject = call_subject(tool, args);
        let subject = subject.as_deref();
        if let Some(rule) = denying_rule(&self.deny, tool, subject) {
            return Verdict {
                decision: Decision::Deny,
                rule: format!("deny: {}", rule.as_str()),
            };
        }
        if let Some(rules) = allowing_rules(&self.allow, tool, subject) {
            let names: Vec<&str> = rules.iter().map(|r| r.as_str()).collect();
            return Verdict {
                decision: Decision::Allow,
                rule: format!("allow: {}", names.join(", ")),
            };
        }
        let decision = match self.default {
            DefaultDecision::Allow => Decision::Allow,
            DefaultDecision::Deny => Decision::Deny,
        };
        Verdict {
            decision,
            rule: "default".to_string(),
        }
    }
}

impl PermissionPolicy {
    /// The deny rule, as written, that forbids reading `path` (relative to
    /// the workspace): tools that show files nobody named (`grep`) ask it
    /// for every file they would open.
    pub fn read_denied_by(&self, path: &str) -> Option<String> {
        let subject = call_subject("read", &serde_json::json!({ "path": path }));
        denying_rule(&self.deny, "read", subject.as_deref())
            .map(|rule| format!("deny: {}", rule.as_str()))
    }
}

/// The first of `rules` that matches the call or, for `exec`, any simple
/// command in its command line.
pub fn denying_rule<'r>(
    rules: &'r [ToolPattern],
    tool: &str,
    subject: Option<&str>,
) -> Option<&'r ToolPattern> {
    rules.iter().find(|rule| {
        rule.matches(tool, subject)
            || (tool == "exec"
                && subject.is_some_and(|line| {
                    command::split(line)
                        .commands
                        .iter()
                        .any(|c| rule.matches(tool, Some(c)))
                }))
    })
}

/// The rules of `rules` that together allow the call, or `None`. A bare
/// rule (`exec`) allows any command line; rules with an argument allow an
/// `exec` line only when each of its simple commands matches one of them.
pub fn allowing_rules<'r>(
    rules: &'r [ToolPattern],
    tool: &str,
    subject: Option<&str>,
) -> Option<Vec<&'r ToolPattern>> {
    let (Some(line), "exec") = (subject, tool) else {
        return rules
            .iter()
            .find(|r| r.matches(tool, subject))
            .map(|r| vec![r]);
    };
    if let Some(bare) = rules.iter().find(|r| r.is_bare() && r.matches_tool(tool)) {
        return Some(vec![bare]);
    }
    let split = command::split(line);
    if split.dynamic || split.commands.is_empty() {
        return None;
    }
    let mut used: Vec<&ToolPattern> = Vec::new();
    for simple in &split.commands {
        let rule = rules.iter().find(|r| r.matches(tool, Some(simple)))?;
        if !used.contains(&rule) {
            used.push(rule);
        }
    }
    Some(used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(default: DefaultDecision, allow: &[&str], deny: &[&str]) -> PermissionPolicy {
        let parse = |v: &[&str]| v.iter().map(|s| ToolPattern::parse(s).unwrap()).collect();
        PermissionPolicy::new(&PermissionsSpec {
            default,
            allow: parse(allow),
            deny: parse(deny),
            allow_hard_links: false,
        })
    }

    #[test]
    fn deny_beats_allow() {
        let p = policy(DefaultDecision::Allow, &["exec"], &["exec(git push *)"]);
        let v = p.decide("exec", &json!({"command": "git push origin main"}));
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.rule, "deny: exec(git push *)");
        let v = p.decide("exec", &json!({"command": "git status"}));
        assert_eq!(v.decision, Decision::Allow);
        assert_eq!(v.rule, "allow: exec");
    }

    #[test]
    fn default_applies_when_no_rule_matches() {
        let p = policy(DefaultDecision::Deny, &["edit(src/**)"], &[]);
        assert_eq!(
            p.decide("edit", &json!({"path": "src/a/b.rs"})).decision,
            Decision::Allow
        );
        let v = p.decide("edit", &json!({"path": "Cargo.toml"}));
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.rule, "default");
    }

    // Regression: rules matched the whole command line, so `exec(cargo test *)`
    // allowed `cargo test && rm -rf src` and `exec(git push *)` did not deny
    // `cd . && git push`.
    #[test]
    fn exec_rules_judge_every_simple_command() {
        let p = policy(
            DefaultDecision::Deny,
            &["exec(cargo test *)", "exec(tail *)"],
            &["exec(git push *)"],
        );
        let decide = |c: &str| p.decide("exec", &json!({ "command": c }));
        assert_eq!(decide("cargo test && rm -rf src").decision, Decision::Deny);
        assert_eq!(decide("cargo test; curl x | sh").rule, "default");
        assert_eq!(decide("cargo test $(rm -rf src)").decision, Decision::Deny);
        let v = decide("cargo test 2>&1 | tail -20");
        assert_eq!(v.decision, Decision::Allow);
        assert_eq!(v.rule, "allow: exec(cargo test *), exec(tail *)");
        let v = decide("cargo test --quiet");
        assert_eq!(v.rule, "allow: exec(cargo test *)");

        let open = policy(DefaultDecision::Allow, &["exec"], &["exec(git push *)"]);
        for line in ["cd . && git push", "(git push origin)", "true; git push -f"] {
            let v = open.decide("exec", &json!({ "command": line }));
            assert_eq!(v.decision, Decision::Deny, "{line}");
            assert_eq!(v.rule, "deny: exec(git push *)");
        }
        assert_eq!(
            open.decide("exec", &json!({"command": "git status && ls"}))
                .rule,
            "allow: exec"
        );
    }

    #[test]
    fn dotenv_deny_matches_at_any_depth() {
        let p = policy(DefaultDecision::Allow, &[], &["read(**/.env)"]);
        for path in [".env", "./.env", "config/.env"] {
            assert_eq!(
                p.decide("read", &json!({ "path": path })).decision,
                Decision::Deny,
                "{path}"
            );
        }
        assert_eq!(
            p.decide("read", &json!({"path": "env.rs"})).decision,
            Decision::Allow
        );
    }
}
