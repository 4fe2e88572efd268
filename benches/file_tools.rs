//! What do the file tools cost per call: `read`, `write` and `edit` of a
//! 100 KB file, and `grep` over a tree of 10,000 small files?
//!
//! Runs the tools in-process, as the agent does (through `call_checked`),
//! against a workspace made in a temporary folder, and prints the median
//! wall time of each. It is the yardstick for how the tools reach files
//! (by descriptor beneath the workspace root): a change there should stay
//! within 10% of the figures before it.
//!
//! Usage: `cargo bench --bench file_tools`. `AGENTCI_BENCH_RUNS` sets the
//! number of timed runs (default 50 for the single-file tools, a tenth of
//! that, at least 3, for `grep`; each after one warm-up run).
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::path::Path;
use std::time::{Duration, Instant};

use agentci::tools::{ToolContext, ToolLimits, Workspace, builtin, call_checked};
use serde_json::{Value, json};

/// Size of the file `read`, `write` and `edit` work on.
const FILE_BYTES: usize = 100 * 1024;
/// Files in the tree `grep` searches, spread over folders of 100.
const TREE_FILES: usize = 10_000;

fn main() {
    let runs: usize = std::env::var("AGENTCI_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(50)
        .max(1);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let content = big_file();
    std::fs::write(dir.path().join("big.txt"), &content).expect("write big.txt");
    make_tree(&dir.path().join("tree"));
    let ctx = ToolContext {
        workspace: Workspace::new(dir.path()).expect("the bench workspace"),
        limits: ToolLimits::default(),
        processes: Default::default(),
        secrets: Default::default(),
        access: Default::default(),
        fetch_policy: None,
    };
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let call = |tool: &str, args: Value| {
        let tool = builtin(tool).expect("a builtin tool");
        let result = runtime.block_on(call_checked(tool.as_ref(), args, &ctx));
        assert!(result.ok, "{} failed: {}", tool.spec().name, result.summary);
    };
    println!("file: {FILE_BYTES} bytes  tree: {TREE_FILES} files  runs: {runs} (+1 warm-up)");
    let read = median(runs, || {
        call("read", json!({"path": "big.txt", "limit": 100_000}));
    });
    report("read 100 KB", read);
    let write = median(runs, || {
        call("write", json!({"path": "big.txt", "content": content}));
    });
    report("write 100 KB", write);
    // Each edit swaps one marker for the other, so every run finds its text.
    let mut flip = false;
    let edit = median(runs, || {
        let (old, new) = if flip {
            ("MARK-B", "MARK-A")
        } else {
            ("MARK-A", "MARK-B")
        };
        flip = !flip;
        call(
            "edit",
            json!({"path": "big.txt", "old_text": old, "new_text": new}),
        );
    });
    report("edit 100 KB", edit);
    let grep = median((runs / 10).max(3), || {
        call("grep", json!({"pattern": r"needle\d+", "path": "tree"}));
    });
    report("grep 10,000 files", grep);
}

/// About 100 KB of numbered lines with one unique marker in the middle.
fn big_file() -> String {
    let mut text = String::with_capacity(FILE_BYTES + 64);
    let mut n = 0;
    while text.len() < FILE_BYTES {
        n += 1;
        if n == 800 {
            text.push_str("MARK-A\n");
        }
        text.push_str(&format!(
            "line {n:>6}: some ordinary text of a source file\n"
        ));
    }
    text
}

/// `TREE_FILES` small files in folders of 100; every tenth holds a match.
fn make_tree(root: &Path) {
    for i in 0..TREE_FILES {
        let folder = root.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&folder).expect("create a tree folder");
        }
        let body = if i % 10 == 0 {
            format!("fn main() {{}}\n// needle{i}\n")
        } else {
            "fn main() {}\n// nothing here\n".to_string()
        };
        std::fs::write(folder.join(format!("f{i}.rs")), body).expect("write a tree file");
    }
}

fn report(what: &str, time: Duration) {
    println!("{what:<20} median {:>9.3} ms", time.as_secs_f64() * 1000.0);
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
