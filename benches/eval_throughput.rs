//! `agentci eval` throughput: 200 replayed cases of a small fixture, with
//! `--jobs 1` and `--jobs 2`: wall time, speedup, and the per-attempt
//! overhead apart from the agent's own work (workspace copy, loading the
//! job, snapshots, assertions, result files).
//!
//! Records one scripted session against the test fake model server, then
//! replays it for every case. Run with `cargo bench --bench eval_throughput`.
//! Prints figures; asserts nothing beyond the runs succeeding.
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

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use serde_json::{Value, json};

const CASES: usize = 200;
const FIXTURE_FILES: usize = 20;

fn main() {
    // AGENTCI_BENCH_DIR keeps the suite, fixture and cassette for a closer look.
    let dir = tempfile::tempdir().expect("tempdir");
    let kept = std::env::var_os("AGENTCI_BENCH_DIR").map(std::path::PathBuf::from);
    let root = kept.as_deref().unwrap_or(dir.path());
    setup(root);

    let model = FakeModel::start(vec![
        Reply::plan(&[("Fix the status", "notes.txt says fixed")]),
        Reply::tool_call(
            "edit",
            json!({"path": "notes.txt", "old_text": "status: broken", "new_text": "status: fixed"}),
        ),
        Reply::step_done("status fixed"),
        Reply::text("Set the status to fixed."),
    ]);
    let url = model.base_url();
    let (status, _) = eval(
        root,
        &[
            "record.yaml",
            "--record",
            "--model",
            "openai:scripted",
            "--base-url",
            &url,
            "--out",
            "rec",
        ],
    );
    assert!(status == 0, "recording failed with exit code {status}");
    drop(model);

    // A warm-up run (page cache, binary), then two rounds in alternating
    // order; each setting's best round counts. Fresh --out folders, so
    // nothing is resumed.
    let (status, _) = eval(root, &["suite.yaml", "--jobs", "2", "--out", "warm"]);
    assert!(status == 0, "warm-up failed with exit code {status}");
    let mut one = Duration::MAX;
    let mut two = Duration::MAX;
    for (round, order) in [["1", "2"], ["2", "1"]].iter().enumerate() {
        for jobs in order {
            let out = format!("jobs{jobs}-{round}");
            let (status, wall) = eval(root, &["suite.yaml", "--jobs", jobs, "--out", &out]);
            assert!(status == 0, "--jobs {jobs} failed with exit code {status}");
            let best = if *jobs == "1" { &mut one } else { &mut two };
            *best = (*best).min(wall);
        }
    }

    let attempts = attempts(&root.join("jobs1-0/results.json"));
    let mean =
        |f: &dyn Fn(&Value) -> f64| attempts.iter().map(f).sum::<f64>() / attempts.len() as f64;
    let field = |a: &Value, k: &str| a[k].as_f64().unwrap_or(0.0);
    let attempt_ms = mean(&|a| field(a, "duration_ms"));
    let run_ms = mean(&|a| field(a, "run_ms"));
    let setup_ms = mean(&|a| field(a, "setup_ms"));
    println!(
        "{CASES} replayed cases ({FIXTURE_FILES}-file fixture): --jobs 1 {:.2} s ({:.1} ms/case), \
         --jobs 2 {:.2} s ({:.1} ms/case), speedup {:.2}x (target >= 1.7x)",
        one.as_secs_f64(),
        one.as_secs_f64() * 1000.0 / CASES as f64,
        two.as_secs_f64(),
        two.as_secs_f64() * 1000.0 / CASES as f64,
        one.as_secs_f64() / two.as_secs_f64(),
    );
    println!(
        "per attempt (--jobs 1, means): {attempt_ms:.1} ms in all, {run_ms:.1} ms the run itself \
         (agent replay + check), {setup_ms:.1} ms fixture copy + snapshot; overhead apart from \
         the agent's work {:.1} ms, of which {:.1} ms besides the fixture copy (target < 20 ms)",
        attempt_ms - run_ms,
        attempt_ms - run_ms - setup_ms,
    );
}

fn setup(root: &Path) {
    let write = |relative: &str, text: &str| {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "skills/notes-fixer/SKILL.md",
        "---\nname: notes-fixer\ndescription: Fixes the status line of notes.\n---\n\nFix what the goal says.\n",
    );
    write(
        "job.yaml",
        "version: 1\nname: fix-notes\nskill: notes-fixer\nskills_path: [skills]\n\
         goal: Change the status in notes.txt to fixed.\n\
         model: {provider: openai, name: scripted}\ntools: [read, edit, ls]\n\
         permissions: {default: allow}\nchecks:\n  - {name: fixed, run: \"grep -q 'status: fixed' notes.txt\"}\n",
    );
    write("fixture/notes.txt", "status: broken\n");
    for i in 0..FIXTURE_FILES - 1 {
        write(
            &format!("fixture/src/file{i}.txt"),
            &"some text\n".repeat(50),
        );
    }
    write(
        "record.yaml",
        "version: 1\nname: rec\njob: job.yaml\ncases:\n  - {name: fix, fixture: fixture, cassette: cassette.jsonl}\n",
    );
    let mut suite = String::from("version: 1\nname: bench\njob: job.yaml\ncases:\n");
    for i in 0..CASES {
        let _ = writeln!(
            suite,
            "  - name: case-{i}\n    fixture: fixture\n    cassette: cassette.jsonl\n    assert:\n      - file_contains: {{path: notes.txt, pattern: fixed}}\n      - diff_touches_only: [notes.txt]"
        );
    }
    write("suite.yaml", &suite);
}

fn eval(root: &Path, args: &[&str]) -> (i32, Duration) {
    let start = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .arg("eval")
        .args(args)
        .args(["--progress", "none"])
        .current_dir(root)
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run agentci");
    (status.code().unwrap_or(-1), start.elapsed())
}

fn attempts(results: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(results).expect("results.json");
    let value: Value = serde_json::from_str(&text).expect("json");
    value["suites"][0]["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .flat_map(|c| c["attempts"].as_array().cloned().unwrap_or_default())
        .collect()
}
