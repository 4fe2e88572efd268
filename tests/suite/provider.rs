//! The OpenAI provider over real HTTP against the fake model server, and
//! record/replay through real cassette files.

use std::path::Path;
use std::time::Duration;

use agentci::provider::openai::{OpenAiConfig, OpenAiProvider};
use agentci::provider::record::RecordingProvider;
use agentci::provider::replay::ReplayProvider;
use agentci::provider::{
    ChatRequest, ChatResponse, Message, ModelProvider, ProviderError, ToolCall, ToolDefinition,
};
use agentci::redact::Redactor;
use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::wait::assert_took_less;

/// Never set anywhere, so the provider sees no key.
const UNSET_KEY_ENV: &str = "AGENTCI_TEST_KEY_THAT_IS_NEVER_SET";

fn config(base_url: &str) -> OpenAiConfig {
    OpenAiConfig {
        reasoning: Default::default(),
        name: "gpt-test".to_string(),
        base_url: Some(base_url.to_string()),
        api_key_env: Some(UNSET_KEY_ENV.to_string()),
        request_timeout: Duration::from_secs(10),
        stream: false,
    }
}

/// This process's environment, as the CLI snapshots it.
fn process_env() -> agentci::run_env::RunEnv {
    agentci::run_env::RunEnv::new(std::env::vars_os())
}

fn keyed(base_url: &str) -> OpenAiProvider {
    OpenAiProvider::with_api_key(config(base_url), Some("sk-test-secret".to_string())).unwrap()
}

fn request(user: &str) -> ChatRequest {
    ChatRequest {
        max_output_tokens: None,
        model: "gpt-test".to_string(),
        messages: vec![
            Message::System {
                content: "you are a careful agent".to_string(),
            },
            Message::User {
                content: user.to_string(),
            },
        ],
        tools: vec![ToolDefinition {
            name: "read".to_string(),
            description: "read a file".to_string(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
        tool_choice: Default::default(),
    }
}

/// A request that carries a full conversation: tool call and tool result.
fn conversation(root: &Path) -> ChatRequest {
    let mut request = request(&format!("fix the bug in {}/src/lib.rs", root.display()));
    request.messages.push(Message::Assistant {
        reasoning: Vec::new(),
        content: None,
        tool_calls: vec![ToolCall {
            id: "call_1".to_string(),
            name: "read".to_string(),
            arguments: json!({"path": format!("{}/src/lib.rs", root.display())}).to_string(),
        }],
    });
    request.messages.push(Message::Tool {
        tool_call_id: "call_1".to_string(),
        content: format!("{}/src/lib.rs:\n1: fn main() {{}}", root.display()),
    });
    request
}

#[tokio::test]
async fn text_reply_is_parsed() {
    let fake = FakeModel::start(vec![Reply::text("all done")]);
    let response = keyed(&fake.base_url())
        .complete(&request("hi"))
        .await
        .unwrap();
    assert_eq!(response.text.as_deref(), Some("all done"));
    assert!(response.tool_calls.is_empty());
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test]
async fn tool_call_reply_keeps_ids_and_arguments() {
    let fake = FakeModel::start(vec![
        Reply::tool_calls(vec![
            ("call_a", "read", json!({"path": "src/lib.rs"})),
            ("call_b", "ls", json!({"depth": 2})),
        ]),
        Reply::raw_tool_call("call_c", "edit", "{not json"),
        Reply::step_done("fixed it"),
    ]);
    let provider = keyed(&fake.base_url());
    let response = provider.complete(&request("go")).await.unwrap();
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall {
                id: "call_a".into(),
                name: "read".into(),
                arguments: r#"{"path":"src/lib.rs"}"#.into()
            },
            ToolCall {
                id: "call_b".into(),
                name: "ls".into(),
                arguments: r#"{"depth":2}"#.into()
            },
        ]
    );
    // Malformed arguments reach the agent untouched; it answers INVALID_ARGUMENT.
    let response = provider.complete(&request("go")).await.unwrap();
    assert_eq!(response.tool_calls[0].arguments, "{not json");
    let response = provider.complete(&request("go")).await.unwrap();
    assert_eq!(response.tool_calls[0].name, "step_done");
    assert_eq!(response.tool_calls[0].id, "call_1");
    let args: serde_json::Value = serde_json::from_str(&response.tool_calls[0].arguments).unwrap();
    assert_eq!(args, json!({"summary": "fixed it"}));
}

#[tokio::test]
async fn usage_is_parsed_with_cached_tokens() {
    let fake = FakeModel::start(vec![
        Reply::text("a").with_usage(1234, 56),
        Reply::json(json!({
            "choices": [{"message": {"role": "assistant", "content": "b"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 800}},
        })),
    ]);
    let provider = keyed(&fake.base_url());
    let usage = provider.complete(&request("x")).await.unwrap().usage;
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens
        ),
        (1234, 56, 0)
    );
    let response = provider.complete(&request("x")).await.unwrap();
    assert_eq!(
        (
            response.usage.input_tokens,
            response.usage.output_tokens,
            response.usage.cache_read_tokens
        ),
        (900, 10, 800)
    );
    assert_eq!(response.finish_reason.as_deref(), Some("length"));
}

fn expect_http(err: ProviderError) -> (u16, String) {
    let text = err.to_string();
    match err {
        ProviderError::Http {
            provider, status, ..
        } => {
            assert_eq!(provider, "openai");
            (status, text)
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
}

#[tokio::test]
async fn unauthorized_says_check_the_key_and_never_shows_it() {
    let fake = FakeModel::start(vec![Reply::status(
        401,
        "Incorrect API key provided: sk-test-secret.",
    )]);
    let err = keyed(&fake.base_url())
        .complete(&request("x"))
        .await
        .unwrap_err();
    let (status, text) = expect_http(err);
    assert_eq!(status, 401);
    assert!(text.contains("Incorrect API key provided"), "{text}");
    assert!(
        text.contains(&format!("check the API key in {UNSET_KEY_ENV}")),
        "{text}"
    );
    assert!(!text.contains("sk-test-secret"), "{text}");
    assert!(
        text.contains(&format!("{}/chat/completions", fake.base_url())),
        "{text}"
    );
}

#[tokio::test]
async fn not_found_says_check_base_url_and_model() {
    let fake = FakeModel::start(vec![Reply::status(
        404,
        "The model `gpt-test` does not exist",
    )]);
    let (status, text) = expect_http(
        keyed(&fake.base_url())
            .complete(&request("x"))
            .await
            .unwrap_err(),
    );
    assert_eq!(status, 404);
    assert!(
        text.contains("The model `gpt-test` does not exist"),
        "{text}"
    );
    assert!(
        text.contains("check model.base_url and the model name \"gpt-test\""),
        "{text}"
    );

    // A wrong base_url path: the server's 404 has no JSON body at all.
    let wrong = format!("http://{}/wrong", fake.addr());
    let (status, text) = expect_http(keyed(&wrong).complete(&request("x")).await.unwrap_err());
    assert_eq!(status, 404);
    assert!(text.contains("/wrong/chat/completions"), "{text}");
    assert!(text.contains("check model.base_url"), "{text}");
}

#[tokio::test]
async fn server_error_carries_the_servers_message_on_one_line() {
    let fake = FakeModel::start(vec![Reply::status(500, "the engine\nis overloaded")]);
    let (status, text) = expect_http(
        keyed(&fake.base_url())
            .complete(&request("x"))
            .await
            .unwrap_err(),
    );
    assert_eq!(status, 500);
    assert!(
        text.ends_with("/chat/completions: the engine is overloaded"),
        "{text}"
    );
    assert!(!text.contains('\n'));
}

#[tokio::test]
async fn exhausted_script_is_a_500_that_says_so() {
    let fake = FakeModel::start(vec![Reply::text("one")]);
    let provider = keyed(&fake.base_url());
    provider.complete(&request("x")).await.unwrap();
    let (status, text) = expect_http(provider.complete(&request("x")).await.unwrap_err());
    assert_eq!(status, 500);
    assert!(text.contains("fake model script exhausted"), "{text}");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn connection_refused_names_the_url_and_the_fix() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let base_url = format!("http://{addr}/v1");
    let err = keyed(&base_url).complete(&request("x")).await.unwrap_err();
    assert!(matches!(err, ProviderError::Unavailable(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "cannot reach the model server at {base_url}/chat/completions: connection refused; is the server running and model.base_url right?"
        )
    );
}

#[tokio::test]
async fn slow_server_times_out_with_the_limit_in_the_message() {
    let fake = FakeModel::start(vec![Reply::delay(
        Duration::from_secs(5),
        Reply::text("too late"),
    )]);
    let mut config = config(&fake.base_url());
    config.request_timeout = Duration::from_millis(300);
    let provider = OpenAiProvider::with_api_key(config, None).unwrap();
    let started = std::time::Instant::now();
    let err = provider.complete(&request("x")).await.unwrap_err();
    // Under the server's 5 s delay: the 300 ms limit, not the answer, ended it.
    assert_took_less(
        started.elapsed(),
        Duration::from_secs(4),
        "the timed-out request",
    );
    assert!(matches!(err, ProviderError::Unavailable(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("did not answer within 300ms"), "{text}");
    assert!(text.contains("model.request_timeout"), "{text}");
}

#[tokio::test]
async fn invalid_json_body_is_unavailable_with_an_excerpt() {
    let fake = FakeModel::start(vec![Reply::json(json!("<html>gateway</html>"))]);
    let err = keyed(&fake.base_url())
        .complete(&request("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::Unavailable(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("not Chat Completions JSON"), "{text}");
    assert!(text.contains("gateway"), "{text}");
}

#[test]
fn missing_key_is_a_config_error_before_any_request() {
    let mut config = config("http://example.invalid/v1");
    config.api_key_env = None;
    // OPENAI_API_KEY may be set on a developer machine; only check it when not.
    if std::env::var_os("OPENAI_API_KEY").is_none() {
        let err = OpenAiProvider::new(config.clone(), &process_env()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "environment variable OPENAI_API_KEY is not set; set it to your API key, or set model.api_key_env to the variable that holds it"
        );
    }
    config.api_key_env = Some(UNSET_KEY_ENV.to_string());
    let err = OpenAiProvider::new(config, &process_env()).unwrap_err();
    assert!(matches!(err, ProviderError::Config(_)), "{err:?}");
    assert!(
        err.to_string()
            .starts_with(&format!("environment variable {UNSET_KEY_ENV} is not set")),
        "{err}"
    );
}

#[tokio::test]
async fn loopback_server_needs_no_key_and_gets_no_authorization() {
    let fake = FakeModel::start(vec![Reply::text("local"), Reply::text("keyed")]);
    let local = OpenAiProvider::new(config(&fake.base_url()), &process_env()).unwrap();
    assert_eq!(
        local.complete(&request("x")).await.unwrap().text.as_deref(),
        Some("local")
    );
    keyed(&fake.base_url())
        .complete(&request("x"))
        .await
        .unwrap();
    let auth: Vec<_> = fake
        .captured()
        .into_iter()
        .map(|request| request.authorization)
        .collect();
    assert_eq!(auth, vec![None, Some("Bearer sk-test-secret".to_string())]);
    // Every request says who sends it, keyed or not.
    for request in fake.captured() {
        assert_eq!(
            request.user_agent.as_deref(),
            Some(concat!("agentci/", env!("CARGO_PKG_VERSION")))
        );
    }
}

#[tokio::test]
async fn request_body_is_in_openai_format() {
    let fake = FakeModel::start(vec![Reply::text("ok")]);
    let root = Path::new("/work/repo");
    keyed(&fake.base_url())
        .complete(&conversation(root))
        .await
        .unwrap();
    let body = &fake.requests()[0];
    assert_eq!(
        *body,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "you are a careful agent"},
                {"role": "user", "content": "fix the bug in /work/repo/src/lib.rs"},
                {"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": "read", "arguments": "{\"path\":\"/work/repo/src/lib.rs\"}"},
                }]},
                {"role": "tool", "tool_call_id": "call_1", "content": "/work/repo/src/lib.rs:\n1: fn main() {}"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "read", "description": "read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            }}],
        })
    );
}

#[tokio::test]
async fn request_without_tools_leaves_the_field_out() {
    let fake = FakeModel::start(vec![Reply::text("summary")]);
    let mut request = request("summarize");
    request.tools.clear();
    keyed(&fake.base_url()).complete(&request).await.unwrap();
    assert!(fake.requests()[0].get("tools").is_none());
}

/// Records `requests` against a fake server scripted with `replies`.
async fn record(
    cassette: &Path,
    root: &Path,
    requests: &[ChatRequest],
    replies: Vec<Reply>,
) -> Vec<ChatResponse> {
    let fake = FakeModel::start(replies);
    let recorder = RecordingProvider::new(
        Box::new(keyed(&fake.base_url())),
        cassette,
        root,
        false,
        Redactor::default(),
    )
    .unwrap();
    assert_eq!(recorder.model_info().provider, "openai");
    let mut responses = Vec::new();
    for request in requests {
        responses.push(recorder.complete(request).await.unwrap());
    }
    responses
}

#[tokio::test]
async fn record_then_replay_gives_identical_responses() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("out/run.cassette.jsonl");
    let root = dir.path().join("ws");
    let requests = vec![request("plan"), conversation(&root)];
    let recorded = record(
        &cassette,
        &root,
        &requests,
        vec![
            Reply::plan(&[("read", "know the bug"), ("fix", "tests pass")]),
            Reply::text("done").with_usage(7, 3),
        ],
    )
    .await;

    // Every exchange is on disk as its own line, after the header.
    let text = std::fs::read_to_string(&cassette).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["cassette"], 3);
    assert_eq!(lines[0]["provider"], "openai");
    assert_eq!(lines[0]["model"], "gpt-test");
    assert_eq!(lines[0]["agentci_version"], env!("CARGO_PKG_VERSION"));
    let stored = &lines[2]["request"];
    let keep = stored["keep"].as_u64().unwrap() as usize;
    assert_eq!(
        stored["messages"][1 - keep]["content"],
        "fix the bug in ${WORKSPACE}/src/lib.rs"
    );

    let replay = ReplayProvider::open(&cassette, &root).unwrap();
    let info = replay.model_info();
    assert_eq!(
        (info.provider.as_str(), info.name.as_str()),
        ("replay", "gpt-test")
    );
    // The replaying job may name another model; that is not a divergence.
    let mut first = requests[0].clone();
    first.model = "some-other-model".to_string();
    assert_eq!(replay.complete(&first).await.unwrap(), recorded[0]);
    assert_eq!(replay.complete(&requests[1]).await.unwrap(), recorded[1]);
    assert_eq!(recorded[0].tool_calls[0].name, "submit_plan");
    assert_eq!(recorded[1].usage.input_tokens, 7);
}

#[tokio::test]
async fn replay_divergence_names_the_first_differing_field() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let root = dir.path().join("ws");
    let requests = vec![request("one"), conversation(&root)];
    record(
        &cassette,
        &root,
        &requests,
        vec![Reply::text("a"), Reply::text("b")],
    )
    .await;

    let replay = ReplayProvider::open(&cassette, &root).unwrap();
    replay.complete(&requests[0]).await.unwrap();
    let mut changed = requests[1].clone();
    changed.messages[3] = Message::Tool {
        tool_call_id: "call_1".to_string(),
        content: "something else".to_string(),
    };
    let err = replay.complete(&changed).await.unwrap_err();
    assert!(matches!(err, ProviderError::ReplayDiverged(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "replay diverged from cassette {} at exchange 2 (line 3): a tool result (message 4) changed since the recording; messages[3].content: recorded \"${{WORKSPACE}}/src/lib.rs:\" but the run sent \"something else\"; re-record with --record",
            cassette.display()
        )
    );
    // Tool results are compared by their first line only: a different body
    // (command output differs between machines) is not a divergence.
    let mut same_summary = requests[1].clone();
    same_summary.messages[3] = Message::Tool {
        tool_call_id: "call_1".to_string(),
        content: "${WORKSPACE}/src/lib.rs:\n1: fn main() { /* changed */ }"
            .replace("${WORKSPACE}", &root.display().to_string()),
    };
    // The cassette does not move on after a divergence.
    assert_eq!(
        replay
            .complete(&same_summary)
            .await
            .unwrap()
            .text
            .as_deref(),
        Some("b")
    );
}

#[tokio::test]
async fn replay_matches_across_workspace_paths() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let (root_a, root_b) = (Path::new("/tmp/a"), Path::new("/tmp/b"));
    // The model writes an absolute path; replayed, it names the new workspace.
    let reply = Reply::tool_calls(vec![(
        "call_9",
        "read",
        json!({"path": "/tmp/a/src/lib.rs"}),
    )]);
    record(&cassette, root_a, &[conversation(root_a)], vec![reply]).await;

    let replay = ReplayProvider::open(&cassette, root_b).unwrap();
    let response = replay.complete(&conversation(root_b)).await.unwrap();
    assert_eq!(
        response.tool_calls[0].arguments,
        r#"{"path":"/tmp/b/src/lib.rs"}"#
    );

    // The unnormalized path of another checkout is a real difference.
    let replay = ReplayProvider::open(&cassette, root_b).unwrap();
    let err = replay.complete(&conversation(root_a)).await.unwrap_err();
    assert!(err.to_string().contains("messages[1].content: recorded \"fix the bug in ${WORKSPACE}/src/lib.rs\" but the run sent \"fix the bug in /tmp/a/src/lib.rs\""), "{err}");
}

#[tokio::test]
async fn exhausted_cassette_says_how_many_it_had() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let root = dir.path();
    record(&cassette, root, &[request("one")], vec![Reply::text("a")]).await;
    let replay = ReplayProvider::open(&cassette, root).unwrap();
    assert_eq!(replay.len(), 1);
    replay.complete(&request("one")).await.unwrap();
    let err = replay.complete(&request("two")).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cassette {} has only 1 exchanges; the run asked for more",
            cassette.display()
        )
    );
}

#[test]
fn malformed_or_missing_cassette_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("bad.jsonl");
    let header =
        r#"{"cassette": 3, "provider": "openai", "model": "m", "agentci_version": "0.1.0"}"#;
    let exchange =
        json!({"request": {"model": "m", "messages": []}, "response": {"text": "ok"}}).to_string();
    std::fs::write(
        &cassette,
        format!("{header}\n{exchange}\n\n{{\"request\": 42\n"),
    )
    .unwrap();
    let err = ReplayProvider::open(&cassette, dir.path()).unwrap_err();
    assert!(matches!(err, ProviderError::Config(_)), "{err:?}");
    assert!(
        err.to_string().starts_with(&format!(
            "cassette {} line 4 is not a valid exchange: ",
            cassette.display()
        )),
        "{err}"
    );

    // A cassette of the protocol before one tool list per run.
    std::fs::write(&cassette, "{\"cassette\": 2, \"provider\": \"openai\", \"model\": \"m\", \"agentci_version\": \"9\"}\n").unwrap();
    let err = ReplayProvider::open(&cassette, dir.path()).unwrap_err();
    assert!(
        err.to_string()
            .contains("line 1 has format version 2, but this agentci reads version 3; re-record"),
        "{err}"
    );

    // A line that keeps more messages than the line before it had.
    let header = r#"{"cassette": 3, "provider": "openai", "model": "m", "agentci_version": "9"}"#;
    let bad_keep = json!({"request": {"model": "m", "keep": 3, "messages": []}, "response": {}});
    std::fs::write(&cassette, format!("{header}\n{bad_keep}\n")).unwrap();
    let err = ReplayProvider::open(&cassette, dir.path()).unwrap_err();
    assert!(err.to_string().contains("line 2 keeps 3 messages"), "{err}");

    let missing = dir.path().join("missing.jsonl");
    let err = ReplayProvider::open(&missing, dir.path()).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
}

#[tokio::test]
async fn recording_keeps_each_exchange_on_disk_as_it_happens() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeModel::start(vec![Reply::text("a")]);
    let recorder = RecordingProvider::new(
        Box::new(keyed(&fake.base_url())),
        &cassette,
        dir.path(),
        false,
        Redactor::default(),
    )
    .unwrap();
    recorder.complete(&request("one")).await.unwrap();
    // Read while the recorder is alive: nothing waits for a final flush.
    assert_eq!(
        std::fs::read_to_string(&cassette).unwrap().lines().count(),
        2
    );
    // A failed call is not recorded.
    recorder.complete(&request("two")).await.unwrap_err();
    assert_eq!(
        std::fs::read_to_string(&cassette).unwrap().lines().count(),
        2
    );
}

/// A growing conversation is stored as deltas: each line holds only the
/// messages after the ones it keeps, and tools only when they change.
/// Regression: full requests made a 200-turn cassette 70 MB and its replay 140 MB of memory.
#[tokio::test]
async fn cassette_stores_each_request_as_a_delta() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let root = dir.path().join("ws");
    let first = request("one");
    let mut second = first.clone();
    second.messages.push(Message::Assistant {
        reasoning: Vec::new(),
        content: Some("a".into()),
        tool_calls: Vec::new(),
    });
    second.messages.push(Message::User {
        content: "two".into(),
    });
    let requests = vec![first.clone(), second.clone()];
    record(
        &cassette,
        &root,
        &requests,
        vec![Reply::text("a"), Reply::text("b")],
    )
    .await;
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&cassette)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines[1]["request"]["keep"], 0);
    assert!(lines[1]["request"].get("tools").is_some());
    assert_eq!(lines[2]["request"]["keep"], first.messages.len());
    assert_eq!(lines[2]["request"]["messages"].as_array().unwrap().len(), 2);
    assert!(
        lines[2]["request"].get("tools").is_none(),
        "unchanged tools are not stored again"
    );

    let replay = ReplayProvider::open(&cassette, &root).unwrap();
    assert_eq!(
        replay.complete(&first).await.unwrap().text.as_deref(),
        Some("a")
    );
    assert_eq!(
        replay.complete(&second).await.unwrap().text.as_deref(),
        Some("b")
    );
}

/// Collects the partial text a provider reports while it streams.
#[derive(Default)]
struct Pieces(std::sync::Mutex<Vec<String>>);

impl agentci::provider::ProviderObserver for Pieces {
    fn partial_text(&self, delta: &str) {
        self.0.lock().unwrap().push(delta.to_string());
    }
}

#[tokio::test]
async fn both_providers_stream_text_in_pieces_to_the_observer() {
    use agentci::provider::anthropic::{AnthropicConfig, AnthropicProvider};
    let text = "Streaming answers arrive a few characters at a time.";
    let fake = FakeModel::start(vec![Reply::text(text), Reply::text(text)]);
    let mut openai_config = config(&fake.base_url());
    openai_config.stream = true;
    let openai = OpenAiProvider::with_api_key(openai_config, None).unwrap();
    let anthropic = AnthropicProvider::with_api_key(
        AnthropicConfig {
            reasoning: Default::default(),
            name: "claude-test".to_string(),
            base_url: Some(fake.base_url()),
            api_key_env: Some(UNSET_KEY_ENV.to_string()),
            request_timeout: Duration::from_secs(10),
            stream: true,
        },
        None,
    )
    .unwrap();
    let providers: [&dyn ModelProvider; 2] = [&openai, &anthropic];
    for provider in providers {
        let pieces = Pieces::default();
        let response = provider
            .complete_observed(&request("hi"), &pieces)
            .await
            .unwrap();
        assert_eq!(response.text.as_deref(), Some(text));
        let pieces = pieces.0.into_inner().unwrap();
        assert!(pieces.len() > 5, "{pieces:?}");
        assert_eq!(pieces.concat(), text);
    }
    let requests = fake.requests();
    assert_eq!(requests[0]["stream"], true);
    assert_eq!(requests[0]["stream_options"]["include_usage"], true);
    assert_eq!(requests[1]["stream"], true);
}

#[tokio::test]
async fn replay_hands_recorded_text_to_the_observer_as_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeModel::start(vec![Reply::text("a recorded answer in several words")]);
    let recorder = RecordingProvider::new(
        Box::new(keyed(&fake.base_url())),
        &cassette,
        dir.path(),
        false,
        Redactor::default(),
    )
    .unwrap();
    recorder.complete(&request("hi")).await.unwrap();
    drop(recorder);
    let replay = ReplayProvider::open(&cassette, dir.path()).unwrap();
    let pieces = Pieces::default();
    let response = replay
        .complete_observed(&request("hi"), &pieces)
        .await
        .unwrap();
    let pieces = pieces.0.into_inner().unwrap();
    assert!(pieces.len() > 3, "{pieces:?}");
    assert_eq!(Some(pieces.concat()), response.text);
}
