//! A replayed 1,000-turn session: wall time, peak RSS, and RSS at turn 100
//! against turn 1,000 of `agentci run --replay` (targets: under 40 MB, flat
//! within 10%, the trace streamed while the run goes on).
//!
//! Records a scripted 1,000-turn session against the test fake model
//! server once (the cassette is generated here, not shipped), then replays
//! it while a small process samples the replay's `/proc/PID/status`
//! (VmRSS, VmHWM) and counts the `model.response` lines the trace has
//! streamed so far, which says what turn the run is at. RSS at turn 300
//! is shown too: the conversation reaches the compaction mark between turn
//! 100 and 300, so turn 300 against 1,000 says whether anything grows with
//! the turns after that. The fake server reports each request's size in
//! bytes / 4 as its input tokens, as a real server counts what it is sent,
//! so the context is estimated at that ratio and no tokenizer table loads;
//! `AGENTCI_BENCH_FIXED_USAGE=1` keeps the fake's constant 100 tokens, which
//! is no count of the requests: the tokenizer (24 MB for `cl100k`) loads
//! past half the mark.
//! Run with `cargo bench --bench long_session`; `AGENTCI_BENCH_WINDOW=N`
//! sets the job's `model.context_window` (a large one: no compaction, the
//! conversation grows with the turns); `AGENTCI_BENCH_OTLP=1` replays each
//! time twice, once exporting spans and metrics to an OTLP/HTTP collector
//! on loopback and once without, and prints the cost of telemetry (target:
//! within 5% of the wall time and +5 MB of peak RSS). Prints figures;
//! asserts nothing about them.
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

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use serde_json::json;

const TURNS: usize = 1_000;
const REPLAYS: usize = 3;
/// The turns whose RSS is compared.
const EARLY_TURN: u64 = 100;
const MIDDLE_TURN: u64 = 300;

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
    let window = std::env::var("AGENTCI_BENCH_WINDOW")
        .map(|w| format!(", context_window: {w}"))
        .unwrap_or_default();
    reading_session::setup(root, &window, "{max_turns: 1100, max_tool_calls: 1100}");

    // plan + (TURNS - 3) tool turns + step_done + summary = TURNS model calls.
    // Small reads and narrow greps: a long session of many short turns, so
    // what grows is the number of turns, not the size of each. Every call
    // differs from the others, so the loop guard has nothing to stop.
    let mut script = vec![Reply::plan(&[("Read everything", "all files read")])];
    for i in 0..TURNS - 3 {
        let call = if i % 2 == 0 {
            (
                "read",
                json!({"path": format!("src/file{}.txt", i % 10), "offset": 1 + (i / 10) % 197, "limit": 3}),
            )
        } else {
            (
                "grep",
                json!({"pattern": format!("^line {} of file {}$|turn {i}$", i % 200, i % 10)}),
            )
        };
        script.push(Reply::tool_calls(vec![(
            &format!("call_{i}"),
            call.0,
            call.1,
        )]));
    }
    script.push(Reply::step_done("read everything"));
    script.push(Reply::text("Read all the files."));
    if std::env::var_os("AGENTCI_BENCH_FIXED_USAGE").is_none() {
        script = script
            .into_iter()
            .map(|reply| reply.with_prompt_counted(4))
            .collect();
    }
    let model = FakeModel::start(script);
    let job = std::fs::read_to_string(root.join("job.yaml"))
        .expect("job")
        .replace("BASE_URL", &model.base_url());
    std::fs::write(root.join("job.yaml"), job).expect("job");

    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(["run", "job.yaml", "--progress", "none", "--out", "out"])
        .args(["--record", "cassette.jsonl"])
        .current_dir(root)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn agentci");
    assert!(status.success(), "recording run failed: {status}");
    println!(
        "recorded: {TURNS} turns live against the fake server in {:.0} ms",
        ms(started.elapsed())
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

/// What one replay measured.
struct Sampled {
    wall: Duration,
    /// Peak RSS (KiB) from the kernel's rusage.
    peak_kb: i64,
    /// VmRSS (KiB) when the trace first showed turn [`EARLY_TURN`],
    /// [`MIDDLE_TURN`], and the last turn.
    early_kb: u64,
    middle_kb: u64,
    late_kb: u64,
    /// Turns seen in the trace while the run was going on.
    turns_seen_live: u64,
    trace_bytes: u64,
}

fn replay_phase(root: &Path) {
    if std::env::var_os("AGENTCI_BENCH_OTLP").is_some() {
        telemetry_cost(root);
        return;
    }
    let mut runs: Vec<Sampled> = (0..REPLAYS).map(|_| replay(root, None)).collect();
    runs.sort_by_key(|r| r.wall);
    let median = &runs[REPLAYS / 2];
    let peak = runs.iter().map(|r| r.peak_kb).max().unwrap_or(0);
    let size = std::fs::metadata(root.join("cassette.jsonl"))
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "replay of {TURNS} turns ({:.1} MB cassette, {:.1} MB trace): median {:.0} ms, min {:.0} ms, \
         peak RSS {:.1} MB over {REPLAYS} runs (target: < 40 MB)",
        size as f64 / 1e6,
        median.trace_bytes as f64 / 1e6,
        ms(median.wall),
        ms(runs[0].wall),
        peak as f64 / 1024.0,
    );
    for run in &runs {
        let growth = |from: u64| (run.late_kb as f64 / from.max(1) as f64 - 1.0) * 100.0;
        println!(
            "  RSS at turn {EARLY_TURN}: {:.1} MB, at turn {MIDDLE_TURN}: {:.1} MB, at turn {TURNS}: {:.1} MB \
             ({:+.0}% from turn {EARLY_TURN}, target: within 10%; {:+.0}% from turn {MIDDLE_TURN}); \
             {} turns seen in the trace while the run went on",
            run.early_kb as f64 / 1024.0,
            run.middle_kb as f64 / 1024.0,
            run.late_kb as f64 / 1024.0,
            growth(run.early_kb),
            growth(run.middle_kb),
            run.turns_seen_live,
        );
    }
}

/// Replays with export off and on, interleaved so both see the same
/// machine, and prints medians and the ratio.
fn telemetry_cost(root: &Path) {
    let collector = collector::start();
    let endpoint = format!("http://{}", collector.addr);
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..REPLAYS {
        off.push(replay(root, None));
        on.push(replay(root, Some(&endpoint)));
    }
    let median = |runs: &mut Vec<Sampled>| {
        runs.sort_by_key(|r| r.wall);
        let peak = runs.iter().map(|r| r.peak_kb).max().unwrap_or(0);
        (runs[REPLAYS / 2].wall, peak as f64 / 1024.0)
    };
    let ((wall_off, rss_off), (wall_on, rss_on)) = (median(&mut off), median(&mut on));
    println!(
        "telemetry on a replay of {TURNS} turns, median of {REPLAYS}: {:.0} ms with export against \
         {:.0} ms without ({:.3}x, target: within 5%); peak RSS {rss_on:.1} MB against \
         {rss_off:.1} MB ({:+.1} MB, target: +5 MB); the collector took {} requests, {:.1} KB",
        ms(wall_on),
        ms(wall_off),
        wall_on.as_secs_f64() / wall_off.as_secs_f64(),
        rss_on - rss_off,
        collector.requests(),
        collector.bytes() as f64 / 1e3,
    );
}

/// A collector that takes every OTLP/HTTP export on loopback and answers
/// 200 with an empty body (a valid empty `Export…ServiceResponse`).
mod collector {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{SocketAddr, TcpListener};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    pub struct Collector {
        pub addr: SocketAddr,
        requests: Arc<AtomicU64>,
        bytes: Arc<AtomicU64>,
    }

    impl Collector {
        pub fn requests(&self) -> u64 {
            self.requests.load(Ordering::Relaxed)
        }
        pub fn bytes(&self) -> u64 {
            self.bytes.load(Ordering::Relaxed)
        }
    }

    pub fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the collector");
        let addr = listener.local_addr().expect("collector address");
        let (requests, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (r, b) = (Arc::clone(&requests), Arc::clone(&bytes));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (r, b) = (Arc::clone(&r), Arc::clone(&b));
                std::thread::spawn(move || {
                    let mut writer = stream.try_clone().expect("clone the connection");
                    let mut reader = BufReader::new(stream);
                    loop {
                        let mut length = 0usize;
                        let mut line = String::new();
                        loop {
                            line.clear();
                            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            if line == "\r\n" {
                                break;
                            }
                            if let Some((name, value)) = line.split_once(':')
                                && name.eq_ignore_ascii_case("content-length")
                            {
                                length = value.trim().parse().unwrap_or(0);
                            }
                        }
                        let mut body = vec![0; length];
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        r.fetch_add(1, Ordering::Relaxed);
                        b.fetch_add(length as u64, Ordering::Relaxed);
                        let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\n\
                                      content-length: 0\r\n\r\n";
                        if writer.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Collector {
            addr,
            requests,
            bytes,
        }
    }
}

/// Replay the session once, sampling the process while it runs; with
/// `otlp`, exporting to that collector.
fn replay(root: &Path, otlp: Option<&str>) -> Sampled {
    let trace = root.join("out/replay-trace.jsonl");
    let _ = std::fs::remove_file(&trace);
    let started = Instant::now();
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentci"));
    command
        .args(["run", "job.yaml", "--progress", "none", "--out", "out"])
        .args(["--replay", "cassette.jsonl", "--trace"])
        .arg(&trace)
        .current_dir(root)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(endpoint) = otlp {
        command.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    }
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, which also gives the rusage"
    )]
    let child = command.spawn().expect("spawn agentci");
    let pid = child.id() as i32;
    let mut turns = TraceTurns::default();
    let (mut early_kb, mut middle_kb, mut late_kb) = (0, 0, 0);
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let rss = vm_rss_kb(pid);
        let seen = turns.update(&trace);
        if seen >= EARLY_TURN && early_kb == 0 {
            early_kb = rss;
        }
        if seen >= MIDDLE_TURN && middle_kb == 0 {
            middle_kb = rss;
        }
        // The last sample near the end stands for turn 1,000.
        if seen >= TURNS as u64 - 10 && rss > 0 {
            late_kb = rss;
        }
        // SAFETY: polls our own child; `status` and `usage` outlive the call.
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if done == pid {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let wall = started.elapsed();
    assert!(
        libc::WEXITSTATUS(status) == 0,
        "replay failed with exit code {}",
        libc::WEXITSTATUS(status)
    );
    Sampled {
        wall,
        peak_kb: usage.ru_maxrss,
        early_kb,
        middle_kb,
        late_kb,
        turns_seen_live: turns.count,
        trace_bytes: std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0),
    }
}

/// Counts `model.response` lines in a growing trace, reading only what was appended.
#[derive(Default)]
struct TraceTurns {
    offset: u64,
    partial: String,
    count: u64,
}

impl TraceTurns {
    fn update(&mut self, trace: &Path) -> u64 {
        let Ok(mut file) = std::fs::File::open(trace) else {
            return self.count;
        };
        let mut added = String::new();
        if file.seek(SeekFrom::Start(self.offset)).is_ok()
            && let Ok(read) = file.read_to_string(&mut added)
        {
            self.offset += read as u64;
        }
        self.partial.push_str(&added);
        let complete = self.partial.rfind('\n').map_or(0, |at| at + 1);
        self.count += self.partial[..complete]
            .lines()
            .filter(|line| line.contains(r#""type":"model.response""#))
            .count() as u64;
        self.partial.drain(..complete);
        self.count
    }
}

/// The process's resident set now, in KiB (0 once it is gone).
fn vm_rss_kb(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .unwrap_or(0)
}
