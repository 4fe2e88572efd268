//! The cost of keeping the context under the mark: what estimating every
//! request in tokens and compacting add to a long run.
//!
//! 1. Tokenizer load: the first count in a process (o200k and cl100k),
//!    its time and what it adds to the resident set.
//! 2. A 1,000-turn conversation (an assistant call and a 2 KB tool result
//!    a turn), estimated before every turn as a run does: the total and
//!    the per-turn time, against tokenizing the whole conversation every
//!    turn (what a count without the per-message cache would cost).
//! 3. One compaction of that conversation (selection, digest, apply).
//!
//! Run with `cargo bench --bench context_estimate`. Prints figures; asserts nothing.
#![expect(
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::time::Instant;

use agentci::agent::compaction::{self, Method};
use agentci::agent::tokens::TokenEstimator;
use agentci::provider::{Message, ToolCall};

const TURNS: usize = 1_000;

fn turn(i: usize) -> [Message; 2] {
    let id = format!("call_{i}");
    [
        Message::Assistant {
            reasoning: Vec::new(),
            content: None,
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: "read".into(),
                arguments: format!("{{\"path\":\"src/module_{i}.rs\"}}"),
            }],
        },
        Message::Tool {
            tool_call_id: id,
            content: (0..40)
                .map(|l| format!("{l:>4}\tlet value_{i}_{l} = compute({l}, \"text\");\n"))
                .collect(),
        },
    ]
}

fn main() {
    for model in ["gpt-4o", "claude-sonnet-4-5"] {
        let rss_before = vm_rss_kb();
        let started = Instant::now();
        let e = TokenEstimator::new(model);
        let n = e.count_text("warm up");
        println!(
            "tokenizer load + first count ({model}): {:.1} ms ({n} tokens), RSS {:+.1} MB",
            started.elapsed().as_secs_f64() * 1e3,
            (vm_rss_kb() as f64 - rss_before as f64) / 1024.0
        );
    }

    let mut messages = vec![
        Message::System {
            content: "system prompt ".repeat(300),
        },
        Message::User {
            content: "the goal".into(),
        },
    ];
    let mut estimator = TokenEstimator::new("gpt-4o");
    let started = Instant::now();
    let mut last = 0;
    for i in 0..TURNS {
        messages.extend(turn(i));
        last = estimator.estimate(&messages, &[], 0).tokens;
    }
    let cached = started.elapsed();
    println!(
        "{TURNS} turns, estimated before each ({} messages, {last} tokens at the end): {:.1} ms in all, {:.1} µs a turn",
        messages.len(),
        cached.as_secs_f64() * 1e3,
        cached.as_secs_f64() * 1e6 / TURNS as f64
    );

    // Without the cache: every message counted again each turn (sampled every 50th turn).
    let started = Instant::now();
    let mut samples = 0;
    for end in (50..=messages.len()).step_by(100) {
        let mut fresh = TokenEstimator::new("gpt-4o");
        fresh.estimate(&messages[..end], &[], 0);
        samples += 1;
    }
    let uncached = started.elapsed().as_secs_f64() / f64::from(samples) * TURNS as f64;
    println!(
        "the same without per-message counts kept (extrapolated): {:.0} ms in all",
        uncached * 1e3
    );

    let weights = estimator.weights();
    let started = Instant::now();
    let selection = compaction::select(&messages, &weights, last / 4);
    let removed = selection.removed(&messages);
    let body = compaction::digest(&removed);
    let out = compaction::apply(
        &messages,
        &selection,
        compaction::note(Method::Digest, removed.len(), "", &body),
    );
    let after = estimator.estimate(&out, &[], 0).tokens;
    println!(
        "one compaction (digest) of {} to {} messages, {last} to {after} tokens: {:.2} ms",
        messages.len(),
        out.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
}

/// This process's resident set now, in KiB (0 where /proc is missing).
fn vm_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .unwrap_or(0)
}
