//! `agentci run` end to end: the real binary against a scripted fake model
//! server on 127.0.0.1, in a temporary workspace.

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl, stderr, stdout, types};
use super::support::job::JobBuilder;
use super::support::trace_schema::assert_valid_trace;

const TYPO: &str = "hello wrold\n";

/// A sandbox with a one-file workspace, a skill and a job pointing at `base_url`.
fn sandbox(base_url: &str, extra: &str) -> Sandbox {
    JobBuilder::new("fix-greeting", "fixer", base_url)
        .allowed_tools("Read Grep LS Edit Bash(cat:*) Bash(rm:*) Bash(echo:*)")
        .file("ws/greeting.txt", TYPO)
        .tools("[read, edit, grep, ls, exec]")
        .body(&format!(
            r#"permissions:
  default: deny
  allow: [read, grep, ls, "edit(*.txt)", "exec(cat *)"]
  deny: ["exec(rm *)"]
checks:
  - name: greeting fixed
    run: grep -q "hello world" greeting.txt
{extra}"#
        ))
        .write()
}

/// The script of a model that fixes the typo in two steps.
fn fixing_script() -> Vec<Reply> {
    vec![
        Reply::tool_calls(vec![("call_ls", "ls", json!({}))]),
        Reply::plan(&[
            ("Read the greeting", "the typo is found"),
            ("Fix the typo", "greeting.txt says hello world"),
        ]),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))]),
        Reply::step_done("found `wrold`"),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        )]),
        Reply::tool_calls(vec![(
            "call_cat",
            "exec",
            json!({"command": "cat greeting.txt"}),
        )]),
        Reply::step_done("fixed the typo"),
        Reply::text("Fixed the typo `wrold` -> `world` in greeting.txt."),
    ]
}

fn run_job(sb: &Sandbox, extra_args: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--junit",
        "out/junit.xml",
        "--progress",
        "plain",
    ];
    args.extend_from_slice(extra_args);
    sb.agentci(&args)
}

fn run_completed(trace: &[Value]) -> &Value {
    let last = trace.last().unwrap();
    assert_eq!(last["type"], "run.completed");
    last
}

/// The tool result the model got back for `call_id` in a later request.
fn tool_message<'a>(requests: &'a [Value], call_id: &str) -> &'a str {
    requests
        .iter()
        .flat_map(|r| r["messages"].as_array().unwrap())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool message for {call_id}"))["content"]
        .as_str()
        .unwrap()
}

#[test]
fn passing_job_plans_executes_checks_and_writes_trace_and_junit() {
    let model = FakeModel::start(fixing_script());
    let sb = sandbox(&model.base_url(), "");
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(sb.read("ws/greeting.txt"), "hello world\n");
    assert!(stdout(&out).contains("Fixed the typo"), "{}", stdout(&out));

    let trace_path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&trace_path);
    let trace = read_jsonl(&trace_path);
    let kinds = types(&trace);
    assert_eq!(kinds[0], "run.started");
    assert_eq!(kinds[1], "skill.loaded");
    let order = [
        "plan.created",
        "step.started",
        "step.completed",
        "step.started",
        "step.completed",
        "check.completed",
        "run.completed",
    ];
    let mut at = 0;
    for kind in order {
        at += kinds[at..]
            .iter()
            .position(|k| k == kind)
            .unwrap_or_else(|| panic!("{kind} missing after index {at}: {kinds:?}"));
    }
    let done = run_completed(&trace);
    assert_eq!(done["status"], "passed");
    assert_eq!(done["totals"]["turns"], 8);
    assert_eq!(done["totals"]["tool_calls"], 4);
    assert_eq!(done["checks_passed"], 1);
    assert_eq!(
        trace[0]["tools"],
        json!(["read", "edit", "grep", "ls", "exec"])
    );

    // Every allowed call was decided by the rule that matched it.
    let decisions: Vec<(String, String)> = events(&trace, "permission.decision")
        .iter()
        .map(|e| {
            (
                e["decision"].as_str().unwrap().to_string(),
                e["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(decisions.contains(&("allow".into(), "allow: edit(*.txt)".into())));
    assert!(decisions.contains(&("allow".into(), "allow: exec(cat *)".into())));

    // Every request offers the same tools, the control tools last; the
    // summary turn keeps them and says `tool_choice: none`. Regression: the
    // summary turn went out without tools, which the Messages API refuses
    // when the history holds tool blocks.
    let requests = model.requests();
    assert_eq!(requests.len(), 8);
    let offered = |i: usize| -> Vec<String> {
        requests[i]["tools"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let all = [
        "read",
        "edit",
        "grep",
        "ls",
        "exec",
        "submit_plan",
        "step_done",
        "update_plan",
    ];
    for i in 0..requests.len() {
        assert_eq!(offered(i), all, "request {i}");
    }
    assert_eq!(requests[7]["tool_choice"], "none");
    assert!(requests[..7].iter().all(|r| r.get("tool_choice").is_none()));
    assert!(tool_message(&requests, "call_read").contains("hello wrold"));
    assert!(tool_message(&requests, "call_cat").contains("hello world"));

    let junit = sb.read("out/junit.xml");
    assert!(junit.contains("<testsuites"), "{junit}");
    assert!(junit.contains("name=\"greeting fixed\""), "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(
        junit.contains("Fixed the typo"),
        "summary in system-out: {junit}"
    );
}

#[test]
fn failing_check_fails_the_run_with_exit_1() {
    let mut script = fixing_script();
    // The model "fixes" nothing: skip the edit.
    script.remove(4);
    let model = FakeModel::start(script);
    let sb = sandbox(&model.base_url(), "");
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let trace = sb.trace("out/trace.jsonl");
    let check = events(&trace, "check.completed")[0];
    assert_eq!(check["outcome"], "failed");
    assert_eq!(check["exit_code"], 1);
    assert_eq!(run_completed(&trace)["status"], "failed");
    let junit = sb.read("out/junit.xml");
    assert!(junit.contains("<failure"), "{junit}");
}

#[test]
fn budget_stop_exits_3_and_skips_checks() {
    let model = FakeModel::start(fixing_script());
    let sb = sandbox(&model.base_url(), "budget: {max_turns: 3}\n");
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
    assert_eq!(
        model.requests().len(),
        3,
        "no model call after the budget ran out"
    );
    let trace = sb.trace("out/trace.jsonl");
    let exceeded = events(&trace, "budget.exceeded");
    assert_eq!(exceeded.len(), 1);
    assert_eq!(exceeded[0]["limit"], "max_turns");
    assert_eq!(events(&trace, "check.completed")[0]["outcome"], "skipped");
    assert_eq!(run_completed(&trace)["status"], "budget_exceeded");
    let junit = sb.read("out/junit.xml");
    assert!(junit.contains("<error"), "{junit}");
    assert!(junit.contains("max_turns"), "{junit}");
}

#[test]
fn tool_call_budget_stops_before_the_batch_runs() {
    let model = FakeModel::start(fixing_script());
    let sb = sandbox(&model.base_url(), "budget: {max_tool_calls: 2}\n");
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
    // ls and read ran; the edit would have been the third call.
    assert_eq!(sb.read("ws/greeting.txt"), TYPO);
    let trace = sb.trace("out/trace.jsonl");
    assert_eq!(
        events(&trace, "budget.exceeded")[0]["limit"],
        "max_tool_calls"
    );
}

/// A script whose execution turns are `calls`, one turn each, then done.
fn script_with(calls: Vec<Reply>) -> Vec<Reply> {
    let mut script = vec![Reply::plan(&[("Try things", "they are tried")])];
    script.extend(calls);
    script.push(Reply::step_done("tried"));
    script.push(Reply::text("done"));
    script
}

#[test]
fn denied_call_is_refused_recorded_and_the_run_goes_on() {
    let model = FakeModel::start(script_with(vec![Reply::tool_calls(vec![(
        "call_rm",
        "exec",
        json!({"command": "rm greeting.txt"}),
    )])]));
    let sb = sandbox(&model.base_url(), "");
    let out = run_job(&sb, &[]);
    // The typo is still there, so the check fails, but the agent finished.
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert!(
        sb.path().join("ws/greeting.txt").exists(),
        "denied rm must not run"
    );
    let trace = sb.trace("out/trace.jsonl");
    let decision = events(&trace, "permission.decision")
        .into_iter()
        .find(|e| e["call_id"] == "call_rm")
        .unwrap();
    assert_eq!(decision["decision"], "deny");
    assert_eq!(decision["rule"], "deny: exec(rm *)");
    let result = events(&trace, "tool.result")
        .into_iter()
        .find(|e| e["call_id"] == "call_rm")
        .unwrap();
    assert_eq!(result["ok"], false);
    assert_eq!(result["error_code"], "PERMISSION_DENIED");
    let requests = model.requests();
    assert!(tool_message(&requests, "call_rm").contains("PERMISSION_DENIED"));
    assert_eq!(requests.len(), 4, "the run went on after the denial");
}

#[test]
fn default_deny_refuses_calls_no_rule_allows() {
    let model = FakeModel::start(script_with(vec![Reply::tool_calls(vec![(
        "call_echo",
        "exec",
        json!({"command": "echo hi > made.txt"}),
    )])]));
    let sb = sandbox(&model.base_url(), "");
    run_job(&sb, &[]);
    assert!(!sb.path().join("ws/made.txt").exists());
    let trace = sb.trace("out/trace.jsonl");
    let decision = events(&trace, "permission.decision")[0];
    assert_eq!(decision["decision"], "deny");
    assert_eq!(decision["rule"], "default");
}

#[test]
fn bad_arguments_return_invalid_argument_and_the_run_goes_on() {
    let model = FakeModel::start(script_with(vec![
        Reply::tool_calls(vec![("call_bad", "read", json!({"file": "greeting.txt"}))]),
        Reply::raw_tool_call("call_garbled", "read", "{\"path\": \"greeting.txt\""),
        Reply::tool_calls(vec![("call_good", "read", json!({"path": "greeting.txt"}))]),
    ]));
    let sb = sandbox(&model.base_url(), "");
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let requests = model.requests();
    let bad = tool_message(&requests, "call_bad");
    assert!(bad.contains("INVALID_ARGUMENT"), "{bad}");
    assert!(bad.contains("path"), "names the missing argument: {bad}");
    let garbled = tool_message(&requests, "call_garbled");
    assert!(garbled.contains("INVALID_ARGUMENT"), "{garbled}");
    assert!(garbled.contains("not valid JSON"), "{garbled}");
    assert!(tool_message(&requests, "call_good").contains("hello wrold"));
    let trace = sb.trace("out/trace.jsonl");
    let garbled_call = events(&trace, "tool.call")
        .into_iter()
        .find(|e| e["call_id"] == "call_garbled")
        .unwrap();
    assert_eq!(
        garbled_call["arguments"]["_unparsed"],
        "{\"path\": \"greeting.txt\""
    );
}

#[test]
fn tool_not_given_is_refused_even_if_the_model_calls_it() {
    let model = FakeModel::start(script_with(vec![Reply::tool_calls(vec![(
        "call_write",
        "write",
        json!({"path": "new.txt", "content": "x"}),
    )])]));
    let sb = sandbox(&model.base_url(), "");
    run_job(&sb, &[]);
    assert!(!sb.path().join("ws/new.txt").exists());
    let requests = model.requests();
    let text = tool_message(&requests, "call_write");
    assert!(text.contains("UNKNOWN_TOOL"), "{text}");
    assert!(
        text.contains("available: read, edit, grep, ls, exec"),
        "{text}"
    );
    let trace = sb.trace("out/trace.jsonl");
    assert_eq!(events(&trace, "permission.decision")[0]["rule"], "tool set");
}

#[test]
fn mutating_tool_is_refused_while_planning() {
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        )]),
        Reply::plan(&[("Nothing", "nothing")]),
        Reply::step_done("nothing"),
        Reply::text("done"),
    ]);
    let sb = sandbox(&model.base_url(), "");
    run_job(&sb, &[]);
    assert_eq!(sb.read("ws/greeting.txt"), TYPO);
    let requests = model.requests();
    let text = tool_message(&requests, "call_edit");
    assert!(text.contains("while planning"), "{text}");
}

#[test]
fn path_escapes_are_refused() {
    let model = FakeModel::start(script_with(vec![Reply::tool_calls(vec![
        ("call_up", "read", json!({"path": "../secret.txt"})),
        ("call_abs", "read", json!({"path": "/etc/hostname"})),
        ("call_link", "read", json!({"path": "link/secret.txt"})),
        (
            "call_edit_up",
            "edit",
            json!({"path": "../secret.txt", "old_text": "s", "new_text": "x"}),
        ),
    ])]));
    let sb = sandbox(&model.base_url(), "");
    sb.write("secret.txt", "s3cr3t-outside\n");
    std::os::unix::fs::symlink(sb.path(), sb.workspace().join("link")).unwrap();
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let requests = model.requests();
    for id in ["call_up", "call_abs", "call_link"] {
        let text = tool_message(&requests, id);
        assert!(text.contains("OUTSIDE_WORKSPACE"), "{id}: {text}");
    }
    // edit(*.txt) does not match ../secret.txt, so the policy denies it first.
    assert!(tool_message(&requests, "call_edit_up").starts_with("ERROR"));
    assert_eq!(sb.read("secret.txt"), "s3cr3t-outside\n");
    let trace = std::fs::read_to_string(sb.path().join("out/trace.jsonl")).unwrap();
    assert!(
        !trace.contains("s3cr3t"),
        "outside content leaked into the trace"
    );
}

#[test]
fn loop_of_identical_calls_is_warned_then_its_step_ends() {
    let same = || Reply::tool_calls(vec![("", "read", json!({"path": "greeting.txt"}))]);
    let model = FakeModel::start(vec![
        Reply::plan(&[("Try things", "they are tried")]),
        same(),
        same(),
        same(),
        same(),
        Reply::text("done"),
    ]);
    let sb = sandbox(&model.base_url(), "");
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let trace = sb.trace("out/trace.jsonl");
    let loops = events(&trace, "tool.result")
        .into_iter()
        .filter(|e| e["error_code"] == "LOOP_DETECTED")
        .count();
    assert_eq!(loops, 2, "one warning, then the call that ended the step");
    let step = events(&trace, "step.completed")[0];
    assert_eq!(step["status"], "failed");
    assert!(
        step["summary"]
            .as_str()
            .unwrap()
            .contains("repeating itself")
    );
    // The run went on to its summary and checks; the check judges the work.
    assert_eq!(run_completed(&trace)["status"], "failed");
}

#[test]
fn update_plan_replaces_only_the_remaining_steps() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("First", "a"), ("Second", "b")]),
        Reply::tool_calls(vec![(
            "call_up",
            "update_plan",
            json!({"steps": [{"title": "Replacement", "expected_outcome": "c"}, {"title": "Extra", "expected_outcome": "d"}]}),
        )]),
        Reply::step_done("first done"),
        Reply::step_done("replacement done"),
        Reply::text("extra done, no tool call"),
        Reply::text("summary"),
    ]);
    let sb = sandbox(&model.base_url(), "");
    run_job(&sb, &[]);
    let trace = sb.trace("out/trace.jsonl");
    let updated = events(&trace, "plan.updated")[0];
    assert_eq!(updated["from_index"], 1);
    let titles: Vec<&str> = updated["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, vec!["First", "Replacement", "Extra"]);
    let completed: Vec<&str> = events(&trace, "step.completed")
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    assert_eq!(completed, vec!["First", "Replacement", "Extra"]);
    assert_eq!(
        events(&trace, "step.completed")[2]["summary"],
        "extra done, no tool call"
    );
}

#[test]
fn no_plan_within_the_planning_turns_fails_the_run() {
    let model = FakeModel::start(vec![
        Reply::text("I think..."),
        Reply::text("Still thinking"),
    ]);
    let sb = sandbox(&model.base_url(), "max_plan_turns: 2\n");
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(last["content"].as_str().unwrap().contains("submit_plan"));
    let trace = sb.trace("out/trace.jsonl");
    assert!(
        run_completed(&trace)["reason"]
            .as_str()
            .unwrap()
            .contains("plan")
    );
}

#[test]
fn unreachable_provider_exits_4_with_trace_and_junit() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let sb = sandbox(&format!("http://127.0.0.1:{port}/v1"), "");
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(4), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("127.0.0.1:{port}")),
        "{}",
        stderr(&out)
    );
    let trace = sb.trace("out/trace.jsonl");
    assert_eq!(run_completed(&trace)["status"], "provider_unavailable");
    assert!(sb.read("out/junit.xml").contains("<error"));
}

#[test]
fn missing_api_key_names_the_variable() {
    let sb = sandbox("https://api.example.invalid/v1", "");
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("OPENAI_API_KEY"), "{}", stderr(&out));
    let trace = sb.trace("out/trace.jsonl");
    assert_eq!(run_completed(&trace)["status"], "error");
}

#[test]
fn api_key_never_reaches_the_trace() {
    let model = FakeModel::start(fixing_script());
    let sb = sandbox(&model.base_url(), "");
    let out = super::support::harness::agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--progress",
            "none",
        ],
        &[("OPENAI_API_KEY", "sk-test-very-secret-key")],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let trace = std::fs::read_to_string(sb.path().join("out/trace.jsonl")).unwrap();
    assert!(!trace.contains("sk-test-very-secret-key"));
    assert!(!stderr(&out).contains("sk-test-very-secret-key"));
}

#[test]
fn default_run_folder_is_in_the_workspace_and_excluded_from_git() {
    let model = FakeModel::start(fixing_script());
    let sb = sandbox(&model.base_url(), "");
    std::fs::create_dir_all(sb.workspace().join(".git/info")).unwrap();
    let out = sb.agentci(&["run", "job.yaml", "--progress", "none"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let runs: Vec<_> = std::fs::read_dir(sb.workspace().join(".agentci/runs"))
        .unwrap()
        .collect();
    assert_eq!(runs.len(), 1);
    let run_dir = runs[0].as_ref().unwrap().path();
    assert!(run_dir.join("trace.jsonl").exists());
    assert!(run_dir.join("junit.xml").exists());
    let exclude = sb.read("ws/.git/info/exclude");
    assert!(exclude.contains(".agentci/"), "{exclude}");
    // Regression: the run folder showed up in `ls`, so a replay diverged
    // depending on how many runs had gone before.
    let listing = tool_message(&model.requests(), "call_ls").to_string();
    assert!(!listing.contains(".agentci"), "{listing}");
}

/// Drop what differs between two runs by nature: times, durations, ids,
/// paths (also inside what the model was sent, rooted at `root`).
fn comparable(trace: &[Value], root: &std::path::Path) -> Vec<Value> {
    let root = root.display().to_string();
    trace
        .iter()
        .map(|e| {
            let text = e.to_string().replace(&root, "<root>");
            let mut e: Value = serde_json::from_str(&text).unwrap();
            let obj = e.as_object_mut().unwrap();
            for key in [
                "ts",
                "run_id",
                "latency_ms",
                "duration_ms",
                "outputs",
                "workspace",
                "model",
            ] {
                obj.remove(key);
            }
            if obj["type"] == "skill.loaded" {
                obj.remove("path");
            }
            if let Some(data) = obj.get_mut("data").and_then(Value::as_object_mut) {
                data.remove("duration_ms");
            }
            if let Some(totals) = obj.get_mut("totals").and_then(Value::as_object_mut) {
                totals.remove("duration_ms");
            }
            e
        })
        .collect()
}

#[test]
fn record_then_replay_produces_the_same_trace() {
    let model = FakeModel::start(fixing_script());
    let live = sandbox(&model.base_url(), "");
    let out = run_job(&live, &["--record", "cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    drop(model);

    // A fresh copy in another folder, with the server gone: only the cassette answers.
    let replay = sandbox("http://127.0.0.1:9/v1", "");
    std::fs::copy(
        live.path().join("cassette.jsonl"),
        replay.path().join("cassette.jsonl"),
    )
    .unwrap();
    let out = run_job(&replay, &["--replay", "cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(replay.read("ws/greeting.txt"), "hello world\n");
    assert_eq!(
        comparable(&live.trace("out/trace.jsonl"), live.path()),
        comparable(&replay.trace("out/trace.jsonl"), replay.path())
    );
}

#[test]
fn replay_that_diverges_says_where() {
    let model = FakeModel::start(fixing_script());
    let live = sandbox(&model.base_url(), "");
    run_job(&live, &["--record", "cassette.jsonl"]);
    // Same job, different goal: the very first request differs.
    let sb = sandbox("http://127.0.0.1:9/v1", "");
    let job = sb.read("job.yaml").replace("Fix the typo", "Fix the typos");
    sb.write("job.yaml", &job);
    std::fs::copy(
        live.path().join("cassette.jsonl"),
        sb.path().join("cassette.jsonl"),
    )
    .unwrap();
    let out = run_job(&sb, &["--replay", "cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(4), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("diverged"), "{err}");
    // The goal follows the two system messages (shared text, run details).
    assert!(err.contains("messages[2]"), "{err}");
}

/// Regression: a provider failing on the final summary turn, after all the
/// work was done, ended the run as provider_unavailable and skipped the checks.
#[test]
fn provider_failing_on_the_summary_turn_does_not_fail_finished_work() {
    let mut script = fixing_script();
    script.pop();
    script.push(Reply::status(400, "the server cannot summarize"));
    let model = FakeModel::start(script);
    let sb = sandbox(&model.base_url(), "");
    let out = run_job(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let trace = sb.trace("out/trace.jsonl");
    let warning = events(&trace, "warning")
        .into_iter()
        .find(|e| e["source"] == "summary")
        .expect("a warning about the summary turn");
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("cannot summarize"),
        "{warning}"
    );
    assert_eq!(events(&trace, "check.completed")[0]["outcome"], "passed");
    let done = run_completed(&trace);
    assert_eq!(done["status"], "passed");
    assert_eq!(done["summary"], "found `wrold`\nfixed the typo");
}

/// Regression: path rules judged only the path as written, so a symlink
/// inside the workspace led a denied read into `secrets/`.
#[test]
fn deny_rules_also_judge_where_a_symlink_leads() {
    let model = FakeModel::start(script_with(vec![Reply::tool_calls(vec![
        ("call_direct", "read", json!({"path": "secrets/key.txt"})),
        ("call_link", "read", json!({"path": "docs/key.txt"})),
    ])]));
    let sb = sandbox(&model.base_url(), "");
    let job = sb.read("job.yaml").replace(
        r#"deny: ["exec(rm *)"]"#,
        r#"deny: ["exec(rm *)", "read(secrets/**)"]"#,
    );
    sb.write("job.yaml", &job);
    sb.write("ws/secrets/key.txt", "k3y-inside\n");
    std::os::unix::fs::symlink("secrets", sb.workspace().join("docs")).unwrap();
    run_job(&sb, &[]);
    let requests = model.requests();
    for id in ["call_direct", "call_link"] {
        let text = tool_message(&requests, id);
        assert!(text.contains("PERMISSION_DENIED"), "{id}: {text}");
    }
    let trace = sb.trace("out/trace.jsonl");
    let linked = events(&trace, "permission.decision")
        .into_iter()
        .find(|e| e["call_id"] == "call_link")
        .unwrap();
    assert_eq!(linked["rule"], "deny: read(secrets/**) (through a symlink)");
    let text = std::fs::read_to_string(sb.path().join("out/trace.jsonl")).unwrap();
    assert!(!text.contains("k3y-inside"));
}
