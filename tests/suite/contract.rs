//! What agentci sends and writes is a contract that changes only on
//! purpose: snapshots (insta) of the shipped example run — the requests the
//! model is sent, the JSONL trace, the JUnit file and the GitHub step
//! summary — with times, durations, paths and ids redacted.
//!
//! The example is `workflows/fix-failing-test.yaml` on a copy of
//! `fixtures/calc`, driven against the fake model server with the script
//! its cassette was recorded from ([`fix_failing_test_batched_script`]). A change to
//! the protocol, the prompts, an event or a report shows up here as a diff:
//! review it, then accept it with `cargo insta review` (or
//! `INSTA_UPDATE=always cargo test --test all suite::contract`).

use std::path::PathBuf;

use serde_json::Value;

use super::examples::fix_failing_test_batched_script;
use super::support::fake_model::FakeModel;
use super::support::harness::{agentci_in, copy_tree, read_jsonl, stderr};
use super::support::redact::redacted;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Everything one run of the example produced.
struct ExampleRun {
    requests: Vec<Value>,
    trace: Vec<Value>,
    junit: String,
    summary: String,
    /// Kept alive until the snapshots are taken; their paths are redacted.
    _dirs: Vec<tempfile::TempDir>,
    settings: insta::Settings,
}

fn run_example() -> ExampleRun {
    let ws = tempfile::tempdir().unwrap();
    copy_tree(&repo().join("fixtures/calc"), ws.path());
    let out = tempfile::tempdir().unwrap();
    let github = tempfile::tempdir().unwrap();
    let summary_path = github.path().join("step_summary.md");
    let model = FakeModel::start(fix_failing_test_batched_script());
    let ws_path = ws.path().canonicalize().unwrap();
    let out_path = out.path().canonicalize().unwrap();
    let result = agentci_in(
        &repo(),
        &[
            "run",
            "workflows/fix-failing-test.yaml",
            "--workspace",
            &ws_path.display().to_string(),
            "--out",
            &out_path.display().to_string(),
            "--base-url",
            &model.base_url(),
            "--progress",
            "none",
        ],
        &[
            ("OPENAI_API_KEY", "sk-contract-test"),
            (
                "CARGO_TARGET_DIR",
                &ws_path.join("target").display().to_string(),
            ),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", &summary_path.display().to_string()),
            (
                "GITHUB_OUTPUT",
                &github.path().join("output").display().to_string(),
            ),
            ("GITHUB_WORKSPACE", &repo().display().to_string()),
        ],
    );
    assert_eq!(result.status.code(), Some(0), "stderr: {}", stderr(&result));
    assert_eq!(model.remaining(), 0);

    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_snapshot_path(repo().join("tests/suite/snapshots"));
    // Paths: the temporary workspace and run folder, then the checkout.
    for (path, name) in [
        (&ws_path, "[WORKSPACE]"),
        (&out_path, "[OUT]"),
        (&repo(), "[REPO]"),
    ] {
        settings.add_filter(&regex::escape(&path.display().to_string()), name);
    }
    settings.add_filter(r"127\.0\.0\.1:\d+", "[MODEL_SERVER]");
    // What cargo prints that changes from run to run: timings and binary hashes.
    settings.add_filter(r"\b\d+(\.\d+)?m?s\b", "[DURATION]");
    settings.add_filter(r"-[0-9a-f]{16}\b", "-[HASH]");
    // libtest runs tests in parallel: thread ids and the order of its
    // progress marks before the failures vary from run to run.
    settings.add_filter(r"thread '([^']*)' \(\d+\)", "thread '$1' ([thread])");
    settings.add_filter(
        r#"running (\d+) tests(\\n|\n)[^"]*?(\\n|\n)failures:"#,
        "running $1 tests$2[progress]$3failures:",
    );
    ExampleRun {
        requests: model.requests(),
        trace: read_jsonl(&out_path.join("trace.jsonl")),
        junit: std::fs::read_to_string(out_path.join("junit.xml")).unwrap(),
        summary: std::fs::read_to_string(&summary_path).unwrap(),
        _dirs: vec![ws, out, github],
        settings,
    }
}

#[test]
fn the_example_run_is_a_reviewed_contract() {
    let run = run_example();
    run.settings.bind(|| {
        insta::assert_json_snapshot!("model_requests", run.requests);
        let trace = Value::Array(run.trace.clone());
        insta::assert_json_snapshot!(
            "trace",
            redacted(
                &trace,
                &[
                    ("[].ts", "[ts]"),
                    ("[].run_id", "[run_id]"),
                    ("[].agentci_version", "[version]"),
                    ("[].duration_ms", "[ms]"),
                    ("[].latency_ms", "[ms]"),
                    ("[].totals.duration_ms", "[ms]"),
                    ("[].data.duration_ms", "[ms]"),
                    // The output varies in length (thread ids, progress marks).
                    ("[].data.stdout_bytes", "[bytes]"),
                    ("[].data.stderr_bytes", "[bytes]"),
                ],
            )
        );
        insta::assert_snapshot!("junit", redact_junit(&run.junit));
        insta::assert_snapshot!("step_summary", run.summary);
    });
}

/// The JUnit file with its timestamp and times redacted.
fn redact_junit(xml: &str) -> String {
    let timestamp = regex::Regex::new(r#"timestamp="[^"]*""#).unwrap();
    let time = regex::Regex::new(r#"\btime="[^"]*""#).unwrap();
    let run_id = regex::Regex::new(r"runs/[0-9A-Za-z_-]+/").unwrap();
    let xml = timestamp.replace_all(xml, r#"timestamp="[timestamp]""#);
    let xml = time.replace_all(&xml, r#"time="[time]""#);
    run_id.replace_all(&xml, "runs/[run_id]/").into_owned()
}
