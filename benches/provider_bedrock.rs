//! What Bedrock costs over Chat Completions: SigV4 signing and event-stream
//! decoding, per request and per byte.
//!
//! 1. Decode throughput: the same long Anthropic answer as server-sent
//!    events (what `provider: anthropic` reads) and as Bedrock event-stream
//!    frames (base64 `chunk` payloads with CRCs), fed in 16 KiB pieces; MB/s.
//! 2. Per-request time: the same streamed session (a short text answer to
//!    the same request) N times through the Chat Completions provider and
//!    through the Bedrock provider (signing every request with static keys),
//!    each with its retry wrapper, against a local server that answers
//!    instantly with a pre-rendered body (no checking, so only the client
//!    side is measured); the difference per request is what Bedrock adds.
//!    The target is within 5% of Chat Completions. Anthropic over SSE and
//!    Bedrock with an API key (no signature) are timed too, to tell the
//!    Messages body, the framing and the signature apart.
//!
//! Run with `cargo bench --bench provider_bedrock`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use agentci::provider::bedrock::event_stream::encode_frame;
use agentci::provider::bedrock::{self, BedrockConfig, BedrockProvider};
use agentci::provider::openai::{OpenAiConfig, OpenAiProvider};
use agentci::provider::retry::{RetryPolicy, RetryingProvider};
use agentci::provider::{
    ChatRequest, Message, ModelProvider, ToolDefinition, Unobserved, anthropic,
};
use axum::body::Body;
use axum::http::Uri;
use axum::response::Response;
use serde_json::json;

const STREAM_BYTES: usize = 32 * 1024 * 1024;
const NETWORK_PIECE: usize = 16 * 1024;
const REQUESTS: usize = 1000;
const WARMUP: usize = 50;
const ROUNDS: usize = 5;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "streaming decode throughput ({} MiB answer, {} KiB pieces, best of 3):",
        STREAM_BYTES >> 20,
        NETWORK_PIECE >> 10
    );
    let events = long_answer_events(STREAM_BYTES);
    let sse: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    let frames: Vec<u8> = events
        .iter()
        .flat_map(|(_, data)| chunk_frame(data))
        .collect();
    let sse_mbps = throughput(&runtime, sse.as_bytes(), sse.len(), |pieces| {
        Box::pin(async move {
            anthropic::decode_stream(futures_util::stream::iter(pieces), &Unobserved)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    });
    // Both figures are per byte of the SSE text, so they compare the same answer.
    let frames_mbps = throughput(&runtime, &frames, sse.len(), |pieces| {
        Box::pin(async move {
            bedrock::decode_stream(futures_util::stream::iter(pieces), &Unobserved)
                .await
                .map(|_| ())
        })
    });
    println!("  anthropic SSE:          {sse_mbps:>7.1} MB/s");
    println!(
        "  bedrock event stream:   {frames_mbps:>7.1} MB/s of the same answer ({:.0}% larger on the wire)",
        (frames.len() as f64 / sse.len() as f64 - 1.0) * 100.0
    );

    let server = runtime.block_on(InstantServer::start());
    println!(
        "time per streamed request ({REQUESTS} requests after {WARMUP} warm-up, median of {ROUNDS} rounds, instant server on 127.0.0.1):"
    );
    let mut openai = Vec::new();
    let mut anthropic = Vec::new();
    let mut bedrock_key = Vec::new();
    let mut bedrock = Vec::new();
    for _ in 0..ROUNDS {
        openai.push(runtime.block_on(timed(&openai_provider(server.addr))));
        anthropic.push(runtime.block_on(timed(&anthropic_provider(server.addr))));
        bedrock_key.push(runtime.block_on(timed(&bedrock_provider(server.addr, false))));
        bedrock.push(runtime.block_on(timed(&bedrock_provider(server.addr, true))));
    }
    let openai = median(openai);
    let row = |name: &str, time: Duration| {
        println!(
            "  {name:<34} {:>7.1} µs, {:>+6.1} µs ({:+.1}%) over chat completions",
            micros(time),
            micros(time) - micros(openai),
            (micros(time) / micros(openai) - 1.0) * 100.0
        );
    };
    println!(
        "  {:<34} {:>7.1} µs",
        "chat completions (SSE)",
        micros(openai)
    );
    row("anthropic messages (SSE)", median(anthropic));
    row("bedrock, API key (event stream)", median(bedrock_key));
    row("bedrock, SigV4 (event stream)", median(bedrock));
}

type Pieces = Vec<Result<Vec<u8>, std::io::Error>>;
type Work = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>>>>;

/// Best of three runs, in MB/s (10^6 bytes) of `counted` bytes.
fn throughput(
    runtime: &tokio::runtime::Runtime,
    body: &[u8],
    counted: usize,
    decode: impl Fn(Pieces) -> Work,
) -> f64 {
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let pieces: Pieces = body.chunks(NETWORK_PIECE).map(|c| Ok(c.to_vec())).collect();
        let started = Instant::now();
        runtime.block_on(decode(pieces)).expect("decode");
        best = best.min(started.elapsed());
    }
    counted as f64 / best.as_secs_f64() / 1e6
}

/// A long text answer as Anthropic stream events (name, JSON data).
fn long_answer_events(size: usize) -> Vec<(String, String)> {
    let mut events = vec![
        (
            "message_start".to_string(),
            r#"{"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}"#
                .to_string(),
        ),
        (
            "content_block_start".to_string(),
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#
                .to_string(),
        ),
    ];
    let mut total = 0;
    let mut i = 0;
    while total < size {
        let data = format!(
            "{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"token {i} of a long answer \"}}}}"
        );
        total += data.len() + 36;
        events.push(("content_block_delta".to_string(), data));
        i += 1;
    }
    events.push(("message_delta".to_string(), r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#.to_string()));
    events.push((
        "message_stop".to_string(),
        r#"{"type":"message_stop"}"#.to_string(),
    ));
    events
}

/// One Anthropic event as Bedrock's `chunk` frame.
fn chunk_frame(data: &str) -> Vec<u8> {
    let payload = json!({"bytes": data_encoding::BASE64.encode(data.as_bytes()), "p": "abcdefgh"});
    encode_frame(
        &[
            (":event-type", "chunk"),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// Answers every request at once with a pre-rendered streamed answer in the
/// route's format; reads the body, checks nothing.
struct InstantServer {
    addr: SocketAddr,
}

impl InstantServer {
    async fn start() -> InstantServer {
        let answer = "Done: the test passes now.";
        let openai: String = [
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": answer}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}),
        ]
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .chain(std::iter::once("data: [DONE]\n\n".to_string()))
        .collect();
        let events = [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 100, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": answer}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 20}}),
            json!({"type": "message_stop"}),
        ];
        let bedrock: Vec<u8> = events
            .iter()
            .flat_map(|event| chunk_frame(&event.to_string()))
            .collect();
        let messages: String = events
            .iter()
            .map(|event| {
                format!(
                    "event: {}\ndata: {event}\n\n",
                    event["type"].as_str().unwrap_or("x")
                )
            })
            .collect();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        let app = axum::Router::new().fallback(move |uri: Uri, _body: axum::body::Bytes| {
            let (content_type, body) = if uri.path().starts_with("/model/") {
                (
                    "application/vnd.amazon.eventstream",
                    Body::from(bedrock.clone()),
                )
            } else if uri.path().ends_with("/messages") {
                ("text/event-stream", Body::from(messages.clone()))
            } else {
                ("text/event-stream", Body::from(openai.clone()))
            };
            async move {
                Response::builder()
                    .header("content-type", content_type)
                    .body(body)
                    .expect("response")
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        InstantServer { addr }
    }
}

fn request() -> ChatRequest {
    ChatRequest {
        max_output_tokens: None,
        model: String::new(),
        messages: vec![
            Message::System {
                content: "You are a careful coding agent. ".repeat(40),
            },
            Message::User {
                content: "Fix the failing test in src/lib.rs.".to_string(),
            },
        ],
        tools: ["read", "grep", "ls", "edit"]
            .iter()
            .map(|name| ToolDefinition {
                name: name.to_string(),
                description: format!("the {name} tool"),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            })
            .collect(),
        tool_choice: Default::default(),
    }
}

fn openai_provider(addr: SocketAddr) -> RetryingProvider {
    let inner = OpenAiProvider::with_api_key(
        OpenAiConfig {
            reasoning: Default::default(),
            name: "gpt-bench".to_string(),
            base_url: Some(format!("http://{addr}/v1")),
            api_key_env: None,
            request_timeout: Duration::from_secs(30),
            stream: true,
        },
        Some("sk-bench".to_string()),
    )
    .expect("openai provider");
    RetryingProvider::new(Box::new(inner), RetryPolicy::default())
}

fn anthropic_provider(addr: SocketAddr) -> RetryingProvider {
    let inner = anthropic::AnthropicProvider::with_api_key(
        anthropic::AnthropicConfig {
            reasoning: Default::default(),
            name: "claude-sonnet-4-5".to_string(),
            base_url: Some(format!("http://{addr}/v1")),
            api_key_env: None,
            request_timeout: Duration::from_secs(30),
            stream: true,
        },
        Some("sk-ant-bench".to_string()),
    )
    .expect("anthropic provider");
    RetryingProvider::new(Box::new(inner), RetryPolicy::default())
}

/// `signed`: SigV4 with session keys; else a Bedrock API key (no signing).
fn bedrock_provider(addr: SocketAddr, signed: bool) -> RetryingProvider {
    let env = move |name: &str| match name {
        "AWS_BEARER_TOKEN_BEDROCK" if !signed => Some("ABSKbench".to_string()),
        "AWS_ACCESS_KEY_ID" => Some("AKIABENCHEXAMPLE0001".to_string()),
        "AWS_SECRET_ACCESS_KEY" => Some("benchSecret/K7MDENG+bPxRfiCYEXAMPLEKEY".to_string()),
        "AWS_SESSION_TOKEN" => Some("FwoGZXIvYXdzEBENCHSESSIONTOKEN".to_string()),
        _ => None,
    };
    let inner = BedrockProvider::with_env(
        BedrockConfig {
            name: "us.anthropic.claude-sonnet-4-5-20250929-v1:0".to_string(),
            region: Some("us-east-1".to_string()),
            base_url: Some(format!("http://{addr}")),
            request_timeout: Duration::from_secs(30),
            stream: true,
            reasoning: Default::default(),
        },
        &env,
    )
    .expect("bedrock provider");
    RetryingProvider::new(Box::new(inner), RetryPolicy::default())
}

/// Mean time per request through `provider`.
async fn timed(provider: &RetryingProvider) -> Duration {
    let request = request();
    let mut elapsed = Duration::ZERO;
    for i in 0..REQUESTS + WARMUP {
        let started = Instant::now();
        let response = provider
            .complete_observed(&request, &Unobserved)
            .await
            .expect("provider request");
        assert!(response.text.is_some());
        if i >= WARMUP {
            elapsed += started.elapsed();
        }
    }
    elapsed / REQUESTS as u32
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
