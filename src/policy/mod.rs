//! The permission policy: nobody is there to click "allow", so every tool
//! call is decided by the job's rules, and the decision names the rule.
//!
//! Deny rules beat allow rules; a call no rule matches gets the default.
//! A `read` deny rule also stops the tools whose result shows the file
//! (`edit` answers with the lines it changed): denying a read means nobody
//! sees the content, whichever tool would show it.
//! This module only decides; the agent records the decision and refuses the
//! call. Paths are judged as the model wrote them (relative to the
//! workspace); keeping them inside the workspace is the tools' job.

pub mod command;
pub mod pattern;
pub mod shell;
pub mod skill_programs;
pub mod url_pattern;

pub use pattern::{PatternError, ToolPattern, call_subject};
pub use skill_programs::SkillPrograms;

use serde_json::Value;

use crate::event::{Decision, RuleSource};
use crate::tools::{FetchPolicy, RuleArgument, ToolSpec, catalog};

/// Builtin tools other than `read` whose result shows a file's content
/// (`edit` returns the edited lines, and its errors tell whether a text is
/// in the file), so `read` deny rules judge them too. `grep` asks
/// [`PermissionPolicy::read_denied_by`] for each file it opens.
const SHOWS_CONTENT: &[&str] = &["edit"];

/// What a call no rule matches gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultDecision {
    Allow,
    Deny,
}

/// The rules a [`PermissionPolicy`] is built from. The policy owns this type;
/// the job's validated `permissions:` converts into it, so the policy does not
/// depend on the job format.
#[derive(Clone, Debug)]
pub struct PermissionRules {
    pub default: DefaultDecision,
    pub allow: Vec<ToolPattern>,
    pub deny: Vec<ToolPattern>,
}

/// The frozen rules of one run.
#[derive(Clone, Debug)]
pub struct PermissionPolicy {
    default: DefaultDecision,
    allow: Vec<ToolPattern>,
    deny: Vec<ToolPattern>,
    /// The sandbox lets children use the network (`sandbox.network`).
    /// `web_fetch` runs in agentci's own process, outside the sandbox, so
    /// without it only URL rules (`web_fetch(https://docs.rs/**)`) open it.
    network: bool,
    /// The loaded skills' folders: an `exec` allow rule may name a program
    /// inside one by its absolute path.
    skill_programs: SkillPrograms,
}

/// `web_fetch` judges every redirect hop as a new call of its own, and
/// reaches a loopback or private address only where a rule names its host.
impl FetchPolicy for PermissionPolicy {
    fn denies_fetch(&self, url: &str) -> Option<String> {
        let verdict = self.decide("web_fetch", &serde_json::json!({ "url": url }));
        (verdict.decision == Decision::Deny).then_some(verdict.rule)
    }

    fn names_host(&self, host: &str) -> bool {
        self.allow
            .iter()
            .filter(|r| r.matches_tool("web_fetch"))
            .any(|r| r.literal_url_host().as_deref() == Some(host))
    }
}

/// A decision and the rule that made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    /// The rule as written in the job, or `default`.
    pub rule: String,
    /// Which list the deciding rule is from.
    pub source: RuleSource,
    /// The deciding patterns as written; empty for the default.
    pub patterns: Vec<String>,
}

impl PermissionPolicy {
    pub fn new(rules: &PermissionRules) -> Self {
        PermissionPolicy {
            default: rules.default,
            allow: rules.allow.clone(),
            deny: rules.deny.clone(),
            network: true,
            skill_programs: SkillPrograms::default(),
        }
    }

    /// The policy for a run whose loaded skills are `programs`' folders:
    /// allow rules may name their scripts by absolute path.
    pub fn with_skill_programs(mut self, programs: SkillPrograms) -> Self {
        self.skill_programs = programs;
        self
    }

    /// The loaded skills' folders, whose scripts rules may name by path.
    pub fn skill_programs(&self) -> &SkillPrograms {
        &self.skill_programs
    }

    /// The policy for a run whose sandbox does (`true`) or does not let
    /// children use the network: without it `web_fetch` is allowed only
    /// by allow rules that name a URL, never by a bare rule or the default.
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// Decide a call of the builtin `tool` with `args`.
    pub fn decide(&self, tool: &str, args: &Value) -> Verdict {
        self.decide_as(tool, catalog::rule_argument(tool), args)
    }

    /// Decide a call of the tool `spec` describes (builtin or not) with `args`.
    pub fn decide_call(&self, spec: &ToolSpec, args: &Value) -> Verdict {
        self.decide_as(&spec.name, spec.rule_argument, args)
    }

    fn decide_as(&self, tool: &str, kind: RuleArgument, args: &Value) -> Verdict {
        let subject = call_subject(kind, args);
        let subject = subject.as_deref();
        if let (Some(line), RuleArgument::Command) = (subject, kind) {
            return command::decide_exec(self, line, args);
        }
        // A deny rule with an argument cannot be checked on a tool whose
        // calls have no subject (an MCP tool); failing open would let
        // `deny: mcp__fs__write_file(.github/**)` deny nothing.
        let unjudgeable =
            |r: &&ToolPattern| kind == RuleArgument::None && !r.is_bare() && r.matches_tool(tool);
        if let Some(verdict) = self.read_denial(tool, kind, subject) {
            return verdict;
        }
        if let Some(rule) = self
            .deny
            .iter()
            .find(|r| r.matches(tool, kind, subject) || unjudgeable(r))
        {
            return Verdict {
                decision: Decision::Deny,
                rule: format!("deny: {}", rule.as_str()),
                source: RuleSource::Deny,
                patterns: vec![rule.as_str().to_string()],
            };
        }
        if let Some(rule) = self
            .allow
            .iter()
            .find(|r| r.matches(tool, kind, subject) && !self.network_closed_to(tool, r))
        {
            return Verdict {
                decision: Decision::Allow,
                rule: format!("allow: {}", rule.as_str()),
                source: RuleSource::Allow,
                patterns: vec![rule.as_str().to_string()],
            };
        }
        if kind == RuleArgument::Url && !self.network {
            return Verdict {
                decision: Decision::Deny,
                rule: format!(
                    "default (`sandbox.network` is false, so `{tool}` reaches only the URLs an \
                     allow rule names, such as `{tool}(https://docs.rs/**)`; a bare rule or \
                     `default: allow` does not open the network)"
                ),
                source: RuleSource::Default,
                patterns: Vec::new(),
            };
        }
        let decision = match self.default {
            DefaultDecision::Allow => Decision::Allow,
            DefaultDecision::Deny => Decision::Deny,
        };
        Verdict {
            decision,
            rule: "default".to_string(),
            source: RuleSource::Default,
            patterns: Vec::new(),
        }
    }

    /// True when `rule` is a bare rule for a tool that fetches URLs while
    /// the network is closed: it does not open it.
    fn network_closed_to(&self, tool: &str, rule: &ToolPattern) -> bool {
        !self.network && rule.is_bare() && catalog::rule_argument(tool) == RuleArgument::Url
    }
}

impl PermissionPolicy {
    /// The denial a `read` deny rule makes of a call of `tool`, a tool whose
    /// result shows the file at `subject`.
    fn read_denial(
        &self,
        tool: &str,
        kind: RuleArgument,
        subject: Option<&str>,
    ) -> Option<Verdict> {
        if !SHOWS_CONTENT.contains(&tool) || !matches!(kind, RuleArgument::Path { .. }) {
            return None;
        }
        let rule = self
            .deny
            .iter()
            .find(|r| r.matches("read", kind, subject))?;
        Some(Verdict {
            decision: Decision::Deny,
            rule: format!(
                "deny: {} (`{tool}` shows the file's content, which this rule keeps unread)",
                rule.as_str()
            ),
            source: RuleSource::Deny,
            patterns: vec![rule.as_str().to_string()],
        })
    }
}

/// What the job allows of one tool, in words the model can act on: for the
/// system prompt and for the message of a denied call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolAllowance {
    /// Every call not denied by a rule (a bare allow rule or `default: allow`).
    Any,
    /// Only calls matching these allow rules, as written in the job.
    Only(Vec<String>),
    /// No call at all.
    None,
}

impl PermissionPolicy {
    /// What the job's rules allow of `tool`.
    pub fn allowance(&self, tool: &str) -> ToolAllowance {
        let rules: Vec<&ToolPattern> = self
            .allow
            .iter()
            .filter(|r| r.matches_tool(tool) && !self.network_closed_to(tool, r))
            .collect();
        let url_tool = catalog::rule_argument(tool) == RuleArgument::Url;
        let default_opens = self.default == DefaultDecision::Allow && (self.network || !url_tool);
        if default_opens || rules.iter().any(|r| r.is_bare()) {
            ToolAllowance::Any
        } else if rules.is_empty() {
            ToolAllowance::None
        } else {
            ToolAllowance::Only(rules.iter().map(|r| r.as_str().to_string()).collect())
        }
    }

    /// The deny rules that name `tool`, as written in the job.
    pub fn denials(&self, tool: &str) -> Vec<String> {
        self.deny
            .iter()
            .filter(|r| r.matches_tool(tool))
            .map(|r| r.as_str().to_string())
            .collect()
    }

    /// The deny rule, as written, that forbids reading `path` (relative to
    /// the workspace): tools that show files nobody named (`grep`) ask it
    /// for every file they would open.
    pub fn read_denied_by(&self, path: &str) -> Option<String> {
        let kind = RuleArgument::Path { default: None };
        let subject = call_subject(kind, &serde_json::json!({ "path": path }));
        self.deny
            .iter()
            .find(|rule| rule.matches("read", kind, subject.as_deref()))
            .map(|rule| format!("deny: {}", rule.as_str()))
    }
}

/// Why no allow rule with an argument can vouch for the `exec` line
/// `line` whatever it names (its first hazard), or `None`.
pub fn exec_hazard(line: &str, programs: &SkillPrograms) -> Option<String> {
    match shell::parse(line) {
        Ok(parsed) => parsed.hazards_with(programs).into_iter().next(),
        Err(why) => Some(format!("the line cannot be read as bash, {why}")),
    }
}

/// The rules of `rules` that together allow the call, or `None`. A bare
/// rule (`exec`) allows any command line; rules with an argument allow an
/// `exec` line only as [`command::allowing_rules`] says.
pub fn allowing_rules<'r>(
    rules: &'r [ToolPattern],
    tool: &str,
    kind: RuleArgument,
    subject: Option<&str>,
    programs: &SkillPrograms,
) -> Option<Vec<&'r ToolPattern>> {
    match (subject, kind) {
        (Some(line), RuleArgument::Command) => command::allowing_rules(rules, line, programs),
        _ => rules
            .iter()
            .find(|r| r.matches(tool, kind, subject))
            .map(|r| vec![r]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(default: DefaultDecision, allow: &[&str], deny: &[&str]) -> PermissionPolicy {
        let parse = |v: &[&str]| v.iter().map(|s| ToolPattern::parse(s).unwrap()).collect();
        PermissionPolicy::new(&PermissionRules {
            default,
            allow: parse(allow),
            deny: parse(deny),
        })
    }

    fn mcp_spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            read_only: false,
            rule_argument: RuleArgument::None,
            changes_files: false,
        }
    }

    // Tools from MCP servers are judged by their spec: names and globs match,
    // and an argument rule, which cannot be checked, denies rather than
    // letting every call through.
    #[test]
    fn tools_without_a_subject_are_judged_by_name() {
        let p = policy(
            DefaultDecision::Deny,
            &["mcp__github__get_*", "mcp__fs__write_file(docs/**)"],
            &["mcp__fs__delete(tmp/**)"],
        );
        let args = json!({"path": "docs/a.md"});
        let v = p.decide_call(&mcp_spec("mcp__github__get_issue"), &args);
        assert_eq!(v.rule, "allow: mcp__github__get_*");
        let v = p.decide_call(&mcp_spec("mcp__github__create_issue"), &args);
        assert_eq!(v.rule, "default");
        let v = p.decide_call(&mcp_spec("mcp__fs__write_file"), &args);
        assert_eq!(v.decision, Decision::Deny);
        let v = p.decide_call(&mcp_spec("mcp__fs__delete"), &json!({"path": "tmp/x"}));
        assert_eq!(v.rule, "deny: mcp__fs__delete(tmp/**)");
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
        assert_eq!(decide("cargo test; curl x").rule, "default");
        // `sh` reading its script from a pipe hides what it runs from the deny rule.
        assert!(
            decide("cargo test; curl x | sh")
                .rule
                .starts_with("deny: exec(git push *) (`sh` runs a string")
        );
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

    // Regression: `edit(src/**)` allowed `edit src/.env` under
    // `read(**/.env)`, and the edit's snippet showed the password.
    #[test]
    fn read_deny_rules_stop_edits_that_would_show_the_file() {
        let p = policy(DefaultDecision::Deny, &["edit(src/**)"], &["read(**/.env)"]);
        let v = p.decide("edit", &json!({"path": "src/.env"}));
        assert_eq!(v.decision, Decision::Deny);
        assert!(
            v.rule.starts_with("deny: read(**/.env) (`edit` shows"),
            "{}",
            v.rule
        );
        assert_eq!(v.patterns, ["read(**/.env)"]);
        let v = p.decide("edit", &json!({"path": "src/main.rs"}));
        assert_eq!(v.decision, Decision::Allow);
        // A write shows nothing of the file: write rules alone decide it.
        let p = policy(
            DefaultDecision::Deny,
            &["write(src/**)"],
            &["read(**/.env)"],
        );
        assert_eq!(
            p.decide("write", &json!({"path": "src/.env"})).decision,
            Decision::Allow
        );
    }

    // `web_fetch` runs outside the sandbox: without the network only a rule
    // naming a URL opens it.
    #[test]
    fn without_the_network_web_fetch_needs_a_url_rule() {
        let rules = policy(
            DefaultDecision::Allow,
            &["web_fetch", "web_fetch(https://docs.rs/**)"],
            &[],
        );
        let closed = rules.clone().with_network(false);
        let fetch = |p: &PermissionPolicy, url: &str| p.decide("web_fetch", &json!({ "url": url }));
        let v = fetch(&closed, "https://example.com/");
        assert_eq!(v.decision, Decision::Deny);
        assert!(v.rule.contains("sandbox.network"), "{}", v.rule);
        let v = fetch(&closed, "https://docs.rs/serde/");
        assert_eq!(v.rule, "allow: web_fetch(https://docs.rs/**)");
        assert_eq!(
            closed.allowance("web_fetch"),
            ToolAllowance::Only(vec!["web_fetch(https://docs.rs/**)".into()])
        );
        assert_eq!(
            fetch(&rules, "https://example.com/").decision,
            Decision::Allow
        );
        assert_eq!(rules.allowance("web_fetch"), ToolAllowance::Any);
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

    // Regression: `cargo test > /tmp/x` passed `exec(cargo test *)` and
    // wrote outside the workspace; a redirection is a write.
    #[test]
    fn redirections_are_judged_as_writes() {
        let p = policy(
            DefaultDecision::Deny,
            &["exec(cargo test *)", "write(target/**)"],
            &["write(target/secret)"],
        );
        let decide = |c: &str| p.decide("exec", &json!({ "command": c }));
        let v = decide("cargo test > /tmp/x");
        assert_eq!(v.decision, Decision::Deny);
        assert!(v.rule.contains("outside the workspace"), "{}", v.rule);
        let v = decide("cargo test > src/x.rs");
        assert_eq!(v.decision, Decision::Deny);
        assert!(v.rule.contains("write of `src/x.rs`"), "{}", v.rule);
        let v = decide("cargo test > target/log 2>&1");
        assert_eq!(v.rule, "allow: exec(cargo test *), write(target/**)");
        assert_eq!(decide("cargo test 2>/dev/null").decision, Decision::Allow);
        assert_eq!(
            decide("cargo test > target/secret").rule,
            "deny: write(target/secret) (a redirection writes `target/secret`)"
        );
        let v = p.decide(
            "exec",
            &json!({"command": "cargo test > log", "cwd": "target"}),
        );
        assert_eq!(v.decision, Decision::Allow);
    }

    #[test]
    fn an_allow_rule_does_not_vouch_for_what_it_cannot_read() {
        let p = policy(
            DefaultDecision::Deny,
            &["exec(cargo test *)", "exec(ls*)"],
            &[],
        );
        for (line, why) in [
            ("cargo test #'\ntouch /tmp/x", "comment"),
            ("cargo test # done", "comment"),
            ("ls \\>&touch /tmp/x", "escape"),
            ("X=1 cargo test", "assignment"),
            ("command cargo test", "runs another command"),
        ] {
            let v = p.decide("exec", &json!({ "command": line }));
            assert_eq!(v.decision, Decision::Deny, "{line}");
            assert!(
                v.rule
                    .starts_with("default (exec(cargo test *), exec(ls*) cannot vouch"),
                "{}",
                v.rule
            );
            assert!(v.rule.contains(why), "{line}: {}", v.rule);
        }
        let v = p.decide("exec", &json!({"command": "cargo test ("}));
        assert_eq!(v.decision, Decision::Deny);
        assert!(
            v.rule
                .starts_with("unjudged: the line cannot be read as bash"),
            "{}",
            v.rule
        );
    }

    // Regression: deny rules were stepped around by spelling the program
    // another way.
    #[test]
    fn deny_rules_match_the_program_however_it_is_spelled() {
        let p = policy(DefaultDecision::Allow, &["exec"], &["exec(rm *)"]);
        for line in [
            "\\rm -rf src",
            "/bin/rm -rf src",
            "command rm -rf src",
            "env rm -rf src",
            "X=1 rm -rf src",
            "r''m -rf src",
            "true &&>/dev/null rm -rf src",
            "eval 'r''m x'",
            "$(echo rm) -rf src",
            "echo $(rm -rf src)",
            "f() { rm -rf src; }; f",
        ] {
            let v = p.decide("exec", &json!({ "command": line }));
            assert_eq!(v.decision, Decision::Deny, "{line}");
            assert!(v.rule.starts_with("deny: exec(rm *)"), "{line}: {}", v.rule);
        }
        let v = p.decide("exec", &json!({"command": "git commit -m 'rm it' && ls"}));
        assert_eq!(v.decision, Decision::Allow);
    }

    // Regression (issue 22, item 6): `exec(/…/scripts/with_server.py *)`
    // could never allow anything, though the rule named the script.
    #[test]
    fn an_allow_rule_names_a_skill_script_by_absolute_path() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let skill = root.join("skills/web");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::fs::write(skill.join("scripts/with_server.py"), "").unwrap();
        let script = skill.join("scripts/with_server.py").display().to_string();
        let rule = format!("exec({script} *)");
        let p = policy(DefaultDecision::Deny, &[&rule, "exec(python3 *)"], &[])
            .with_skill_programs(SkillPrograms::new(&root.join("ws"), [skill.as_path()]));
        let decide = |command: String| p.decide("exec", &json!({ "command": command }));
        let verdict = decide(format!("{script} --port 8000 -- python3 test.py"));
        assert_eq!(verdict.decision, Decision::Allow, "{verdict:?}");
        assert_eq!(verdict.patterns, std::slice::from_ref(&rule));
        // Without the skill loaded the same rule vouches for nothing.
        let bare = policy(DefaultDecision::Deny, &[&rule], &[]);
        let verdict = bare.decide("exec", &json!({ "command": script }));
        assert_eq!(verdict.decision, Decision::Deny);
        assert!(
            verdict
                .rule
                .contains("by its absolute path inside the skill's folder"),
            "{verdict:?}"
        );
        // A path that climbs out of the skill folder is not its script.
        let climbed = format!("{}/scripts/../../../ws/x.py", skill.display());
        std::fs::write(root.join("ws/x.py"), "").unwrap();
        let verdict = decide(climbed);
        assert_eq!(verdict.decision, Decision::Deny);
        assert!(
            verdict.rule.contains("not a file inside a skill folder"),
            "{verdict:?}"
        );
    }
}
