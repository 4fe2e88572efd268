//! What people read about a resumed run with a structured result: `agentci
//! trace show` (text and `--json`) and `trace summary` show the result and
//! each resume (from which turn, how the stopped run had ended, the budget
//! raised), and under GitHub Actions the resumed run's step summary and
//! outputs describe the whole run, the steps done before the resume
//! included. The real binary against the fake model server.

use std::path::PathBuf;

use regex::Regex;
use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, stderr, stdout};
use super::support::trace_schema::assert_valid_trace;

const SCHEMA: &str = r#"{"type": "object", "properties": {"written": {"type": "array", "items": {"type": "string"}}}, "required": ["written"], "additionalProperties": false}"#;

/// Two steps, one file each, a check that wants both, and a result schema;
/// the budget stops it after the first step.
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.skill("writer", None);
    sb.write(
        "job.yaml",
        &format!(
            "name: two-files\nskill: writer\ngoal: Write a.txt and b.txt.\nworkspace: ws\n\
             skills_path: [skills]\nmodel: {{provider: openai, name: fake-model}}\n\
             tools: [read, write]\npermissions: {{default: allow}}\n\
             checks:\n  - {{name: both written, run: 'test -f a.txt && test -f b.txt'}}\n\
             budget: {{max_turns: 3}}\nresult_schema: {SCHEMA}\n"
        ),
    );
    sb
}

fn write(path: &str, content: &str) -> Reply {
    Reply::tool_call("write", json!({"path": path, "content": content}))
}

fn script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("write a", "a.txt exists"), ("write b", "b.txt exists")]),
        write("a.txt", "one\n"),
        Reply::step_done("wrote a"),
        write("b.txt", "two\n"),
        Reply::step_done("wrote b"),
        Reply::tool_calls(vec![(
            "r1",
            "submit_result",
            json!({"written": ["a.txt", "b.txt"]}),
        )])
        .with_text("Both files are written."),
    ]
}

fn run_dir(sb: &Sandbox) -> PathBuf {
    sb.path().join("out/run")
}

fn agentci(sb: &Sandbox, model: &FakeModel, flags: &[&str], env: &[(&str, &str)]) -> String {
    let url = model.base_url();
    let mut args = vec!["run", "job.yaml", "--base-url", &url, "--progress", "none"];
    args.extend_from_slice(flags);
    let out = agentci_in(sb.path(), &args, env);
    let code = if flags.contains(&"--resume") { 0 } else { 3 };
    assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
    stdout(&out)
}

/// A run stopped by its budget after step 1, resumed with `--max-turns 10`
/// under GitHub Actions: the resumed run's step summary and outputs.
fn resumed_run() -> (Sandbox, String, String) {
    let sb = sandbox();
    let model = FakeModel::start(script());
    agentci(&sb, &model, &["--out", "out/run"], &[]);
    std::fs::create_dir_all(sb.path().join("gh")).unwrap();
    let summary = sb.path().join("gh/summary.md").display().to_string();
    let output = sb.path().join("gh/output.txt").display().to_string();
    let dir = run_dir(&sb).display().to_string();
    agentci(
        &sb,
        &model,
        &["--out", "out/run", "--resume", &dir, "--max-turns", "10"],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", &summary),
            ("GITHUB_OUTPUT", &output),
            ("GITHUB_WORKSPACE", &sb.path().display().to_string()),
        ],
    );
    assert_eq!(model.remaining(), 0);
    assert_valid_trace(&run_dir(&sb).join("trace.jsonl"));
    let summary = std::fs::read_to_string(&summary).unwrap();
    let output = std::fs::read_to_string(&output).unwrap();
    (sb, summary, output)
}

fn trace_cmd(sb: &Sandbox, args: &[&str]) -> String {
    let mut all = vec!["trace"];
    all.extend_from_slice(args);
    let trace = run_dir(sb).join("trace.jsonl").display().to_string();
    all.push(&trace);
    let out = agentci_in(sb.path(), &all, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

fn redact(text: &str, sb: &Sandbox) -> String {
    let root = sb.path().canonicalize().unwrap();
    let text = text
        .replace(&root.display().to_string(), "<sandbox>")
        .replace(&sb.path().display().to_string(), "<sandbox>")
        .replace(env!("CARGO_PKG_VERSION"), "<version>");
    let times = Regex::new(r"\b\d+(\.\d+)?s\b|\b\d+m\d\ds\b").unwrap();
    let text = times.replace_all(&text, "<time>");
    let run_ids = Regex::new(r"\d{8}T\d{6}Z-[0-9a-f]{8}").unwrap();
    run_ids.replace_all(&text, "<run-id>").into_owned()
}

#[test]
fn trace_show_tells_the_resume_and_the_result() {
    let (sb, _, _) = resumed_run();
    let text = trace_cmd(&sb, &["show"]);
    assert!(
        text.starts_with("run two-files: passed (exit 0)\n"),
        "{text}"
    );
    let resumed = "resumed after turn 3, in step 2 (the stopped run had ended budget_exceeded: \
                   budget exceeded: max_turns is 3 and 3 were used); budget changed: max_turns 3 → 10";
    // In the header and at the seam of the timeline.
    assert_eq!(text.matches(resumed).count(), 2, "{text}");
    assert!(
        text.contains("\nResult\n  {\n    \"written\": [\n"),
        "{text}"
    );
    insta::assert_snapshot!("resumed_trace_show", redact(&text, &sb));

    let view: Value = serde_json::from_str(&trace_cmd(&sb, &["show", "--json"])).unwrap();
    assert_eq!(view["result"], json!({"written": ["a.txt", "b.txt"]}));
    assert_eq!(view["resumed"][0]["from_turn"], 3);
    assert_eq!(view["resumed"][0]["previous_status"], "budget_exceeded");
    assert_eq!(view["resumed"][0]["budget_changed"], json!(["max_turns"]));
    let seam: Vec<&Value> = view["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "resumed")
        .collect();
    assert_eq!(seam.len(), 1, "{view:#}");
    assert_eq!(seam[0]["line"], resumed);

    let summary = trace_cmd(&sb, &["summary"]);
    assert!(summary.contains(&format!("↩️ {resumed}")), "{summary}");
    assert!(summary.contains("### Result"), "{summary}");
}

#[test]
fn a_resumed_runs_step_summary_and_outputs_cover_the_whole_run() {
    let (sb, summary, output) = resumed_run();
    // Step 1 was done before the resume: the summary has it from the trace.
    assert!(summary.contains("1. ✅ write a — wrote a"), "{summary}");
    assert!(summary.contains("2. ✅ write b — wrote b"), "{summary}");
    assert!(
        summary.contains("- `a.txt`") && summary.contains("- `b.txt`"),
        "{summary}"
    );
    // The same Markdown `agentci trace summary` prints from the whole trace.
    assert_eq!(summary, trace_cmd(&sb, &["summary"]));
    insta::assert_snapshot!("resumed_step_summary", redact(&summary, &sb));
    assert!(output.contains("status=passed\n"), "{output}");
    assert!(
        output.contains("result={\"written\":[\"a.txt\",\"b.txt\"]}\n"),
        "{output}"
    );
}
