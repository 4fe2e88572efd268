//! The floor of one run (issue 28, item 11): the three-turn task of
//! `round_trips` (list the files, read `notes.txt`, answer) against the test
//! suite's fake model answering at once, so what is left is agentci's own
//! cost: start-up, TLS and git set-up, three model calls, the outputs.
//! Target: under 20 ms wall and 20 MB peak RSS.
//!
//! Prints the median wall time, CPU time and peak RSS (the child's, from
//! `wait4`) over `AGENTCI_BENCH_RUNS` runs (default 30), for a workspace
//! outside any repository, the same with `sandbox: off` (what the sandbox's
//! kernel work costs: namespaces, mounts and the `ls` call's control group),
//! and one inside
//! a git repository.
//!
//! `AGENTCI_BENCH_SERVE=plain|repo` instead sets that workspace up with a
//! fake model holding answers for 10,000 runs, prints the command that runs
//! the task once (for `hyperfine`, `/usr/bin/time -v`, `valgrind
//! --tool=callgrind`) and serves until its standard input closes. Run with
//! `cargo bench --bench run_floor`. Prints figures; asserts nothing.
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

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use notes_script::batching_script;
use notes_task::{write, write_task};

/// What one run cost.
struct Figures {
    wall: Duration,
    cpu: Duration,
    max_rss_kb: i64,
}

fn main() {
    if let Ok(kind) = std::env::var("AGENTCI_BENCH_SERVE") {
        serve(&kind == "repo");
        return;
    }
    let runs: usize = std::env::var("AGENTCI_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    println!("three-turn task, model answering at once, median of {runs} runs");
    let cases = [
        ("no repository", false, false),
        ("no repository, sandbox: off", false, true),
        ("inside a git repository", true, false),
    ];
    for (label, repo, sandbox_off) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let model = FakeModel::start(script(runs + 1));
        setup(dir.path(), &model.base_url(), repo, sandbox_off);
        run_once(dir.path()); // warm the page cache
        let mut all: Vec<Figures> = (0..runs).map(|_| run_once(dir.path())).collect();
        all.sort_by_key(|f| f.wall);
        let wall = all[runs / 2].wall;
        all.sort_by_key(|f| f.cpu);
        let cpu = all[runs / 2].cpu;
        let rss = all.iter().map(|f| f.max_rss_kb).max().unwrap_or(0);
        println!(
            "{label}: wall {:.1} ms, CPU {:.1} ms, peak RSS {:.1} MB (target: < 20 ms, < 20 MB)",
            ms(wall),
            ms(cpu),
            rss as f64 / 1024.0
        );
    }
}

/// The workspace and a model for many runs; prints how to run the task.
fn serve(repo: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = FakeModel::start(script(10_000));
    setup(dir.path(), &model.base_url(), repo, false);
    println!(
        "cd {} && {} run job.yaml --progress none --out out",
        dir.path().display(),
        env!("CARGO_BIN_EXE_agentci")
    );
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

/// The batching model's three answers, `runs` times over.
fn script(runs: usize) -> Vec<Reply> {
    (0..runs).flat_map(|_| batching_script()).collect()
}

fn setup(root: &Path, base_url: &str, repo: bool, sandbox_off: bool) {
    let extra = if sandbox_off { "sandbox: off\n" } else { "" };
    write_task(root, base_url, extra);
    if repo {
        write(&root.join(".gitignore"), "/out/\n");
        git(root, &["init", "-q"]);
        git(root, &["add", "-A"]);
        git(
            root,
            &[
                "-c",
                "user.name=bench",
                "-c",
                "user.email=bench@example.com",
                "commit",
                "-qm",
                "the task",
            ],
        );
    }
}

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(root)
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?} failed");
}

fn run_once(root: &Path) -> Figures {
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(["run", "job.yaml", "--progress", "none", "--out", "out"])
        .current_dir(root)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run agentci");
    let pid = i32::try_from(child.id()).expect("a pid fits in pid_t");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for (`child` is never
    // waited on: it is forgotten below); both pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    std::mem::forget(child);
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "agentci failed: status {status}"
    );
    let cpu = timeval(usage.ru_utime) + timeval(usage.ru_stime);
    Figures {
        wall,
        cpu,
        max_rss_kb: usage.ru_maxrss,
    }
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
        + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
