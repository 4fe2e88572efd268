//! One turn of 4 explore `task` calls, each sub-agent making 2 model calls
//! (a `read`, then its answer) to a model that answers after 100 ms: the
//! batch's wall time when the tasks run in parallel (`max_parallel_tools:
//! 4`) against one by one (`max_parallel_tools: 1`).
//!
//! Run with `cargo bench --bench subagents`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use agentci::agent::batch::{BatchEnv, run_batch};
use agentci::agent::budget::BudgetTracker;
use agentci::agent::loop_guard::LoopGuard;
use agentci::agent::subagent::{SubagentConfig, Subagents};
use agentci::agent::toolset::ToolSet;
use agentci::event::bus::EventBus;
use agentci::job::{BudgetSpec, ToolLoopSpec};
use agentci::policy::{DefaultDecision, PermissionRules};
use agentci::provider::{
    ChatRequest, ChatResponse, Message, ModelProvider, ProviderError, ProviderObserver, ToolCall,
};
use agentci::provider::{ModelInfo, Usage};
use agentci::tools::BoxFuture;
use agentci::tools::{ToolContext, ToolLimits, Workspace};

const TASKS: usize = 4;
const ANSWER_AFTER: Duration = Duration::from_millis(100);
const RUNS: usize = 5;

/// Reads `notes.txt` on a sub-agent's first turn, answers on its second.
struct SlowModel;

impl ModelProvider for SlowModel {
    fn model_info(&self) -> ModelInfo {
        ModelInfo {
            provider: "bench".into(),
            name: "slow".into(),
        }
    }

    fn complete_observed<'a>(
        &'a self,
        request: &'a ChatRequest,
        _observer: &'a dyn ProviderObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            tokio::time::sleep(ANSWER_AFTER).await;
            let answered = request
                .messages
                .iter()
                .any(|m| matches!(m, Message::Tool { .. }));
            let usage = Usage {
                input_tokens: 100,
                output_tokens: 10,
                ..Default::default()
            };
            Ok(if answered {
                ChatResponse {
                    text: Some("notes.txt holds one line.".into()),
                    usage,
                    ..Default::default()
                }
            } else {
                ChatResponse {
                    tool_calls: vec![ToolCall {
                        id: "r".into(),
                        name: "read".into(),
                        arguments: r#"{"path": "notes.txt"}"#.into(),
                    }],
                    usage,
                    ..Default::default()
                }
            })
        })
    }
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temporary workspace");
    std::fs::write(dir.path().join("notes.txt"), "one line\n").expect("notes.txt");
    let calls: Vec<ToolCall> = (0..TASKS)
        .map(|i| ToolCall {
            id: format!("t{i}"),
            name: "task".into(),
            arguments: serde_json::json!({"prompt": "What is in notes.txt?", "kind": "explore"})
                .to_string(),
        })
        .collect();
    let tools = ToolSet::new(Some(&["read".to_string(), "task".to_string()]), None);
    let policy = agentci::policy::PermissionPolicy::new(&PermissionRules {
        default: DefaultDecision::Allow,
        allow: vec![],
        deny: vec![],
    });
    let ctx = ToolContext {
        workspace: Workspace::new(dir.path()).expect("workspace"),
        limits: ToolLimits::default(),
        processes: Default::default(),
        access: Default::default(),
        secrets: Default::default(),
        fetch_policy: None,
    };
    let bus = EventBus::new("bench", Vec::new());
    let batches = AtomicU64::new(0);
    let config = SubagentConfig::default();
    let measure = |max_parallel: usize| -> Duration {
        let tool_loop = ToolLoopSpec {
            max_parallel_tools: max_parallel,
            ..Default::default()
        };
        let mut times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let mut tracker = BudgetTracker::new(&BudgetSpec::default(), None);
                let budget = Mutex::new(&mut tracker);
                let tasks = Subagents {
                    provider: &SlowModel,
                    model_name: "slow",
                    parent_tools: &tools,
                    config: &config,
                    policy: &policy,
                    ctx: &ctx,
                    bus: &bus,
                    tool_loop: &tool_loop,
                    budget: &budget,
                };
                let env = BatchEnv {
                    tools: &tools,
                    policy: &policy,
                    ctx: &ctx,
                    bus: &bus,
                    read_only_phase: false,
                    tool_loop: &tool_loop,
                    batches: &batches,
                    tasks: Some(&tasks),
                };
                let started = Instant::now();
                let results = runtime
                    .block_on(run_batch(&env, &calls, &mut LoopGuard::new(100)))
                    .results;
                assert!(results.iter().all(|r| r.ok), "every task must answer");
                started.elapsed()
            })
            .collect();
        times.sort();
        times[RUNS / 2]
    };
    let parallel = measure(TASKS);
    let one_by_one = measure(1);
    println!(
        "{TASKS} explore tasks of 2 model calls each, answered after {} ms: parallel median \
         {:.0} ms, one by one median {:.0} ms, speed-up {:.1}x over {RUNS} runs",
        ANSWER_AFTER.as_millis(),
        parallel.as_secs_f64() * 1000.0,
        one_by_one.as_secs_f64() * 1000.0,
        one_by_one.as_secs_f64() / parallel.as_secs_f64()
    );
}
