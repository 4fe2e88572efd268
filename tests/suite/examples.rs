//! The repository's own examples: the workflows in `workflows/` replayed from
//! the cassettes in `fixtures/cassettes/` on a copy of `fixtures/calc`, as the
//! README's first command does.
//!
//! The cassettes are scripted sessions recorded against the fake model
//! server; `cargo test -- --ignored regenerate_example_cassettes` records them
//! again after an intended change to what the model sees.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{agentci_in, events, read_jsonl, stderr, stdout};
use super::support::trace_schema::assert_valid_trace;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh copy of `fixtures/calc` in a temporary folder.
fn calc_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("fixtures/calc"), dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Run a workflow on a copy of the fixture with `model_args` (`--replay` or `--record`).
pub(super) fn run_example(
    workflow: &str,
    model_args: &[&str],
) -> (tempfile::TempDir, tempfile::TempDir, std::process::Output) {
    run_example_with(workflow, model_args, &[])
}

/// [`run_example`] with these environment variables set as well.
pub(super) fn run_example_with(
    workflow: &str,
    model_args: &[&str],
    env: &[(&str, &str)],
) -> (tempfile::TempDir, tempfile::TempDir, std::process::Output) {
    let ws = calc_copy();
    let out_dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "run".to_string(),
        format!("workflows/{workflow}.yaml"),
        "--workspace".to_string(),
        ws.path().display().to_string(),
        "--out".to_string(),
        out_dir.path().display().to_string(),
        "--progress".to_string(),
        "plain".to_string(),
    ];
    args.extend(model_args.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let target = ws.path().join("target").display().to_string();
    let mut env = env.to_vec();
    env.push(("CARGO_TARGET_DIR", &target));
    let out = agentci_in(&repo(), &args, &env);
    (ws, out_dir, out)
}

#[test]
fn fix_failing_test_example_replays_offline() {
    let (ws, out_dir, out) = run_example(
        "fix-failing-test",
        &["--replay", "fixtures/cassettes/fix-failing-test.jsonl"],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lib = std::fs::read_to_string(ws.path().join("src/lib.rs")).unwrap();
    assert!(lib.contains("a + b") && !lib.contains("a - b"), "{lib}");
    assert!(stdout(&out).contains("Fixed `add`"), "{}", stdout(&out));
    let trace_path = out_dir.path().join("trace.jsonl");
    assert_valid_trace(&trace_path);
    let trace = read_jsonl(&trace_path);
    assert_eq!(
        events(&trace, "plan.created")[0]["steps"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let tools: Vec<&str> = events(&trace, "tool.call")
        .iter()
        .map(|e| e["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools, vec!["ls", "grep", "read", "exec", "edit", "exec"]);
    let checks = events(&trace, "check.completed");
    assert_eq!(checks[0]["outcome"], "passed");
    // The first `cargo test` really failed and the second really passed: the
    // tools ran against the workspace, only the model was replayed.
    let exec_results: Vec<bool> = events(&trace, "tool.result")
        .iter()
        .filter(|e| e["tool"] == "exec")
        .map(|e| e["ok"].as_bool().unwrap())
        .collect();
    assert_eq!(exec_results, vec![false, true]);
}

#[test]
fn write_changelog_example_replays_offline() {
    let (ws, _out, out) = run_example(
        "write-changelog",
        &["--replay", "fixtures/cassettes/write-changelog.jsonl"],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let changelog = std::fs::read_to_string(ws.path().join("CHANGELOG.md")).unwrap();
    assert!(
        changelog.contains("### Fixed\n- `add` now returns the sum"),
        "{changelog}"
    );
}

/// The scripted session behind `fixtures/cassettes/fix-failing-test.jsonl`.
pub(super) fn fix_failing_test_script() -> Vec<Reply> {
    vec![
        Reply::tool_calls(vec![
            ("call_1", "ls", json!({})),
            (
                "call_2",
                "grep",
                json!({"pattern": "fn add", "path": "src"}),
            ),
        ]),
        Reply::tool_calls(vec![("call_3", "read", json!({"path": "src/lib.rs"}))]),
        Reply::plan(&[
            (
                "Reproduce the failure",
                "cargo test shows which test fails and why",
            ),
            (
                "Fix the code under test",
                "add returns the sum of its arguments",
            ),
            ("Confirm the fix", "cargo test passes"),
        ]),
        Reply::tool_calls(vec![(
            "call_5",
            "exec",
            json!({"command": "cargo test --quiet"}),
        )]),
        Reply::step_done("tests::adds fails: add(2, 3) returns -1 instead of 5"),
        Reply::tool_calls(vec![(
            "call_7",
            "edit",
            json!({"path": "src/lib.rs", "old_text": "    a - b", "new_text": "    a + b"}),
        )]),
        Reply::step_done("add now returns a + b"),
        Reply::tool_calls(vec![(
            "call_9",
            "exec",
            json!({"command": "cargo test --quiet"}),
        )]),
        Reply::step_done("cargo test passes"),
        Reply::text(
            "Fixed `add` in src/lib.rs: it subtracted its arguments (`a - b`) instead of adding \
             them, which made `tests::adds` fail. Checked: `cargo test --quiet` failed before the \
             fix (add(2, 3) returned -1) and passes after it. Left: nothing.",
        ),
    ]
}

/// The scripted session behind `fixtures/cassettes/write-changelog.jsonl`.
pub(super) fn write_changelog_script() -> Vec<Reply> {
    vec![
        Reply::tool_calls(vec![("call_1", "read", json!({"path": "CHANGELOG.md"}))]),
        Reply::plan(&[
            (
                "Add the entry",
                "a Fixed section with one bullet under ## Unreleased",
            ),
            (
                "Check the result",
                "the entry is in place and released sections are unchanged",
            ),
        ]),
        Reply::tool_calls(vec![(
            "call_3",
            "edit",
            json!({
                "path": "CHANGELOG.md",
                "old_text": "## Unreleased\n",
                "new_text": "## Unreleased\n\n### Fixed\n- `add` now returns the sum of its arguments; it returned their difference.\n"
            }),
        )]),
        Reply::step_done("added a Fixed entry under Unreleased"),
        Reply::tool_calls(vec![(
            "call_5",
            "read",
            json!({"path": "CHANGELOG.md", "limit": 14}),
        )]),
        Reply::step_done("the entry is under Unreleased; 0.1.0 is unchanged"),
        Reply::text(
            "Added a `### Fixed` entry under `## Unreleased` in CHANGELOG.md for the `add` fix.",
        ),
    ]
}

#[test]
#[ignore = "rewrites fixtures/cassettes; run after an intended protocol change"]
fn regenerate_example_cassettes() {
    for (workflow, script) in [
        ("fix-failing-test", fix_failing_test_script()),
        ("write-changelog", write_changelog_script()),
    ] {
        let model = FakeModel::start(script);
        let cassette = repo().join(format!("fixtures/cassettes/{workflow}.jsonl"));
        std::fs::create_dir_all(cassette.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&cassette);
        let (_ws, _out, out) = run_example(
            workflow,
            &[
                "--model",
                "openai:scripted-example",
                "--base-url",
                &model.base_url(),
                "--record",
                &cassette.display().to_string(),
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{workflow}: {}", stderr(&out));
    }
}
