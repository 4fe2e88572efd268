//! What `agentci eval` tells GitHub Actions, snapshotted with insta: its
//! stdout in the job's log (the summary Markdown, then an `::error` workflow
//! command per case that did not pass) and the `$GITHUB_OUTPUT` lines. The
//! step summary is `summary.md`, snapshotted in `progress_plain.rs`. Times, the sandbox's path and the output
//! delimiter are redacted.

use super::support::harness::{agentci_in, stderr, stdout};

#[test]
fn eval_annotations_and_outputs_for_github() {
    let sb = super::eval::notes_sandbox();
    let summary = sb.path().join("step-summary.md").display().to_string();
    let outputs = sb.path().join("github-output").display().to_string();
    let out = agentci_in(
        sb.path(),
        &[
            "eval",
            "suite.yaml",
            "--out",
            "results",
            "--jobs",
            "1",
            "--min-pass-rate",
            "0",
            "--progress",
            "none",
        ],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", &summary),
            ("GITHUB_OUTPUT", &outputs),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut settings = insta::Settings::clone_current();
    let root = sb.path().canonicalize().unwrap();
    settings.add_filter(&regex::escape(&root.display().to_string()), "[SANDBOX]");
    settings.add_filter(
        &regex::escape(&sb.path().display().to_string()),
        "[SANDBOX]",
    );
    settings.add_filter(r"\b\d+(\.\d+)?s\b", "[TIME]");
    settings.add_filter(r"ghadelimiter_[0-9a-f]+", "[DELIMITER]");
    settings.bind(|| {
        insta::assert_snapshot!("eval_github_stdout", stdout(&out));
        insta::assert_snapshot!("eval_github_outputs", sb.read("github-output"));
    });
}
