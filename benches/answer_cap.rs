//! The answer cap (issue 38, item 3): peak RSS and wall time of a run whose
//! model answers 16 MiB at once, as one JSON body and as a stream of 64 KiB
//! deltas, both refused at the default `model.max_response_bytes`, beside a
//! run whose model answers briefly. Target: refused, under 64 MB.
//!
//! Prints the figures of the agentci process (from `wait4`) for each case;
//! asserts only that the huge answers were refused (exit 4). Run with
//! `cargo bench --bench answer_cap`.
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
#[path = "support/notes_task.rs"]
mod notes_task;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use serde_json::{Value, json};

const MIB: usize = 1024 * 1024;

/// A case's label, whether the job streams, and the model's answer.
type Case = (&'static str, bool, fn() -> Reply);

fn main() {
    let cases: [Case; 3] = [
        ("short answer", false, || Reply::text("short")),
        ("16 MiB JSON body", false, || {
            Reply::text(&"x".repeat(16 * MIB))
        }),
        ("16 MiB event stream", true, || {
            Reply::events(streamed_text(16 * MIB))
        }),
    ];
    for (label, stream, reply) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let model = FakeModel::start(vec![reply()]);
        notes_task::write_task(dir.path(), &model.base_url(), "");
        let job = dir.path().join("job.yaml");
        let text = std::fs::read_to_string(&job).expect("job");
        let text = text.replace(
            &format!("base_url: {}}}", model.base_url()),
            &format!("base_url: {}, stream: {stream}}}", model.base_url()),
        );
        std::fs::write(&job, text).expect("job");
        let (code, wall, rss_kb) = run_once(dir.path());
        if label != "short answer" {
            assert_eq!(code, 4, "{label}: the answer was not refused");
        }
        println!(
            "{label}: exit {code}, wall {:.0} ms, peak RSS {:.1} MB (target: refused, < 64 MB)",
            wall.as_secs_f64() * 1000.0,
            rss_kb as f64 / 1024.0
        );
    }
}

/// An OpenAI chunk stream whose text is `total` bytes, in 64 KiB deltas.
fn streamed_text(total: usize) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        let event = json!({"id": "chatcmpl-big", "object": "chat.completion.chunk", "created": 0,
                           "model": "bench",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {event}\n\n")
    };
    let piece = "x".repeat(64 * 1024);
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    events.extend((0..total / piece.len()).map(|_| chunk(json!({"content": piece}), Value::Null)));
    events.push(chunk(json!({}), json!("stop")));
    events.push("data: [DONE]\n\n".to_string());
    events
}

/// Exit code, wall time and peak RSS (KiB) of one run.
fn run_once(root: &Path) -> (i32, Duration, i64) {
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(["run", "job.yaml", "--progress", "none", "--out", "out"])
        .current_dir(root)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run agentci");
    let pid = i32::try_from(child.id()).expect("a pid fits in pid_t");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for (`child` is never
    // waited on: it is forgotten below); both pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    std::mem::forget(child);
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status),
        "agentci was killed: status {status}"
    );
    (libc::WEXITSTATUS(status), wall, usage.ru_maxrss)
}
