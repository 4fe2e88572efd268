//! Anthropic thinking through whole runs of the real binary: manual,
//! adaptive and interleaved thinking, whole and streamed, against a fake
//! Messages API that signs its thinking blocks and refuses what the real
//! one refuses (a tool-use turn sent back without its thinking or with it
//! changed, a budget the request cannot hold, forced tool use). Each run
//! plans, calls tools, finishes its step, passes its check and summarizes;
//! the requests are snapshotted; each run replays offline from the cassette
//! it recorded; a run compacted in the middle, and a run killed and
//! resumed, go on with requests the strict fake still accepts.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::signals::wait_until;
use super::support::fake_model::anthropic_thinking::{redacted_data, sign};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, outside_github, read_jsonl, stderr};
use super::support::job::JobBuilder;
use super::support::job::JobRun;
use super::support::trace_schema::assert_valid_trace;

const KEY: &str = "sk-ant-thinking-test";
const MODEL: &str = "claude-sonnet-4-5";

/// A workspace with a greeting, a skill that reads, and an Anthropic job
/// whose `model.reasoning` is `reasoning` (YAML flow mapping).
fn sandbox(base_url: &str, reasoning: &str, model_extra: &str, stream: bool) -> Sandbox {
    JobBuilder::reader("thinking-check", base_url)
        .goal("Read greeting.txt and say what it says.")
        .model("anthropic", MODEL, base_url)
        .model_extra(&format!(
            "  request_timeout: 10s\n  stream: {stream}\n  reasoning: {reasoning}\n"
        ))
        .model_extra(model_extra)
        .write()
}

fn run(sb: &Sandbox, extra: &[&str]) -> Output {
    JobRun::bare(sb)
        .args(&["--out", "out", "--progress", "plain"])
        .args(extra)
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
}

/// The trace of a run that passed, checked against the schema.
fn passed(sb: &Sandbox, out: &Output) -> Vec<Value> {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    let path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&path);
    let trace = read_jsonl(&path);
    let done = events(&trace, "run.completed");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["status"], "passed");
    let junit = sb.read("out/junit.xml");
    assert!(
        !junit.contains("<failure") && !junit.contains("<error"),
        "{junit}"
    );
    trace
}

/// The assistant messages of a request, as sent.
fn assistants(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .cloned()
        .collect()
}

/// A request with what changes between runs replaced: the system prompt
/// (paths), and tool results (file listings).
fn redacted(request: &Value) -> Value {
    let mut request = request.clone();
    request["system"] = json!("[system prompt]");
    request["tools"] = json!("[tools]");
    for message in request["messages"].as_array_mut().unwrap() {
        let user = message["role"] == "user";
        for block in message["content"].as_array_mut().unwrap() {
            if block["type"] == "tool_result" {
                block["content"] = json!("[result]");
            }
            if block["type"] == "text" && user {
                block["text"] = json!("[instruction]");
            }
        }
    }
    request
}

/// A run's script: plan, read (with commentary), step done, summary;
/// `think(i)` says what reply `i` thinks, if anything.
fn session(think: impl Fn(usize) -> Option<&'static str>) -> Vec<Reply> {
    let replies = vec![
        Reply::plan(&[("Read the greeting", "its text is known")]),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))])
            .with_text("Reading the file now."),
        Reply::step_done("read it"),
        Reply::text("The greeting says hello world."),
    ];
    replies
        .into_iter()
        .enumerate()
        .map(|(i, reply)| match think(i) {
            Some(text) => reply.with_thinking(text),
            None => reply,
        })
        .collect()
}

const PLAN_THOUGHT: &str = "The goal names one file, so one step that reads it.";
const READ_THOUGHT: &str = "Read greeting.txt with the read tool, then report.";

/// Copies the cassette a run recorded into a fresh sandbox whose job points
/// at no server, replays it without a key, and checks the replay passes.
fn replays_offline(live: &Sandbox, reasoning: &str, stream: bool) {
    let sb = sandbox("http://127.0.0.1:9/v1", reasoning, "", stream);
    std::fs::copy(
        live.path().join("cassette.jsonl"),
        sb.path().join("cassette.jsonl"),
    )
    .unwrap();
    let args = [
        "run",
        "job.yaml",
        "--out",
        "out",
        "--progress",
        "plain",
        "--replay",
        "cassette.jsonl",
    ];
    let out = agentci_in(sb.path(), &args, &[]);
    passed(&sb, &out);
    // The recording holds the thinking with its signature, and the replayed
    // run sent it back as the live one did.
    let cassette = std::fs::read_to_string(sb.path().join("cassette.jsonl")).unwrap();
    assert!(cassette.contains(&sign(PLAN_THOUGHT)), "{cassette}");
}

#[test]
fn manual_thinking_runs_whole_and_streamed_and_sends_its_blocks_back_verbatim() {
    let reasoning = "{budget_tokens: 2048}";
    let mut sent = Vec::new();
    for stream in [false, true] {
        let mut script = session(|i| {
            [Some(PLAN_THOUGHT), Some(READ_THOUGHT)]
                .get(i)
                .copied()
                .flatten()
        });
        // The read turn also carries redacted thinking, after its thinking.
        script[1] = script[1].clone().with_redacted_thinking("safety-redacted");
        let model = FakeModel::start(script);
        let sb = sandbox(&model.base_url(), reasoning, "", stream);
        let out = run(&sb, &["--record", "cassette.jsonl"]);
        let trace = passed(&sb, &out);
        assert_eq!(model.remaining(), 0);
        let captured = model.captured();
        assert_eq!(captured.len(), 4);
        for request in &captured {
            assert_eq!(
                request.body["thinking"],
                json!({"type": "enabled", "budget_tokens": 2048})
            );
            // max_tokens exceeds the budget by the usual room for the answer.
            assert_eq!(request.body["max_tokens"], 2048 + 8192);
            assert_eq!(request.anthropic_beta, None);
            // Manual thinking takes only `auto` (left out) and `none`
            // (the summary turn); agentci never forces a tool.
            let choice = request.body["tool_choice"]["type"].as_str();
            assert!(matches!(choice, None | Some("none")), "{choice:?}");
        }
        // Every later request sends each turn's blocks back first, in
        // order, byte for byte (the fake checks each signature).
        let last = assistants(&captured[3].body);
        assert_eq!(
            last[0]["content"][0],
            json!({"type": "thinking", "thinking": PLAN_THOUGHT, "signature": sign(PLAN_THOUGHT)})
        );
        assert_eq!(
            last[1]["content"][0],
            json!({"type": "thinking", "thinking": READ_THOUGHT, "signature": sign(READ_THOUGHT)})
        );
        assert_eq!(
            last[1]["content"][1],
            json!({"type": "redacted_thinking", "data": redacted_data("safety-redacted")})
        );
        assert_eq!(last[1]["content"][2]["type"], "text");
        assert_eq!(last[1]["content"][3]["type"], "tool_use");
        // The thinking is not the answer's text.
        let responses = events(&trace, "model.response");
        assert_eq!(responses[1]["text"], "Reading the file now.");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains(READ_THOUGHT), "{stdout}");
        replays_offline(&sb, reasoning, stream);
        let mut last = redacted(&captured[3].body);
        last.as_object_mut().unwrap().remove("stream");
        sent.push(last);
    }
    // Streamed or not, the same conversation goes back.
    assert_eq!(sent[0], sent[1]);
    insta::assert_json_snapshot!("manual_thinking_last_request", sent[0]);
}

#[test]
fn adaptive_thinking_runs_whole_and_streamed_with_its_effort() {
    let reasoning = "{mode: adaptive, effort: high}";
    for stream in [false, true] {
        let model = FakeModel::start(session(|i| match i {
            0 => Some(PLAN_THOUGHT),
            1 => Some(READ_THOUGHT),
            _ => None,
        }));
        let sb = sandbox(&model.base_url(), reasoning, "", stream);
        let out = run(&sb, &["--record", "cassette.jsonl"]);
        passed(&sb, &out);
        let captured = model.captured();
        assert_eq!(captured.len(), 4);
        for request in &captured {
            assert_eq!(request.body["thinking"], json!({"type": "adaptive"}));
            assert_eq!(request.body["output_config"], json!({"effort": "high"}));
            assert_eq!(request.body["max_tokens"], 32_000);
            assert_eq!(request.anthropic_beta, None);
        }
        let last = assistants(&captured[3].body);
        assert_eq!(last[0]["content"][0]["signature"], sign(PLAN_THOUGHT));
        if !stream {
            insta::assert_json_snapshot!(
                "adaptive_thinking_last_request",
                redacted(&captured[3].body)
            );
        }
        replays_offline(&sb, reasoning, stream);
    }
}

#[test]
fn a_turn_the_model_began_without_thinking_is_finished_without_it() {
    // Adaptive thinking lets the model skip thinking; a tool-use turn that
    // began without a thinking block would be refused with thinking on
    // ("Expected `thinking` or `redacted_thinking`"), so the rest of the
    // turn goes with thinking off, and is accepted.
    let model = FakeModel::start(session(|_| None));
    let sb = sandbox(&model.base_url(), "{mode: adaptive}", "", true);
    let out = run(&sb, &[]);
    passed(&sb, &out);
    let captured = model.captured();
    assert_eq!(captured[0].body["thinking"], json!({"type": "adaptive"}));
    for request in &captured[1..] {
        assert_eq!(request.body.get("thinking"), None, "{}", request.body);
        assert_eq!(request.body.get("output_config"), None);
    }
}

#[test]
fn interleaved_thinking_sends_the_beta_and_thinks_between_tool_calls() {
    // A budget as large as the model's output limit: without the
    // interleaved beta the fake (as the API) refuses budget >= max_tokens.
    let reasoning = "{budget_tokens: 64000, interleaved: true}";
    let thoughts = [
        PLAN_THOUGHT,
        READ_THOUGHT,
        "The file says hello world; the step is done.",
        "Summarize what the file says.",
    ];
    for stream in [false, true] {
        let model = FakeModel::start(session(|i| thoughts.get(i).copied()));
        let sb = sandbox(&model.base_url(), reasoning, "", stream);
        let out = run(&sb, &["--record", "cassette.jsonl"]);
        passed(&sb, &out);
        let captured = model.captured();
        assert_eq!(captured.len(), 4);
        for request in &captured {
            assert_eq!(
                request.anthropic_beta.as_deref(),
                Some("interleaved-thinking-2025-05-14")
            );
            assert_eq!(request.body["max_tokens"], 64_000);
            assert_eq!(request.body["thinking"]["budget_tokens"], 64_000);
        }
        // Each assistant message of the tool-use loop starts with the
        // thinking that came between the tool calls.
        let last = assistants(&captured[3].body);
        assert_eq!(last.len(), 3);
        for (message, thought) in last.iter().zip(thoughts) {
            assert_eq!(
                message["content"][0],
                json!({"type": "thinking", "thinking": thought, "signature": sign(thought)})
            );
        }
        if stream {
            insta::assert_json_snapshot!(
                "interleaved_thinking_last_request",
                redacted(&captured[3].body)
            );
        }
        replays_offline(&sb, reasoning, stream);
    }
}

/// One Messages request straight to the fake, as a client that got thinking
/// wrong would send it: the status and the error message.
fn send_raw(model: &FakeModel, body: &Value, beta: Option<&str>) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut request = reqwest::Client::new()
            .post(format!("{}/messages", model.base_url()))
            .header("x-api-key", KEY)
            .header("anthropic-version", "2023-06-01")
            .json(body);
        if let Some(beta) = beta {
            request = request.header("anthropic-beta", beta);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        if status == 400 {
            assert_eq!(body["type"], "error");
            assert_eq!(body["error"]["type"], "invalid_request_error");
        }
        (
            status,
            body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    })
}

/// A thinking request in the middle of a tool-use turn, as agentci sends it.
fn tool_turn(thinking: Value, first_block: Option<Value>) -> Value {
    let mut assistant =
        vec![json!({"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}})];
    if let Some(block) = first_block {
        assistant.insert(0, block);
    }
    json!({
        "model": MODEL,
        "max_tokens": 4096,
        "thinking": thinking,
        "tools": [{"name": "read", "description": "read", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read a."}]},
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]},
        ],
    })
}

#[test]
fn the_fake_refuses_thinking_the_real_api_refuses() {
    let model = FakeModel::start(vec![Reply::text("ok"), Reply::text("ok")]);
    let manual = json!({"type": "enabled", "budget_tokens": 1024});
    let genuine = json!({"type": "thinking", "thinking": "Read a.", "signature": sign("Read a.")});

    // Sent back unchanged, the block is accepted.
    let (status, _) = send_raw(
        &model,
        &tool_turn(manual.clone(), Some(genuine.clone())),
        None,
    );
    assert_eq!(status, 200);
    // Changed by one character, its signature no longer matches.
    let mut changed = genuine.clone();
    changed["thinking"] = json!("Read b.");
    let (status, message) = send_raw(&model, &tool_turn(manual.clone(), Some(changed)), None);
    assert_eq!(
        (status, message.as_str()),
        (
            400,
            "messages.1.content.0: Invalid `signature` in `thinking` block"
        )
    );
    // Left out, the tool-use turn no longer starts with its thinking.
    let (status, message) = send_raw(&model, &tool_turn(manual.clone(), None), None);
    assert_eq!(status, 400);
    assert!(
        message.starts_with("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."),
        "{message}"
    );
    // Forced tool use with manual thinking.
    let mut forced = tool_turn(manual.clone(), Some(genuine.clone()));
    forced["tool_choice"] = json!({"type": "any"});
    let (status, message) = send_raw(&model, &forced, None);
    assert_eq!(
        (status, message.as_str()),
        (
            400,
            "Thinking may not be enabled when tool_choice forces tool use."
        )
    );
    // A budget under the minimum.
    let small = json!({"type": "enabled", "budget_tokens": 512});
    let (status, message) = send_raw(&model, &tool_turn(small, Some(genuine.clone())), None);
    assert_eq!(status, 400);
    assert!(
        message.contains("greater than or equal to 1024"),
        "{message}"
    );
    // A budget the request's max_tokens cannot hold, unless interleaved.
    let large = json!({"type": "enabled", "budget_tokens": 4096});
    let (status, message) = send_raw(
        &model,
        &tool_turn(large.clone(), Some(genuine.clone())),
        None,
    );
    assert_eq!(status, 400);
    assert!(
        message.starts_with("`max_tokens` must be greater than `thinking.budget_tokens`"),
        "{message}"
    );
    let (status, _) = send_raw(
        &model,
        &tool_turn(large, Some(genuine.clone())),
        Some("interleaved-thinking-2025-05-14"),
    );
    assert_eq!(status, 200);
    // Adaptive thinking takes no budget.
    let adaptive = json!({"type": "adaptive", "budget_tokens": 2048});
    let (status, message) = send_raw(&model, &tool_turn(adaptive, Some(genuine.clone())), None);
    assert_eq!(status, 400);
    assert!(
        message.contains("thinking.adaptive.budget_tokens"),
        "{message}"
    );
    // Thinking is not compatible with temperature or top_k modifications.
    let mut warm = tool_turn(manual.clone(), Some(genuine.clone()));
    warm["temperature"] = json!(0.2);
    let (status, message) = send_raw(&model, &warm, None);
    assert_eq!(status, 400);
    assert!(
        message.starts_with("`temperature` may only be set to 1"),
        "{message}"
    );
    // With thinking off, an assistant message in the final position
    // (a prefill) may not hold thinking.
    let mut prefill = tool_turn(Value::Null, None);
    prefill.as_object_mut().unwrap().remove("thinking");
    prefill["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": [genuine]}));
    let (status, message) = send_raw(&model, &prefill, None);
    assert_eq!(status, 400);
    assert!(message.contains("When thinking is disabled"), "{message}");
    assert_eq!(model.remaining(), 0);
}

/// Lines of a file the model reads: about 7,000 tokens.
fn big_file(tag: &str) -> String {
    (0..560)
        .map(|i| format!("{tag} line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

#[test]
fn a_thinking_run_compacted_in_the_middle_goes_on_with_accepted_requests() {
    let read =
        |id: &str, path: &str| Reply::tool_calls(vec![(id, "read", json!({ "path": path }))]);
    let model = FakeModel::start(vec![
        Reply::plan(&[("Read the files", "their content is known")]).with_thinking(PLAN_THOUGHT),
        read("call_f1", "f1.txt"),
        read("call_f2", "f2.txt"),
        // The summary request is a turn of its own: the model thinks.
        Reply::text("SUMMARY-ONE: f1.txt holds fox lines.").with_thinking("Summarize f1."),
        read("call_f3", "f3.txt"),
        Reply::text("SUMMARY-TWO: f1 and f2 hold fox lines.").with_thinking("Summarize both."),
        Reply::step_done("read all three"),
        Reply::text("The files hold fox lines."),
    ]);
    let sb = sandbox(
        &model.base_url(),
        "{budget_tokens: 1024}",
        "  context_window: 16000\n",
        false,
    );
    for tag in ["f1", "f2", "f3"] {
        sb.write(&format!("ws/{tag}.txt"), &big_file(tag));
    }
    let out = run(&sb, &[]);
    let trace = passed(&sb, &out);
    assert_eq!(model.remaining(), 0);
    let compacted = events(&trace, "context.compacted");
    assert_eq!(compacted.len(), 2, "{compacted:?}");
    assert!(compacted.iter().all(|c| c["method"] == "summary"));
    let requests = model.requests();
    assert_eq!(requests.len(), 8);
    // The requests after each compaction no longer carry the older reads,
    // still think, and still send the plan's thinking first in the turn
    // (the fake checked every signature and the turn's first block).
    for i in [4, 6, 7] {
        assert!(
            !requests[i].to_string().contains("f1 line 7:"),
            "request {i}"
        );
        assert_eq!(requests[i]["thinking"]["type"], "enabled");
        let first = &assistants(&requests[i])[0];
        assert_eq!(first["content"][0]["signature"], sign(PLAN_THOUGHT));
    }
    // The summary requests think too, on their own turn.
    for i in [3, 5] {
        assert!(requests[i].get("tools").is_none());
        assert_eq!(requests[i]["thinking"]["type"], "enabled");
    }
}

#[test]
fn a_thinking_run_killed_and_resumed_sends_its_thinking_back_and_passes() {
    // Killed (SIGKILL) while the third request, the step's second turn,
    // waits for its answer; the resumed run sends that request again, with
    // the plan's thinking first in the turn, and the fake accepts it.
    let mut script = session(|i| (i == 0).then_some(PLAN_THOUGHT));
    script.insert(2, Reply::hang());
    let model = FakeModel::start(script);
    let sb = sandbox(&model.base_url(), "{budget_tokens: 2048}", "", true);
    let mut child = outside_github(&mut Command::new(env!("CARGO_BIN_EXE_agentci")))
        .args(["run", "job.yaml", "--out", "out", "--progress", "none"])
        .current_dir(sb.path())
        .env("ANTHROPIC_API_KEY", KEY)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || model.requests().len() == 3),
        "the run never sent its third request"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    let out = run(&sb, &["--resume", "out"]);
    passed(&sb, &out);
    let trace = sb.trace("out/trace.jsonl");
    assert_eq!(events(&trace, "run.resumed").len(), 1);
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[3]["messages"], requests[2]["messages"]);
    assert_eq!(requests[3]["thinking"]["budget_tokens"], 2048);
    let first = &assistants(&requests[3])[0];
    assert_eq!(
        first["content"][0],
        json!({"type": "thinking", "thinking": PLAN_THOUGHT, "signature": sign(PLAN_THOUGHT)})
    );
    assert!(Path::new(&sb.path().join("out/junit.xml")).exists());
}

#[test]
fn a_budget_the_model_cannot_hold_fails_with_one_line_naming_the_fix() {
    // claude-sonnet-4-5 writes at most 64,000 tokens; without interleaving
    // the API wants max_tokens above the budget, so no request could pass:
    // the job is refused when it is loaded, as `validate` refuses it.
    let model = FakeModel::start(session(|_| None));
    let sb = sandbox(&model.base_url(), "{budget_tokens: 64000}", "", false);
    let out = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "model.reasoning.budget_tokens 64000 leaves no room for the answer: claude-sonnet-4-5 \
             writes at most 64000 tokens"
        ),
        "{err}"
    );
    assert!(err.contains("or set `interleaved: true`"), "{err}");
    assert!(
        err.contains("job.yaml:"),
        "the error points into the job: {err}"
    );
    assert!(!err.contains(KEY), "{err}");
    assert!(model.requests().is_empty());
}

#[test]
fn an_mcp_sampling_request_thinks_with_its_max_tokens_above_the_budget() {
    // A server's sampling request asks for 50 tokens; with a 1,024-token
    // budget the API wants max_tokens above it, so the answer's 50 come on
    // top, and the request (no tools, a new turn) is accepted.
    let sb = Sandbox::new();
    let command = super::mcp::test_server(&[]);
    let quoted: Vec<String> = command[1..].iter().map(|a| format!("{a:?}")).collect();
    let model = FakeModel::start(vec![
        Reply::plan(&[("Ask", "asked")]).with_thinking(PLAN_THOUGHT),
        Reply::tool_call(
            "mcp__t__ask",
            json!({"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Summarise: green"}}],
                "maxTokens": 50
            }}),
        ),
        Reply::text("Green build.").with_thinking("One line will do."),
        Reply::step_done("asked"),
        Reply::text("done"),
    ]);
    sb.skill("user", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: mcp-thinking\nskill: user\ngoal: Use the tools.\nmodel:\n  \
             provider: anthropic\n  name: {MODEL}\n  base_url: {}\n  reasoning: {{budget_tokens: \
             1024}}\ntools: [read]\nworkspace: ws\nskills_path: [skills]\nallow_dirty: true\n\
             permissions:\n  default: allow\nmcp:\n  servers:\n    t:\n      command: {:?}\n      \
             args: [{}]\n      sampling: true\n",
            model.base_url(),
            command[0],
            quoted.join(", ")
        ),
    );
    let out = agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--progress",
            "none",
        ],
        &[("ANTHROPIC_API_KEY", KEY)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_valid_trace(&sb.path().join("out/trace.jsonl"));
    assert_eq!(model.remaining(), 0);
    let sampling = &model.requests()[2];
    assert!(sampling.get("tools").is_none(), "{sampling}");
    assert_eq!(
        sampling["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(sampling["max_tokens"], 1024 + 50);
}

#[test]
fn a_thinking_run_trimmed_after_a_too_long_answer_goes_on_with_accepted_requests() {
    // The API says the prompt is too long; the conversation is trimmed
    // (whole turns, each with its thinking) and the call tried again: the
    // plan's thinking still leads the turn, and the fake accepts it.
    let read =
        |id: &str, path: &str| Reply::tool_calls(vec![(id, "read", json!({ "path": path }))]);
    let model = FakeModel::start(vec![
        Reply::plan(&[("Read the files", "their content is known")]).with_thinking(PLAN_THOUGHT),
        read("call_f1", "f1.txt"),
        read("call_f2", "f2.txt"),
        read("call_f3", "f3.txt"),
        Reply::context_too_long(),
        Reply::step_done("read all three"),
        Reply::text("The files hold fox lines."),
    ]);
    let sb = sandbox(&model.base_url(), "{budget_tokens: 1024}", "", true);
    for tag in ["f1", "f2", "f3"] {
        sb.write(&format!("ws/{tag}.txt"), &big_file(tag));
    }
    let out = run(&sb, &[]);
    let trace = passed(&sb, &out);
    assert_eq!(model.remaining(), 0);
    assert_eq!(events(&trace, "context.trimmed").len(), 1);
    let requests = model.requests();
    assert_eq!(requests.len(), 7);
    let retried = &requests[5];
    assert!(retried.to_string().len() < requests[4].to_string().len());
    assert_eq!(retried["thinking"]["type"], "enabled");
    assert_eq!(
        assistants(retried)[0]["content"][0]["signature"],
        sign(PLAN_THOUGHT)
    );
}

#[test]
fn a_run_resumed_with_thinking_turned_on_finishes_its_turn_without_it() {
    // The run started without thinking and was stopped by its budget; it
    // is resumed with --thinking-budget. The turn in progress was written
    // without thinking, so it is finished with thinking off (a request with
    // thinking on would be refused), and the run passes.
    let model = FakeModel::start(session(|_| None));
    let sb = sandbox(&model.base_url(), "{}", "", false);
    let job = sb.read("job.yaml").replace("  reasoning: {}\n", "");
    sb.write("job.yaml", &format!("{job}budget: {{max_turns: 2}}\n"));
    let out = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let out = run(
        &sb,
        &[
            "--resume",
            "out",
            "--max-turns",
            "10",
            "--thinking-budget",
            "2048",
        ],
    );
    passed(&sb, &out);
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[0].get("thinking"), None);
    for request in &requests[2..] {
        assert_eq!(request.get("thinking"), None, "{request}");
    }
}
