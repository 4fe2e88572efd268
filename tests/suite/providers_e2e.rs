//! Providers that hold up in CI, end to end: the real binary against the
//! fake model server speaking OpenAI or Anthropic, plain or streamed, with
//! scripted failures (429 with Retry-After, 503/529 then success, a stream
//! cut in the middle, an answer that never comes, 401, a context-length
//! error, malformed tool-call arguments). Each test checks the exit code,
//! the trace events and the JUnit file. Retry waits are kept tiny through
//! `model.retry`, so the file stays fast.

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl, stderr, stdout};
use super::support::job::JobBuilder;
use super::support::job::JobRun;
use super::support::trace_schema::assert_valid_trace;

const ANTHROPIC_KEY: &str = "sk-ant-test-key-123";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    OpenAi,
    Anthropic,
}

impl Api {
    fn provider(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Api::OpenAi => "/v1/chat/completions",
            Api::Anthropic => "/v1/messages",
        }
    }
}

const BOTH: [Api; 2] = [Api::OpenAi, Api::Anthropic];

/// A workspace with one file, a skill, and a job for `api` at `base_url`.
/// `model_extra` goes inside `model:` (indented two spaces), `job_extra` at
/// the top level.
fn sandbox(api: Api, name: &str, base_url: &str, model_extra: &str, job_extra: &str) -> Sandbox {
    JobBuilder::reader("provider-check", base_url)
        .model(api.provider(), name, base_url)
        .model_extra("  request_timeout: 5s\n  retry: {initial_backoff: 10ms, max_backoff: 40ms}\n")
        .model_extra(model_extra)
        .body(job_extra)
        .write()
}

fn run(sb: &Sandbox, extra: &[&str]) -> Output {
    JobRun::new(sb)
        .junit()
        .progress("plain")
        .args(extra)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .output()
}

/// A short successful session: plan, read the file, step done, summary.
fn session() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Read the greeting", "its text is known")]),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))])
            .with_text("Reading the file now."),
        Reply::step_done("read it"),
        Reply::text("The greeting says hello world."),
    ]
}

/// `failures` first, then the successful session.
fn after(failures: Vec<Reply>) -> Vec<Reply> {
    failures.into_iter().chain(session()).collect()
}

/// The trace, checked against the schema, and its `run.completed`.
fn trace(sb: &Sandbox) -> (Vec<Value>, Value) {
    let path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&path);
    let trace = read_jsonl(&path);
    let last = trace.last().unwrap().clone();
    assert_eq!(last["type"], "run.completed");
    (trace, last)
}

fn junit(sb: &Sandbox) -> String {
    sb.read("out/junit.xml")
}

fn retries(trace: &[Value]) -> Vec<Value> {
    events(trace, "model.retry").into_iter().cloned().collect()
}

fn assert_passed(out: &Output, sb: &Sandbox) -> (Vec<Value>, Value) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    assert!(stdout(out).contains("hello world"), "{}", stdout(out));
    let (trace, done) = trace(sb);
    assert_eq!(done["status"], "passed");
    let junit = junit(sb);
    assert!(
        !junit.contains("<error") && !junit.contains("<failure"),
        "{junit}"
    );
    (trace, done)
}

#[test]
fn anthropic_streams_tool_use_with_key_version_and_system_prompt() {
    let model = FakeModel::start(session());
    let sb = sandbox(
        Api::Anthropic,
        "claude-sonnet-4-5",
        &model.base_url(),
        "",
        "",
    );
    let out = run(&sb, &[]);
    let (trace, done) = assert_passed(&out, &sb);

    let captured = model.captured();
    assert_eq!(captured.len(), 4);
    for request in &captured {
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.api_key.as_deref(), Some(ANTHROPIC_KEY));
        assert_eq!(request.anthropic_version.as_deref(), Some("2023-06-01"));
        assert_eq!(request.authorization, None);
        // Regression: requests carried no User-Agent; providers and proxies
        // (LiteLLM) log who called.
        assert_eq!(
            request.user_agent.as_deref(),
            Some(concat!("agentci/", env!("CARGO_PKG_VERSION")))
        );
        assert_eq!(request.body["stream"], true);
        assert!(
            request.body["system"][0]["text"]
                .as_str()
                .unwrap()
                .contains("reader")
        );
        assert!(request.body["max_tokens"].as_u64().unwrap() > 0);
    }
    // The read call went back as tool_use, its result as a tool_result block.
    let third = captured[2].body["messages"].as_array().unwrap();
    let tool_use = third
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .find(|b| b["type"] == "tool_use" && b["id"] == "call_read")
        .expect("tool_use block");
    assert_eq!(tool_use["input"], json!({"path": "greeting.txt"}));
    let result = third
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "call_read")
        .expect("tool_result block");
    assert!(result["content"].as_str().unwrap().contains("hello world"));

    // Streamed text arrived whole in the trace.
    let responses = events(&trace, "model.response");
    assert_eq!(responses[1]["text"], "Reading the file now.");
    // Usage and cost on every response; claude-sonnet-4-5 has a list price:
    // 100 input tokens at $3/M and 20 output at $15/M.
    let expected = 100.0 * 3.0 / 1e6 + 20.0 * 15.0 / 1e6;
    for response in &responses {
        assert_eq!(response["usage"]["input_tokens"], 100);
        assert_eq!(response["usage"]["output_tokens"], 20);
        let cost = response["cost_usd"].as_f64().unwrap();
        assert!((cost - expected).abs() < 1e-12, "{cost}");
    }
    let total = done["totals"]["cost_usd"].as_f64().unwrap();
    assert!((total - 4.0 * expected).abs() < 1e-9, "{total}");
    assert!(
        junit(&sb).contains(&format!(
            "name=\"cost_usd\" value=\"{:.4}\"",
            4.0 * expected
        )),
        "{}",
        junit(&sb)
    );
}

#[test]
fn model_flag_switches_provider_and_endpoint() {
    let model = FakeModel::start(session());
    // The job is written for OpenAI; --model and --base-url point it at Anthropic.
    let sb = sandbox(Api::OpenAi, "gpt-4.1-mini", "http://127.0.0.1:9/v1", "", "");
    let out = run(
        &sb,
        &[
            "--model",
            "anthropic:claude-haiku-4-5",
            "--base-url",
            &model.base_url(),
        ],
    );
    let (trace, _) = assert_passed(&out, &sb);
    let started = &events(&trace, "run.started")[0];
    assert_eq!(
        started["model"],
        json!({"provider": "anthropic", "name": "claude-haiku-4-5"})
    );
    assert!(model.captured().iter().all(|r| r.path == "/v1/messages"
        && r.body["model"] == "claude-haiku-4-5"
        && r.api_key.as_deref() == Some(ANTHROPIC_KEY)));
}

#[test]
fn rate_limit_429_waits_as_retry_after_says() {
    let model = FakeModel::start(after(vec![Reply::rate_limited("1")]));
    let sb = sandbox(Api::OpenAi, "gpt-4.1-mini", &model.base_url(), "", "");
    let started = Instant::now();
    let out = run(&sb, &[]);
    let took = started.elapsed();
    eprintln!("the run with one 429 (Retry-After: 1) took {took:?}");
    assert!(
        took >= Duration::from_secs(1),
        "the run did not wait: {took:?}"
    );
    let (trace, _) = assert_passed(&out, &sb);
    let retries = retries(&trace);
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert_eq!(retries[0]["call_id"], "model-1");
    assert_eq!(retries[0]["status"], 429);
    assert_eq!(retries[0]["wait_ms"], 1000);
    assert_eq!(retries[0]["attempt"], 1);
    assert_eq!(retries[0]["max_attempts"], 5);
    assert!(
        retries[0]["reason"].as_str().unwrap().contains("HTTP 429"),
        "{}",
        retries[0]
    );
    assert!(
        stderr(&out).contains("retrying in 1.0s"),
        "{}",
        stderr(&out)
    );
    assert_eq!(model.requests().len(), 5);
}

#[test]
fn overloaded_twice_then_success_is_retried_with_backoff() {
    for (api, status) in [(Api::OpenAi, 503), (Api::Anthropic, 529)] {
        let model = FakeModel::start(after(vec![
            Reply::status(status, "overloaded, try later"),
            Reply::status(status, "still overloaded"),
        ]));
        let sb = sandbox(api, "fake-model", &model.base_url(), "", "");
        let out = run(&sb, &[]);
        let (trace, _) = assert_passed(&out, &sb);
        let retries = retries(&trace);
        assert_eq!(retries.len(), 2, "{api:?}: {retries:?}");
        for (i, retry) in retries.iter().enumerate() {
            assert_eq!(retry["status"], status);
            assert_eq!(retry["attempt"], i + 1);
            // Jittered between half the step and the step, within the 40ms cap.
            let wait = retry["wait_ms"].as_u64().unwrap();
            let step = 10 << i;
            assert!(wait >= step / 2 && wait <= step, "{api:?}: {retry}");
        }
        // The model.retry events sit between the call's request and response.
        let kinds: Vec<&str> = trace[..8]
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect();
        let request = kinds.iter().position(|k| *k == "model.request").unwrap();
        assert_eq!(
            &kinds[request..request + 4],
            [
                "model.request",
                "model.retry",
                "model.retry",
                "model.response"
            ]
        );
    }
}

#[test]
fn a_stream_cut_mid_answer_is_retried_as_a_whole() {
    for api in BOTH {
        let half_plan = Reply::plan(&[("Half a plan", "never seen")]);
        let model = FakeModel::start(after(vec![Reply::cut(4, half_plan)]));
        let sb = sandbox(api, "fake-model", &model.base_url(), "", "");
        let out = run(&sb, &[]);
        let (trace, _) = assert_passed(&out, &sb);
        let retries = retries(&trace);
        assert_eq!(retries.len(), 1, "{api:?}: {retries:?}");
        assert_eq!(retries[0]["status"], Value::Null);
        assert_eq!(retries[0]["max_attempts"], 3);
        let reason = retries[0]["reason"].as_str().unwrap();
        assert!(reason.contains("broke off"), "{api:?}: {reason}");
        // Nothing half-received became the plan.
        let plan = &events(&trace, "plan.created")[0];
        assert_eq!(plan["steps"][0]["title"], "Read the greeting", "{api:?}");
        assert_eq!(events(&trace, "model.response").len(), 4);
    }
}

#[test]
fn exhausted_retries_exit_4_with_trace_and_junit() {
    for api in BOTH {
        let model = FakeModel::start(vec![Reply::status(503, "down for maintenance"); 5]);
        let sb = sandbox(api, "fake-model", &model.base_url(), "", "");
        // Three tries in all for statuses.
        let job = sb.read("job.yaml").replace(
            "retry: {initial_backoff: 10ms, max_backoff: 40ms}",
            "retry: {max_attempts_status: 3, initial_backoff: 10ms, max_backoff: 40ms}",
        );
        sb.write("job.yaml", &job);
        let out = run(&sb, &[]);
        assert_eq!(out.status.code(), Some(4), "{api:?}: {}", stderr(&out));
        let (trace, done) = trace(&sb);
        assert_eq!(done["status"], "provider_unavailable");
        let reason = done["reason"].as_str().unwrap();
        assert!(reason.contains("HTTP 503"), "{reason}");
        assert!(reason.contains("gave up after 3 attempts"), "{reason}");
        assert_eq!(retries(&trace).len(), 2);
        assert_eq!(model.requests().len(), 3);
        let junit = junit(&sb);
        assert!(junit.contains("<error"), "{junit}");
        assert!(junit.contains("gave up after 3 attempts"), "{junit}");
        assert!(
            events(&trace, "check.completed")
                .iter()
                .all(|c| c["outcome"] == "skipped")
        );
    }
}

#[test]
fn a_server_that_never_answers_times_out_and_is_retried() {
    let model = FakeModel::start(vec![Reply::hang(), Reply::hang()]);
    let sb = sandbox(Api::Anthropic, "fake-model", &model.base_url(), "", "");
    let job = sb
        .read("job.yaml")
        .replace("request_timeout: 5s", "request_timeout: 300ms")
        .replace(
            "retry: {initial_backoff: 10ms, max_backoff: 40ms}",
            "retry: {max_attempts_connect: 2, initial_backoff: 10ms, max_backoff: 40ms}",
        );
    sb.write("job.yaml", &job);
    let started = Instant::now();
    let out = run(&sb, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let (trace, done) = trace(&sb);
    let retries = retries(&trace);
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0]["reason"]
            .as_str()
            .unwrap()
            .contains("did not answer within 300ms")
    );
    assert!(
        done["reason"]
            .as_str()
            .unwrap()
            .contains("gave up after 2 attempts")
    );
    assert!(junit(&sb).contains("<error"));
}

#[test]
fn the_budget_timeout_cuts_a_hung_call() {
    let model = FakeModel::start(vec![Reply::hang()]);
    let sb = sandbox(
        Api::OpenAi,
        "fake-model",
        &model.base_url(),
        "",
        "budget: {timeout: 1s}",
    );
    let job = sb
        .read("job.yaml")
        .replace("request_timeout: 5s", "request_timeout: 10m");
    sb.write("job.yaml", &job);
    let started = Instant::now();
    let out = run(&sb, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let (trace, done) = trace(&sb);
    assert_eq!(done["status"], "budget_exceeded");
    assert_eq!(events(&trace, "budget.exceeded")[0]["limit"], "timeout");
    assert!(junit(&sb).contains("<error"));
}

#[test]
fn unauthorized_is_not_retried_and_says_which_key_to_check() {
    for api in BOTH {
        // The server echoes the key it refused, as some do.
        let model = FakeModel::start(vec![Reply::status(
            401,
            &format!("invalid x-api-key {ANTHROPIC_KEY}"),
        )]);
        let sb = sandbox(api, "fake-model", &model.base_url(), "", "");
        let out = run(&sb, &[]);
        assert_eq!(out.status.code(), Some(4), "{api:?}: {}", stderr(&out));
        let (trace, done) = trace(&sb);
        assert!(retries(&trace).is_empty());
        assert_eq!(model.requests().len(), 1);
        let env = match api {
            Api::OpenAi => "OPENAI_API_KEY",
            Api::Anthropic => "ANTHROPIC_API_KEY",
        };
        let reason = done["reason"].as_str().unwrap();
        assert!(reason.contains("HTTP 401"), "{reason}");
        assert!(
            reason.contains(&format!("check the API key in {env}")),
            "{reason}"
        );
        assert!(junit(&sb).contains(&format!("check the API key in {env}")));
        // The key shows nowhere: not in the terminal, the trace or JUnit.
        let everything = [
            stdout(&out),
            stderr(&out),
            sb.read("out/trace.jsonl"),
            junit(&sb),
        ]
        .concat();
        assert!(reason.contains("invalid x-api-key"), "{reason}");
        assert!(!everything.contains(ANTHROPIC_KEY), "{api:?}: {everything}");
        assert_eq!(model.captured()[0].path, api.path());
    }
}

/// Planning looks around, then the step reads twice before the model says
/// the conversation is too long.
fn long_session(then: Vec<Reply>) -> Vec<Reply> {
    let mut script = vec![
        Reply::tool_calls(vec![("call_ls", "ls", json!({}))]),
        Reply::plan(&[("Read the greeting", "its text is known")]),
        Reply::tool_calls(vec![("call_r1", "read", json!({"path": "greeting.txt"}))]),
        Reply::tool_calls(vec![(
            "call_r2",
            "read",
            json!({"path": "greeting.txt", "offset": 1}),
        )]),
        Reply::context_too_long(),
    ];
    script.extend(then);
    script
}

#[test]
fn a_context_length_error_trims_the_conversation_and_retries_once() {
    for api in BOTH {
        let model = FakeModel::start(long_session(vec![
            Reply::step_done("read it"),
            Reply::text("The greeting says hello world."),
        ]));
        let sb = sandbox(api, "fake-model", &model.base_url(), "", "");
        let out = run(&sb, &[]);
        let (trace, _) = assert_passed(&out, &sb);
        let trimmed = events(&trace, "context.trimmed");
        assert_eq!(trimmed.len(), 1, "{api:?}");
        let t = trimmed[0];
        assert_eq!(t["call_id"], "model-5");
        assert!(t["reason"].as_str().unwrap().contains("too long"), "{t}");
        assert!(
            t["messages_after"].as_u64() < t["messages_before"].as_u64(),
            "{t}"
        );
        assert!(
            stderr(&out).contains("context too long for the model"),
            "{}",
            stderr(&out)
        );

        let requests = model.requests();
        let (failed, retried) = (&requests[4], &requests[5]);
        let text = |r: &Value| r["messages"].to_string();
        assert!(
            text(retried).contains("earlier messages were removed"),
            "{api:?}"
        );
        // Kept: the system prompt, the goal, the plan, the current step and the last read.
        assert!(text(retried).contains("Read greeting.txt."));
        assert!(text(retried).contains("submit_plan"));
        assert!(text(retried).contains("call_r2"));
        // Gone: the planning look-around.
        assert!(text(failed).contains("call_ls") && !text(retried).contains("call_ls"));
        if api == Api::OpenAi {
            assert!(text(retried).contains("\"role\":\"system\""));
        } else {
            assert!(retried["system"][0]["text"].as_str().is_some());
        }
    }
}

#[test]
fn a_conversation_still_too_long_after_trimming_fails_the_run() {
    let model = FakeModel::start(long_session(vec![Reply::context_too_long()]));
    let sb = sandbox(Api::Anthropic, "fake-model", &model.base_url(), "", "");
    let out = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (trace, done) = trace(&sb);
    assert_eq!(events(&trace, "context.trimmed").len(), 1);
    assert_eq!(done["status"], "failed");
    assert!(
        done["reason"]
            .as_str()
            .unwrap()
            .contains("prompt is too long")
    );
    assert!(junit(&sb).contains("prompt is too long"));
    assert_eq!(model.requests().len(), 6);
}

#[test]
fn malformed_streamed_tool_arguments_become_an_error_result() {
    for api in BOTH {
        let model = FakeModel::start(vec![
            Reply::plan(&[("Read the greeting", "its text is known")]),
            Reply::raw_tool_call("call_bad", "read", r#"{"path": "greeting.txt""#),
            Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))]),
            Reply::step_done("read it"),
            Reply::text("The greeting says hello world."),
        ]);
        let sb = sandbox(api, "fake-model", &model.base_url(), "", "");
        let out = run(&sb, &[]);
        let (trace, _) = assert_passed(&out, &sb);
        let bad = events(&trace, "tool.result")
            .into_iter()
            .find(|r| r["call_id"] == "call_bad")
            .unwrap_or_else(|| panic!("{api:?}: no result for the malformed call"));
        assert_eq!(bad["ok"], false);
        assert_eq!(bad["error_code"], "INVALID_ARGUMENT");
        // The model got the error back and the run went on.
        let next = model.requests()[2]["messages"].to_string();
        assert!(next.contains("INVALID_ARGUMENT"), "{api:?}: {next}");
        assert!(model.requests()[1]["stream"] == true);
    }
}

#[test]
fn max_cost_usd_stops_the_run_with_a_job_price() {
    let model = FakeModel::start(session());
    let sb = sandbox(
        Api::OpenAi,
        "my-local-model",
        &model.base_url(),
        "  price: {input_per_mtok: 1000, output_per_mtok: 1000}",
        "budget: {max_cost_usd: 0.1}",
    );
    let out = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let (trace, done) = trace(&sb);
    // One call: 120 tokens at $1000/M = $0.12, over the $0.10 limit.
    let exceeded = &events(&trace, "budget.exceeded")[0];
    assert_eq!(exceeded["limit"], "max_cost_usd");
    assert!((exceeded["used"].as_f64().unwrap() - 0.12).abs() < 1e-9);
    assert_eq!(done["status"], "budget_exceeded");
    assert!((done["totals"]["cost_usd"].as_f64().unwrap() - 0.12).abs() < 1e-9);
    assert_eq!(model.requests().len(), 1);
    assert!(junit(&sb).contains("name=\"cost_usd\" value=\"0.1200\""));
}

#[test]
fn an_unknown_price_is_unknown_never_zero() {
    let model = FakeModel::start(session());
    let sb = sandbox(
        Api::OpenAi,
        "my-local-model",
        &model.base_url(),
        "  stream: false",
        "budget: {max_cost_usd: 1}",
    );
    let out = run(&sb, &[]);
    let (trace, done) = assert_passed(&out, &sb);
    assert!(
        events(&trace, "model.response")
            .iter()
            .all(|r| r["cost_usd"].is_null())
    );
    assert!(done["totals"]["cost_usd"].is_null());
    assert!(junit(&sb).contains("name=\"cost_usd\" value=\"unknown\""));
    let warning = &events(&trace, "warning")[0];
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("max_cost_usd cannot be enforced")
    );
    // stream: false asks for a plain JSON answer.
    assert!(model.requests().iter().all(|r| r.get("stream").is_none()));
}

#[test]
fn anthropic_sessions_record_and_replay() {
    let model = FakeModel::start(session());
    let sb = sandbox(
        Api::Anthropic,
        "claude-sonnet-4-5",
        &model.base_url(),
        "",
        "",
    );
    let out = run(&sb, &["--record", "cassette.jsonl"]);
    assert_passed(&out, &sb);
    let header: Value =
        serde_json::from_str(sb.read("cassette.jsonl").lines().next().unwrap()).unwrap();
    assert_eq!(header["provider"], "anthropic");
    assert_eq!(header["model"], "claude-sonnet-4-5");
    drop(model);

    let out = run(&sb, &["--replay", "cassette.jsonl"]);
    let (trace, done) = assert_passed(&out, &sb);
    assert_eq!(events(&trace, "model.response").len(), 4);
    // The recorded model's list price still applies in replay.
    assert!(done["totals"]["cost_usd"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_server_that_reports_no_usage_leaves_the_cost_unknown_not_zero() {
    // A server that sent no usage had every figure read as zero, and the
    // call of a priced model was reported as costing $0.
    let plan_args = json!({"steps": [{"title": "Read the greeting", "expected_outcome": "known"}]});
    for api in BOTH {
        let plan_without_usage = match api {
            Api::OpenAi => json!({"choices": [{"message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_plan", "type": "function", "function": {
                    "name": "submit_plan", "arguments": plan_args.to_string()}}]},
                "finish_reason": "tool_calls"}]}),
            Api::Anthropic => json!({"type": "message", "role": "assistant", "content": [
                {"type": "tool_use", "id": "call_plan", "name": "submit_plan", "input": plan_args}],
                "stop_reason": "tool_use"}),
        };
        let model = FakeModel::start(vec![
            Reply::json(plan_without_usage),
            Reply::step_done("read it"),
            Reply::text("The greeting says hello world."),
        ]);
        let name = match api {
            Api::OpenAi => "gpt-4.1-mini",
            Api::Anthropic => "claude-sonnet-4-5",
        };
        let sb = sandbox(api, name, &model.base_url(), "  stream: false", "");
        let out = run(&sb, &[]);
        let (trace, done) = assert_passed(&out, &sb);
        let responses = events(&trace, "model.response");
        assert!(
            responses[0]["cost_usd"].is_null(),
            "{api:?}: {}",
            responses[0]
        );
        // The calls that reported usage are priced as usual.
        assert!(responses[1]["cost_usd"].as_f64().unwrap() > 0.0, "{api:?}");
        assert!(done["totals"]["cost_usd"].is_null(), "{api:?}: {done}");
        assert!(junit(&sb).contains("name=\"cost_usd\" value=\"unknown\""));
        let warnings = events(&trace, "warning");
        assert_eq!(warnings.len(), 1, "{api:?}: {warnings:?}");
        assert!(
            warnings[0]["message"]
                .as_str()
                .unwrap()
                .contains("reported no token usage for model-1"),
            "{}",
            warnings[0]
        );
    }
}
