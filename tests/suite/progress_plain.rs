//! The plain progress log (`--progress plain`, what a CI log shows) of a real
//! run of the binary against the fake model server, snapshotted with insta:
//! a retry, a plan of two steps, a denied call, a failing tool, a passing and
//! a failing check with its output, and the closing lines; and the log and
//! `summary.md` of an eval. Times, costs, run ids, ports and the sandbox's
//! path are redacted; everything else is the text as printed.

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, stderr};

/// Durations (`0.1s`, `1m02s`), costs, run ids, the fake server's port and
/// the sandbox's path as placeholders.
fn redacted(sb: &Sandbox) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    let root = sb.path().canonicalize().unwrap();
    settings.add_filter(&regex::escape(&root.display().to_string()), "[SANDBOX]");
    settings.add_filter(
        &regex::escape(&sb.path().display().to_string()),
        "[SANDBOX]",
    );
    settings.add_filter(r"\b\d+(\.\d+)?s\b|\b\d+m\d\ds\b", "[TIME]");
    settings.add_filter(r"\$\d+\.\d{4}", "[COST]");
    settings.add_filter(r"\d{8}T\d{6}Z-[0-9a-f]{8}", "[RUN_ID]");
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    settings
}

#[test]
fn plain_progress_log_of_a_failed_run() {
    let model = FakeModel::start(vec![
        Reply::rate_limited("0"),
        Reply::tool_calls(vec![("call_ls", "ls", json!({}))]).with_usage(120, 30),
        Reply::plan(&[
            ("Read the greeting", "the typo is found"),
            ("Fix the typo", "greeting.txt says hello world"),
        ])
        .with_usage(200, 40),
        Reply::tool_calls(vec![
            ("call_read", "read", json!({"path": "greeting.txt"})),
            ("call_missing", "read", json!({"path": "missing.txt"})),
        ])
        .with_usage(260, 20),
        Reply::step_done("found `wrold`").with_usage(300, 10),
        Reply::tool_calls(vec![
            ("call_rm", "exec", json!({"command": "rm -rf greeting.txt"})),
            ("call_false", "exec", json!({"command": "false"})),
            (
                "call_edit",
                "edit",
                json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
            ),
        ])
        .with_usage(340, 60),
        Reply::step_done("fixed the typo").with_usage(400, 10),
        Reply::text("Fixed the typo `wrold` -> `world` in greeting.txt.").with_usage(420, 15),
    ]);
    // One call at a time (`max_parallel_tools: 1`): two reads in a batch
    // would otherwise finish, and be logged, in either order.
    let sb = Sandbox::new();
    sb.write("ws/greeting.txt", "hello wrold\n");
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: fix-greeting
skill: fixer
goal: Fix the typo in greeting.txt.
model:
  provider: openai
  name: fake-model
  base_url: {}
tools: [read, edit, ls, exec]
workspace: ws
skills_path: [skills]
max_parallel_tools: 1
permissions:
  default: allow
  deny: ["exec(rm *)"]
checks:
  - name: greeting fixed
    run: grep -q "hello world" greeting.txt
  - name: style
    run: "echo 'line one of the style report'; echo 'greeting.txt:1 no trailing newline wanted' >&2; exit 3"
"#,
            model.base_url()
        ),
    );
    let out = sb.agentci(&[
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "plain",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let log = stderr(&out);
    // A log file, not a terminal: no bars, no colour.
    assert!(!log.contains('\u{1b}'), "escape codes in the log:\n{log}");
    redacted(&sb).bind(|| insta::assert_snapshot!("plain_progress_failed_run", log));
}

/// The plain log of `agentci eval` over a suite whose cases pass, fail, are
/// flaky and error, one case at a time so the lines come in a fixed order;
/// and the `summary.md` of that eval, which has no baseline to compare with.
#[test]
fn plain_progress_log_and_summary_of_an_eval() {
    let sb = super::eval::notes_sandbox();
    let out = sb.agentci(&[
        "eval",
        "suite.yaml",
        "--out",
        "results",
        "--jobs",
        "1",
        "--min-pass-rate",
        "0",
        "--progress",
        "plain",
    ]);
    // An errored case is not a failed gate: `--min-pass-rate 0` passes.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(!log.contains('\u{1b}'), "escape codes in the log:\n{log}");
    redacted(&sb).bind(|| {
        insta::assert_snapshot!("plain_progress_eval", log);
        insta::assert_snapshot!(
            "eval_summary_without_baseline",
            sb.read("results/summary.md")
        );
    });
}
