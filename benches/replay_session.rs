//! A replayed 200-turn session: wall time and peak RSS of `agentci run --replay`.
//!
//! Records a scripted 200-turn session against the test fake model server
//! once, then replays it several times. Run with
//! `cargo bench --bench replay_session`. Prints figures; asserts nothing.
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

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use serde_json::json;

const TURNS: usize = 200;
const REPLAYS: usize = 7;

/// Set in the child that measures the replays: the session folder to replay.
const REPLAY_PHASE: &str = "AGENTCI_BENCH_REPLAY_PHASE";

fn main() {
    if let Some(root) = std::env::var_os(REPLAY_PHASE) {
        replay_phase(Path::new(&root));
        return;
    }
    // AGENTCI_BENCH_DIR keeps the session (job, workspace, cassette) for a closer look.
    let dir = tempfile::tempdir().expect("tempdir");
    let kept = std::env::var_os("AGENTCI_BENCH_DIR").map(std::path::PathBuf::from);
    let root = kept.as_deref().unwrap_or(dir.path());
    reading_session::setup(root, "", "{max_turns: 250}");

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
    let model = FakeModel::start(script);
    let job = std::fs::read_to_string(root.join("job.yaml"))
        .expect("job")
        .replace("BASE_URL", &model.base_url());
    std::fs::write(root.join("job.yaml"), job).expect("job");

    let (status, wall, _) = run(root, &["--record", "cassette.jsonl"]);
    assert!(status == 0, "recording run failed with exit code {status}");
    println!(
        "recorded: {TURNS} turns live against the fake server in {:.0} ms",
        ms(wall)
    );
    drop(model);

    // Linux carries a process's peak RSS across fork and exec, so replays
    // spawned from this process (which holds the fake server's captured
    // requests) would report this process's peak. A fresh, small process
    // spawns and measures them instead.
    let status = Command::new(std::env::current_exe().expect("bench executable"))
        .env(REPLAY_PHASE, root)
        .status()
        .expect("spawn the replay phase");
    assert!(status.success(), "replay phase failed");
}

fn replay_phase(root: &Path) {
    let mut walls = Vec::new();
    let mut peak = 0;
    for _ in 0..REPLAYS {
        let (status, wall, rss_kb) = run(root, &["--replay", "cassette.jsonl"]);
        assert!(status == 0, "replay failed with exit code {status}");
        walls.push(wall);
        peak = peak.max(rss_kb);
    }
    walls.sort();
    let size = std::fs::metadata(root.join("cassette.jsonl"))
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "replay of {TURNS} turns ({:.1} MB cassette): median {:.0} ms, min {:.0} ms, peak RSS {:.1} MB over {REPLAYS} runs (target: < 1 s, < 40 MB)",
        size as f64 / 1e6,
        ms(walls[REPLAYS / 2]),
        ms(walls[0]),
        peak as f64 / 1024.0,
    );
}

/// Run agentci in `root`; returns exit code, wall time and peak RSS in KiB.
fn run(root: &Path, extra: &[&str]) -> (i32, Duration, i64) {
    let started = Instant::now();
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, which also gives the rusage"
    )]
    let child = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(["run", "job.yaml", "--progress", "none", "--out", "out"])
        .args(extra)
        .current_dir(root)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agentci");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, whose pid we just got; `status` and `usage` outlive the call.
    unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    (libc::WEXITSTATUS(status), wall, usage.ru_maxrss)
}
