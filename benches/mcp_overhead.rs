//! The MCP client's cost.
//!
//! 1. Start-up: two servers started together (tests/mcp-servers/test_server.py
//!    and server-everything when installed, else a second test server), from
//!    spawning to both tools lists in hand; median of several rounds. Once
//!    with two bare [`McpServer::start`]s, once through [`McpSet::start`]
//!    (which also waits for a ping, and is what a run uses), and once through
//!    the set under a `workspace-write` sandboxed process runner.
//! 2. Per-call overhead: N `tools/call add` through [`McpServer::call_tool`]
//!    against the test server, and N raw JSON-RPC round trips (write a line,
//!    read a line) to another copy of the same server; the difference per
//!    call is what the client adds on top of the server's own work.
//!
//! Run with `cargo bench --bench mcp_overhead`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentci::job::{McpServerSpec, McpTransport};
use agentci::mcp::{McpServer, McpSet, StartContext};
use agentci::process::{ProcessRunner, RunnerConfig, RunnerExtra};
use agentci::sandbox::{SandboxProfile, SandboxSpec};
use serde_json::json;

const SERVERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp-servers");
const ROUNDS: usize = 7;
const CALLS: usize = 2000;
const WARMUP: usize = 50;

fn spec(name: &str, command: &str, args: &[String]) -> McpServerSpec {
    McpServerSpec {
        name: name.to_string(),
        transport: McpTransport::Stdio {
            command: command.to_string(),
            args: args.to_vec(),
            env: Vec::new(),
            cwd: None,
        },
        timeout: Duration::from_secs(60),
        startup_timeout: Duration::from_secs(30),
        tools: None,
        required: false,
        roots: false,
        sampling: false,
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let test_server = spec("test", "python3", &[format!("{SERVERS}/test_server.py")]);
    let everything_bin = Path::new(SERVERS).join("node_modules/.bin/mcp-server-everything");
    let second = if everything_bin.exists() {
        spec("everything", &everything_bin.display().to_string(), &[])
    } else {
        println!("(server-everything not installed: using two test servers)");
        spec("test2", "python3", &[format!("{SERVERS}/test_server.py")])
    };
    let workspace = std::env::temp_dir();
    let lookup = |_: &str| None;
    let cx = StartContext {
        workspace: &workspace,
        env: &lookup,
        runner: None,
        sampler: None,
    };

    let mut startups = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let (a, b) = runtime.block_on(async {
            futures_util::join!(
                McpServer::start(&test_server, &cx),
                McpServer::start(&second, &cx)
            )
        });
        startups.push(started.elapsed());
        let (a, b) = (
            a.expect("test server starts"),
            b.expect("second server starts"),
        );
        runtime.block_on(async {
            a.shutdown().await;
            b.shutdown().await;
        });
    }
    startups.sort();
    println!(
        "start-up of two servers ({} + {}) to tools listed: median {:.1} ms, min {:.1} ms ({ROUNDS} rounds)",
        test_server.name,
        second.name,
        ms(startups[ROUNDS / 2]),
        ms(startups[0])
    );

    let specs = [test_server.clone(), second.clone()];
    let set_startup = |runner: Option<&ProcessRunner>| {
        let cx = StartContext {
            workspace: &workspace,
            env: &lookup,
            runner,
            sampler: None,
        };
        let mut times = Vec::new();
        for _ in 0..ROUNDS {
            let started = Instant::now();
            let set = runtime.block_on(McpSet::start(&specs, &cx));
            times.push(started.elapsed());
            assert!(set.failed().is_empty(), "{:?}", set.failed());
            assert!(!set.tools().is_empty());
            runtime.block_on(set.shutdown_all());
        }
        times.sort();
        times
    };
    let through_set = set_startup(None);
    println!(
        "start-up of the same two servers through McpSet (tools listed, ping answered): median \
         {:.1} ms, min {:.1} ms",
        ms(through_set[ROUNDS / 2]),
        ms(through_set[0])
    );
    let sandboxed = ProcessRunner::new(
        RunnerConfig {
            sandbox: SandboxSpec {
                profile: SandboxProfile::WorkspaceWrite,
                network: false,
                require: false,
                ..SandboxSpec::default()
            },
            children: RunnerExtra {
                workspace: workspace.clone(),
                run_id: format!("mcp-bench-{}", std::process::id()),
                ..RunnerExtra::default()
            },
            secrets: Default::default(),
        },
        &agentci::run_env::RunEnv::new(std::env::vars_os()),
    )
    .expect("runner");
    let in_sandbox = set_startup(Some(&sandboxed));
    println!(
        "start-up through McpSet under the workspace-write sandbox ({}): median {:.1} ms, min \
         {:.1} ms",
        if sandboxed.sandbox_report().missing.is_empty() {
            "fully enforced".to_string()
        } else {
            format!("degraded: {:?}", sandboxed.sandbox_report().missing)
        },
        ms(in_sandbox[ROUNDS / 2]),
        ms(in_sandbox[0])
    );

    let client_per_call = runtime.block_on(async {
        let server = McpServer::start(&test_server, &cx).await.expect("starts");
        for _ in 0..WARMUP {
            server
                .call_tool("add", json!({"a": 1, "b": 2}))
                .await
                .expect("call");
        }
        let started = Instant::now();
        for i in 0..CALLS {
            let out = server
                .call_tool("add", json!({"a": i, "b": 2}))
                .await
                .expect("call");
            assert!(!out.is_error);
        }
        let elapsed = started.elapsed();
        server.shutdown().await;
        elapsed / CALLS as u32
    });
    let raw_per_call = raw_round_trips();
    println!(
        "tools/call add ({CALLS} calls): through agentci::mcp {:.1} µs/call, raw JSON-RPC over \
         pipes {:.1} µs/call, client overhead {:.1} µs/call (target < 1000 µs)",
        us(client_per_call),
        us(raw_per_call),
        us(client_per_call.saturating_sub(raw_per_call))
    );
}

/// The same calls with nothing but a pipe and serde_json in between.
fn raw_round_trips() -> Duration {
    let mut child = Command::new("python3")
        .arg(format!("{SERVERS}/test_server.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn test server");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut ask = |message: serde_json::Value, answer: bool| {
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
        if answer {
            line.clear();
            stdout.read_line(&mut line).expect("read");
            let _: serde_json::Value = serde_json::from_str(&line).expect("json");
        }
    };
    ask(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}}),
        true,
    );
    ask(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    );
    let call = |id: usize| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "add", "arguments": {"a": id, "b": 2}}})
    };
    for id in 1..=WARMUP {
        ask(call(id), true);
    }
    let started = Instant::now();
    for id in 0..CALLS {
        ask(call(WARMUP + 1 + id), true);
    }
    let elapsed = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    elapsed / CALLS as u32
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
