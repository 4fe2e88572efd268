//! What saving the loop's state whole costs as a conversation grows: the
//! serialized size and the time of `serde_json` writing and reading back an
//! [`LoopState`] after 50, 100 and 200 turns (each turn a tool call and a
//! 4 KB tool result, a 10-step plan). It is the figure a checkpoint after
//! every turn would pay if it rewrote the whole state each time.
//!
//! Run with `cargo bench --bench loop_state`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::time::{Duration, Instant};

use agentci::agent::LoopState;
use agentci::agent::budget::BudgetTracker;
use agentci::agent::loop_guard::LoopGuard;
use agentci::event::PlanStep;
use agentci::job::BudgetSpec;
use agentci::provider::Usage;
use agentci::provider::{Message, ToolCall};

const RESULT_BYTES: usize = 4_096;
const REPEATS: usize = 30;

fn main() {
    println!("turns  state_bytes  write_median  read_median");
    for turns in [50, 100, 200] {
        let state = state_after(turns);
        let bytes = serde_json::to_vec(&state).expect("serialize");
        let write = median(|| {
            let _ = serde_json::to_vec(&state).expect("serialize");
        });
        let read = median(|| {
            let _: LoopState = serde_json::from_slice(&bytes).expect("deserialize");
        });
        println!(
            "{turns:>5}  {:>11}  {:>12}  {:>11}",
            bytes.len(),
            format!("{:.3} ms", write.as_secs_f64() * 1e3),
            format!("{:.3} ms", read.as_secs_f64() * 1e3),
        );
    }
}

/// A state after `turns` turns of reading files.
fn state_after(turns: usize) -> LoopState {
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
    let line = "fn example() -> u32 { 42 } // some source code of the workspace\n";
    let result: String = line.repeat(RESULT_BYTES / line.len());
    for turn in 0..turns {
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
            content: result.clone(),
        });
        state.budget.record_model_call(&Usage {
            input_tokens: 2_000,
            output_tokens: 50,
            ..Default::default()
        });
        state.budget.record_tool_calls(1);
    }
    state
}

fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..REPEATS)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    times.sort();
    times[REPEATS / 2]
}
