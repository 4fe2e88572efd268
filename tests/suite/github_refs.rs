//! Every action and reusable workflow that `.github/` uses names its code
//! by something that cannot move, and no placeholder owner is left for a
//! user to trip over.
//!
//! The rule (docs/github-actions.md, "Pinned actions"): a third-party
//! action or workflow is pinned to a full 40-hex commit SHA, the release it
//! is written as a trailing comment (`# v4.2.2`); a tag or a branch is
//! refused, since its owner can move it to other code (the tj-actions
//! compromise of March 2025 did exactly that to every tag). This project's
//! own action is `./.github/actions/agentci` in its own workflows and
//! `$/.github/actions/agentci` in the reusable eval workflow (the called
//! workflow's own repository at the commit running); a Docker image is
//! pinned by `@sha256:` digest.

use std::path::{Path, PathBuf};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// Every `uses:` value in a parsed workflow or action, wherever it sits
/// (a step, a composite action's step, a job calling a reusable workflow).
fn uses_values(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner) {
                    ("uses", Value::String(used)) => found.push(used.clone()),
                    _ => uses_values(inner, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| uses_values(item, found)),
        _ => {}
    }
}

/// Why `used` breaks the rule, or `None` when it keeps it.
fn unpinned(used: &str) -> Option<&'static str> {
    let sha = regex::Regex::new(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$").expect("regex");
    let digest = regex::Regex::new(r"^docker://[^@\s]+@sha256:[0-9a-f]{64}$").expect("regex");
    if used == "./.github/actions/agentci" || used == "$/.github/actions/agentci" {
        return None;
    }
    if used.starts_with("./") || used.starts_with("$/") {
        return Some("a local action other than ours: add it to the rule or use ours");
    }
    if used.starts_with("docker://") {
        return (!digest.is_match(used)).then_some("a Docker image not pinned by @sha256: digest");
    }
    if used.starts_with("OWNER/") {
        return Some("a placeholder owner");
    }
    (!sha.is_match(used))
        .then_some("not pinned to a full commit SHA (a tag or branch can be moved to other code)")
}

/// Every `.yml`/`.yaml` under `.github/`, as `(path, parsed)`.
fn github_yaml() -> Vec<(PathBuf, Value)> {
    files_under(&Path::new(ROOT).join(".github"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable");
            let value: Value = serde_saphyr::from_str(&text)
                .unwrap_or_else(|e| panic!("{} is not YAML: {e}", p.display()));
            (p, value)
        })
        .collect()
}

#[test]
fn every_action_github_uses_is_pinned_to_a_commit_or_is_ours() {
    let mut checked = 0;
    let mut problems = Vec::new();
    for (path, value) in github_yaml() {
        let mut used = Vec::new();
        uses_values(&value, &mut used);
        for used in used {
            checked += 1;
            if let Some(why) = unpinned(&used) {
                problems.push(format!("{}: `{used}`: {why}", path.display()));
            }
        }
    }
    assert!(checked > 20, "the walk found only {checked} `uses:`");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The reusable eval workflow runs the action of its own commit: `$/`, not
/// `./` (the caller's checkout) and not `OWNER/agentci/…@main` (it said
/// that, so a caller pinning the workflow at a tag ran the action from a
/// placeholder's `main`).
#[test]
fn the_reusable_eval_workflow_runs_its_own_commits_action() {
    let (_, workflow) = github_yaml()
        .into_iter()
        .find(|(p, _)| p.ends_with("workflows/agentci-eval.yml"))
        .expect("the reusable eval workflow");
    let mut used = Vec::new();
    uses_values(&workflow, &mut used);
    let ours: Vec<&String> = used
        .iter()
        .filter(|u| u.contains("actions/agentci"))
        .collect();
    assert_eq!(ours.len(), 3, "{used:?}");
    assert!(
        ours.iter().all(|u| *u == "$/.github/actions/agentci"),
        "{ours:?}"
    );
}

#[test]
fn no_owner_placeholder_is_left_in_github_the_readme_or_the_docs() {
    let mut texts: Vec<(PathBuf, String)> = files_under(&Path::new(ROOT).join(".github"))
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            (p, text)
        })
        .collect();
    texts.extend(super::support::docs::pages());
    let mut found = Vec::new();
    for (path, text) in &texts {
        for (number, line) in text.lines().enumerate() {
            if line.contains("OWNER/") {
                found.push(format!("{}:{}: {line}", path.display(), number + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "placeholder owners (the project is agentci/agentci):\n{}",
        found.join("\n")
    );
}

/// The rule refuses what it should: a check that cannot fail proves nothing.
#[test]
fn the_pin_rule_refuses_tags_branches_and_placeholders() {
    for bad in [
        "actions/checkout@v4",
        "actions/checkout@main",
        "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af68",
        "OWNER/agentci/.github/actions/agentci@main",
        "docker://alpine:3.20",
        "./.github/actions/other",
    ] {
        assert!(unpinned(bad).is_some(), "{bad} passed");
    }
    for good in [
        "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",
        "github/codeql-action/init@11bd71901bbe5b1630ceea73d27597364c9af683",
        "$/.github/actions/agentci",
        "./.github/actions/agentci",
    ] {
        assert_eq!(unpinned(good), None, "{good}");
    }
}
