//! What the model sees, end to end: one tool list for the whole run, phase
//! rules enforced when a call runs, prompt-cache friendly requests, the
//! per-run details at the end of the system prompt, `step_done` statuses,
//! and the fake server refusing what the real APIs refuse.

use serde_json::{Value, json};

use super::examples::{fix_failing_test_batched_script, fix_failing_test_script, run_example};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl, stderr, stdout};
use super::support::job::JobBuilder;
use super::support::job::JobRun;
use super::support::trace_schema::assert_valid_trace;

/// A request in the order a prompt cache reads it (tools, system, messages),
/// one canonical JSON text per part (serde_json sorts object keys).
fn cache_order(body: &Value) -> String {
    let mut text = body["tools"].to_string();
    // Anthropic carries the system prompt outside `messages`; OpenAI as messages[0].
    if let Some(system) = body.get("system") {
        text.push_str(&system.to_string());
    }
    for message in body["messages"].as_array().unwrap() {
        text.push_str(&message.to_string());
    }
    text
}

fn shared_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// The share of the shorter request that the longer one starts with.
fn prefix_share(a: &Value, b: &Value) -> f64 {
    let (a, b) = (cache_order(a), cache_order(b));
    shared_prefix(&a, &b) as f64 / a.len().min(b.len()) as f64
}

/// Regression: the planning turns offered only the read-only tools, the
/// steps the rest, the summary turn none, so every phase change started the
/// prompt over and a prompt cache never hit across it. Issue 26: a model
/// that batches (plan with the first step's call, the step's instructions
/// with its results, the report with the last step_done) keeps all of it
/// too; each request starts with the whole of the one before.
#[test]
fn consecutive_requests_of_the_example_share_their_prefix() {
    for (script, calls) in [
        (fix_failing_test_script(), 10),
        (fix_failing_test_batched_script(), 6),
    ] {
        let model = FakeModel::start(script);
        let (_ws, _out, out) = run_example(
            "fix-failing-test",
            &[
                "--model",
                "openai:scripted-example",
                "--base-url",
                &model.base_url(),
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let requests = model.requests();
        assert_eq!(requests.len(), calls);
        let shares: Vec<f64> = requests
            .windows(2)
            .map(|pair| prefix_share(&pair[0], &pair[1]))
            .collect();
        eprintln!("consecutive prefix shares ({calls} calls): {shares:.3?}");
        for (i, share) in shares.iter().enumerate() {
            assert!(
                (*share - 1.0).abs() < f64::EPSILON,
                "requests {} and {} share {share:.3} of the shorter",
                i + 1,
                i + 2
            );
        }
    }
}

/// Two runs of one job differ only in their per-run details, which come
/// after the stable text of the system prompt.
#[test]
fn first_requests_of_two_runs_share_the_prefix_up_to_the_run_details() {
    let first_request = || {
        let model = FakeModel::start(fix_failing_test_script());
        let (ws, _out, out) = run_example(
            "fix-failing-test",
            &[
                "--model",
                "openai:scripted-example",
                "--base-url",
                &model.base_url(),
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        (ws, model.requests().remove(0))
    };
    let (ws_a, a) = first_request();
    let (ws_b, b) = first_request();
    assert_ne!(ws_a.path(), ws_b.path());
    let (a, b) = (cache_order(&a), cache_order(&b));
    let details = a
        .find("# This run")
        .expect("the run details are in the prompt");
    let shared = shared_prefix(&a, &b);
    eprintln!(
        "two runs' first requests: {shared} of {} characters shared; the run details start at {details}",
        a.len().min(b.len())
    );
    assert!(shared >= details, "shared {shared}, details at {details}");
    // Nothing per-run comes before the details: no workspace path.
    assert!(!a[..details].contains(&ws_a.path().display().to_string()));
}

/// The same example over the Messages API: the fake refuses tool blocks
/// without tools and more than four cache breakpoints, as the real API
/// does; the run passes, and its summary turn keeps the tools with
/// `tool_choice: none`.
#[test]
fn the_example_runs_over_the_messages_api_with_cache_breakpoints() {
    let model = FakeModel::start(fix_failing_test_script());
    let (_ws, out_dir, out) = run_example(
        "fix-failing-test",
        &[
            "--model",
            "anthropic:claude-sonnet-4-5",
            "--base-url",
            &model.base_url(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace = read_jsonl(&out_dir.path().join("trace.jsonl"));
    assert!(
        events(&trace, "warning").is_empty(),
        "{:?}",
        events(&trace, "warning")
    );
    let requests = model.requests();
    let tools = &requests[0]["tools"];
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(&request["tools"], tools, "request {}", i + 1);
        let marked = |v: &Value| v.get("cache_control") == Some(&json!({"type": "ephemeral"}));
        assert!(marked(request["tools"].as_array().unwrap().last().unwrap()));
        // The stable part of the system prompt, shared by every run of the job.
        let system = request["system"].as_array().unwrap();
        assert_eq!(system.len(), 2);
        assert!(marked(&system[0]) && !marked(&system[1]));
        assert!(
            system[1]["text"]
                .as_str()
                .unwrap()
                .starts_with("# This run")
        );
        let newest = request["messages"].as_array().unwrap().last().unwrap();
        assert!(marked(
            newest["content"].as_array().unwrap().last().unwrap()
        ));
    }
    let last = requests.last().unwrap();
    assert_eq!(last["tool_choice"], json!({"type": "none"}));
    let completed = trace.last().unwrap();
    assert!(
        completed["summary"]
            .as_str()
            .unwrap()
            .contains("Fixed `add`")
    );
}

/// A workspace, a skill and a job with exec patterns and two checks.
fn sandbox(base_url: &str, provider: &str, model: &str) -> Sandbox {
    JobBuilder::new("notes", "helper", base_url)
        .goal("Tidy notes.txt.")
        .model(provider, model, base_url)
        .file("ws/notes.txt", "todo\n")
        .tools("[read, write, ls, exec]")
        .body(
            r#"permissions:
  default: deny
  allow: [read, ls, write, "exec(cat *)", "exec(wc -l *)"]
  deny: ["exec(rm *)"]
checks:
  - name: notes kept
    run: test -f notes.txt
  - name: no todo left
    run: "! grep -q todo notes.txt"
"#,
        )
        .write()
}

fn run(sb: &Sandbox, extra: &[&str]) -> std::process::Output {
    JobRun::new(sb).progress("plain").args(extra).output()
}

/// The tool result the model got back for `call_id`.
fn tool_message(requests: &[Value], call_id: &str) -> String {
    requests
        .iter()
        .flat_map(|r| r["messages"].as_array().unwrap())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool message for {call_id}"))["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A hostile model calls tools outside their phase: each call gets an
/// error result that says when it may be called, and the run goes on.
#[test]
fn phase_rules_hold_although_every_tool_is_offered() {
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![
            ("early_done", "step_done", json!({"summary": "nothing"})),
            ("early_update", "update_plan", json!({"steps": []})),
            (
                "early_write",
                "write",
                json!({"path": "notes.txt", "content": "x"}),
            ),
        ]),
        Reply::plan(&[("Tidy", "no todo left")]),
        Reply::tool_calls(vec![(
            "late_plan",
            "submit_plan",
            json!({"steps": [{"title": "other", "expected_outcome": "x"}]}),
        )]),
        Reply::tool_calls(vec![(
            "write",
            "write",
            json!({"path": "notes.txt", "content": "done\n"}),
        )]),
        Reply::step_done("rewrote notes.txt"),
        Reply::text("Rewrote notes.txt; both checks will judge it."),
    ]);
    let sb = sandbox(&model.base_url(), "openai", "fake-model");
    let out = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = model.requests();
    assert!(tool_message(&requests, "early_done").contains("there is no plan yet"));
    assert!(tool_message(&requests, "early_update").contains("call submit_plan first"));
    let write = tool_message(&requests, "early_write");
    assert!(write.contains("not available while planning"), "{write}");
    assert!(tool_message(&requests, "late_plan").contains("already accepted"));
    // The early write did not happen; the step's did.
    assert_eq!(sb.read("ws/notes.txt"), "done\n");
    let trace = sb.trace("out/trace.jsonl");
    assert_eq!(events(&trace, "plan.created").len(), 1);
    assert_eq!(
        events(&trace, "plan.created")[0]["steps"][0]["title"],
        "Tidy"
    );
    // Each phase's message says which tools may be called in it.
    let user = |i: usize, n: usize| -> String {
        requests[i]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .nth(n)
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(user(0, 0).contains("While planning you may call: read, ls, submit_plan."));
    assert!(user(2, 1).contains("You may call: read, write, ls, exec, step_done, update_plan."));
}

/// The system prompt ends with what this run allows and what judges it; a
/// denied call says which allow patterns exist; the summary turn asks for
/// evidence. Regression: a denied `exec` said only "denied by the job's
/// permission policy (default)".
#[test]
fn the_model_is_told_what_it_may_run_and_what_judges_the_run() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Look", "the file is known")]),
        Reply::tool_calls(vec![
            ("denied", "exec", json!({"command": "python3 tidy.py"})),
            ("forbidden", "exec", json!({"command": "rm notes.txt"})),
        ]),
        Reply::step_done("cannot run the tidy script"),
        Reply::text("Nothing changed."),
    ]);
    let sb = sandbox(&model.base_url(), "openai", "fake-model");
    let out = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let requests = model.requests();
    // The stable part and the run's details go out as one system message:
    // some OpenAI-compatible servers refuse a second one.
    let messages = requests[0]["messages"].as_array().unwrap();
    assert_eq!(messages.iter().filter(|m| m["role"] == "system").count(), 1);
    let system = messages[0]["content"].as_str().unwrap();
    let details = system.find("# This run").unwrap();
    assert!(system.find("# Skill: helper").unwrap() < details);
    let tail = &system[details..];
    let workspace = tail.lines().nth(1).unwrap();
    assert!(
        workspace.starts_with("Workspace: /") && workspace.ends_with("/ws"),
        "{tail}"
    );
    assert!(tail.contains("`exec(cat *)`, `exec(wc -l *)`"), "{tail}");
    assert!(tail.contains("exec never runs: `exec(rm *)`"), "{tail}");
    assert!(tail.contains("- notes kept: `test -f notes.txt`"), "{tail}");
    assert!(
        tail.contains("- no todo left: `! grep -q todo notes.txt`"),
        "{tail}"
    );

    let denied = tool_message(&requests, "denied");
    assert!(denied.contains("PERMISSION_DENIED"), "{denied}");
    assert!(
        denied.contains("the job allows `exec` only as: exec(cat *), exec(wc -l *)"),
        "{denied}"
    );
    let forbidden = tool_message(&requests, "forbidden");
    assert!(forbidden.contains("(deny: exec(rm *))"), "{forbidden}");

    let last = requests.last().unwrap()["messages"].as_array().unwrap();
    let ask = last.last().unwrap()["content"].as_str().unwrap();
    assert!(
        ask.contains("what was checked") && ask.contains("what is left"),
        "{ask}"
    );
}

/// `step_done` carries how the step ended; blocked and failed steps show
/// as such in the trace, the progress lines and the GitHub step summary.
#[test]
fn a_blocked_step_is_recorded_as_blocked() {
    let model = FakeModel::start(vec![
        Reply::plan(&[
            ("Run the tidy script", "notes are tidy"),
            ("Report", "done"),
        ]),
        Reply::tool_call(
            "step_done",
            json!({"summary": "python3 is not an allowed command", "status": "blocked"}),
        ),
        Reply::tool_call(
            "step_done",
            json!({"summary": "nothing to report", "status": "failed"}),
        ),
        Reply::text("Blocked: the job allows no python3."),
    ]);
    let sb = sandbox(&model.base_url(), "openai", "fake-model");
    std::fs::create_dir_all(sb.path().join("gh")).unwrap();
    let summary_path = sb.path().join("gh/summary.md");
    let out = super::support::harness::agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--progress",
            "plain",
        ],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", &summary_path.display().to_string()),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let trace_path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&trace_path);
    let trace = read_jsonl(&trace_path);
    let statuses: Vec<&str> = events(&trace, "step.completed")
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, vec!["blocked", "failed"]);
    let requests = model.requests();
    assert!(tool_message(&requests, "call_2").contains("Step marked blocked."));
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        shown.contains("step 1/2 blocked: python3 is not an allowed command"),
        "{shown}"
    );
    let summary = std::fs::read_to_string(&summary_path).unwrap();
    assert!(
        summary.contains("1. ⛔ Run the tidy script — blocked: python3 is not an allowed command"),
        "{summary}"
    );
    assert!(
        summary.contains("2. ❌ Report — failed: nothing to report"),
        "{summary}"
    );
}

/// Cache reads and writes the server reports reach `model.response`, the
/// cost (at the cache prices) and the run's totals, from both APIs.
#[test]
fn prompt_cache_tokens_are_reported_priced_and_totalled() {
    for (provider, model_name) in [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-4.1")] {
        let model = FakeModel::start(vec![
            Reply::plan(&[("Tidy", "no todo left")])
                .with_usage(1000, 10)
                .with_cache(0, 800),
            Reply::tool_calls(vec![(
                "w",
                "write",
                json!({"path": "notes.txt", "content": "done\n"}),
            )])
            .with_usage(1100, 10)
            .with_cache(800, 200),
            Reply::step_done("rewrote notes.txt")
                .with_usage(1200, 10)
                .with_cache(1000, 100),
            Reply::text("Rewrote notes.txt.")
                .with_usage(1300, 10)
                .with_cache(1100, 0),
        ]);
        let sb = sandbox(&model.base_url(), provider, model_name);
        let out = run(&sb, &[]);
        assert_eq!(out.status.code(), Some(0), "{provider}: {}", stderr(&out));
        let trace = sb.trace("out/trace.jsonl");
        let usage: Vec<(u64, u64, u64)> = events(&trace, "model.response")
            .iter()
            .map(|e| {
                let u = &e["usage"];
                (
                    u["input_tokens"].as_u64().unwrap(),
                    u["cache_read_tokens"].as_u64().unwrap(),
                    u["cache_write_tokens"].as_u64().unwrap(),
                )
            })
            .collect();
        let writes = |w: [u64; 4]| if provider == "anthropic" { w } else { [0; 4] };
        let expected: Vec<(u64, u64, u64)> = [1000, 1100, 1200, 1300]
            .into_iter()
            .zip([0, 800, 1000, 1100])
            .zip(writes([800, 200, 100, 0]))
            .map(|((i, r), w)| (i, r, w))
            .collect();
        assert_eq!(usage, expected, "{provider}");
        let totals = &trace.last().unwrap()["totals"];
        assert_eq!(totals["input_tokens"], 4600, "{provider}");
        assert_eq!(totals["cache_read_tokens"], 2900, "{provider}");
        assert_eq!(
            totals["cache_write_tokens"],
            writes([800, 200, 100, 0]).iter().sum::<u64>()
        );
        // Per million: sonnet-4-5 3.00 in, 0.30 cache read, 3.75 cache write, 15 out;
        // gpt-4.1 2.00 in, 0.50 cached, 8 out.
        let cost = totals["cost_usd"].as_f64().unwrap();
        let expected = if provider == "anthropic" {
            (4600.0 - 2900.0 - 1100.0) * 3.0 + 2900.0 * 0.30 + 1100.0 * 3.75 + 40.0 * 15.0
        } else {
            (4600.0 - 2900.0) * 2.0 + 2900.0 * 0.50 + 40.0 * 8.0
        } / 1_000_000.0;
        assert!(
            (cost - expected).abs() < 1e-9,
            "{provider}: {cost} vs {expected}"
        );
    }
}

/// The fake server refuses what the real APIs refuse (see `refusal` in
/// support/fake_model.rs for the sources), so the tests above would fail
/// if agentci sent such requests.
#[tokio::test]
async fn the_fake_server_refuses_what_the_real_apis_refuse() {
    let model = FakeModel::start(vec![Reply::text("unused")]);
    let client = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        client
            .post(format!("{}/{path}", model.base_url()))
            .json(&body)
            .send()
    };
    let tool_history = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
    ]);
    let tool = json!({"name": "ls", "description": "list", "input_schema": {"type": "object"}});
    let cases = [
        (
            "messages",
            json!({"model": "m", "max_tokens": 10, "messages": tool_history}),
            "must define tools",
        ),
        (
            "messages",
            json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
                   "tool_choice": {"type": "none"}}),
            "tool_choice may only be specified while providing tools",
        ),
        (
            "messages",
            json!({"model": "m", "max_tokens": 10, "tools": [tool],
                   "system": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                              {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}],
                   "messages": [{"role": "user", "content": [
                       {"type": "text", "text": "c", "cache_control": {"type": "ephemeral"}},
                       {"type": "text", "text": "d", "cache_control": {"type": "ephemeral"}},
                       {"type": "text", "text": "e", "cache_control": {"type": "ephemeral"}}]}]}),
            "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        ),
        (
            "chat/completions",
            json!({"model": "m", "messages": [
                {"role": "user", "content": "go"},
                {"role": "tool", "tool_call_id": "nobody_asked", "content": "a"}]}),
            "must be a response to a preceeding message with 'tool_calls'",
        ),
        (
            "messages",
            json!({"model": "m", "max_tokens": 10, "tools": [tool], "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
                {"role": "user", "content": "never mind"}]}),
            "without `tool_result` blocks immediately after: t1",
        ),
        (
            "chat/completions",
            json!({"model": "m", "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
                {"role": "user", "content": "never mind"}]}),
            "did not have response messages: c1",
        ),
        (
            "chat/completions",
            json!({"model": "m", "messages": [{"role": "user", "content": "go"}], "tool_choice": "none"}),
            "'tool_choice' is only allowed when 'tools' are specified",
        ),
    ];
    for (path, body, expected) in cases {
        let response = post(path, body).await.unwrap();
        assert_eq!(response.status(), 400, "{expected}");
        let text = response.text().await.unwrap();
        assert!(text.contains(expected), "{text}");
    }
    // Refusals use no scripted reply.
    assert_eq!(model.remaining(), 1);
}
