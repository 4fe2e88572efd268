//! A scripted fake OpenAI-compatible model server on 127.0.0.1.
//!
//! `FakeModel::start(replies)` serves `POST /v1/chat/completions` with the
//! scripted [`Reply`]s in order and captures every request body, so tests can
//! drive the real provider (or the real binary) over real HTTP and then check
//! what was sent. It runs on its own thread and tokio runtime, so plain
//! `#[test]` functions can use it; it stops when dropped.

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

const DEFAULT_PROMPT_TOKENS: u64 = 100;
const DEFAULT_COMPLETION_TOKENS: u64 = 20;

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    body: ReplyBody,
    usage: (u64, u64),
    delay: Option<Duration>,
}

#[derive(Clone, Debug)]
enum ReplyBody {
    /// Sent as is, with status 200.
    Raw(Value),
    /// An OpenAI-shaped completion, built when the script starts (ids are assigned then).
    Chat {
        text: Option<String>,
        calls: Vec<FakeCall>,
    },
    Error {
        status: u16,
        message: String,
    },
}

#[derive(Clone, Debug)]
struct FakeCall {
    /// `None`: numbered automatically (call_1, call_2, …).
    id: Option<String>,
    name: String,
    /// The arguments string exactly as it goes on the wire.
    arguments: String,
}

impl Reply {
    fn new(body: ReplyBody) -> Self {
        Self {
            body,
            usage: (DEFAULT_PROMPT_TOKENS, DEFAULT_COMPLETION_TOKENS),
            delay: None,
        }
    }

    fn chat(text: Option<String>, calls: Vec<FakeCall>) -> Self {
        Self::new(ReplyBody::Chat { text, calls })
    }

    /// A raw response body, status 200.
    pub fn json(body: Value) -> Self {
        Self::new(ReplyBody::Raw(body))
    }

    /// An assistant message with text and no tool calls.
    pub fn text(text: &str) -> Self {
        Self::chat(Some(text.to_string()), Vec::new())
    }

    /// Tool calls with given ids: `(id, name, arguments)`.
    pub fn tool_calls(calls: Vec<(&str, &str, Value)>) -> Self {
        let calls = calls
            .into_iter()
            .map(|(id, name, arguments)| FakeCall {
                id: Some(id.to_string()),
                name: name.to_string(),
                arguments: arguments.to_string(),
            })
            .collect();
        Self::chat(None, calls)
    }

    /// One tool call with an automatic id.
    pub fn tool_call(name: &str, arguments: Value) -> Self {
        Self::chat(
            None,
            vec![FakeCall {
                id: None,
                name: name.to_string(),
                arguments: arguments.to_string(),
            }],
        )
    }

    /// A tool call whose arguments string is sent verbatim (e.g. malformed JSON).
    pub fn raw_tool_call(id: &str, name: &str, arguments: &str) -> Self {
        Self::chat(
            None,
            vec![FakeCall {
                id: Some(id.to_string()),
                name: name.to_string(),
                arguments: arguments.to_string(),
            }],
        )
    }

    /// An HTTP error with an OpenAI-shaped body `{"error": {"message": …}}`.
    pub fn status(status: u16, message: &str) -> Self {
        Self::new(ReplyBody::Error {
            status,
            message: message.to_string(),
        })
    }

    /// `reply`, sent after waiting `delay` (for timeout tests).
    pub fn delay(delay: Duration, reply: Reply) -> Self {
        Self {
            delay: Some(delay),
            ..reply
        }
    }

    /// agentci's planning protocol: `submit_plan` with `(title, expected_outcome)` steps.
    pub fn plan(steps: &[(&str, &str)]) -> Self {
        let steps: Vec<Value> = steps
            .iter()
            .map(|(title, outcome)| json!({"title": title, "expected_outcome": outcome}))
            .collect();
        Self::tool_call("submit_plan", json!({ "steps": steps }))
    }

    /// agentci's execution protocol: `step_done` with a summary.
    pub fn step_done(summary: &str) -> Self {
        Self::tool_call("step_done", json!({ "summary": summary }))
    }

    /// Overrides the usage block (default 100 prompt, 20 completion tokens).
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage = (prompt_tokens, completion_tokens);
        self
    }

    /// Adds a text part to a chat reply (e.g. tool calls with commentary).
    pub fn with_text(mut self, text: &str) -> Self {
        if let ReplyBody::Chat { text: slot, .. } = &mut self.body {
            *slot = Some(text.to_string());
        }
        self
    }
}

/// A reply ready to send: status, body, optional delay.
struct Prepared {
    status: u16,
    body: Value,
    delay: Option<Duration>,
}

/// Builds every body up front, numbering tool calls without an id so ids are
/// unique across the script and skip any the script gave explicitly.
fn prepare(replies: Vec<Reply>) -> VecDeque<Prepared> {
    let given: HashSet<String> = replies
        .iter()
        .filter_map(|reply| match &reply.body {
            ReplyBody::Chat { calls, .. } => Some(calls),
            _ => None,
        })
        .flatten()
        .filter_map(|call| call.id.clone())
        .collect();
    let mut counter = 0;
    let mut next_id = || loop {
        counter += 1;
        let id = format!("call_{counter}");
        if !given.contains(&id) {
            return id;
        }
    };
    replies
        .into_iter()
        .enumerate()
        .map(|(index, reply)| {
            let (status, body) = match reply.body {
                ReplyBody::Raw(body) => (200, body),
                ReplyBody::Error { status, message } => (
                    status,
                    json!({"error": {"message": message, "type": "fake_error", "code": null}}),
                ),
                ReplyBody::Chat { text, calls } => {
                    let finish = if calls.is_empty() {
                        "stop"
                    } else {
                        "tool_calls"
                    };
                    let mut message = json!({"role": "assistant", "content": text});
                    if !calls.is_empty() {
                        let calls: Vec<Value> = calls
                            .into_iter()
                            .map(|call| {
                                json!({
                                    "id": call.id.unwrap_or_else(&mut next_id),
                                    "type": "function",
                                    "function": {"name": call.name, "arguments": call.arguments},
                                })
                            })
                            .collect();
                        message["tool_calls"] = Value::Array(calls);
                    }
                    let (prompt, completion) = reply.usage;
                    let body = json!({
                        "id": format!("chatcmpl-fake-{}", index + 1),
                        "object": "chat.completion",
                        "created": 0,
                        "model": "fake-model",
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": {
                            "prompt_tokens": prompt,
                            "completion_tokens": completion,
                            "total_tokens": prompt + completion,
                        },
                    });
                    (200, body)
                }
            };
            Prepared {
                status,
                body,
                delay: reply.delay,
            }
        })
        .collect()
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct CapturedRequest {
    /// The JSON body; a string holding the raw text when it was not JSON.
    pub body: Value,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Prepared>,
    scripted: usize,
    captured: Vec<CapturedRequest>,
}

/// The running server; dropping it stops the server.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeModel {
    pub fn start(replies: Vec<Reply>) -> FakeModel {
        let script = prepare(replies);
        let shared = Arc::new(Mutex::new(Shared {
            scripted: script.len(),
            script,
            captured: Vec::new(),
        }));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("fake model runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind fake model server");
                addr_tx
                    .send(listener.local_addr().expect("fake model address"))
                    .expect("report fake model address");
                let app = Router::new()
                    .route("/v1/chat/completions", post(chat_completions))
                    .with_state(state);
                // Not a graceful shutdown: a delayed reply still sleeping must
                // not keep the test waiting; dropping the runtime cancels it.
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = shutdown_rx => {}
                }
            });
        });
        let addr = addr_rx.recv().expect("fake model server started");
        FakeModel {
            addr,
            shared,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/v1`, what `model.base_url` should be.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The request bodies received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.captured()
            .into_iter()
            .map(|request| request.body)
            .collect()
    }

    /// Bodies and the `Authorization` header of each request received so far.
    pub fn captured(&self) -> Vec<CapturedRequest> {
        self.shared
            .lock()
            .expect("fake model state")
            .captured
            .clone()
    }

    /// How many scripted replies have not been served.
    pub fn remaining(&self) -> usize {
        self.shared.lock().expect("fake model state").script.len()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn chat_completions(
    State(shared): State<Arc<Mutex<Shared>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let authorization = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let next = {
        let mut shared = shared.lock().expect("fake model state");
        shared.captured.push(CapturedRequest {
            body,
            authorization,
        });
        let next = shared.script.pop_front();
        next.ok_or(shared.scripted)
    };
    let reply = match next {
        Ok(reply) => reply,
        Err(scripted) => {
            let message = format!(
                "fake model script exhausted: {scripted} replies were scripted and request {} has none",
                scripted + 1
            );
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                axum::Json(json!({"error": {"message": message, "type": "fake_error"}})),
            )
                .into_response();
        }
    };
    if let Some(delay) = reply.delay {
        tokio::time::sleep(delay).await;
    }
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(reply.body)).into_response()
}
