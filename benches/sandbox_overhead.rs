//! The added cost of the sandbox per `exec` call: the median wall time of
//! running `true` through the run's process runner under `workspace-write`
//! (namespaces, fresh /proc, read-only binds and view, Landlock,
//! capabilities dropped, seccomp filters) against the same
//! call with `sandbox: off`, and the network namespace's share.
//!
//! Run with `cargo bench --bench sandbox_overhead`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::path::Path;
use std::time::{Duration, Instant};

use agentci::process::{ProcessRunner, RunnerConfig, RunnerExtra};
use agentci::sandbox::{SandboxProfile, SandboxSpec};

const CALLS: usize = 300;

fn main() {
    let root = tempfile::tempdir().expect("temp dir");
    let workspace = root.path().join("ws");
    std::fs::create_dir_all(workspace.join(".agentci/runs/r")).expect("run folder");
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let support = agentci::sandbox::support();
    println!("this machine: {support:?}");
    let profiles = [
        ("off", SandboxProfile::Off, true),
        (
            "workspace-write, network allowed",
            SandboxProfile::WorkspaceWrite,
            true,
        ),
        (
            "workspace-write, no network",
            SandboxProfile::WorkspaceWrite,
            false,
        ),
    ];
    let mut medians = Vec::new();
    for (name, profile, network) in profiles {
        let runner = runner(&workspace, profile, network);
        let median = runtime.block_on(median_call(&runner, &workspace));
        println!(
            "exec `true`, sandbox {name}: median {:.2} ms over {CALLS} calls",
            ms(median)
        );
        medians.push(median);
    }
    let added = |i: usize| ms(medians[i]) - ms(medians[0]);
    println!(
        "added by the sandbox per exec call: {:.2} ms with network, {:.2} ms without (target: < 2 ms)",
        added(1),
        added(2)
    );
}

fn runner(workspace: &Path, profile: SandboxProfile, network: bool) -> ProcessRunner {
    ProcessRunner::new(
        RunnerConfig {
            sandbox: SandboxSpec {
                profile,
                network,
                require: false,
                ..SandboxSpec::default()
            },
            children: RunnerExtra {
                workspace: workspace.to_path_buf(),
                run_id: format!("bench-{}", uuid_like()),
                protected: vec![workspace.join(".agentci/runs/r")],
                ..RunnerExtra::default()
            },
            secrets: Default::default(),
        },
        &agentci::run_env::RunEnv::new(std::env::vars_os()),
    )
    .expect("process runner")
}

async fn median_call(runner: &ProcessRunner, workspace: &Path) -> Duration {
    // Warm up: the probe and the page cache.
    for _ in 0..10 {
        call(runner, workspace).await;
    }
    let mut times = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let started = Instant::now();
        call(runner, workspace).await;
        times.push(started.elapsed());
    }
    times.sort();
    times[CALLS / 2]
}

async fn call(runner: &ProcessRunner, workspace: &Path) {
    let out = runner
        .run_shell("true", workspace, Duration::from_secs(10), 1000)
        .await
        .expect("the call runs");
    assert_eq!(out.exit_code, Some(0), "{}", out.output);
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
