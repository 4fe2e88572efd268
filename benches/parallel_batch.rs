//! One turn of 8 read-only `web_fetch` calls to a local server that answers
//! each after 200 ms: the batch's wall time with `max_parallel_tools: 8`
//! against the same calls one by one (`max_parallel_tools: 1`).
//!
//! Run with `cargo bench --bench parallel_batch`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use agentci::agent::batch::{BatchEnv, run_batch};
use agentci::agent::loop_guard::LoopGuard;
use agentci::agent::toolset::ToolSet;
use agentci::event::bus::EventBus;
use agentci::job::ToolLoopSpec;
use agentci::policy::PermissionPolicy;
use agentci::policy::{DefaultDecision, PermissionRules};
use agentci::provider::ToolCall;
use agentci::tools::{ToolContext, ToolLimits, Workspace};
use axum::Router;
use axum::routing::get;

const CALLS: usize = 8;
const ANSWER_AFTER: Duration = Duration::from_millis(200);
const RUNS: usize = 5;

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the bench server");
        let addr = listener.local_addr().expect("bench server address");
        let app = Router::new().fallback(get(|| async {
            tokio::time::sleep(ANSWER_AFTER).await;
            "<html><body><p>a page</p></body></html>"
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    });
    let dir = tempfile::tempdir().expect("temporary workspace");
    let calls: Vec<ToolCall> = (0..CALLS)
        .map(|i| ToolCall {
            id: format!("c{i}"),
            name: "web_fetch".into(),
            arguments: serde_json::json!({ "url": format!("http://{addr}/page/{i}") }).to_string(),
        })
        .collect();
    let tools = ToolSet::new(Some(&["web_fetch".to_string()]), None);
    // The loopback test server is reached only where a rule names its host.
    let policy = PermissionPolicy::new(&PermissionRules {
        default: DefaultDecision::Allow,
        allow: vec![
            agentci::policy::ToolPattern::parse("web_fetch(http://127.0.0.1:*/**)").expect("rule"),
        ],
        deny: vec![],
    });
    let ctx = ToolContext {
        workspace: Workspace::new(dir.path()).expect("workspace"),
        limits: ToolLimits::default(),
        processes: Default::default(),
        access: Default::default(),
        secrets: Default::default(),
        fetch_policy: Some(std::sync::Arc::new(policy.clone())),
    };
    let bus = EventBus::new("bench", Vec::new());
    let batches = AtomicU64::new(0);
    let measure = |max_parallel: usize| -> Duration {
        let tool_loop = ToolLoopSpec {
            max_parallel_tools: max_parallel,
            ..Default::default()
        };
        let env = BatchEnv {
            tools: &tools,
            policy: &policy,
            ctx: &ctx,
            bus: &bus,
            read_only_phase: false,
            tool_loop: &tool_loop,
            batches: &batches,
            tasks: None,
        };
        let mut times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let started = Instant::now();
                let results = runtime
                    .block_on(run_batch(&env, &calls, &mut LoopGuard::new(100)))
                    .results;
                assert!(results.iter().all(|r| r.ok), "every fetch must succeed");
                started.elapsed()
            })
            .collect();
        times.sort();
        times[RUNS / 2]
    };
    let parallel = measure(CALLS);
    let one_by_one = measure(1);
    println!(
        "{CALLS} web_fetch calls answered after {} ms each: parallel batch median {:.0} ms, \
         one by one median {:.0} ms, speed-up {:.1}x over {RUNS} runs (target: >= 5x)",
        ANSWER_AFTER.as_millis(),
        parallel.as_secs_f64() * 1000.0,
        one_by_one.as_secs_f64() * 1000.0,
        one_by_one.as_secs_f64() / parallel.as_secs_f64()
    );
}
