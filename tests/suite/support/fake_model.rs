//! A scripted fake model server on 127.0.0.1 that speaks both wire formats.
//!
//! `FakeModel::start(replies)` serves `POST /v1/chat/completions` (OpenAI)
//! and `POST /v1/messages` (Anthropic) with the scripted [`Reply`]s in order,
//! each rendered in the format of the route it was asked on: a JSON body, or
//! server-sent events when the request says `"stream": true`. Replies can
//! also fail on purpose: an HTTP error (with `Retry-After`), a context-length
//! error, a stream cut in the middle, an answer that never comes. Every
//! request is captured, so tests can drive the real providers (or the real
//! binary) over real HTTP and then check what was sent. It runs on its own
//! thread and tokio runtime, so plain `#[test]` functions can use it; it
//! stops when dropped.

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

// Named by path so the benches that include this file find it too.
#[path = "fake_model/anthropic_thinking.rs"]
pub mod anthropic_thinking;
use anthropic_thinking::Thought;
// Paths spelled out: benches include this file with `#[path]`, which
// would otherwise look for these beside it.
#[path = "fake_model/azure.rs"]
mod azure;
#[path = "fake_model/bedrock.rs"]
pub mod bedrock;
#[path = "fake_model/responses.rs"]
mod responses;
#[path = "fake_model/vertex.rs"]
pub mod vertex;

const DEFAULT_PROMPT_TOKENS: u64 = 100;
const DEFAULT_COMPLETION_TOKENS: u64 = 20;

/// Text and tool-call arguments go out in pieces this long when streamed.
const STREAM_PIECE_CHARS: usize = 6;

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    body: ReplyBody,
    usage: FakeUsage,
    delay: Option<Duration>,
    headers: Vec<(String, String)>,
    /// Send only this many stream events (or half the JSON body), then drop the connection.
    cut_after: Option<usize>,
    /// Served only to a conversation whose first user message contains this.
    lane: Option<String>,
    /// A Chat Completions `reasoning_content`, as open-model servers send it.
    reasoning_content: Option<String>,
    /// Anthropic thinking blocks that lead the answer.
    thinking: Vec<Thought>,
    /// Wait this long before each piece of the body (a slow server).
    pace: Option<Duration>,
}

#[derive(Clone, Debug)]
enum ReplyBody {
    /// Sent as is, with status 200.
    Raw(Value),
    /// Server-sent events sent as written, with status 200.
    RawEvents(Vec<String>),
    /// An event stream that sends a comment line at this interval and never
    /// ends.
    Trickle(Duration),
    /// A completion in the route's format, built when the script starts (ids are assigned then).
    Chat {
        text: Option<String>,
        calls: Vec<FakeCall>,
    },
    Error {
        status: u16,
        message: String,
    },
    /// The route's "prompt is too long" error.
    ContextTooLong,
    /// An exception event in a Bedrock stream (a 500 elsewhere).
    StreamException {
        kind: String,
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
            usage: FakeUsage {
                prompt: DEFAULT_PROMPT_TOKENS,
                completion: DEFAULT_COMPLETION_TOKENS,
                cache_read: 0,
                cache_write: 0,
                reasoning: 0,
                bytes_per_token: None,
            },
            delay: None,
            headers: Vec::new(),
            cut_after: None,
            lane: None,
            reasoning_content: None,
            thinking: Vec::new(),
            pace: None,
        }
    }

    /// Leads an Anthropic answer with a thinking block of `text`, signed by
    /// the fake (sent back changed, it is refused).
    pub fn with_thinking(mut self, text: &str) -> Self {
        self.thinking.push(Thought::Thinking(text.to_string()));
        self
    }

    /// Leads an Anthropic answer with a redacted thinking block.
    pub fn with_redacted_thinking(mut self, seed: &str) -> Self {
        self.thinking.push(Thought::Redacted(seed.to_string()));
        self
    }

    /// Serve this reply only to a conversation whose first user message
    /// contains `marker` (a sub-agent's prompt), in script order within
    /// that lane; replies without a lane go to conversations that match
    /// no lane. Parallel conversations then get their own replies whatever
    /// order their requests arrive in.
    pub fn in_lane(mut self, marker: &str) -> Self {
        self.lane = Some(marker.to_string());
        self
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

    /// 429 with `Retry-After: {retry_after}`.
    pub fn rate_limited(retry_after: &str) -> Self {
        Self::status(429, "Rate limit reached; please try again later.")
            .with_header("retry-after", retry_after)
    }

    /// The route's context-length error: OpenAI's 400 `context_length_exceeded`,
    /// Anthropic's 400 `invalid_request_error` "prompt is too long".
    pub fn context_too_long() -> Self {
        Self::new(ReplyBody::ContextTooLong)
    }

    /// A Bedrock stream that starts, then carries an exception event of
    /// `kind` (`throttlingException`, `validationException`, …).
    pub fn stream_exception(kind: &str, message: &str) -> Self {
        Self::new(ReplyBody::StreamException {
            kind: kind.to_string(),
            message: message.to_string(),
        })
    }

    /// `reply`, but the connection is dropped after `events` stream events
    /// (or half of the JSON body when the request did not stream).
    pub fn cut(events: usize, reply: Reply) -> Self {
        Self {
            cut_after: Some(events),
            ..reply
        }
    }

    /// Server-sent events sent as written (`data: …\n\n` each), whatever
    /// the route: for answers no scripted reply makes, such as a huge one.
    pub fn events(events: Vec<String>) -> Self {
        Self::new(ReplyBody::RawEvents(events))
    }

    /// A `200 text/event-stream` answer that never ends: an SSE comment line
    /// (`: waiting`, which the SSE standard says readers skip, as real servers
    /// send to keep a connection open) every `every`, and never an event.
    pub fn trickle(every: Duration) -> Self {
        Self::new(ReplyBody::Trickle(every))
    }

    /// `self`, with the server waiting `every` before each piece of the body
    /// (each event, or the JSON body): a slow answer.
    pub fn paced(mut self, every: Duration) -> Self {
        self.pace = Some(every);
        self
    }

    /// An answer that never comes (within any test's patience).
    pub fn hang() -> Self {
        Self::delay(Duration::from_secs(3600), Self::text("too late"))
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// An HTTP error with the route's error body (`{"error": {"message": …}}`).
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
        self.usage.prompt = prompt_tokens;
        self.usage.completion = completion_tokens;
        self
    }

    /// Reports as prompt tokens the request's body size divided by
    /// `bytes_per_token`, as a server counts what it was sent (the fixed
    /// default is no count of the request).
    pub fn with_prompt_counted(mut self, bytes_per_token: u64) -> Self {
        self.usage.bytes_per_token = Some(bytes_per_token.max(1));
        self
    }

    /// Of the prompt tokens, `read` came from the prompt cache and `write`
    /// went into it, reported in each API's own fields: Anthropic's
    /// `cache_read_input_tokens` / `cache_creation_input_tokens` (its
    /// `input_tokens` then counts only the rest), OpenAI's
    /// `prompt_tokens_details.cached_tokens` (OpenAI reports no writes).
    pub fn with_cache(mut self, read: u64, write: u64) -> Self {
        self.usage.cache_read = read;
        self.usage.cache_write = write;
        self
    }

    /// Adds the `reasoning_content` a vLLM/SGLang/llama.cpp server sends
    /// with a reasoning model's answer, and `tokens` of it in the usage's
    /// `completion_tokens_details.reasoning_tokens`.
    pub fn with_reasoning_content(mut self, text: &str, tokens: u64) -> Self {
        self.reasoning_content = Some(text.to_string());
        self.usage.reasoning = tokens;
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

/// Token figures of one reply; `prompt` counts every input token.
#[derive(Clone, Copy, Debug)]
struct FakeUsage {
    prompt: u64,
    completion: u64,
    cache_read: u64,
    cache_write: u64,
    /// Of `completion`, the reasoning tokens.
    reasoning: u64,
    /// `Some`: `prompt` is the request's size in bytes divided by this.
    bytes_per_token: Option<u64>,
}

impl FakeUsage {
    fn openai(self) -> Value {
        let mut usage = json!({
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
        });
        if self.cache_read > 0 {
            usage["prompt_tokens_details"] = json!({"cached_tokens": self.cache_read});
        }
        if self.reasoning > 0 {
            usage["completion_tokens_details"] = json!({"reasoning_tokens": self.reasoning});
        }
        usage
    }

    /// The `usage` of an Anthropic message (`output_tokens` as given).
    fn anthropic(self, output_tokens: u64) -> Value {
        let mut usage = json!({
            "input_tokens": self.prompt.saturating_sub(self.cache_read + self.cache_write),
            "output_tokens": output_tokens,
        });
        if self.cache_read + self.cache_write > 0 {
            usage["cache_read_input_tokens"] = json!(self.cache_read);
            usage["cache_creation_input_tokens"] = json!(self.cache_write);
        }
        usage
    }
}

/// A reply ready to send, still in neutral form: rendered per route and
/// per streaming flag when a request takes it.
struct Prepared {
    kind: PreparedKind,
    delay: Option<Duration>,
    headers: Vec<(String, String)>,
    cut_after: Option<usize>,
    lane: Option<String>,
    thinking: Vec<Thought>,
    /// 1-based position in the script, for response ids.
    number: usize,
    reasoning_content: Option<String>,
    pace: Option<Duration>,
}

enum PreparedKind {
    Raw(Value),
    RawEvents(Vec<String>),
    Trickle(Duration),
    Chat {
        text: Option<String>,
        /// `(id, name, arguments)`.
        calls: Vec<(String, String, String)>,
        usage: FakeUsage,
    },
    Error {
        status: u16,
        message: String,
    },
    ContextTooLong,
    StreamException {
        kind: String,
        message: String,
    },
}

/// Builds every reply up front, numbering tool calls without an id so ids
/// are unique across the script and skip any the script gave explicitly.
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
            let kind = match reply.body {
                ReplyBody::Raw(body) => PreparedKind::Raw(body),
                ReplyBody::RawEvents(events) => PreparedKind::RawEvents(events),
                ReplyBody::Trickle(every) => PreparedKind::Trickle(every),
                ReplyBody::Error { status, message } => PreparedKind::Error { status, message },
                ReplyBody::ContextTooLong => PreparedKind::ContextTooLong,
                ReplyBody::StreamException { kind, message } => {
                    PreparedKind::StreamException { kind, message }
                }
                ReplyBody::Chat { text, calls } => PreparedKind::Chat {
                    text,
                    calls: calls
                        .into_iter()
                        .map(|call| {
                            (
                                call.id.unwrap_or_else(&mut next_id),
                                call.name,
                                call.arguments,
                            )
                        })
                        .collect(),
                    usage: reply.usage,
                },
            };
            Prepared {
                kind,
                delay: reply.delay,
                headers: reply.headers,
                cut_after: reply.cut_after,
                lane: reply.lane,
                thinking: reply.thinking,
                number: index + 1,
                reasoning_content: reply.reasoning_content,
                pace: reply.pace,
            }
        })
        .collect()
}

/// Which wire format a request came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
    /// OpenAI's Responses API (`fake_model/responses.rs`).
    Responses,
    /// Anthropic's Messages over Amazon Bedrock's invoke routes.
    Bedrock,
    /// Anthropic's Messages over Google Vertex AI's rawPredict routes.
    Vertex,
}

/// What goes on the wire for one request.
enum Rendered {
    Json(u16, Value),
    Events(Vec<String>),
    /// AWS event-stream frames (Bedrock).
    Frames(Vec<Vec<u8>>),
}

impl Prepared {
    fn render(&self, api: Api, stream: bool) -> Rendered {
        match &self.kind {
            PreparedKind::Raw(body) => Rendered::Json(200, body.clone()),
            PreparedKind::RawEvents(events) => Rendered::Events(events.clone()),
            // `answer` sends a trickle itself: it has no end to render.
            PreparedKind::Trickle(_) => Rendered::Events(Vec::new()),
            PreparedKind::Error { status, message } => {
                Rendered::Json(*status, error_body(api, *status, message, None))
            }
            PreparedKind::StreamException { kind, message } => match (api, stream) {
                (Api::Bedrock, true) => Rendered::Frames(bedrock::stream_exception(kind, message)),
                _ => Rendered::Json(500, error_body(api, 500, message, None)),
            },
            PreparedKind::ContextTooLong => Rendered::Json(
                400,
                match api {
                    Api::OpenAi => error_body(
                        api,
                        400,
                        "This model's maximum context length is 128000 tokens. However, your messages resulted in 210000 tokens. Please reduce the length of the messages.",
                        Some("context_length_exceeded"),
                    ),
                    Api::Anthropic | Api::Vertex => error_body(
                        api,
                        400,
                        "prompt is too long: 210000 tokens > 200000 maximum",
                        None,
                    ),
                    Api::Responses => unreachable!("fake_model/responses.rs renders its own"),
                    Api::Bedrock => bedrock::error_body("Input is too long for requested model."),
                },
            ),
            PreparedKind::Chat { text, calls, usage } => match (api, stream) {
                (Api::OpenAi, false) => Rendered::Json(
                    200,
                    openai_body(
                        self.number,
                        text,
                        self.reasoning_content.as_deref(),
                        calls,
                        *usage,
                    ),
                ),
                (Api::OpenAi, true) => Rendered::Events(openai_events(
                    self.number,
                    text,
                    self.reasoning_content.as_deref(),
                    calls,
                    *usage,
                )),
                (Api::Anthropic | Api::Vertex | Api::Bedrock, false) => {
                    let mut body = anthropic_body(self.number, text, calls, *usage);
                    if let Some(content) = body["content"].as_array_mut() {
                        content.splice(0..0, anthropic_thinking::blocks(&self.thinking));
                    }
                    Rendered::Json(200, body)
                }
                (Api::Anthropic | Api::Vertex, true) => Rendered::Events(anthropic_events(
                    self.number,
                    text,
                    calls,
                    *usage,
                    &self.thinking,
                )),
                (Api::Bedrock, true) => Rendered::Frames(bedrock::frames(&anthropic_events(
                    self.number,
                    text,
                    calls,
                    *usage,
                    &self.thinking,
                ))),
                (Api::Responses, _) => unreachable!("fake_model/responses.rs renders its own"),
            },
        }
    }
}

fn error_body(api: Api, status: u16, message: &str, code: Option<&str>) -> Value {
    match api {
        Api::OpenAi | Api::Responses => json!({"error": {
            "message": message,
            "type": if status == 400 { "invalid_request_error" } else { "fake_error" },
            "code": code,
        }}),
        Api::Bedrock => bedrock::error_body(message),
        Api::Anthropic | Api::Vertex => {
            let kind = match status {
                400 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    }
}

fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(STREAM_PIECE_CHARS)
        .map(|c| c.iter().collect())
        .collect()
}

fn openai_body(
    number: usize,
    text: &Option<String>,
    reasoning_content: Option<&str>,
    calls: &[(String, String, String)],
    usage: FakeUsage,
) -> Value {
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let mut message = json!({"role": "assistant", "content": text});
    if let Some(reasoning) = reasoning_content {
        message["reasoning_content"] = json!(reasoning);
    }
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, arguments)| {
                json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                })
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": format!("chatcmpl-fake-{number}"),
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage.openai(),
    })
}

fn openai_events(
    number: usize,
    text: &Option<String>,
    reasoning_content: Option<&str>,
    calls: &[(String, String, String)],
    usage: FakeUsage,
) -> Vec<String> {
    let id = format!("chatcmpl-fake-{number}");
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    // vLLM streams the reasoning before the answer, in deltas of its own.
    for piece in pieces(reasoning_content.unwrap_or_default()) {
        events.push(chunk(json!({"reasoning_content": piece}), Value::Null));
    }
    for piece in pieces(text.as_deref().unwrap_or_default()) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, (call_id, name, arguments)) in calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                    "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in pieces(arguments) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    events.push(chunk(json!({}), json!(finish)));
    events.push(json!({
        "id": id, "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
        "choices": [],
        "usage": usage.openai(),
    }));
    let mut lines: Vec<String> = events
        .into_iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect();
    lines.push("data: [DONE]\n\n".to_string());
    lines
}

/// The `input` of a `tool_use` block: the arguments as an object, or the
/// raw string when they are not JSON (what a broken proxy would send).
fn anthropic_input(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_string()))
}

fn anthropic_body(
    number: usize,
    text: &Option<String>,
    calls: &[(String, String, String)],
    usage: FakeUsage,
) -> Value {
    let mut content: Vec<Value> = text
        .iter()
        .map(|text| json!({"type": "text", "text": text}))
        .collect();
    for (id, name, arguments) in calls {
        content.push(json!({"type": "tool_use", "id": id, "name": name,
                            "input": anthropic_input(arguments)}));
    }
    json!({
        "id": format!("msg_fake_{number}"),
        "type": "message",
        "role": "assistant",
        "model": "fake-model",
        "content": content,
        "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
        "stop_sequence": null,
        "usage": usage.anthropic(usage.completion),
    })
}

fn anthropic_events(
    number: usize,
    text: &Option<String>,
    calls: &[(String, String, String)],
    usage: FakeUsage,
    thinking: &[Thought],
) -> Vec<String> {
    let mut events: Vec<(&str, Value)> = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": format!("msg_fake_{number}"), "type": "message", "role": "assistant",
                "model": "fake-model", "content": [], "stop_reason": null,
                "usage": usage.anthropic(1)}}),
        ),
        ("ping", json!({"type": "ping"})),
    ];
    events.extend(anthropic_thinking::events(thinking, STREAM_PIECE_CHARS));
    let mut index = thinking.len();
    if let Some(text) = text {
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in pieces(text) {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (id, name, arguments) in calls {
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ));
        for piece in pieces(arguments) {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
                         "stop_sequence": null},
               "usage": {"output_tokens": usage.completion}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events
        .into_iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct CapturedRequest {
    /// The JSON body; a string holding the raw text when it was not JSON.
    pub body: Value,
    /// The body's size as sent, in bytes.
    pub body_bytes: usize,
    pub authorization: Option<String>,
    /// The request path, e.g. `/v1/messages`.
    pub path: String,
    /// `x-api-key` (Anthropic).
    pub api_key: Option<String>,
    /// `anthropic-version`.
    pub anthropic_version: Option<String>,
    /// `user-agent`: who is calling, for the provider's logs.
    pub user_agent: Option<String>,
    /// `anthropic-beta`: the betas asked for (interleaved thinking).
    pub anthropic_beta: Option<String>,
    /// The query string, e.g. `api-version=2024-10-21` (Azure).
    pub query: Option<String>,
    /// `api-key` (Azure OpenAI).
    pub azure_api_key: Option<String>,
    /// Every header, lowercase names, in name order.
    pub headers: Vec<(String, String)>,
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Prepared>,
    scripted: usize,
    captured: Vec<CapturedRequest>,
    responses: responses::ResponsesState,
    /// Calls to the fake identity endpoints (STS, token exchange).
    identity_calls: usize,
}

/// The running server; dropping it stops the server.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeModel {
    /// [`FakeModel::start`] with a model that takes `latency` to answer
    /// each call (a reply with its own delay keeps it): round trips cost
    /// what they cost with a real model (the benches measure them).
    pub fn start_with_latency(replies: Vec<Reply>, latency: Duration) -> FakeModel {
        let replies = replies
            .into_iter()
            .map(|reply| Reply {
                delay: reply.delay.or(Some(latency)),
                ..reply
            })
            .collect();
        FakeModel::start(replies)
    }

    pub fn start(replies: Vec<Reply>) -> FakeModel {
        let script = prepare(replies);
        let shared = Arc::new(Mutex::new(Shared {
            scripted: script.len(),
            script,
            captured: Vec::new(),
            responses: Default::default(),
            identity_calls: 0,
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
                    .route("/v1/chat/completions", post(answer))
                    .route("/v1/messages", post(answer))
                    .route("/v1/responses", post(answer))
                    .route(
                        "/openai/deployments/{deployment}/chat/completions",
                        post(azure::chat_completions),
                    )
                    .route("/v1/models", get(models))
                    .fallback(cloud)
                    .with_state(state);
                // Not a graceful shutdown: a delayed reply still sleeping must
                // not keep the test waiting; dropping the runtime cancels it.
                // No Nagle delay: a stream's last small write ("[DONE]") would
                // otherwise wait ~40 ms for the client's delayed ACK, which
                // no real API server adds and which would swamp the benches.
                let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                    let _ = tcp.set_nodelay(true);
                });
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

    /// The text of the tool result the model was sent for `call_id`.
    pub fn tool_result(&self, call_id: &str) -> String {
        tool_result_in(&self.requests(), call_id)
    }

    /// How many calls the fake identity endpoints (AWS STS, Google STS and
    /// IAM Credentials, the OIDC token URL) have had.
    pub fn identity_calls(&self) -> usize {
        self.shared.lock().expect("fake model state").identity_calls
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

/// The cloud routes (Bedrock's `/model/…`, Vertex AI's `…:rawPredict`) and
/// the fake identity endpoints, whose paths axum's router cannot express.
async fn cloud(
    State(shared): State<Arc<Mutex<Shared>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path();
    if bedrock::invoke_route(path).is_some() || vertex::predict_route(path).is_some() {
        return answer(State(shared), uri, headers, body).await;
    }
    let identity = if bedrock::is_sts(path) {
        Some(bedrock::sts(&body))
    } else {
        vertex::identity(path, &headers, &body)
    };
    match identity {
        Some(response) => {
            shared.lock().expect("fake model state").identity_calls += 1;
            response
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn answer(
    State(shared): State<Arc<Mutex<Shared>>>,
    uri: Uri,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let path = uri.path();
    let (api, cloud_stream) = match (bedrock::invoke_route(path), vertex::predict_route(path)) {
        (Some(stream), _) => (Api::Bedrock, Some(stream)),
        (_, Some(stream)) => (Api::Vertex, Some(stream)),
        _ if path.ends_with("/messages") => (Api::Anthropic, None),
        _ if path.ends_with("/responses") => (Api::Responses, None),
        _ => (Api::OpenAi, None),
    };
    let body = serde_json::from_slice(&raw)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into_owned()));
    // Bedrock streams by route; Vertex AI by route and `stream: true`.
    let stream = match api {
        Api::Bedrock => cloud_stream == Some(true),
        _ => body.get("stream").and_then(Value::as_bool) == Some(true),
    };
    let unauthenticated = match api {
        Api::Bedrock => bedrock::check_auth(path, &headers, &raw),
        Api::Vertex => vertex::check_auth(&headers),
        _ => None,
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string)
    };
    // Bedrock takes the betas in the body (`anthropic_beta`), the others as a header.
    let beta = match api {
        Api::Bedrock => body
            .get("anthropic_beta")
            .and_then(Value::as_array)
            .map(|betas| {
                betas
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(",")
            }),
        _ => header("anthropic-beta"),
    };
    let refusal = refusal(api, &body).or_else(|| match api {
        Api::Anthropic | Api::Vertex | Api::Bedrock => {
            anthropic_thinking::refusal(&body, beta.as_deref())
        }
        Api::OpenAi | Api::Responses => None,
    });
    let request = body.clone();
    let next = {
        let mut shared = shared.lock().expect("fake model state");
        let responses_refusal = (api == Api::Responses)
            .then(|| responses::refusal(&body, &shared.responses))
            .flatten();
        shared.captured.push(CapturedRequest {
            body,
            body_bytes: raw.len(),
            authorization: header("authorization"),
            path: uri.path().to_string(),
            api_key: header("x-api-key"),
            anthropic_version: header("anthropic-version"),
            user_agent: header("user-agent"),
            anthropic_beta: beta,
            query: uri.query().map(str::to_string),
            azure_api_key: header("api-key"),
            headers: {
                let mut all: Vec<(String, String)> = headers
                    .iter()
                    .map(|(n, v)| {
                        (
                            n.as_str().to_string(),
                            v.to_str().unwrap_or("?").to_string(),
                        )
                    })
                    .collect();
                all.sort();
                all
            },
        });
        if let Some(refused) = unauthenticated {
            return refused;
        }
        if let Some((status, error)) = responses_refusal {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            return (status, axum::Json(error)).into_response();
        }
        // A request the real API refuses gets its 400 and uses no scripted reply.
        if let Some(message) = refusal {
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(error_body(api, 400, &message, None)),
            )
                .into_response();
        }
        let first_user = first_user_text(&shared.captured);
        let next = next_in_lane(&mut shared.script, &first_user);
        if let (Some(reply), Api::Responses) = (&next, api) {
            responses::issue(&mut shared.responses, reply, &request);
        }
        next.ok_or(shared.scripted)
    };
    let mut reply = match next {
        Ok(reply) => reply,
        Err(scripted) => {
            let message = format!(
                "fake model script exhausted: {scripted} replies were scripted and request {} has none",
                scripted + 1
            );
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                axum::Json(error_body(api, 500, &message, None)),
            )
                .into_response();
        }
    };
    if let PreparedKind::Chat { usage, .. } = &mut reply.kind
        && let Some(per) = usage.bytes_per_token
    {
        usage.prompt = raw.len() as u64 / per;
    }
    if let Some(delay) = reply.delay {
        tokio::time::sleep(delay).await;
    }
    if let PreparedKind::Trickle(every) = reply.kind {
        return trickle(every);
    }
    let rendered = match api {
        Api::Responses => responses::render(&reply, &request, stream),
        _ => reply.render(api, stream),
    };
    let (status, content_type, chunks) = match rendered {
        Rendered::Json(status, body) => {
            let text = body.to_string();
            let chunks = match reply.cut_after {
                Some(_) => vec![text.as_bytes()[..text.len() / 2].to_vec()],
                None => vec![text.into_bytes()],
            };
            (status, "application/json", chunks)
        }
        Rendered::Events(mut events) => {
            if let Some(keep) = reply.cut_after {
                events.truncate(keep);
            }
            let events = events.into_iter().map(String::into_bytes).collect();
            (200, "text/event-stream", events)
        }
        Rendered::Frames(mut frames) => {
            if let Some(keep) = reply.cut_after {
                frames.truncate(keep);
            }
            (200, "application/vnd.amazon.eventstream", frames)
        }
    };
    let parts: Vec<Result<Bytes, std::io::Error>> = chunks
        .into_iter()
        .map(|chunk| Ok(Bytes::from(chunk)))
        .collect();
    let cut = reply.cut_after.is_some();
    let pace = reply.pace;
    let paced =
        futures_util::StreamExt::then(futures_util::stream::iter(parts), move |part| async move {
            if let Some(every) = pace {
                tokio::time::sleep(every).await;
            }
            part
        });
    let body_stream = futures_util::StreamExt::chain(
        paced,
        futures_util::StreamExt::filter_map(
            futures_util::stream::once(async move {
                if !cut {
                    return None;
                }
                // Let the head and the first events reach the client, then end
                // the chunked body without its last chunk: the client sees the
                // connection break in the middle of the answer.
                tokio::time::sleep(Duration::from_millis(50)).await;
                Some(Err(std::io::Error::other("fake model cut the response")))
            }),
            std::future::ready,
        ),
    );
    let mut response = Response::new(Body::from_stream(body_stream));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let response_headers = response.headers_mut();
    response_headers.insert("content-type", HeaderValue::from_static(content_type));
    for (name, value) in &reply.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response_headers.insert(name, value);
        }
    }
    response
}

/// An event stream that sends `: waiting` every `every` and never ends.
fn trickle(every: Duration) -> Response {
    let comments = futures_util::stream::unfold((), move |()| async move {
        tokio::time::sleep(every).await;
        Some((
            Ok::<_, std::io::Error>(Bytes::from_static(b": waiting\n\n")),
            (),
        ))
    });
    let mut response = Response::new(Body::from_stream(comments));
    response.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// The models this server serves, in the list each API answers with; no
/// key is a 401 as both APIs answer it. OpenAI:
/// https://platform.openai.com/docs/api-reference/models/list (`object:
/// list`, each `{id, object: model, created, owned_by}`); Anthropic:
/// https://docs.anthropic.com/en/api/models-list (`anthropic-version`
/// required; `{data: [{type: model, id, display_name, created_at}],
/// has_more, first_id, last_id}`).
async fn models(headers: HeaderMap) -> Response {
    let has = |name: &str| headers.get(name).is_some();
    let api = if has("anthropic-version") || has("x-api-key") {
        Api::Anthropic
    } else {
        Api::OpenAi
    };
    let keyed = match api {
        Api::Anthropic => has("x-api-key"),
        _ => has("authorization"),
    };
    if !keyed {
        let message = "no API key was provided";
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(error_body(api, 401, message, None)),
        )
            .into_response();
    }
    let body = match api {
        Api::OpenAi | Api::Responses | Api::Bedrock | Api::Vertex => {
            json!({"object": "list", "data": [
                {"id": "fake-model", "object": "model", "created": 0, "owned_by": "agentci-tests"}
            ]})
        }
        Api::Anthropic => json!({
            "data": [{"type": "model", "id": "fake-model", "display_name": "Fake model",
                      "created_at": "2026-01-01T00:00:00Z"}],
            "has_more": false, "first_id": "fake-model", "last_id": "fake-model"
        }),
    };
    axum::Json(body).into_response()
}

/// The next scripted reply for the conversation whose first user message is `first_user`.
fn next_in_lane(script: &mut VecDeque<Prepared>, first_user: &str) -> Option<Prepared> {
    let lane = script
        .iter()
        .filter_map(|p| p.lane.as_deref())
        .find(|marker| first_user.contains(marker))
        .map(str::to_string);
    let at = script.iter().position(|p| p.lane == lane)?;
    script.remove(at)
}

/// The text of the first user message of the last captured request (both wire formats).
fn first_user_text(captured: &[CapturedRequest]) -> String {
    let Some(messages) = captured
        .last()
        .and_then(|r| r.body.get("messages"))
        .and_then(Value::as_array)
    else {
        return String::new();
    };
    let Some(content) = messages
        .iter()
        .find(|m| m["role"] == "user")
        .map(|m| &m["content"])
    else {
        return String::new();
    };
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Why the real API would refuse this request with a 400, if it would. The
/// fake is as strict as the real services where agentci's requests could go
/// wrong; the messages are the real ones.
fn refusal(api: Api, body: &Value) -> Option<String> {
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty());
    let empty = Vec::new();
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    if let Some(problem) = tool_schema_refusal(api, body) {
        return Some(problem);
    }
    let cloud = match api {
        Api::Bedrock => bedrock::refusal(body),
        Api::Vertex => vertex::refusal(body),
        _ => None,
    };
    if cloud.is_some() {
        return cloud;
    }
    match api {
        Api::Anthropic | Api::Bedrock | Api::Vertex => {
            // Messages API reference: `max_tokens` is required and at least 1,
            // and `messages` needs at least one entry (the system prompt is a
            // separate field). Sampling requests and summary calls build
            // bodies of their own, so both are checked here.
            match body.get("max_tokens").and_then(Value::as_u64) {
                None => return Some("max_tokens: Field required".into()),
                Some(0) => {
                    return Some("max_tokens: Input should be greater than or equal to 1".into());
                }
                Some(_) => {}
            }
            if messages.is_empty() {
                return Some("messages: at least one message is required".into());
            }
            // Messages API: a history with tool blocks needs `tools` in the
            // request (anthropic-sdk-python#494: "Requests which include
            // `tool_use` or `tool_result` blocks must define tools.").
            let blocks = || {
                messages
                    .iter()
                    .filter_map(|m| m.get("content").and_then(Value::as_array))
                    .flatten()
            };
            if !has_tools
                && blocks().any(|b| matches!(b["type"].as_str(), Some("tool_use" | "tool_result")))
            {
                return Some(
                    "Requests which include `tool_use` or `tool_result` blocks must define tools."
                        .into(),
                );
            }
            // Prompt caching: "You can define up to 4 cache breakpoints"
            // (docs.claude.com/en/docs/build-with-claude/prompt-caching); the
            // API answers more with this 400.
            let in_list = |key: &str| {
                body.get(key).and_then(Value::as_array).map_or(0, |list| {
                    list.iter()
                        .filter(|b| b.get("cache_control").is_some())
                        .count()
                })
            };
            let breakpoints = in_list("tools")
                + in_list("system")
                + blocks()
                    .filter(|b| b.get("cache_control").is_some())
                    .count();
            if breakpoints > 4 {
                return Some(format!(
                    "A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
                ));
            }
            // "Each `tool_use` block must have a corresponding `tool_result`
            // block in the next message" (the API's 400 for a call left unanswered).
            for (i, message) in messages.iter().enumerate() {
                let content = |m: &Value| m["content"].as_array().cloned().unwrap_or_default();
                let ids = |m: &Value, kind: &str, key: &str| -> Vec<String> {
                    content(m)
                        .iter()
                        .filter(|b| b["type"] == kind)
                        .filter_map(|b| b[key].as_str().map(str::to_string))
                        .collect()
                };
                let asked = ids(message, "tool_use", "id");
                if message["role"] != "assistant" || asked.is_empty() {
                    continue;
                }
                let answered = messages
                    .get(i + 1)
                    .map(|next| ids(next, "tool_result", "tool_use_id"))
                    .unwrap_or_default();
                let missing: Vec<&String> =
                    asked.iter().filter(|id| !answered.contains(id)).collect();
                if !missing.is_empty() {
                    return Some(format!(
                        "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                        i + 1,
                        missing
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
            // `tool_choice` constrains the use of `tools`; without them the API refuses it.
            if body.get("tool_choice").is_some() && !has_tools {
                return Some(
                    "tool_choice: tool_choice may only be specified while providing tools.".into(),
                );
            }
        }
        Api::OpenAi => {
            // Chat Completions reference: `messages` has at least one entry,
            // and `max_completion_tokens`, when set, is at least 1.
            if messages.is_empty() {
                return Some(
                    "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."
                        .into(),
                );
            }
            // Reasoning models take `reasoning_effort` from a fixed list
            // (https://platform.openai.com/docs/api-reference/chat/create#chat-create-reasoning_effort);
            // models without reasoning refuse the parameter with this 400.
            if let Some(effort) = body.get("reasoning_effort") {
                let model = body["model"].as_str().unwrap_or_default();
                if model.starts_with("gpt-4") {
                    return Some(
                        "Unsupported parameter: 'reasoning_effort' is not supported with this model."
                            .into(),
                    );
                }
                if !matches!(
                    effort.as_str(),
                    Some("none" | "minimal" | "low" | "medium" | "high" | "xhigh")
                ) {
                    return Some(format!(
                        "Invalid value: {effort}. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', and 'xhigh'."
                    ));
                }
            }
            if body.get("max_completion_tokens").and_then(Value::as_u64) == Some(0) {
                return Some(
                    "Invalid 'max_completion_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead."
                        .into(),
                );
            }
            // Chat Completions: every `tool` message answers a tool call of an
            // earlier assistant message (the API's own wording, typo included).
            let mut asked: HashSet<&str> = HashSet::new();
            for message in messages {
                match message["role"].as_str() {
                    Some("assistant") => asked.extend(
                        message["tool_calls"]
                            .as_array()
                            .unwrap_or(&empty)
                            .iter()
                            .filter_map(|c| c["id"].as_str()),
                    ),
                    Some("tool") => {
                        let id = message["tool_call_id"].as_str().unwrap_or_default();
                        if !asked.contains(id) {
                            return Some(
                                "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
                                    .into(),
                            );
                        }
                    }
                    _ => {}
                }
            }
            // And every tool call is answered by the tool messages right after it.
            for (i, message) in messages.iter().enumerate() {
                let Some(calls) = message["tool_calls"].as_array() else {
                    continue;
                };
                let answered: Vec<&str> = messages[i + 1..]
                    .iter()
                    .take_while(|m| m["role"] == "tool")
                    .filter_map(|m| m["tool_call_id"].as_str())
                    .collect();
                let missing: Vec<&str> = calls
                    .iter()
                    .filter_map(|c| c["id"].as_str())
                    .filter(|id| !answered.contains(id))
                    .collect();
                if !missing.is_empty() {
                    return Some(format!(
                        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                        missing.join(", ")
                    ));
                }
            }
            // "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
            if body.get("tool_choice").is_some() && !has_tools {
                return Some(
                    "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
                        .into(),
                );
            }
            // Chat Completions' `tool_choice` is "none", "auto", "required" or
            // an object naming a function (API reference, "tool_choice").
            if let Some(Value::String(choice)) = body.get("tool_choice")
                && !["none", "auto", "required"].contains(&choice.as_str())
            {
                return Some(format!(
                    "Invalid value: '{choice}'. Supported values are: 'none', 'auto', and 'required'."
                ));
            }
        }
        // Its refusals need what the server issued: fake_model/responses.rs.
        Api::Responses => {}
    }
    None
}

/// Both APIs take only an object schema as a tool's parameters, as their
/// references say and their 400s show: Anthropic's `input_schema` "must be
/// type object" (`tools.N.custom.input_schema.type: Input should be 'object'`),
/// OpenAI's function `parameters` likewise ("schema must be a JSON Schema of
/// 'type: "object"'"). The messages are the real ones.
fn tool_schema_refusal(api: Api, body: &Value) -> Option<String> {
    let tools = body.get("tools").and_then(Value::as_array)?;
    for (i, tool) in tools.iter().enumerate() {
        match api {
            Api::Anthropic | Api::Bedrock | Api::Vertex => {
                if tool["input_schema"]["type"] != "object" {
                    return Some(format!(
                        "tools.{i}.custom.input_schema.type: Input should be 'object'"
                    ));
                }
            }
            Api::OpenAi => {
                let schema = &tool["function"]["parameters"];
                if !schema.is_null() && schema["type"] != "object" {
                    return Some(format!(
                        "Invalid schema for function '{}': schema must be a JSON Schema of 'type: \"object\"', got 'type: {}'.",
                        tool["function"]["name"].as_str().unwrap_or_default(),
                        schema["type"]
                    ));
                }
            }
            // Checked with the API's other refusals, in fake_model/responses.rs.
            Api::Responses => {}
        }
    }
    None
}

/// The text of the tool result for `call_id` in Chat Completions request
/// bodies; panics naming the call when no request carries it.
pub fn tool_result_in(requests: &[Value], call_id: &str) -> String {
    requests
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool message for {call_id}"))["content"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("the tool message for {call_id} holds no text"))
}
