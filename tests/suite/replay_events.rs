//! Replay under a GitHub event. The event that starts a run adds to the
//! prompt (a pull request's title and body, fenced as untrusted; the
//! workspace's memory file fenced as untrusted too), so a cassette recorded
//! without an event must still replay on a `pull_request` run: the replay
//! follows the recording. A cassette recorded with the event keeps it, and
//! when the run's event text differs the divergence names the event, not
//! "agentci's protocol text".
//!
//! Regression: this repository's own CI replayed the demo cassette on every
//! pull request and failed with "agentci's protocol text (system prompt)
//! changed since the recording … re-record with --record".

use serde_json::{Value, json};

use super::examples::run_example_with;
use super::replay_sequence::{sandbox_with, script};
use super::support::fake_model::FakeModel;
use super::support::harness::{Sandbox, events, stderr};
use super::support::job::JobRun;
use super::support::trace_schema::assert_valid_trace;

/// A pull request event payload in `sb`, with `title`; returns its path.
fn pull_request_event(sb: &Sandbox, title: &str) -> String {
    let payload = json!({
        "action": "opened",
        "number": 7,
        "pull_request": {"title": title, "body": "Please merge.", "head": {"ref": "fix"}},
        "repository": {"full_name": "o/r"}
    });
    sb.write("event.json", &payload.to_string())
        .display()
        .to_string()
}

/// The typo-fixing job with a memory file in its workspace, which a pull
/// request fences as untrusted.
fn sandbox(base_url: &str) -> Sandbox {
    let sb = sandbox_with(base_url, "memory: auto\n");
    sb.write("ws/AGENTS.md", "Keep edits small.\n");
    sb
}

/// `agentci run job.yaml` in `sb` with `args`, started by a pull request
/// with this title when one is given.
fn run(sb: &Sandbox, args: &[&str], pull_request: Option<&str>) -> std::process::Output {
    let run = JobRun::new(sb).args(args);
    match pull_request.map(|title| pull_request_event(sb, title)) {
        Some(path) => run
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", &path)
            .output(),
        None => run.output(),
    }
}

/// A cassette recorded live (started by a pull request with this title,
/// if one is given), copied into a fresh sandbox whose job points at no
/// server.
fn recorded(pull_request: Option<&str>) -> Sandbox {
    let model = FakeModel::start(script());
    let live = sandbox(&model.base_url());
    let out = run(&live, &["--record", "cassette.jsonl"], pull_request);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    drop(model);
    let sb = sandbox("http://127.0.0.1:9/v1");
    std::fs::copy(
        live.path().join("cassette.jsonl"),
        sb.path().join("cassette.jsonl"),
    )
    .unwrap();
    sb
}

fn header(sb: &Sandbox) -> Value {
    let text = std::fs::read_to_string(sb.path().join("cassette.jsonl")).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

fn completed(sb: &Sandbox) -> Value {
    let trace = sb.trace("out/trace.jsonl");
    events(&trace, "run.completed")[0].clone()
}

#[test]
fn the_shipped_cassette_replays_on_a_pull_request() {
    let sb = Sandbox::new();
    let event = pull_request_event(&sb, "Fix the adder");
    let pr = [
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_EVENT_PATH", event.as_str()),
    ];
    let (ws, out_dir, out) = run_example_with(
        "fix-failing-test",
        &["--replay", "fixtures/cassettes/fix-failing-test.jsonl"],
        &pr,
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lib = std::fs::read_to_string(ws.path().join("src/lib.rs")).unwrap();
    assert!(lib.contains("a + b"), "{lib}");
    assert_valid_trace(&out_dir.path().join("trace.jsonl"));
}

#[test]
fn a_cassette_recorded_without_an_event_replays_under_one_memory_file_included() {
    let sb = recorded(None);
    assert!(header(&sb).get("event_text").is_none(), "{}", header(&sb));
    let out = run(&sb, &["--replay", "cassette.jsonl"], Some("Fix typo"));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(completed(&sb)["status"], "passed");
    let greeting = std::fs::read_to_string(sb.path().join("ws/greeting.txt")).unwrap();
    assert_eq!(greeting, "hello world\n");
}

#[test]
fn a_cassette_recorded_under_an_event_keeps_it_and_names_it_when_it_differs() {
    let sb = recorded(Some("Fix typo"));
    assert_eq!(header(&sb)["event_text"], true, "{}", header(&sb));

    // The same event: the recording's prompt, so the replay matches.
    let out = run(&sb, &["--replay", "cassette.jsonl"], Some("Fix typo"));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));

    // Another title, or no event at all: the divergence says the untrusted
    // input differs and how to replay, not that agentci's text changed.
    for pull_request in [Some("Rename the greeting"), None] {
        std::fs::write(sb.path().join("ws/greeting.txt"), "hello wrold\n").unwrap();
        let out = run(&sb, &["--replay", "cassette.jsonl"], pull_request);
        assert_ne!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        let reason = completed(&sb)["reason"].as_str().unwrap().to_string();
        assert!(reason.contains("the run's untrusted input"), "{reason}");
        assert!(
            reason.contains("replay under the same GitHub event"),
            "{reason}"
        );
        assert!(!reason.contains("agentci's protocol text"), "{reason}");
        if pull_request.is_none() {
            let shown = reason.replace(&sb.path().display().to_string(), "[SANDBOX]");
            insta::assert_snapshot!("replay_without_the_recorded_event", shown);
        }
    }
}
