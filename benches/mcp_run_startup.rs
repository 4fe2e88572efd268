//! Start-up of a run with MCP servers: the wall time from spawning
//! `agentci run` to the fake model server receiving the first model
//! request, for the same job without servers and with two copies of
//! tests/mcp-servers/test_server.py (started together, each initialized,
//! listed and pinged before the first turn). The difference is what the
//! servers cost a run before the model is asked anything.
//!
//! Run with `cargo bench --bench mcp_run_startup`. Prints figures; asserts
//! nothing beyond the runs succeeding.
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

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};

const SERVERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp-servers");
const ROUNDS: usize = 9;

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("ws")).expect("workspace");
    std::fs::create_dir_all(root.join("skills/user")).expect("skill folder");
    std::fs::write(
        root.join("skills/user/SKILL.md"),
        "---\nname: user\ndescription: A skill for the start-up benchmark.\n---\n\nDo it.\n",
    )
    .expect("skill");
    let server = |name: &str| {
        format!("    {name}:\n      command: python3\n      args: [\"{SERVERS}/test_server.py\"]\n")
    };
    let servers = format!("mcp:\n  servers:\n{}{}", server("a"), server("b"));

    // One warm-up of each (page cache, python), then alternating rounds.
    let mut without = Vec::new();
    let mut with = Vec::new();
    for round in 0..=ROUNDS {
        let plain = first_request(root, "");
        let two = first_request(root, &servers);
        if round > 0 {
            without.push(plain);
            with.push(two);
        }
    }
    without.sort();
    with.sort();
    let (a, b) = (without[ROUNDS / 2], with[ROUNDS / 2]);
    println!(
        "start to first model request: no MCP servers median {:.1} ms; two test servers median \
         {:.1} ms (min {:.1} ms); the servers add {:.1} ms, over {ROUNDS} rounds",
        ms(a),
        ms(b),
        ms(with[0]),
        ms(b.saturating_sub(a))
    );
}

/// Runs the job (with `mcp` as its `mcp:` key) and returns the time until
/// the model server saw the first request.
fn first_request(root: &Path, mcp: &str) -> Duration {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Do it", "done")]),
        Reply::step_done("done"),
        Reply::text("done"),
    ]);
    std::fs::write(
        root.join("job.yaml"),
        format!(
            "version: 1\nname: startup\nskill: user\ngoal: Do it.\nmodel:\n  provider: openai\n  \
             name: fake-model\n  base_url: {}\ntools: [read]\nworkspace: ws\nskills_path: \
             [skills]\nallow_dirty: true\n{mcp}",
            model.base_url()
        ),
    )
    .expect("job");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(["run", "job.yaml", "--progress", "none", "--out", "out"])
        .current_dir(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("agentci runs");
    let elapsed = loop {
        if !model.requests().is_empty() {
            break started.elapsed();
        }
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("the run ended before asking the model: {status}");
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    let status = child.wait().expect("wait");
    assert!(status.success(), "the run failed: {status}");
    let _ = std::fs::remove_dir_all(root.join("out"));
    elapsed
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
