//! The OpenAI Responses provider end to end: the real binary against the
//! fake server's `/v1/responses`, which answers as a reasoning model and
//! refuses what the real API refuses. A full run (plan, tool call, step
//! done, summary, check) carries each reasoning item back with its
//! encrypted content before the call it led to, streamed and not; with
//! `previous_response_id` it chains on stored responses and sends only new
//! items; a recorded run replays; a missing key is one clear line. Every
//! request sent is checked against OpenAI's published `CreateResponse`
//! schema (tests/data/openai-openapi).

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use agentci::provider::openai_responses::{ResponsesConfig, ResponsesProvider};
use agentci::provider::{ChatRequest, Message, ModelProvider, ProviderError, Reasoning, ToolCall};
use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, read_jsonl, stderr, stdout};
use super::support::job::JobBuilder;
use super::support::job::JobRun;
use super::support::trace_schema::assert_valid_trace;

const KEY: &str = "sk-responses-test-key";

/// A workspace with one file and a job for `openai-responses` at `base_url`;
/// `model_extra` goes inside `model:`.
fn sandbox(base_url: &str, model_extra: &str) -> Sandbox {
    JobBuilder::reader("responses-check", base_url)
        .model("openai-responses", "gpt-5", base_url)
        .model_extra("  request_timeout: 5s\n  retry: {initial_backoff: 10ms, max_backoff: 40ms}\n")
        .model_extra(model_extra)
        .write()
}

fn run(sb: &Sandbox, extra: &[&str]) -> Output {
    JobRun::new(sb)
        .progress("plain")
        .args(extra)
        .env("OPENAI_API_KEY", KEY)
        .output()
}

/// Plan, read the file (with commentary), step done, summary; the read
/// turn reports 40 of its 100 input tokens as cached.
fn session() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Read the greeting", "its text is known")]),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))])
            .with_text("Reading the file now.")
            .with_cache(40, 0),
        Reply::step_done("read it"),
        Reply::text("The greeting says hello world."),
    ]
}

/// The trace of a passed run, checked against the schema.
fn passed(out: &Output, sb: &Sandbox) -> Vec<Value> {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    assert!(stdout(out).contains("hello world"), "{}", stdout(out));
    let path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&path);
    let trace = read_jsonl(&path);
    assert_eq!(trace.last().unwrap()["status"], "passed");
    trace
}

/// Every request body is a valid `CreateResponse` per OpenAI's OpenAPI document.
fn assert_valid_requests(bodies: &[Value]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/openai-openapi/create-response.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let validator = jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|e| panic!("{} does not compile: {e}", path.display()));
    for (i, body) in bodies.iter().enumerate() {
        let errors: Vec<String> = validator
            .iter_errors(body)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "request {} is not a CreateResponse: {errors:#?}",
            i + 1
        );
    }
}

/// The request bodies with what changes between runs (the system prompt
/// names temporary folders) redacted, for snapshots.
fn redacted(bodies: &[Value]) -> Vec<Value> {
    bodies
        .iter()
        .map(|body| {
            let mut body = body.clone();
            body["instructions"] = json!("[system prompt]");
            for item in body["input"].as_array_mut().into_iter().flatten() {
                if item["type"] == "function_call_output" {
                    item["output"] = json!("[tool output]");
                }
                if item["role"] == "user" {
                    item["content"] = json!("[user message]");
                }
            }
            if let Some(tools) = body["tools"].as_array_mut() {
                for tool in tools {
                    tool["description"] = json!("[description]");
                    tool["parameters"] = json!("[parameters]");
                }
            }
            body
        })
        .collect()
}

#[test]
fn a_full_run_carries_encrypted_reasoning_between_turns() {
    for stream in [true, false] {
        let model = FakeModel::start(session());
        let extra = format!("  stream: {stream}\n  reasoning: {{effort: high, summary: auto}}");
        let sb = sandbox(&model.base_url(), &extra);
        let out = run(&sb, &[]);
        let trace = passed(&out, &sb);

        let captured = model.captured();
        assert_eq!(captured.len(), 4, "stream {stream}");
        for request in &captured {
            assert_eq!(request.path, "/v1/responses");
            assert_eq!(
                request.authorization.as_deref(),
                Some("Bearer sk-responses-test-key")
            );
            assert_eq!(request.body["store"], false);
            assert_eq!(
                request.body["include"],
                json!(["reasoning.encrypted_content"])
            );
            assert!(request.body.get("previous_response_id").is_none());
            assert!(
                request.body["instructions"]
                    .as_str()
                    .unwrap()
                    .contains("reader")
            );
        }
        let bodies: Vec<Value> = captured.iter().map(|r| r.body.clone()).collect();
        assert_valid_requests(&bodies);
        // The third request holds the second answer: its reasoning item
        // (encrypted content intact) before its text and its call, then the result.
        let input = bodies[2]["input"].as_array().unwrap();
        let at = |kind: &str, key: &str, value: &str| {
            input
                .iter()
                .position(|i| i["type"] == kind && i[key] == value)
                .unwrap_or_else(|| panic!("no {kind} with {key} {value} in {input:#?}"))
        };
        let reasoning = at("reasoning", "id", "rs_fake_2");
        assert_eq!(
            input[reasoning]["encrypted_content"],
            "gAAAAfake-encrypted-reasoning-2"
        );
        assert_eq!(
            input[reasoning]["summary"],
            json!([{"type": "summary_text", "text": "Reasoning summary 2."}])
        );
        let call = at("function_call", "call_id", "call_read");
        assert!(reasoning < call && call < at("function_call_output", "call_id", "call_read"));
        let name = if stream { "streamed" } else { "plain" };
        insta::assert_json_snapshot!(format!("responses_requests_{name}"), redacted(&bodies));

        // Usage: reasoning and cached tokens, priced at gpt-5's list price
        // (cached input at its cache rate).
        let responses = events(&trace, "model.response");
        assert_eq!(responses[1]["text"], "Reading the file now.");
        assert_eq!(responses[1]["usage"]["reasoning_tokens"], 5);
        assert_eq!(responses[1]["usage"]["cache_read_tokens"], 40);
        let cost = responses[1]["cost_usd"].as_f64().unwrap();
        let expected = 60.0 * 1.25 / 1e6 + 40.0 * 0.125 / 1e6 + 20.0 * 10.0 / 1e6;
        assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
        assert_eq!(model.remaining(), 0);
    }
}

#[test]
fn previous_response_id_chains_and_sends_only_new_items() {
    let model = FakeModel::start(session());
    let sb = sandbox(
        &model.base_url(),
        "  reasoning: {effort: low, previous_response_id: true}",
    );
    let out = run(&sb, &[]);
    passed(&out, &sb);
    let bodies = model.requests();
    assert_eq!(bodies.len(), 4);
    assert_valid_requests(&bodies);
    assert!(bodies[0].get("previous_response_id").is_none());
    for (i, body) in bodies.iter().enumerate() {
        assert_eq!(body["store"], true);
        assert!(body.get("include").is_none());
        assert!(body["instructions"].as_str().unwrap().contains("reader"));
        if i > 0 {
            assert_eq!(body["previous_response_id"], format!("resp_fake_{i}"));
            // Only what is new since that response: no reasoning, no
            // earlier calls, no earlier user messages sent twice.
            let input = body["input"].as_array().unwrap();
            assert!(
                input
                    .iter()
                    .all(|item| item["type"] != "reasoning" && item["type"] != "function_call"),
                "request {}: {input:#?}",
                i + 1
            );
        }
    }
    let third = bodies[2]["input"].as_array().unwrap();
    assert_eq!(third[0]["type"], "function_call_output");
    assert_eq!(third[0]["call_id"], "call_read");
    insta::assert_json_snapshot!("responses_requests_chained", redacted(&bodies));
}

#[test]
fn a_recorded_run_replays_without_the_server() {
    let model = FakeModel::start(session());
    let sb = sandbox(&model.base_url(), "  reasoning: {summary: auto}");
    let out = run(&sb, &["--record", "cassette.jsonl"]);
    passed(&out, &sb);
    drop(model);
    let cassette = sb.read("cassette.jsonl");
    assert!(
        cassette.contains("gAAAAfake-encrypted-reasoning-2"),
        "{cassette}"
    );

    let out = run(&sb, &["--replay", "cassette.jsonl"]);
    let trace = passed(&out, &sb);
    let responses = events(&trace, "model.response");
    assert_eq!(responses.len(), 4);
    assert_eq!(responses[1]["usage"]["reasoning_tokens"], 5);
}

#[test]
fn a_missing_key_is_one_line_naming_the_variable() {
    let sb = sandbox("https://api.openai.com/v1", "");
    let out = agentci_in(
        sb.path(),
        &["run", "job.yaml", "--trace", "out/trace.jsonl"],
        &[],
    );
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains("environment variable OPENAI_API_KEY is not set; set it to your API key"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_valid_trace(&sb.path().join("out/trace.jsonl"));
}

// The fake refuses what the real API refuses; the provider reports it in
// one line. These drive the provider directly with conversations a buggy
// client would send.

fn provider(base_url: &str, stream: bool) -> ResponsesProvider {
    ResponsesProvider::with_api_key(
        ResponsesConfig {
            name: "gpt-5".into(),
            base_url: Some(base_url.into()),
            api_key_env: None,
            request_timeout: Duration::from_secs(5),
            stream,
            reasoning: Default::default(),
        },
        None,
    )
    .unwrap()
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

fn user(text: &str) -> Message {
    Message::User {
        content: text.into(),
    }
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        max_output_tokens: None,
        model: String::new(),
        messages,
        tools: Vec::new(),
        tool_choice: Default::default(),
    }
}

fn http_message(result: Result<agentci::provider::ChatResponse, ProviderError>) -> (u16, String) {
    match result {
        Err(ProviderError::Http {
            status, message, ..
        }) => (status, message),
        other => panic!("expected an HTTP error, got {other:?}"),
    }
}

#[test]
fn the_fake_refuses_a_call_sent_back_without_its_reasoning() {
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![("call_1", "ls", json!({}))]),
        Reply::text("unused"),
    ]);
    let provider = provider(&model.base_url(), true);
    let first = block_on(provider.complete(&request(vec![user("list")]))).unwrap();
    assert!(matches!(&first.reasoning[..], [Reasoning::Item { id, .. }] if id == "rs_fake_1"));
    // The answer goes back without its reasoning item.
    let history = vec![
        user("list"),
        Message::Assistant {
            reasoning: Vec::new(),
            content: None,
            tool_calls: first.tool_calls.clone(),
        },
        Message::Tool {
            tool_call_id: "call_1".into(),
            content: "a.txt".into(),
        },
    ];
    let (status, message) = http_message(block_on(provider.complete(&request(history))));
    assert_eq!(status, 400);
    assert!(
        message.contains(
            "Item 'fc_fake_1_0' of type 'function_call' was provided without its required 'reasoning' item: 'rs_fake_1'."
        ),
        "{message}"
    );
    assert_eq!(model.remaining(), 1);
}

#[test]
fn the_fake_refuses_an_output_for_an_unknown_call_and_an_unknown_response() {
    let model = FakeModel::start(vec![Reply::text("unused")]);
    let provider = provider(&model.base_url(), false);
    let history = vec![
        user("list"),
        Message::Tool {
            tool_call_id: "call_nowhere".into(),
            content: "a.txt".into(),
        },
    ];
    let (status, message) = http_message(block_on(provider.complete(&request(history))));
    assert_eq!(status, 400);
    assert!(
        message.contains("No tool call found for function call output with call_id call_nowhere."),
        "{message}"
    );
    // A tampered encrypted reasoning item does not decrypt.
    let history = vec![
        user("list"),
        Message::Assistant {
            reasoning: vec![Reasoning::Item {
                id: "rs_fake_1".into(),
                encrypted_content: Some("gAAAAforged".into()),
                summary: Vec::new(),
            }],
            content: Some("hi".into()),
            tool_calls: Vec::<ToolCall>::new(),
        },
        user("again"),
    ];
    // rs_fake_1 is issued only once a reply is served: serve it first.
    let served = block_on(provider.complete(&request(vec![user("hi")]))).unwrap();
    assert_eq!(served.text.as_deref(), Some("unused"));
    let (status, message) = http_message(block_on(provider.complete(&request(history))));
    assert_eq!(status, 400);
    assert!(message.contains("could not be verified"), "{message}");

    // An unknown previous_response_id, sent as a raw request.
    let status = block_on(async {
        reqwest::Client::new()
            .post(format!("{}/responses", model.base_url()))
            .json(&json!({"model": "gpt-5", "input": "hi", "previous_response_id": "resp_never"}))
            .send()
            .await
            .unwrap()
    });
    assert_eq!(status.status().as_u16(), 400);
    let body: Value = block_on(status.json()).unwrap();
    assert_eq!(
        body["error"]["message"],
        "Previous response with id 'resp_never' not found."
    );
}

#[test]
fn a_context_length_error_is_context_too_long() {
    let model = FakeModel::start(vec![Reply::context_too_long()]);
    let provider = provider(&model.base_url(), true);
    let result = block_on(provider.complete(&request(vec![user("long")])));
    assert!(
        matches!(&result, Err(ProviderError::ContextTooLong(m)) if m.contains("exceeds the context window")),
        "{result:?}"
    );
}

/// The schema check is not vacuous: a body OpenAI's schema refuses fails it.
#[test]
fn the_openapi_schema_refuses_a_malformed_request() {
    let good = json!({"model": "gpt-5", "input": [
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"}]});
    assert_valid_requests(std::slice::from_ref(&good));
    for bad in [
        json!({"model": "gpt-5", "input": [{"type": "function_call", "call_id": "c", "name": "ls"}]}),
        // `strict` is required on a function tool.
        json!({"model": "gpt-5", "input": "hi",
               "tools": [{"type": "function", "name": "ls", "parameters": {"type": "object"}}]}),
        json!({"model": "gpt-5", "input": [{"type": "reasoning", "id": "rs_1"}]}),
        json!({"model": "gpt-5", "input": "hi", "tool_choice": "sometimes"}),
    ] {
        let result = std::panic::catch_unwind(|| assert_valid_requests(std::slice::from_ref(&bad)));
        assert!(result.is_err(), "accepted {bad}");
    }
}

/// An MCP sampling request's small `maxTokens` is raised to the API's
/// floor of 16 (`CreateResponse.max_output_tokens` has `minimum: 16`).
#[test]
fn a_small_output_cap_is_raised_to_the_api_floor() {
    let model = FakeModel::start(vec![Reply::text("ok"), Reply::text("ok")]);
    for (cap, sent) in [(4, 16), (200, 200)] {
        let provider = provider(&model.base_url(), false);
        let capped = ChatRequest {
            max_output_tokens: Some(cap),
            ..request(vec![user("hi")])
        };
        block_on(provider.complete(&capped)).unwrap();
        let body = model.requests().pop().unwrap();
        assert_eq!(body["max_output_tokens"], sent);
        assert_valid_requests(std::slice::from_ref(&body));
    }
}
