//! How fast is the `grep` tool next to ripgrep on a large tree?
//!
//! Runs the tool in-process (as the agent does, through `call_checked`) and,
//! when an `rg` binary is on PATH, ripgrep with the same walk rules, and
//! prints the median wall time of each and their ratio.
//!
//! What is compared: the tool always searches every file (it reports the
//! total number of matching lines even when it shows only `max_results` of
//! them), so its time does not depend on the cap; it runs with the default
//! cap of 50. ripgrep runs uncapped, printing every matching line to a pipe
//! that this program counts. Both honour .gitignore outside git repositories
//! (`--no-require-git`), show hidden files but skip `.git` (`--hidden -g
//! '!.git'`), skip binary files and do not follow symlinks. The two totals
//! are printed so a difference in what was searched shows up. The tool runs
//! a second time with two `read` deny rules, which it asks about every file,
//! to show what obeying the job's rules costs.
//!
//! First, the per-call floor on a small tree (ten files of 200 lines, 40 KB,
//! like the replay benches' workspace): the tool's time per call against a
//! plain walk-and-regex loop on one thread (target: under 0.5 ms a call;
//! a small tree is searched on the calling thread, without starting the
//! parallel walker's threads). The same pattern every call, as an agent
//! repeats its searches (the tool keeps the patterns it compiled), then a
//! pattern the tool has not seen every call (what compiling one costs).
//!
//! Usage: `cargo bench --bench grep_vs_rg [-- TREE]`; TREE defaults to
//! `$AGENTCI_BENCH_TREE`, then `~/.cargo/registry/src`. `AGENTCI_BENCH_RUNS`
//! sets the number of timed runs (default 5, after one warm-up run).
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentci::policy::{DefaultDecision, PermissionRules};
use agentci::policy::{PermissionPolicy, ToolPattern};
use agentci::tools::{FileAccess, ToolContext, ToolLimits, Workspace, builtin, call_checked};
use serde_json::json;

const PATTERN: &str = r"fn\s+new";

fn main() {
    let tree = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("AGENTCI_BENCH_TREE").map(PathBuf::from))
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_default();
            PathBuf::from(home).join(".cargo/registry/src")
        });
    let runs: usize = std::env::var("AGENTCI_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5)
        .max(1);
    println!(
        "tree: {}  pattern: {PATTERN}  runs: {runs} (+1 warm-up)",
        tree.display()
    );

    let ctx = ToolContext {
        workspace: Workspace::new(&tree).expect("the bench tree must exist"),
        limits: ToolLimits::default(),
        processes: Default::default(),
        secrets: Default::default(),
        access: Default::default(),
        fetch_policy: None,
    };
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let tool = builtin("grep").expect("grep tool");
    small_tree(&runtime, tool.as_ref());
    let mut tool_matches = 0;
    let tool_time = median(runs, || {
        let result = runtime.block_on(call_checked(
            tool.as_ref(),
            json!({"pattern": PATTERN}),
            &ctx,
        ));
        assert!(result.ok, "grep failed: {}", result.summary);
        tool_matches = result.data["matches"].as_u64().unwrap_or(0);
    });
    println!(
        "agentci grep: median {:>8.1} ms, {tool_matches} matching lines",
        ms(tool_time)
    );

    let policy = PermissionPolicy::new(&PermissionRules {
        default: DefaultDecision::Allow,
        allow: Vec::new(),
        deny: ["read(**/.env)", "read(**/secrets/**)"]
            .iter()
            .map(|p| ToolPattern::parse(p).expect("a valid pattern"))
            .collect(),
    });
    let ruled = ToolContext {
        access: FileAccess::new(move |path| policy.read_denied_by(path), false),
        ..ctx.clone()
    };
    let ruled_time = median(runs, || {
        let result = runtime.block_on(call_checked(
            tool.as_ref(),
            json!({"pattern": PATTERN}),
            &ruled,
        ));
        assert!(result.ok, "grep failed: {}", result.summary);
    });
    println!(
        "agentci grep, 2 read deny rules: median {:>8.1} ms ({:+.1}%)",
        ms(ruled_time),
        (ruled_time.as_secs_f64() / tool_time.as_secs_f64() - 1.0) * 100.0
    );

    let rg_present = Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !rg_present {
        println!("rg: not on PATH, comparison skipped");
        return;
    }
    let mut rg_matches = 0;
    let rg_time = median(runs, || {
        let out = Command::new("rg")
            .args([
                "--no-config",
                "--line-number",
                "--no-heading",
                "--color=never",
                "--hidden",
                "--no-require-git",
                "--glob=!.git",
                "--regexp",
                PATTERN,
                ".",
            ])
            .current_dir(&tree)
            .stderr(Stdio::null())
            .output()
            .expect("run rg");
        rg_matches = out.stdout.iter().filter(|&&b| b == b'\n').count() as u64;
    });
    println!(
        "rg:           median {:>8.1} ms, {rg_matches} matching lines",
        ms(rg_time)
    );
    println!(
        "ratio agentci/rg: {:.2}x",
        tool_time.as_secs_f64() / rg_time.as_secs_f64()
    );
}

/// Calls on the small tree, timed together.
const SMALL_CALLS: u32 = 500;

/// The per-call floor: the tool on a 40 KB tree against a walk-and-regex loop.
fn small_tree(runtime: &tokio::runtime::Runtime, tool: &dyn agentci::tools::Tool) {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..10 {
        let text: String = (0..200)
            .map(|l| format!("line {l} of file {i}\n"))
            .collect();
        std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
        std::fs::write(dir.path().join(format!("src/file{i}.txt")), text).expect("write");
    }
    let ctx = ToolContext {
        workspace: Workspace::new(dir.path()).expect("workspace"),
        limits: ToolLimits::default(),
        processes: Default::default(),
        secrets: Default::default(),
        access: Default::default(),
        fetch_policy: None,
    };
    let pattern = "^line 17 of file 3$|turn 5$";
    let per_call = |total: Duration| total / SMALL_CALLS;
    let search = |pattern: &str| {
        let result = runtime.block_on(call_checked(tool, json!({"pattern": pattern}), &ctx));
        assert!(
            result.ok && result.data["matches"] == 1,
            "{}",
            result.summary
        );
    };
    let tool_time = median(5, || {
        for _ in 0..SMALL_CALLS {
            search(pattern);
        }
    });
    // Every call a pattern the tool has not compiled before, of the same shape.
    let mut fresh = 0u32;
    let new_pattern_time = median(5, || {
        for _ in 0..SMALL_CALLS {
            fresh += 1;
            search(&format!("^line 17 of file 3$|turn {fresh}x$"));
        }
    });
    let regex = regex::Regex::new(pattern).expect("regex");
    let loop_time = median(5, || {
        for _ in 0..SMALL_CALLS {
            let mut found = 0;
            for entry in ignore::WalkBuilder::new(dir.path()).build().flatten() {
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    let text = std::fs::read_to_string(entry.path()).expect("read");
                    found += text.lines().filter(|l| regex.is_match(l)).count();
                }
            }
            assert_eq!(found, 1);
        }
    });
    println!(
        "small tree (10 files, 40 KB): agentci grep {:.3} ms a call (target: < 0.5 ms), \
         a walk-and-regex loop {:.3} ms a call ({:.1}x)",
        ms(per_call(tool_time)),
        ms(per_call(loop_time)),
        tool_time.as_secs_f64() / loop_time.as_secs_f64()
    );
    println!(
        "small tree, a new pattern every call: agentci grep {:.3} ms a call",
        ms(per_call(new_pattern_time))
    );
}

fn median(runs: usize, mut run: impl FnMut()) -> Duration {
    run();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
