//! The full-content trace on a replayed 200-turn session: its size against
//! the bytes the model was sent and against the trace without the `sent`
//! deltas, the cost of writing it, and the wall time of whole replays
//! against another agentci binary (the one before the full-content trace).
//!
//! `cargo bench --bench trace_size`; with `AGENTCI_BENCH_BASELINE=PATH` to an
//! older `agentci` binary, replays alternate between the two. Prints
//! figures; asserts nothing.
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
#[path = "support/reading_session.rs"]
mod reading_session;

use reading_session::ms;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentci::event::bus::EventSink;
use agentci::event::{Event, EventKind};
use agentci::sink::{TraceWriter, read_trace};
use fake_model::{FakeModel, Reply};
use serde_json::json;

const TURNS: usize = 200;
const REPLAYS: usize = 7;
const WRITES: usize = 20;

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    reading_session::setup(root, "", "{max_turns: 250}");
    let model = FakeModel::start(script());
    let job = std::fs::read_to_string(root.join("job.yaml"))
        .expect("job")
        .replace("BASE_URL", &model.base_url());
    std::fs::write(root.join("job.yaml"), job).expect("job");
    let ours = PathBuf::from(env!("CARGO_BIN_EXE_agentci"));
    let (status, _) = run(&ours, root, &["--record", "cassette.jsonl"], "rec");
    assert!(status == 0, "recording run failed with exit code {status}");
    let bodies = model.requests();
    drop(model);
    let sent_messages: usize = bodies.iter().map(|b| b["messages"].to_string().len()).sum();
    let sent_bodies: usize = bodies.iter().map(|b| b.to_string().len()).sum();

    // Replays: ours, and the baseline binary when given, alternating so
    // that load on the machine falls on both alike.
    let baseline = std::env::var_os("AGENTCI_BENCH_BASELINE").map(PathBuf::from);
    let mut walls_ours = Vec::new();
    let mut walls_base = Vec::new();
    for _ in 0..REPLAYS {
        let (status, wall) = run(&ours, root, &["--replay", "cassette.jsonl"], "ours");
        assert!(status == 0, "replay failed with exit code {status}");
        walls_ours.push(wall);
        if let Some(base) = &baseline {
            let (status, wall) = run(base, root, &["--replay", "cassette.jsonl"], "base");
            assert!(
                status == 0,
                "baseline replay failed with exit code {status}"
            );
            walls_base.push(wall);
        }
    }
    let trace_ours = root.join("out-ours/trace.jsonl");
    let size_ours = len(&trace_ours);
    let events = read_trace(&trace_ours).expect("our trace");
    let stripped: Vec<Event> = events.iter().cloned().map(without_sent).collect();
    let size_stripped: usize = stripped
        .iter()
        .map(|e| serde_json::to_vec(e).expect("event").len() + 1)
        .sum();

    println!(
        "{TURNS}-turn session: the model was sent {} of messages ({} of request bodies) over {} requests",
        mb(sent_messages),
        mb(sent_bodies),
        bodies.len()
    );
    println!(
        "trace: {} with the sent deltas, {} without them: grows by {} ({:.1}% of the bytes of messages sent; target < 100%)",
        mb(size_ours),
        mb(size_stripped),
        mb(size_ours - size_stripped),
        100.0 * (size_ours - size_stripped) as f64 / sent_messages as f64
    );
    if baseline.is_some() {
        let size_base = len(&root.join("out-base/trace.jsonl"));
        println!("baseline binary's trace: {}", mb(size_base));
    }

    let full = median_write(&events, root, "full");
    let without = median_write(&stripped, root, "stripped");
    println!(
        "writing the trace's {} events: {:.2} ms with deltas, {:.2} ms without (median of {WRITES})",
        events.len(),
        ms(full),
        ms(without)
    );
    walls_ours.sort();
    print!(
        "replay wall time: median {:.0} ms",
        ms(walls_ours[REPLAYS / 2])
    );
    if !walls_base.is_empty() {
        walls_base.sort();
        let (a, b) = (ms(walls_ours[REPLAYS / 2]), ms(walls_base[REPLAYS / 2]));
        print!(
            " vs baseline {b:.0} ms: {:+.1}% (target within 10%)",
            100.0 * (a - b) / b
        );
    }
    println!(" over {REPLAYS} runs");
}

/// An event as the trace held it before the full-content trace.
fn without_sent(mut event: Event) -> Event {
    match &mut event.kind {
        EventKind::ModelRequest(request) => request.sent = None,
        EventKind::ContextTrimmed(trim) => trim.sent = None,
        EventKind::RunStarted(run) => {
            run.budget = None;
            run.permissions = None;
        }
        _ => {}
    }
    event
}

fn median_write(events: &[Event], root: &Path, name: &str) -> Duration {
    let mut times = Vec::new();
    for i in 0..WRITES {
        let path = root.join(format!("write-{name}-{i}.jsonl"));
        let started = Instant::now();
        let mut writer = TraceWriter::create(&path).expect("trace writer");
        for event in events {
            writer.on_event(event).expect("write event");
        }
        writer.finish().expect("finish trace");
        times.push(started.elapsed());
    }
    times.sort();
    times[WRITES / 2]
}

fn script() -> Vec<Reply> {
    // plan + (TURNS - 3) tool turns + step_done + summary = TURNS model calls.
    let mut script = vec![Reply::plan(&[("Read everything", "all files read")])];
    for i in 0..TURNS - 3 {
        let call = if i % 2 == 0 {
            (
                "read",
                json!({"path": format!("src/file{}.txt", i % 10), "offset": 1 + i % 7}),
            )
        } else {
            ("grep", json!({"pattern": format!("line {}", i % 50)}))
        };
        script.push(Reply::tool_calls(vec![(
            &format!("call_{i}"),
            call.0,
            call.1,
        )]));
    }
    script.push(Reply::step_done("read everything"));
    script.push(Reply::text("Read all the files."));
    script
}

/// Run `bin` in `root` with the run folder `out-NAME`; exit code and wall time.
fn run(bin: &Path, root: &Path, extra: &[&str], name: &str) -> (i32, Duration) {
    let out = format!("out-{name}");
    let _ = std::fs::remove_dir_all(root.join(&out));
    let started = Instant::now();
    let status = Command::new(bin)
        .args(["run", "job.yaml", "--progress", "none", "--out", &out])
        .args(extra)
        .current_dir(root)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn agentci");
    (status.code().unwrap_or(-1), started.elapsed())
}

fn len(path: &Path) -> usize {
    std::fs::metadata(path)
        .map(|m| m.len() as usize)
        .unwrap_or(0)
}

fn mb(bytes: usize) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}
