//! `agentci trace show` and `agentci trace summary` on traces of real runs
//! of the binary against the fake model server: the text a person reads
//! (plain and `--full`) and the step summary Markdown are snapshotted with
//! times, paths and versions redacted; `--json` is checked field by field;
//! traces cut by a kill, damaged, from a newer agentci or holding events
//! this version does not know are read without a panic and say so.

use std::path::{Path, PathBuf};
use std::process::Output;

use regex::Regex;
use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, stderr, stdout};

/// A run with a retry, a denied call, two plan steps, one passing and one
/// failing check: most of what `trace show` has to show.
fn run_fixture() -> (Sandbox, PathBuf) {
    let model = FakeModel::start(vec![
        Reply::rate_limited("0"),
        Reply::tool_calls(vec![("call_ls", "ls", json!({}))]).with_usage(120, 30),
        Reply::plan(&[
            ("Read the greeting", "the typo is found"),
            ("Fix the typo", "greeting.txt says hello world"),
        ])
        .with_usage(200, 40),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))])
            .with_usage(260, 20),
        Reply::step_done("found `wrold`").with_usage(300, 10),
        Reply::tool_calls(vec![
            ("call_rm", "exec", json!({"command": "rm -rf greeting.txt"})),
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
budget:
  max_turns: 20
  max_tool_calls: 30
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
    let out = agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "trace.jsonl",
            "--progress",
            "none",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let trace = sb.path().join("trace.jsonl");
    (sb, trace)
}

fn trace_cmd(sb: &Sandbox, args: &[&str]) -> Output {
    let mut all = vec!["trace"];
    all.extend_from_slice(args);
    agentci_in(sb.path(), &all, &[])
}

/// Times, the sandbox's path, run ids, the fake server's port and the
/// version replaced by placeholders.
pub(super) fn redact(text: &str, sb: &Sandbox) -> String {
    let root = sb.path().canonicalize().unwrap();
    let text = text
        .replace(&root.display().to_string(), "<sandbox>")
        .replace(&sb.path().display().to_string(), "<sandbox>")
        .replace(env!("CARGO_PKG_VERSION"), "<version>");
    let times = Regex::new(r"\b\d+(\.\d+)?s\b|\b\d+m\d\ds\b").unwrap();
    let text = times.replace_all(&text, "<time>");
    let run_ids = Regex::new(r"\d{8}T\d{6}Z-[0-9a-f]{8}").unwrap();
    let text = run_ids.replace_all(&text, "<run-id>");
    let ports = Regex::new(r"127\.0\.0\.1:\d+").unwrap();
    ports.replace_all(&text, "127.0.0.1:<port>").into_owned()
}

/// The system prompt and the goal message are the protocol's text, owned
/// and snapshotted elsewhere: here only that they were sent.
fn without_prompt_bodies(text: &str) -> String {
    let mut out = Vec::new();
    let mut skipping: Option<(String, usize)> = None;
    for line in text.lines() {
        if let Some((role, count)) = &mut skipping {
            if line.starts_with("      │ ") {
                *count += 1;
                continue;
            }
            // Not the line count either: it changes with every prompt edit.
            if *count > 0 {
                out.push(format!("      │ <{role} text>"));
            }
            skipping = None;
        }
        let role = line.trim();
        if role == "[system]" || role == "[user]" {
            skipping = Some((role.trim_matches(['[', ']']).to_string(), 0));
        }
        out.push(line.to_string());
    }
    out.join("\n") + "\n"
}

#[test]
fn trace_show_prints_the_run_for_a_person() {
    let (sb, _) = run_fixture();
    let out = trace_cmd(&sb, &["show", "trace.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // What the run is about, read without the snapshot.
    assert!(
        text.starts_with("run fix-greeting: failed (exit 1)\n"),
        "{text}"
    );
    assert!(text.contains("retry: attempt 1 of"), "{text}");
    assert!(text.contains("denied (deny: exec(rm *))"), "{text}");
    insta::assert_snapshot!("trace_show", redact(&text, &sb));
}

#[test]
fn trace_show_full_adds_what_the_model_was_sent() {
    let (sb, _) = run_fixture();
    let out = trace_cmd(&sb, &["show", "--full", "trace.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // Every tool result the model received is there, as it received it.
    assert!(text.contains("[tool result call_read]"), "{text}");
    assert!(text.contains("      │      1\thello wrold"), "{text}");
    assert!(text.contains("PERMISSION_DENIED"), "{text}");
    // The system prompt goes once, on the first request.
    assert_eq!(text.matches("[system]").count(), 2, "{text}");
    insta::assert_snapshot!(
        "trace_show_full",
        redact(&without_prompt_bodies(&text), &sb)
    );
}

#[test]
fn trace_summary_prints_the_step_summary_markdown() {
    let (sb, _) = run_fixture();
    let out = trace_cmd(&sb, &["summary", "trace.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    insta::assert_snapshot!("trace_summary", redact(&stdout(&out), &sb));
}

#[test]
fn trace_show_json_is_one_object_for_tools() {
    let (sb, _) = run_fixture();
    let out = trace_cmd(&sb, &["show", "--json", "trace.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let view: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(view["status"], "failed");
    assert_eq!(view["exit_code"], 1);
    assert_eq!(view["cut_short"], false);
    assert_eq!(view["plan"][0]["outcome"], "done");
    assert_eq!(view["plan"][1]["summary"], "fixed the typo");
    let calls: Vec<&Value> = view["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "tool_call")
        .collect();
    let rm = calls.iter().find(|c| c["call_id"] == "call_rm").unwrap();
    assert_eq!(rm["decision"], "deny");
    assert_eq!(rm["rule"], "deny: exec(rm *)");
    assert_eq!(rm["ok"], false);
    let checks = view["checks"].as_array().unwrap();
    assert_eq!(checks[1]["exit_code"], 3);
    assert_eq!(view["totals"]["input_tokens"], 2040);
    assert_eq!(view["started"]["budget"]["max_tool_calls"], 30);
    assert_eq!(view["started"]["permissions"]["deny"][0], "exec(rm *)");
    // Without --full the messages are left out.
    assert!(!stdout(&out).contains("messages_added"));
    let full = trace_cmd(&sb, &["show", "--json", "--full", "trace.jsonl"]);
    assert!(stdout(&full).contains("messages_added"));
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_trace_cut_mid_run_is_shown_as_interrupted() {
    let (sb, trace) = run_fixture();
    let lines = lines_of(&trace);
    // Killed while writing the line of the second step's start: what came
    // before is whole, that line is half written, nothing follows.
    let cut_at = lines
        .iter()
        .position(|l| l.contains("\"step.started\"") && l.contains("\"index\":1"))
        .unwrap();
    let half = &lines[cut_at][..lines[cut_at].len() / 2];
    let text = format!("{}\n{half}", lines[..cut_at].join("\n"));
    sb.write("cut.jsonl", &text);

    let out = trace_cmd(&sb, &["show", "cut.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(
        shown.starts_with("run fix-greeting: interrupted\n"),
        "{shown}"
    );
    assert!(shown.contains("· 2. Fix the typo — not reached"), "{shown}");
    assert!(
        shown.contains(&format!("line {}: the line is cut short", cut_at + 1)),
        "{shown}"
    );
    assert!(
        stderr(&out).contains(&format!("trace line {} (the last)", cut_at + 1)),
        "{}",
        stderr(&out)
    );

    let summary = trace_cmd(&sb, &["summary", "cut.jsonl"]);
    assert_eq!(summary.status.code(), Some(0));
    assert!(
        stdout(&summary).contains("— interrupted"),
        "{}",
        stdout(&summary)
    );
}

#[test]
fn a_damaged_line_is_named_and_what_came_before_is_still_shown() {
    let (sb, trace) = run_fixture();
    let mut lines = lines_of(&trace);
    lines[4] = r#"{"seq":5,"ts":"x","run_id":"r","type":"tool.result","ok":"maybe"}"#.into();
    sb.write("bad.jsonl", &(lines.join("\n") + "\n"));
    for args in [&["show", "bad.jsonl"][..], &["summary", "bad.jsonl"]] {
        let out = trace_cmd(&sb, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains("trace line 5: not a valid tool.result event"),
            "{err}"
        );
        assert!(err.contains("lines after it were not read"), "{err}");
        assert!(stdout(&out).contains("fix-greeting"), "{}", stdout(&out));
        assert!(!err.contains("panicked"), "{err}");
    }
    for (name, text) in [
        ("empty.jsonl", String::new()),
        ("binary.jsonl", "\u{0}\u{7f}garbage\n".to_string()),
    ] {
        sb.write(name, &text);
        let out = trace_cmd(&sb, &["show", name]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(stderr(&out).contains(name), "{}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
    let out = trace_cmd(&sb, &["show", "missing.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read trace missing.jsonl"));
}

#[test]
fn rounds_and_events_of_a_newer_agentci_are_shown_not_dropped() {
    let (sb, trace) = run_fixture();
    let mut events: Vec<Value> = lines_of(&trace)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    events[0]["schema_version"] = json!(99);
    // An older trace: no budget, permissions or sent messages recorded.
    events[0].as_object_mut().unwrap().remove("budget");
    for event in &mut events {
        event.as_object_mut().unwrap().remove("sent");
    }
    let checks_at = events
        .iter()
        .position(|e| e["type"] == "check.completed")
        .unwrap();
    events.insert(
        checks_at,
        json!({"seq": 0, "ts": events[checks_at]["ts"], "run_id": "r", "type": "round.started",
               "round": 2, "of": 2}),
    );
    let text: Vec<String> = events.iter().map(Value::to_string).collect();
    sb.write("newer.jsonl", &(text.join("\n") + "\n"));
    let out = trace_cmd(&sb, &["show", "--full", "newer.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("══ round 2"), "{shown}");
    assert!(shown.contains("trace schema 99"), "{shown}");
    assert!(shown.contains("this agentci reads up to schema"), "{shown}");
    assert!(!shown.contains("  budget:"), "{shown}");
    assert!(!shown.contains("    sent:"), "{shown}");
}

// A hostile model writes terminal escape sequences (set the window title,
// clear the screen) and a bidi override into its answer and its tool
// calls: `trace show` must print them as text, not drive the terminal.
#[test]
fn what_a_model_wrote_cannot_drive_the_readers_terminal() {
    const NASTY: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{202e}txt.exe";
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![("call_ls", "ls", json!({"path": NASTY}))]),
        Reply::plan(&[(NASTY, NASTY)]),
        Reply::step_done(NASTY),
        Reply::text(NASTY),
    ]);
    let sb = Sandbox::new();
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: nasty\nskill: fixer\ngoal: Look around.\nmodel:\n  provider: openai\n  \
             name: fake-model\n  base_url: {}\ntools: [ls]\nworkspace: ws\nskills_path: [skills]\n\
             permissions:\n  default: allow\n",
            model.base_url()
        ),
    );
    let out = agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "trace.jsonl",
            "--progress",
            "none",
        ],
        &[],
    );
    assert!(sb.path().join("trace.jsonl").exists(), "{}", stderr(&out));
    for args in [
        &["show", "trace.jsonl"][..],
        &["show", "--full", "trace.jsonl"],
        &["summary", "trace.jsonl"],
    ] {
        let shown = stdout(&trace_cmd(&sb, args));
        assert!(!shown.contains('\u{1b}'), "{args:?}: {shown:?}");
        assert!(!shown.contains('\u{202e}'), "{args:?}: {shown:?}");
        // The sequences are removed whole (issue 20); the text around them
        // stays. (`--full` also shows the raw arguments, JSON-escaped.)
        if !args.contains(&"--full") {
            assert!(!shown.contains("owned"), "{args:?}: {shown}");
        }
        assert!(shown.contains("txt.exe"), "{args:?}: {shown}");
    }
}
