//! The permission policy: nobody is there to click "allow", so every tool
//! call is decided by the job's rules, and the decision names the rule.
//!
//! Deny rules beat allow rules; a call no rule matches gets the default.
//! This module only decides; the agent records the decision and refuses the
//! call. Paths are judged as the model wrote them (relative to the
//! workspace); keeping them inside the workspace is the tools' job.

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
        if let Some(rule) = self.deny.iter().find(|p| p.matches(tool, subject)) {
            return Verdict {
                decision: Decision::Deny,
                rule: format!("deny: {}", rule.as_str()),
            };
        }
        if let Some(rule) = self.allow.iter().find(|p| p.matches(tool, subject)) {
            return Verdict {
                decision: Decision::Allow,
                rule: format!("allow: {}", rule.as_str()),
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
