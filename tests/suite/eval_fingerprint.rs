//! Re-running `agentci eval` into the same `--out`: an attempt is kept only
//! when nothing that can change its outcome changed (the job, the skill's
//! files, the fixture, the cassette, the model settings, `--base-url`),
//! `--fresh` re-runs everything, and the summary says how many attempts were
//! kept, how many re-run and why.
//!
//! Regression (issue 22): after appending a line to the skill's `SKILL.md`,
//! a second run said "0 attempts to run, 5 kept from before" and passed,
//! while a fresh folder gave 5 errored: the fingerprint covered the job's
//! path and the case fields only.

use std::process::Output;

use super::eval::{eval, notes_sandbox, results};
use super::support::harness::{Sandbox, stderr};

/// The lines of stderr about what was kept and re-run.
fn reuse_lines(out: &Output) -> String {
    stderr(out)
        .lines()
        .filter(|l| l.starts_with("[agentci] eval:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A sandbox whose `out/` holds a finished first run of the notes suite.
fn after_first_run() -> Sandbox {
    let sandbox = notes_sandbox();
    let first = eval(&sandbox, &["suite.yaml", "--out", "out"]);
    assert!(
        stderr(&first).contains("5 attempts to run, 0 kept"),
        "{}",
        stderr(&first)
    );
    sandbox
}

fn append(sandbox: &Sandbox, path: &str, line: &str) {
    let mut text = sandbox.read(path);
    text.push_str(line);
    sandbox.write(path, &text);
}

#[test]
fn nothing_changed_keeps_every_attempt() {
    let sandbox = after_first_run();
    let again = eval(&sandbox, &["suite.yaml", "--out", "out"]);
    assert_eq!(
        reuse_lines(&again),
        "[agentci] eval: 0 attempts to run, 5 kept from before"
    );
    let summary = sandbox.read("out/summary.md");
    assert!(
        summary.contains("5 attempts kept from an earlier run into this folder, 0 run"),
        "{summary}"
    );
    let reuse = &results(&sandbox.path().join("out"))["reuse"];
    assert_eq!(reuse["kept"], 5, "{reuse}");
    assert_eq!(reuse["ran"], 0, "{reuse}");
}

#[test]
fn a_skill_edit_reruns_every_attempt_and_says_so() {
    let sandbox = after_first_run();
    append(&sandbox, "skills/notes-fixer/SKILL.md", "Be brief.\n");
    let again = eval(&sandbox, &["suite.yaml", "--out", "out"]);
    // As a fresh folder would say: the cassettes no longer match the skill.
    assert!(
        stderr(&again).contains("agentci: notes: 0/5 cases passed"),
        "{}",
        stderr(&again)
    );
    insta::assert_snapshot!("eval_fingerprint_skill_edit_progress", reuse_lines(&again));
    let summary = sandbox.read("out/summary.md");
    let line = summary
        .lines()
        .find(|l| l.contains("kept from an earlier run"))
        .unwrap_or_default();
    insta::assert_snapshot!("eval_fingerprint_skill_edit_summary", line);
    let reuse = &results(&sandbox.path().join("out"))["reuse"];
    assert_eq!(reuse["kept"], 0, "{reuse}");
    assert_eq!(reuse["ran"], 5, "{reuse}");
    assert_eq!(reuse["rerun"][0]["attempts"], 5, "{reuse}");
}

#[test]
fn a_further_skill_file_counts_too() {
    let sandbox = after_first_run();
    sandbox.write("skills/notes-fixer/reference.md", "More notes.\n");
    let again = eval(&sandbox, &["suite.yaml", "--out", "out"]);
    assert!(
        reuse_lines(&again)
            .contains("5 re-run: the skill changed (skills/notes-fixer/reference.md)"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn a_changed_fixture_file_reruns() {
    let sandbox = after_first_run();
    append(&sandbox, "fixture/keep.txt", "and me\n");
    let again = eval(&sandbox, &["suite.yaml", "--out", "out"]);
    assert_eq!(
        reuse_lines(&again),
        "[agentci] eval: 5 attempts to run, 0 kept from before\n\
         [agentci] eval: 5 re-run: the fixture changed"
    );
}

#[test]
fn another_base_url_reruns() {
    let sandbox = after_first_run();
    let again = eval(
        &sandbox,
        &[
            "suite.yaml",
            "--out",
            "out",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
    );
    assert_eq!(
        reuse_lines(&again),
        "[agentci] eval: 5 attempts to run, 0 kept from before\n\
         [agentci] eval: 5 re-run: the model settings changed"
    );
}

#[test]
fn fresh_reruns_everything() {
    let sandbox = after_first_run();
    let again = eval(&sandbox, &["suite.yaml", "--out", "out", "--fresh"]);
    assert_eq!(
        reuse_lines(&again),
        "[agentci] eval: 5 attempts to run, 0 kept from before\n\
         [agentci] eval: 5 re-run: --fresh"
    );
}
