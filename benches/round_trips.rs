//! Round trips on the three-turn task (list the files, read `notes.txt`,
//! answer) against the test suite's fake model server with a model that
//! takes 0.5 s per call (issue 26): wall time, model calls and bytes sent
//! by agentci with a model that batches (plan with the first call, report
//! with the last `step_done`) and with one that makes one call per turn;
//! and by `codex exec` on the same task, when it is installed.
//!
//! codex is looked for at `$AGENTCI_BENCH_CODEX`, then under
//! `$CARGO_TARGET_DIR/codex/node_modules/.bin/codex` (`npm install
//! --prefix "$CARGO_TARGET_DIR/codex" @openai/codex`), then on `PATH`; it
//! is pointed at the fake server with a custom `model_provider` in a
//! throwaway `CODEX_HOME`. Without it the bench says so and measures
//! agentci alone. Run with `cargo bench --bench round_trips`
//! (`AGENTCI_BENCH_LATENCY_MS` changes the latency, `AGENTCI_BENCH_RUNS`
//! the number of runs, default 3). Prints figures; asserts nothing.
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
#[path = "../tests/suite/support/notes_script.rs"]
mod notes_script;
#[path = "support/notes_task.rs"]
mod notes_task;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use notes_script::{REPORT, batching_script};
use notes_task::{workspace, write, write_task};
use serde_json::json;

/// What one run of the task cost.
struct Figures {
    wall: Duration,
    calls: usize,
    bytes: usize,
}

fn main() {
    let latency = Duration::from_millis(
        std::env::var("AGENTCI_BENCH_LATENCY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(500),
    );
    let runs: usize = std::env::var("AGENTCI_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    println!(
        "three-turn task (list files, read notes.txt, answer), model latency {} ms per call, best of {runs}",
        latency.as_millis()
    );
    let batched = best_of(runs, || agentci(batching_script(), latency));
    report("agentci, batching model", &batched, latency);
    let one_per_turn = best_of(runs, || agentci(one_call_per_turn_script(), latency));
    report("agentci, one call per turn", &one_per_turn, latency);
    match codex_binary() {
        Some(codex) => {
            let figures = best_of(runs, || run_codex(&codex, latency));
            report("codex exec", &figures, latency);
            println!(
                "agentci (batching) / codex wall time: {:.2}x",
                batched.wall.as_secs_f64() / figures.wall.as_secs_f64()
            );
        }
        None => println!(
            "codex exec: not measured: no codex binary (set AGENTCI_BENCH_CODEX, or npm install \
             --prefix \"$CARGO_TARGET_DIR/codex\" @openai/codex)"
        ),
    }
}

fn best_of(runs: usize, mut run: impl FnMut() -> Figures) -> Figures {
    (0..runs.max(1))
        .map(|_| run())
        .min_by_key(|f| f.wall)
        .expect("at least one run")
}

fn report(who: &str, figures: &Figures, latency: Duration) {
    let floor = latency * figures.calls as u32;
    println!(
        "{who}: {:.0} ms wall ({:.0} ms of it waiting on {} model calls, {:.0} ms the rest), {} bytes sent",
        ms(figures.wall),
        ms(floor),
        figures.calls,
        ms(figures.wall.saturating_sub(floor)),
        figures.bytes,
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The workspace: two files to list, one to read.
fn one_call_per_turn_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Read the notes", "known")]),
        Reply::tool_calls(vec![("list", "exec", json!({"command": "ls"}))]),
        Reply::tool_calls(vec![("read", "read", json!({"path": "notes.txt"}))]),
        Reply::step_done("read notes.txt"),
        Reply::text(REPORT),
    ]
}

fn agentci(script: Vec<Reply>, latency: Duration) -> Figures {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let model = FakeModel::start_with_latency(script, latency);
    write_task(root, &model.base_url(), "");
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(["run", "job.yaml", "--progress", "none", "--out", "out"])
        .current_dir(root)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run agentci");
    let wall = started.elapsed();
    assert!(status.success(), "agentci failed: {status}");
    figures(&model, wall)
}

fn figures(model: &FakeModel, wall: Duration) -> Figures {
    let captured = model.captured();
    Figures {
        wall,
        calls: captured.len(),
        bytes: captured.iter().map(|r| r.body_bytes).sum(),
    }
}

/// Where codex is, if it is anywhere.
fn codex_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("AGENTCI_BENCH_CODEX") {
        return Some(PathBuf::from(path));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let installed = target.join("codex/node_modules/.bin/codex");
    if installed.exists() {
        return Some(installed);
    }
    Command::new("codex")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()
        .filter(|s| s.success())
        .map(|_| PathBuf::from("codex"))
}

/// codex's session of the task over the Responses API (what codex speaks
/// to a custom provider): `ls` and `cat notes.txt` with its
/// `exec_command` tool, then the answer.
fn codex_script() -> Vec<Reply> {
    vec![
        Reply::tool_calls(vec![("list", "exec_command", json!({"cmd": "ls"}))]),
        Reply::tool_calls(vec![(
            "read",
            "exec_command",
            json!({"cmd": "cat notes.txt"}),
        )]),
        Reply::text(REPORT),
    ]
}

fn run_codex(codex: &Path, latency: Duration) -> Figures {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    workspace(root);
    let model = FakeModel::start_with_latency(codex_script(), latency);
    let home = root.join("codex-home");
    write(
        &home.join("config.toml"),
        &format!(
            "model = \"bench\"\nmodel_provider = \"fake\"\n\
             [model_providers.fake]\nname = \"fake\"\nbase_url = \"{}\"\n\
             wire_api = \"responses\"\nenv_key = \"AGENTCI_BENCH_FAKE_KEY\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n",
            model.base_url()
        ),
    );
    let started = Instant::now();
    let out = Command::new(codex)
        .args([
            "exec",
            "--skip-git-repo-check",
            "List the files, read notes.txt and say what it says.",
        ])
        .current_dir(root.join("ws"))
        .env("CODEX_HOME", &home)
        .env("AGENTCI_BENCH_FAKE_KEY", "bench")
        .stdin(Stdio::null())
        .output()
        .expect("run codex");
    let wall = started.elapsed();
    assert!(
        out.status.success(),
        "codex failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    figures(&model, wall)
}
