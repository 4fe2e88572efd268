//! Properties of the permission policy that must hold for any input.

use agentci::event::Decision;
use agentci::policy::{DefaultDecision, PermissionRules};
use agentci::policy::{PermissionPolicy, ToolPattern};
use proptest::prelude::*;
use serde_json::json;

fn policy(default: DefaultDecision, allow: &[String], deny: &[String]) -> PermissionPolicy {
    let parse = |v: &[String]| v.iter().map(|s| ToolPattern::parse(s).unwrap()).collect();
    PermissionPolicy::new(&PermissionRules {
        default,
        allow: parse(allow),
        deny: parse(deny),
    })
}

fn word() -> impl Strategy<Value = String> {
    // Not a bash keyword or a program that runs another one: those are
    // syntax, or refused under an allow rule, not ordinary program names.
    "[a-z][a-z0-9_-]{0,6}".prop_filter("an ordinary program name", |w| {
        !RESERVED.contains(&w.as_str()) && !agentci::policy::shell::WRAPPERS.contains(&w.as_str())
    })
}

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "coproc",
];

proptest! {
    /// Deny beats allow: a command a deny rule matches is denied whatever the allow rules say.
    #[test]
    fn deny_beats_allow_for_any_command(
        program in word(),
        args in proptest::collection::vec("[ -~]{0,12}", 0..4),
        default_allow in any::<bool>(),
    ) {
        let command = std::iter::once(program.clone()).chain(args).collect::<Vec<_>>().join(" ");
        let p = policy(
            if default_allow { DefaultDecision::Allow } else { DefaultDecision::Deny },
            &["exec".to_string(), format!("exec({program} *)")],
            &[format!("exec({program} *)")],
        );
        let verdict = p.decide("exec", &json!({ "command": command }));
        prop_assert_eq!(verdict.decision, Decision::Deny);
    }

    /// `exec(PREFIX *)` allows exactly the commands that are PREFIX or start with `PREFIX `
    /// (arguments without shell control characters; chained commands are the next property's).
    #[test]
    fn command_prefix_pattern_matches_only_that_program(
        program in word(),
        other in word(),
        rest in "[a-zA-Z0-9 ./=_-]{0,20}",
    ) {
        let p = policy(DefaultDecision::Deny, &[format!("exec({program} *)")], &[]);
        let allowed = |c: &str| p.decide("exec", &json!({ "command": c })).decision == Decision::Allow;
        prop_assert!(allowed(&program));
        let with_args = format!("{program} {rest}");
        prop_assert!(allowed(&with_args));
        if other != program {
            let other_cmd = format!("{other} {rest}");
            prop_assert!(!allowed(&other_cmd), "{} must not be allowed by exec({} *)", other_cmd, program);
        }
    }

    /// An allowed command chained with any other program is not allowed by
    /// the prefix rule, and a denied program is denied wherever it sits in a
    /// chain. (Regression: rules matched the whole line.)
    #[test]
    fn chained_commands_are_judged_one_by_one(
        program in word(),
        other in word(),
        rest in "[a-zA-Z0-9 ./=_-]{0,12}",
        op in prop::sample::select(vec![";", "&&", "||", "|", "&", "\n"]),
    ) {
        prop_assume!(other != program);
        let line = format!("{program} {rest} {op} {other} {rest}");
        let p = policy(DefaultDecision::Deny, &[format!("exec({program} *)")], &[]);
        let verdict = p.decide("exec", &json!({ "command": line }));
        prop_assert_eq!(verdict.decision, Decision::Deny, "{} allowed by exec({} *)", line, program);

        let q = policy(DefaultDecision::Allow, &["exec".to_string()], &[format!("exec({other} *)")]);
        let verdict = q.decide("exec", &json!({ "command": line }));
        prop_assert_eq!(verdict.decision, Decision::Deny, "{} not denied by exec({} *)", line, other);
    }

    /// A path pattern `DIR/**` allows every path under DIR and nothing beside it.
    #[test]
    fn directory_glob_stays_in_its_directory(
        dir in word(),
        sibling in word(),
        parts in proptest::collection::vec(word(), 1..4),
    ) {
        prop_assume!(dir != sibling);
        let p = policy(DefaultDecision::Deny, &[format!("edit({dir}/**)")], &[]);
        let inside = format!("{dir}/{}", parts.join("/"));
        let outside = format!("{sibling}/{}", parts.join("/"));
        prop_assert_eq!(p.decide("edit", &json!({ "path": inside })).decision, Decision::Allow);
        prop_assert_eq!(p.decide("edit", &json!({ "path": outside })).decision, Decision::Deny);
    }
}
