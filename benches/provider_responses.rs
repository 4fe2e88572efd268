//! The Responses provider's cost next to Chat Completions', on the same session.
//!
//! 1. Per-request time: a 30-turn agent session (a 6 KB system prompt, each
//!    turn a tool call and a 2 KB tool result) is replayed request by
//!    request through each provider (with its retry wrapper, as a run uses
//!    it) against a local server that answers instantly with a canned answer
//!    of the same content in each API's format. The rounds rotate between
//!    the providers; the difference of the means per request is the
//!    Responses provider's overhead (target: within 5%). A third line
//!    replays the session as a reasoning model's, every turn with a reasoning
//!    item holding 3 KB of encrypted content, carried back in every later
//!    request, and answers with one: what carrying reasoning costs.
//! 2. Bytes sent per turn, counted by the server: Chat Completions (which
//!    carries no reasoning), Responses without server state (every reasoning
//!    item goes back with its encrypted content), and Responses chained with
//!    `previous_response_id` (only the new items; computed with the
//!    provider's own body builder, since a chain needs the server's answers
//!    to match the session's).
//!
//! Run with `cargo bench --bench provider_responses`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentci::provider::openai::{OpenAiConfig, OpenAiProvider};
use agentci::provider::openai_responses::{self, ResponsesConfig, ResponsesProvider};
use agentci::provider::retry::{RetryPolicy, RetryingProvider};
use agentci::provider::{
    ChatRequest, Message, ModelProvider, Reasoning, ReasoningSettings, ToolCall, ToolDefinition,
    Unobserved,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::json;

const TURNS: usize = 30;
const ROUNDS: usize = 20;
const WARMUP_ROUNDS: usize = 2;
const ENCRYPTED_BYTES: usize = 3 * 1024;
const TOOL_RESULT_BYTES: usize = 2 * 1024;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // Equal content in both formats: no reasoning in the session or the answers.
    let plain_server = InstantServer::start(false);
    // A reasoning model's: every answer has a reasoning item, and the session carries them.
    let reasoning_server = InstantServer::start(true);
    let without = session(false);
    let with = session(true);
    let reasoning = ReasoningSettings::default();

    println!(
        "per-request time, a replayed {TURNS}-turn session, {ROUNDS} rounds, instant server on 127.0.0.1:"
    );
    for stream in [false, true] {
        let chat = retrying(Box::new(
            OpenAiProvider::with_api_key(
                OpenAiConfig {
                    name: "gpt-bench".into(),
                    base_url: Some(plain_server.base_url()),
                    api_key_env: None,
                    request_timeout: Duration::from_secs(30),
                    stream,
                    reasoning: reasoning.clone(),
                },
                None,
            )
            .expect("chat provider"),
        ));
        let responses = |server: &InstantServer| {
            retrying(Box::new(
                ResponsesProvider::with_api_key(
                    ResponsesConfig {
                        name: "gpt-bench".into(),
                        base_url: Some(server.base_url()),
                        api_key_env: None,
                        request_timeout: Duration::from_secs(30),
                        stream,
                        reasoning: reasoning.clone(),
                    },
                    None,
                )
                .expect("responses provider"),
            ))
        };
        let runs: [(Box<dyn ModelProvider>, &[ChatRequest]); 3] = [
            (chat, &without),
            (responses(&plain_server), &without),
            (responses(&reasoning_server), &with),
        ];
        let mut totals = [Duration::ZERO; 3];
        for round in 0..WARMUP_ROUNDS + ROUNDS {
            // Rotate which goes first, so none always runs on a warmer machine.
            for k in 0..runs.len() {
                let which = (round + k) % runs.len();
                let (provider, session) = &runs[which];
                let took = runtime.block_on(replay(provider.as_ref(), session));
                if round >= WARMUP_ROUNDS {
                    totals[which] += took;
                }
            }
        }
        let per = |total: Duration| micros(total) / (ROUNDS * TURNS) as f64;
        let [c, r, rr] = totals.map(per);
        let mode = if stream { "streamed" } else { "plain" };
        println!("  {mode}:");
        println!("    chat completions                    {c:>7.1} µs");
        println!(
            "    responses, same content             {r:>7.1} µs  ({:+.1}% against chat completions)",
            (r - c) / c * 100.0
        );
        println!(
            "    responses, reasoning items carried  {rr:>7.1} µs  ({:+.1}%)",
            (rr - c) / c * 100.0
        );
    }

    println!("bytes sent per turn (turns 1, 10, 20, 30; mean over {TURNS}):");
    let first_round = |server: &InstantServer, route: &str| -> Vec<usize> {
        server
            .take_sizes()
            .into_iter()
            .filter(|(r, _)| r == route)
            .map(|(_, n)| n)
            .take(TURNS)
            .collect()
    };
    let chat_sizes = first_round(&plain_server, "chat");
    let stateless = first_round(&reasoning_server, "responses");
    let chained: Vec<usize> = with
        .iter()
        .enumerate()
        .map(|(turn, request)| {
            // Turn 1 starts the chain; each later one continues the answer
            // to the turn before, whose request held two messages fewer.
            let continuing = (turn > 0).then(|| ("resp_previous", request.messages.len() - 2));
            openai_responses::request_body(request, "gpt-bench", false, &reasoning, continuing)
                .expect("body")
                .len()
        })
        .collect();
    for (name, figures) in [
        ("chat completions (no reasoning carried)   ", &chat_sizes),
        ("responses, stateless (encrypted reasoning)", &stateless),
        ("responses, previous_response_id           ", &chained),
    ] {
        let pick = |turn: usize| figures.get(turn - 1).copied().unwrap_or_default();
        let mean = figures.iter().sum::<usize>() as f64 / figures.len().max(1) as f64;
        println!(
            "  {name}: {:>7} {:>7} {:>7} {:>7} bytes; mean {:>8.0}",
            pick(1),
            pick(10),
            pick(20),
            pick(30),
            mean
        );
    }
}

fn retrying(inner: Box<dyn ModelProvider>) -> Box<dyn ModelProvider> {
    Box::new(RetryingProvider::new(inner, RetryPolicy::default()))
}

/// Every request of the session through `provider`, in order; the total time.
async fn replay(provider: &dyn ModelProvider, session: &[ChatRequest]) -> Duration {
    let started = Instant::now();
    for request in session {
        let answer = provider
            .complete_observed(request, &Unobserved)
            .await
            .expect("answer");
        assert_eq!(answer.tool_calls.len(), 1);
    }
    started.elapsed()
}

/// The requests of a `TURNS`-turn session: request `n` holds `n - 1`
/// finished turns (assistant turn with reasoning and a call, tool result).
fn session(with_reasoning: bool) -> Vec<ChatRequest> {
    let tools: Vec<ToolDefinition> = ["read", "grep", "ls", "edit", "run"]
        .iter()
        .map(|name| ToolDefinition {
            name: name.to_string(),
            description: format!("the {name} tool, described as a real tool is. ").repeat(4),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string"}, "pattern": {"type": "string"}}}),
        })
        .collect();
    let mut messages = vec![
        Message::System {
            content: "You are a careful coding agent working in a CI job. ".repeat(120),
        },
        Message::User {
            content: "Fix the failing test in src/lib.rs.".to_string(),
        },
    ];
    let mut requests = Vec::with_capacity(TURNS);
    for turn in 0..TURNS {
        requests.push(ChatRequest {
            max_output_tokens: None,
            model: "gpt-bench".to_string(),
            messages: messages.clone(),
            tools: tools.clone(),
            tool_choice: Default::default(),
        });
        let id = format!("call_{turn}");
        messages.push(Message::Assistant {
            reasoning: match with_reasoning {
                true => vec![Reasoning::Item {
                    id: format!("rs_{turn}"),
                    encrypted_content: Some(blob(turn, ENCRYPTED_BYTES)),
                    summary: vec![format!(
                        "Turn {turn}: read the next file to find where the test fails."
                    )],
                }],
                false => Vec::new(),
            },
            content: None,
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: "read".to_string(),
                arguments: json!({"path": format!("src/module_{turn}.rs")}).to_string(),
            }],
        });
        messages.push(Message::Tool {
            tool_call_id: id,
            content: blob(turn + 1000, TOOL_RESULT_BYTES),
        });
    }
    requests
}

/// `len` bytes of base64-looking text, different per `seed`.
fn blob(seed: usize, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state = seed as u64 * 6_364_136_223_846_793_005 + 1;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ALPHABET[(state >> 58) as usize] as char
        })
        .collect()
}

/// Canned answers, the same content in each API's format: a line of text
/// and one `read` call (and, for Responses, the reasoning item before them).
struct Canned {
    chat_plain: Bytes,
    chat_stream: Bytes,
    responses_plain: Bytes,
    responses_stream: Bytes,
}

fn canned(with_reasoning: bool) -> Canned {
    let text = "Reading the module that the failing test imports.";
    let arguments = r#"{"path":"src/lib.rs"}"#;
    let chat_plain = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-bench",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": text,
            "tool_calls": [{"id": "call_x", "type": "function",
                            "function": {"name": "read", "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": 9000, "completion_tokens": 80,
                  "prompt_tokens_details": {"cached_tokens": 8000}},
    });
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                   "model": "gpt-bench",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut chat_stream = chunk(json!({"role": "assistant", "content": ""}), json!(null));
    for word in text.split_inclusive(' ') {
        chat_stream.push_str(&chunk(json!({"content": word}), json!(null)));
    }
    chat_stream.push_str(&chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_x", "type": "function",
                               "function": {"name": "read", "arguments": arguments}}]}),
        json!(null),
    ));
    chat_stream.push_str(&chunk(json!({}), json!("tool_calls")));
    chat_stream.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
               "usage": {"prompt_tokens": 9000, "completion_tokens": 80,
                         "prompt_tokens_details": {"cached_tokens": 8000}}})
    ));

    let reasoning = json!({"type": "reasoning", "id": "rs_x",
                           "encrypted_content": blob(7, ENCRYPTED_BYTES),
                           "summary": [{"type": "summary_text", "text": "Look at the import."}]});
    let message = json!({"type": "message", "id": "msg_x", "status": "completed",
                         "role": "assistant",
                         "content": [{"type": "output_text", "text": text, "annotations": []}]});
    let call = json!({"type": "function_call", "id": "fc_x", "call_id": "call_x",
                      "name": "read", "arguments": arguments, "status": "completed"});
    let usage = json!({"input_tokens": 9000, "input_tokens_details": {"cached_tokens": 8000},
                       "output_tokens": 80, "output_tokens_details": {"reasoning_tokens": 40}});
    let output = match with_reasoning {
        true => vec![reasoning.clone(), message.clone(), call.clone()],
        false => vec![message.clone(), call.clone()],
    };
    let responses_plain = json!({"id": "resp_x", "object": "response", "status": "completed",
                                 "model": "gpt-bench", "output": output, "usage": usage});
    let event = |data: serde_json::Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap_or_default()
        )
    };
    let mut responses_stream = event(json!({"type": "response.created",
        "response": {"id": "resp_x", "object": "response", "status": "in_progress", "output": []}}));
    if with_reasoning {
        responses_stream.push_str(&event(json!({"type": "response.output_item.added",
            "output_index": 0, "item": {"type": "reasoning", "id": "rs_x", "summary": []}})));
        responses_stream.push_str(&event(json!({"type": "response.output_item.done",
            "output_index": 0, "item": reasoning})));
    }
    responses_stream.push_str(&event(
        json!({"type": "response.output_item.added", "output_index": 1,
        "item": {"type": "message", "id": "msg_x", "role": "assistant", "content": []}}),
    ));
    for word in text.split_inclusive(' ') {
        responses_stream.push_str(&event(json!({"type": "response.output_text.delta",
            "item_id": "msg_x", "output_index": 1, "content_index": 0, "delta": word})));
    }
    responses_stream.push_str(&event(
        json!({"type": "response.output_item.done", "output_index": 1,
        "item": message}),
    ));
    responses_stream.push_str(&event(
        json!({"type": "response.output_item.added", "output_index": 2,
        "item": {"type": "function_call", "id": "fc_x", "call_id": "call_x", "name": "read",
                 "arguments": ""}}),
    ));
    responses_stream.push_str(&event(
        json!({"type": "response.function_call_arguments.delta",
        "item_id": "fc_x", "output_index": 2, "delta": arguments}),
    ));
    responses_stream.push_str(&event(
        json!({"type": "response.output_item.done", "output_index": 2,
        "item": call}),
    ));
    responses_stream.push_str(&event(json!({"type": "response.completed",
        "response": {"id": "resp_x", "object": "response", "status": "completed",
                     "output": [], "usage": usage}})));
    Canned {
        chat_plain: Bytes::from(chat_plain.to_string()),
        chat_stream: Bytes::from(chat_stream),
        responses_plain: Bytes::from(responses_plain.to_string()),
        responses_stream: Bytes::from(responses_stream),
    }
}

/// Answers every request at once with a canned answer and counts the bytes it received.
struct InstantServer {
    addr: SocketAddr,
    sizes: Arc<Mutex<Vec<(String, usize)>>>,
}

#[derive(Clone)]
struct ServerState {
    canned: Arc<Canned>,
    sizes: Arc<Mutex<Vec<(String, usize)>>>,
}

impl InstantServer {
    fn start(with_reasoning: bool) -> Self {
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let state = ServerState {
            canned: Arc::new(canned(with_reasoning)),
            sizes: Arc::clone(&sizes),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("server runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                tx.send(listener.local_addr().expect("address"))
                    .expect("report address");
                let app = Router::new()
                    .route("/v1/chat/completions", post(chat))
                    .route("/v1/responses", post(responses))
                    .with_state(state);
                axum::serve(listener, app).await.expect("serve");
            });
        });
        let addr = rx.recv().expect("server started");
        Self { addr, sizes }
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn take_sizes(&self) -> Vec<(String, usize)> {
        std::mem::take(&mut *self.sizes.lock().expect("sizes"))
    }
}

fn streamed(body: &Bytes) -> bool {
    body.windows(13).any(|w| w == b"\"stream\":true")
}

fn reply(body: Bytes, stream: bool) -> axum::response::Response {
    let kind = if stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    ([(CONTENT_TYPE, kind)], body).into_response()
}

async fn chat(State(state): State<ServerState>, body: Bytes) -> axum::response::Response {
    let stream = streamed(&body);
    state
        .sizes
        .lock()
        .expect("sizes")
        .push(("chat".into(), body.len()));
    let canned = match stream {
        true => state.canned.chat_stream.clone(),
        false => state.canned.chat_plain.clone(),
    };
    reply(canned, stream)
}

async fn responses(State(state): State<ServerState>, body: Bytes) -> axum::response::Response {
    let stream = streamed(&body);
    state
        .sizes
        .lock()
        .expect("sizes")
        .push(("responses".into(), body.len()));
    let canned = match stream {
        true => state.canned.responses_stream.clone(),
        false => state.canned.responses_plain.clone(),
    };
    reply(canned, stream)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
