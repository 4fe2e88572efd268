//! The provider layer's cost: streaming parse throughput and added latency.
//!
//! 1. Parse throughput: a large streamed answer (OpenAI chunks and Anthropic
//!    events) held in memory is fed in 16 KiB pieces, as a network would
//!    deliver it, through the same decoder the providers use; MB/s.
//! 2. Added latency: N requests through the provider (with its retry
//!    wrapper, as a run uses it) against the test fake server, and N plain
//!    reqwest requests with the same body to the same endpoint; the
//!    difference per request is what the provider layer adds.
//!
//! Run with `cargo bench --bench provider_overhead`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

#[path = "../tests/suite/support/fake_model.rs"]
#[expect(
    dead_code,
    reason = "a bench uses only some of the test suite's fake model server"
)]
mod fake_model;

use std::time::{Duration, Instant};

use agentci::provider::openai::{OpenAiConfig, OpenAiProvider};
use agentci::provider::retry::{RetryPolicy, RetryingProvider};
use agentci::provider::{
    ChatRequest, Message, ModelProvider, ToolDefinition, Unobserved, anthropic, openai,
};
use fake_model::{FakeModel, Reply};
use serde_json::json;

const STREAM_BYTES: usize = 32 * 1024 * 1024;
const NETWORK_PIECE: usize = 16 * 1024;
const REQUESTS: usize = 500;
const WARMUP: usize = 25;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "streaming parse throughput ({} MiB body, {} KiB pieces):",
        STREAM_BYTES >> 20,
        NETWORK_PIECE >> 10
    );
    let body = openai_stream(STREAM_BYTES);
    let mbps = throughput(&runtime, &body, |pieces| {
        Box::pin(async move {
            openai::decode_stream(futures_util::stream::iter(pieces), &Unobserved)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    });
    println!("  openai chunks:     {mbps:>7.1} MB/s");
    let body = anthropic_stream(STREAM_BYTES);
    let mbps = throughput(&runtime, &body, |pieces| {
        Box::pin(async move {
            anthropic::decode_stream(futures_util::stream::iter(pieces), &Unobserved)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    });
    println!("  anthropic events:  {mbps:>7.1} MB/s");

    println!("added latency per request ({REQUESTS} requests, fake server on 127.0.0.1):");
    for stream in [false, true] {
        let raw = runtime.block_on(raw_requests(stream));
        let provider = runtime.block_on(provider_requests(stream));
        let mode = if stream { "streamed" } else { "plain   " };
        println!(
            "  {mode}: raw reqwest {:>7.1} µs, provider {:>7.1} µs, added {:>6.1} µs",
            micros(raw),
            micros(provider),
            micros(provider) - micros(raw)
        );
    }
}

type Pieces = Vec<Result<Vec<u8>, std::io::Error>>;
type Work = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>>>>;

/// Best of three runs, in MB/s (10^6 bytes).
fn throughput(
    runtime: &tokio::runtime::Runtime,
    body: &str,
    decode: impl Fn(Pieces) -> Work,
) -> f64 {
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let pieces: Pieces = body
            .as_bytes()
            .chunks(NETWORK_PIECE)
            .map(|c| Ok(c.to_vec()))
            .collect();
        let started = Instant::now();
        runtime.block_on(decode(pieces)).expect("decode");
        best = best.min(started.elapsed());
    }
    body.len() as f64 / best.as_secs_f64() / 1e6
}

/// A long streamed answer: text deltas of a typical size, then [DONE].
fn openai_stream(size: usize) -> String {
    let mut out = String::with_capacity(size + 1024);
    let mut i = 0;
    while out.len() < size {
        out.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token {i} of a long answer \"}},\"finish_reason\":null}}]}}\n\n"
        ));
        i += 1;
    }
    out.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    out
}

fn anthropic_stream(size: usize) -> String {
    let mut out = String::with_capacity(size + 1024);
    out.push_str("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n");
    out.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
    let mut i = 0;
    while out.len() < size {
        out.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"token {i} of a long answer \"}}}}\n\n"
        ));
        i += 1;
    }
    out.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    out
}

fn request() -> ChatRequest {
    ChatRequest {
        max_output_tokens: None,
        model: "gpt-bench".to_string(),
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

fn script() -> Vec<Reply> {
    (0..REQUESTS + WARMUP)
        .map(|_| Reply::text("Done: the test passes now."))
        .collect()
}

/// Mean time per request of plain reqwest posts with the body the provider would send.
async fn raw_requests(stream: bool) -> Duration {
    let fake = FakeModel::start(script());
    let url = format!("{}/chat/completions", fake.base_url());
    let request = request();
    let mut body = json!({
        "model": request.model,
        "messages": request.messages,
        "tools": request.tools.iter().map(|t| json!({"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": t.parameters}})).collect::<Vec<_>>(),
    });
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    let client = reqwest::Client::new();
    let mut elapsed = Duration::ZERO;
    for i in 0..REQUESTS + WARMUP {
        let started = Instant::now();
        let response = client
            .post(&url)
            .json(&body)
            .send()
            .await
            .expect("raw request");
        let text = response.text().await.expect("raw body");
        assert!(!text.is_empty());
        if i >= WARMUP {
            elapsed += started.elapsed();
        }
    }
    elapsed / REQUESTS as u32
}

/// Mean time per request through the provider and its retry wrapper.
async fn provider_requests(stream: bool) -> Duration {
    let fake = FakeModel::start(script());
    let inner = OpenAiProvider::with_api_key(
        OpenAiConfig {
            reasoning: Default::default(),
            name: "gpt-bench".to_string(),
            base_url: Some(fake.base_url()),
            api_key_env: None,
            request_timeout: Duration::from_secs(30),
            stream,
        },
        None,
    )
    .expect("provider");
    let provider = RetryingProvider::new(Box::new(inner), RetryPolicy::default());
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

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
