//! What the checkpoint a run saves before every model turn costs as the
//! conversation grows: a generated 200-turn session (each turn a tool call
//! and a 4 KB tool result, a 10-step plan, like `loop_state`), saved after
//! every turn as a run saves it, its record signed (HMAC) with a key made
//! for the benchmark. The figure that matters is the save at
//! turn 200, which must not be proportional to the conversation (target:
//! under 1 ms); the full-state serialize of `loop_state` is the comparison.
//!
//! The writer masks three secrets (an API key, a job secret, a token) in
//! everything it stores, as a run's does.
//!
//! Run with `cargo bench --bench checkpoint`. Prints figures; asserts nothing.

#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::time::{Duration, Instant};

use agentci::agent::budget::BudgetTracker;
use agentci::agent::loop_guard::LoopGuard;
use agentci::agent::{LoopState, StateSaver};
use agentci::event::PlanStep;
use agentci::job::BudgetSpec;
use agentci::provider::Usage;
use agentci::provider::{Message, ToolCall};
use agentci::runner::CheckpointKey;
use agentci::runner::checkpoint::{CHECKPOINT_DIR, CheckpointWriter, Origin, load};
use agentci::safe_file::OutputFolder;

const TURNS: usize = 200;
const RESULT_BYTES: usize = 4_096;
/// Turns around each reported one whose saves are pooled for the median.
const WINDOW: usize = 10;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let key = CheckpointKey::open_or_create(&dir.path().join("checkpoint.key")).expect("key");
    let folder = OutputFolder::create(dir.path(), std::path::Path::new(CHECKPOINT_DIR))
        .expect("checkpoint folder");
    let secrets = agentci::redact::Redactor::new([
        "sk-bench-0123456789abcdef",
        "deploy-token-5f3a9c1e7d",
        "ghp_bench0123456789",
    ]);
    let mut writer = CheckpointWriter::new(
        folder,
        origin(dir.path()),
        key.clone(),
        secrets,
        Box::new(|| 1),
    );
    let mut state = opening();
    let mut saves = Vec::with_capacity(TURNS);
    for turn in 0..TURNS {
        add_turn(&mut state, turn);
        let started = Instant::now();
        writer.save(&mut state).expect("save");
        saves.push(started.elapsed());
    }
    println!("turn  checkpoint_save_median (over the {WINDOW} turns up to it)");
    for turn in [10, 50, 100, 200] {
        let mut window = saves[turn - WINDOW..turn].to_vec();
        window.sort();
        println!("{turn:>4}  {:>8.3} ms", ms(window[WINDOW / 2]));
    }
    let record = std::fs::metadata(dir.path().join("checkpoint/state.json")).map_or(0, |m| m.len());
    let messages: u64 = std::fs::read_dir(dir.path().join("checkpoint"))
        .expect("checkpoint folder")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("messages-"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum();
    println!("state.json {record} bytes, messages file {messages} bytes at turn {TURNS}");

    // A rewrite (trimming or compaction) writes the messages file whole once.
    state.rewrites += 1;
    let started = Instant::now();
    writer.save(&mut state).expect("save");
    println!(
        "save after a rewrite of the conversation: {:.3} ms",
        ms(started.elapsed())
    );

    let full = median(|| {
        let _ = serde_json::to_vec(&state).expect("serialize");
    });
    println!(
        "for comparison, serializing the whole state at turn {TURNS}: {:.3} ms",
        ms(full)
    );
    let started = Instant::now();
    let loaded = load(dir.path(), &key).expect("load");
    println!(
        "loading the checkpoint (resume): {:.3} ms, {} messages",
        ms(started.elapsed()),
        loaded.state.conversation.len()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn origin(dir: &std::path::Path) -> Origin {
    Origin {
        agentci_version: env!("CARGO_PKG_VERSION").into(),
        run_id: "bench".into(),
        job_file: "job.yaml".into(),
        job_sha256: "0".repeat(64),
        skill_file: "SKILL.md".into(),
        skill_sha256: "0".repeat(64),
        workspace: dir.to_path_buf(),
        run_dir: dir.to_path_buf(),
        trace: dir.join("trace.jsonl"),
        junit: dir.join("junit.xml"),
    }
}

fn opening() -> LoopState {
    let opening = vec![
        Message::System {
            content: "s".repeat(6_000),
        },
        Message::User {
            content: "Fix the failing test.".into(),
        },
    ];
    let budget = BudgetTracker::new(&BudgetSpec::default(), None);
    let mut state = LoopState::new(opening, budget, LoopGuard::new(3));
    state.plan = (0..10)
        .map(|i| PlanStep {
            title: format!("step {i}"),
            expected_outcome: "it is done".into(),
        })
        .collect();
    state
}

/// One turn of reading a file: the model's call and the 4 KB result.
fn add_turn(state: &mut LoopState, turn: usize) {
    let line = "fn example() -> u32 { 42 } // some source code of the workspace\n";
    let id = format!("call_{turn}");
    state.conversation.push(Message::Assistant {
        reasoning: Vec::new(),
        content: Some("Reading the next file.".into()),
        tool_calls: vec![ToolCall {
            id: id.clone(),
            name: "read".into(),
            arguments: format!(r#"{{"path":"src/file_{turn}.rs"}}"#),
        }],
    });
    state.conversation.push(Message::Tool {
        tool_call_id: id,
        content: line.repeat(RESULT_BYTES / line.len()),
    });
    state.budget.record_model_call(&Usage {
        input_tokens: 2_000,
        output_tokens: 50,
        ..Default::default()
    });
    state.budget.record_tool_calls(1);
}

fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..30)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    times.sort();
    times[15]
}
