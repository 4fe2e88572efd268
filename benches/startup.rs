//! Cold start: the median wall time of `agentci --version` over many runs.
//!
//! Run with `cargo bench --bench startup`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 200;

fn main() {
    let exe = env!("CARGO_BIN_EXE_agentci");
    // Warm the page cache once so "cold" means a new process, not a cold disk.
    run(exe);
    let mut times: Vec<Duration> = (0..RUNS).map(|_| run(exe)).collect();
    times.sort();
    let median = times[RUNS / 2];
    let p95 = times[RUNS * 95 / 100];
    println!(
        "agentci --version: median {:.2} ms, p95 {:.2} ms, min {:.2} ms over {RUNS} runs (target: median < 5 ms)",
        ms(median),
        ms(p95),
        ms(times[0])
    );
}

fn run(exe: &str) -> Duration {
    let started = Instant::now();
    let status = Command::new(exe)
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .expect("agentci runs");
    assert!(status.success());
    started.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
