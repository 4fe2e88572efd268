//! Context that never overflows and large outputs kept, end to end: the
//! real binary against the fake model server. A long session crosses the
//! high-water mark of a small `model.context_window` and is compacted
//! (by a summary, or a digest), and goes on to a pass; an oversized `exec`
//! output is cut, kept whole in the run folder and read back in pieces.

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr};
use super::support::job::JobBuilder;
use super::support::job::JobRun;
use super::support::redact::redacted;
use super::support::trace_schema::assert_valid_trace;

/// Lines of a file the model reads: about 7,000 tokens, under `read`'s
/// 30,000-character limit, each file recognisable by its `tag`.
fn big_file(tag: &str) -> String {
    (0..560)
        .map(|i| format!("{tag} line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

fn sandbox(base_url: &str, model_extra: &str) -> Sandbox {
    let mut job = JobBuilder::new("long-read", "reader", base_url)
        .goal("Read the three files and report what they hold.")
        .model_extra("  context_window: 16000\n")
        .model_extra(model_extra)
        .tools("[read, grep, exec]")
        .body(
            r#"permissions:
  default: deny
  allow: [read, grep, "exec(seq *)"]
checks:
  - name: files still there
    run: test -f f3.txt
"#,
        );
    for tag in ["f1", "f2", "f3"] {
        job = job.file(&format!("ws/{tag}.txt"), &big_file(tag));
    }
    job.write()
}

fn run(sb: &Sandbox) -> Vec<Value> {
    let out = JobRun::bare(sb)
        .args(&["--out", "run", "--progress", "plain"])
        .env("ANTHROPIC_API_KEY", "sk-ant-fake")
        .output();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_valid_trace(&sb.path().join("run/trace.jsonl"));
    sb.trace("run/trace.jsonl")
}

fn read(id: &str, path: &str) -> Reply {
    Reply::tool_calls(vec![(id, "read", json!({ "path": path }))])
}

/// A model that reads three big files in one step.
fn reading_script(summaries: bool) -> Vec<Reply> {
    let mut script = vec![
        Reply::plan(&[("Read the files", "their content is known")]),
        read("call_f1", "f1.txt"),
        read("call_f2", "f2.txt"),
    ];
    if summaries {
        script.push(Reply::text("SUMMARY-ONE: f1.txt holds 560 fox lines."));
    }
    script.push(read("call_f3", "f3.txt"));
    if summaries {
        script.push(Reply::text("SUMMARY-TWO: f1 and f2 hold fox lines."));
    }
    script.push(Reply::step_done("read all three"));
    script.push(Reply::text("The files hold fox lines."));
    script
}

fn size(request: &Value) -> usize {
    request["messages"].to_string().len()
}

fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_long_session_is_compacted_by_summaries_and_passes() {
    let model = FakeModel::start(reading_script(true));
    let sb = sandbox(&model.base_url(), "");
    let trace = run(&sb);
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    assert_eq!(requests.len(), 8);

    // Requests 4 and 6 are the summary calls: no tools, the transcript of
    // the older turns, which the next real request no longer carries.
    for (i, has) in [(3, "call_f1"), (5, "call_f2")] {
        let summary = &requests[i];
        assert!(summary.get("tools").is_none() && summary.get("tool_choice").is_none());
        assert!(user_texts(summary)[0].contains(&format!("[call {has}] read")));
    }
    assert!(requests[2].to_string().contains("f1 line 7:"));
    assert!(!requests[4].to_string().contains("f1 line 7:"));
    assert!(!requests[6].to_string().contains("f2 line 7:"));
    // Without compaction request 5 would carry f1 and f2; it carries one file's worth.
    assert!(size(&requests[4]) < size(&requests[2]) + 5_000);
    assert!(size(&requests[6]) < size(&requests[2]) + 5_000);
    let note = user_texts(&requests[4])
        .into_iter()
        .find(|t| t.starts_with("[agentci] Earlier turns were compacted"))
        .expect("the compaction note");
    assert!(note.contains("SUMMARY-ONE"), "{note}");
    assert!(note.contains("1. [in progress] Read the files"), "{note}");
    // The system prompt, the goal and the plan stay.
    let first = &requests[4]["messages"];
    assert_eq!(first[0], requests[2]["messages"][0]);
    assert!(first.to_string().contains("submit_plan"));
    assert!(
        user_texts(&requests[6])
            .iter()
            .any(|t| t.contains("SUMMARY-TWO"))
    );

    let compacted = events(&trace, "context.compacted");
    assert_eq!(compacted.len(), 2);
    for c in &compacted {
        assert_eq!(c["method"], "summary");
        assert!(c["tokens_after"].as_u64() < c["high_water"].as_u64());
        assert!(c["tokens_before"].as_u64() >= c["high_water"].as_u64());
        assert_eq!(c["window"], 16_000);
        assert_eq!(c["high_water"], 12_800);
    }
    assert_eq!(compacted[0]["summary_call_id"], "model-4");
    assert_eq!(compacted[0]["call_id"], "model-5");
    let replaced: Vec<&str> = compacted[0]["replaced_tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(replaced.contains(&"call_f1") && !replaced.contains(&"call_f2"));
    insta::assert_json_snapshot!(
        "context_compacted_summary",
        redacted(
            compacted[0],
            &[
                (".seq", "[seq]"),
                (".ts", "[ts]"),
                (".run_id", "[run_id]"),
                (".tokens_before", "[tokens]"),
                (".tokens_after", "[tokens]"),
                (".messages_before", "[count]"),
                (".messages_after", "[count]"),
                (".replaced_messages", "[count]"),
                (".replaced_tool_calls", "[ids]"),
            ],
        )
    );
    let done = trace.last().unwrap();
    assert_eq!(done["status"], "passed");
    // The summary calls count: 8 model calls in all.
    assert_eq!(done["totals"]["turns"], 8);
}

/// The Messages API refuses tool blocks in a request without tools: the
/// summary request carries the older turns as plain text.
#[test]
fn compaction_on_the_messages_api() {
    let model = FakeModel::start(reading_script(true));
    let sb = sandbox(&model.base_url(), "");
    let job = sb.read("job.yaml").replace(
        "provider: openai\n  name: fake-model",
        "provider: anthropic\n  name: claude-x",
    );
    sb.write("job.yaml", &job);
    let trace = run(&sb);
    let captured = model.captured();
    assert_eq!(captured.len(), 8);
    assert!(captured.iter().all(|r| r.path == "/v1/messages"));
    assert!(captured[3].body.get("tools").is_none());
    assert_eq!(events(&trace, "context.compacted").len(), 2);
    assert_eq!(trace.last().unwrap()["status"], "passed");
}

#[test]
fn a_digest_replaces_older_turns_without_a_model_call() {
    let model = FakeModel::start(reading_script(false));
    let sb = sandbox(
        &model.base_url(),
        "  compact_with: digest\n  compact_at: 80%\n",
    );
    let trace = run(&sb);
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    assert_eq!(requests.len(), 6, "no extra call for a digest");
    assert!(requests.iter().all(|r| r.get("tools").is_some()));
    let note = user_texts(&requests[3])
        .into_iter()
        .find(|t| t.starts_with("[agentci] Earlier turns were compacted"))
        .expect("the compaction note");
    assert!(note.contains("Digest of the earlier turns"), "{note}");
    assert!(
        note.contains(r#"- read {"path":"f1.txt"} → `f1.txt`: lines 1-"#),
        "{note}"
    );
    assert!(!requests[3].to_string().contains("f1 line 7:"));
    assert!(size(&requests[3]) < size(&requests[2]) + 5_000);
    let compacted = events(&trace, "context.compacted");
    assert_eq!(compacted.len(), 2);
    assert!(compacted.iter().all(|c| c["method"] == "digest"));
    assert!(compacted[0].get("summary_call_id").is_none());
    assert_eq!(trace.last().unwrap()["status"], "passed");
}

#[test]
fn a_summary_the_budget_cannot_afford_becomes_a_digest() {
    let model = FakeModel::start(reading_script(false));
    let sb = sandbox(&model.base_url(), "");
    // Six calls of 120 reported tokens fit; a summary of ~3,000 more does not.
    let job = sb.read("job.yaml") + "budget:\n  max_tokens: 2000\n";
    sb.write("job.yaml", &job);
    let trace = run(&sb);
    let compacted = events(&trace, "context.compacted");
    assert_eq!(compacted[0]["method"], "digest");
    assert_eq!(
        compacted[0]["fallback_reason"],
        "the budget leaves no room for a summary call"
    );
    assert_eq!(model.requests().len(), 6);
}

#[test]
fn wrong_context_settings_are_reported_where_they_are() {
    let sb = sandbox("http://127.0.0.1:9/v1", "");
    let job = sb.read("job.yaml").replace(
        "context_window: 16000",
        "context_window: 200\n  compact_at: 2\n  compact_with: shorter",
    );
    sb.write("job.yaml", &job);
    let out = sb.agentci(&["validate", "job.yaml"]);
    let err = stderr(&out) + &super::support::harness::stdout(&out);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        err.contains("`context_window` must be at least 1000 tokens"),
        "{err}"
    );
    assert!(
        err.contains("`compact_at` must be a share of the context window"),
        "{err}"
    );
    assert!(err.contains("`compact_with` must be `summary`"), "{err}");
}

/// A sandbox whose model runs `seq`, then pages through the kept output.
#[test]
fn an_oversized_output_is_cut_kept_whole_and_read_back_in_pieces() {
    let sb = Sandbox::new();
    let kept = sb.path().join("run/outputs/tool-call_seq.txt");
    let kept_path = kept.display().to_string();
    let model = FakeModel::start(vec![
        Reply::plan(&[("Count", "the numbers are known")]),
        Reply::tool_calls(vec![(
            "call_seq",
            "exec",
            json!({"command": "seq 1 40000"}),
        )]),
        Reply::tool_calls(vec![(
            "call_page",
            "read",
            json!({"path": kept_path, "offset": 20000, "limit": 3}),
        )]),
        Reply::tool_calls(vec![(
            "call_grep",
            "grep",
            json!({"pattern": "^31415$", "path": kept_path}),
        )]),
        Reply::tool_calls(vec![(
            "call_write",
            "edit",
            json!({"path": kept_path, "old_text": "31415", "new_text": "x"}),
        )]),
        Reply::step_done("counted"),
        Reply::text("Counted to 40000."),
    ]);
    sb.skill("counter", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: count
skill: counter
goal: Count to 40000.
model:
  provider: openai
  name: fake-model
  base_url: {}
tools: [read, grep, exec, edit]
workspace: ws
skills_path: [skills]
permissions:
  default: deny
  allow: [read, grep, edit, "exec(seq *)"]
"#,
            model.base_url()
        ),
    );
    let trace = run(&sb);
    let requests = model.requests();
    let tool_text = |id: &str| -> String {
        requests
            .iter()
            .flat_map(|r| r["messages"].as_array().unwrap().clone())
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}"))["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let cut = tool_text("call_seq");
    assert!(cut.len() < 31_000, "{}", cut.len());
    assert!(cut.contains(&kept_path), "{cut}");
    assert!(cut.contains("\n1\n2\n3\n") && cut.trim_end().ends_with("40000"));
    // The whole output is in the file, every line.
    let whole = std::fs::read_to_string(&kept).unwrap();
    assert_eq!(whole.lines().count(), 40_000);
    assert!(whole.contains("\n20000\n"));
    // Read back in a piece, and found by grep.
    let page = tool_text("call_page");
    assert!(page.contains("20000") && page.contains("20002"), "{page}");
    assert!(!page.contains("\t20003"), "{page}");
    let found = tool_text("call_grep");
    assert!(found.contains("31415"), "{found}");
    // Read-only: the edit is refused and the file is unchanged.
    let edit = tool_text("call_write");
    assert!(edit.starts_with("ERROR"), "{edit}");
    assert!(
        edit.contains("keeps tool outputs too long to show; it is read-only"),
        "{edit}"
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), whole);
    // Reading the kept file did not keep another one.
    let files: Vec<_> = std::fs::read_dir(sb.path().join("run/outputs"))
        .unwrap()
        .collect();
    assert_eq!(files.len(), 1);
    // The trace records the cut and the file.
    let result = events(&trace, "tool.result")
        .into_iter()
        .find(|e| e["call_id"] == "call_seq")
        .unwrap()
        .clone();
    assert_eq!(result["data"]["kept_output"]["path"], kept_path.as_str());
    assert_eq!(result["data"]["kept_output"]["lines"], 40_000);
    assert_eq!(trace.last().unwrap()["status"], "passed");
}

/// `--print-job` shows the context settings; a model named by `--model`
/// does not inherit the job model's window (it is another model's).
#[test]
fn print_job_shows_the_context_settings_and_model_drops_the_window() {
    let sb = sandbox(
        "http://127.0.0.1:9/v1",
        "  compact_at: 0.6\n  compact_with: digest\n",
    );
    let printed = super::support::harness::stdout(&sb.agentci(&["run", "job.yaml", "--print-job"]));
    assert!(printed.contains("context_window: 16000"), "{printed}");
    assert!(printed.contains("compact_at: 60%"), "{printed}");
    assert!(printed.contains("compact_with: digest"), "{printed}");
    let printed = super::support::harness::stdout(&sb.agentci(&[
        "run",
        "job.yaml",
        "--print-job",
        "--model",
        "openai:gpt-4o",
    ]));
    assert!(!printed.contains("context_window"), "{printed}");
    assert!(printed.contains("compact_with: digest"), "{printed}");
}
