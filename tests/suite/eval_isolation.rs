//! Eval attempts never share build output or temporary files.
//!
//! Regression: CI machines often set `CARGO_TARGET_DIR`; exec, checks and
//! `run:` assertions inherited it, so parallel attempts of different copies
//! of one crate built into one target folder and one attempt ran another's
//! test binary (a failing fixture's `cargo test` passed). Each attempt now
//! gets its own `TMPDIR` and its own value for the variables that send build
//! output outside the workspace, while a single `agentci run` keeps the
//! caller's values.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, stderr, stdout};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/isolation")
        .join(name)
}

/// The agent changes nothing: the fixture alone decides the checks.
fn idle_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Look at the crate", "know whether its test passes")]),
        Reply::step_done("looked"),
        Reply::text("Left the crate as it was."),
    ]
}

const JOB: &str = "version: 1
name: adder
skill: adder-check
skills_path: [skills]
goal: Run the crate's tests.
model: {provider: openai, name: scripted}
tools: [read, ls]
permissions: {default: allow}
budget: {max_turns: 10}
checks:
  - {name: tests pass, run: cargo test --quiet}
";

/// Each attempt's `run:` commands see a TMPDIR of their own (not the
/// caller's), whatever the fixture.
const OWN_TMPDIR: &str =
    "case \"$TMPDIR\" in */agentci-attempt-*/tmp) test -d \"$TMPDIR\";; *) false;; esac";

fn suite(passes: &Path, fails: &Path) -> String {
    format!(
        "version: 1
name: isolation
job: job.yaml
cases:
  - name: passing-crate
    fixture: {passes}
    cassette: cassettes/idle.jsonl
    assert:
      - status: passed
      - run: cargo test --quiet
      - run: '{OWN_TMPDIR}'
  - name: failing-crate
    fixture: {fails}
    cassette: cassettes/idle.jsonl
    assert:
      - status: failed
      - run: '! cargo test --quiet'
      - run: '{OWN_TMPDIR}'
",
        passes = passes.display(),
        fails = fails.display(),
    )
}

fn sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.skill("adder-check", None);
    sandbox.write("job.yaml", JOB);
    sandbox.write(
        "record.yaml",
        &format!(
            "version: 1\nname: rec\njob: job.yaml\ncases:\n  - {{name: idle, fixture: {}, cassette: cassettes/idle.jsonl}}\n",
            data("passes").display()
        ),
    );
    let model = FakeModel::start(idle_script());
    let out = sandbox.agentci(&[
        "eval",
        "record.yaml",
        "--record",
        "--model",
        "openai:scripted",
        "--base-url",
        &model.base_url(),
        "--out",
        "rec",
        "--progress",
        "none",
    ]);
    assert_eq!(model.remaining(), 0, "recording: {}", stderr(&out));
    sandbox.write("suite.yaml", &suite(&data("passes"), &data("fails")));
    sandbox
}

#[test]
fn parallel_attempts_with_a_shared_cargo_target_dir_get_right_verdicts() {
    let sandbox = sandbox();
    let shared_target = sandbox.path().join("shared-target");
    let temp = sandbox.path().join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let out = agentci_in(
        sandbox.path(),
        &[
            "eval",
            "suite.yaml",
            "--repeat",
            "3",
            "--jobs",
            "2",
            "--out",
            "out",
            "--progress",
            "plain",
        ],
        &[
            ("CARGO_TARGET_DIR", &shared_target.display().to_string()),
            ("TMPDIR", &temp.display().to_string()),
        ],
    );
    let results: Value = serde_json::from_str(&sandbox.read("out/results.json"))
        .unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    for case in results["suites"][0]["cases"].as_array().unwrap() {
        for attempt in case["attempts"].as_array().unwrap() {
            assert_eq!(
                attempt["outcome"],
                "passed",
                "{} attempt {}: {}\nstderr: {}",
                case["name"],
                attempt["attempt"],
                attempt["reason"],
                stderr(&out)
            );
        }
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}\nstdout: {}",
        stderr(&out),
        stdout(&out)
    );
    // Nothing was built into the caller's folder, and every private area is gone.
    assert!(
        !shared_target.exists(),
        "an attempt built into the shared target folder"
    );
    let left: Vec<_> = std::fs::read_dir(&temp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_single_run_keeps_the_callers_cargo_target_dir() {
    let sandbox = Sandbox::new();
    sandbox.skill("adder-check", None);
    let model = FakeModel::start(idle_script());
    sandbox.write(
        "job.yaml",
        &JOB.replace(
            "model: {provider: openai, name: scripted}",
            &format!(
                "model: {{provider: openai, name: scripted, base_url: {}}}",
                model.base_url()
            ),
        ),
    );
    let ws = sandbox.workspace();
    for file in ["Cargo.toml", "Cargo.lock", "src/lib.rs"] {
        std::fs::create_dir_all(ws.join(file).parent().unwrap()).unwrap();
        std::fs::copy(data("passes").join(file), ws.join(file)).unwrap();
    }
    let target = sandbox.path().join("cache-target");
    let out = agentci_in(
        sandbox.path(),
        &["run", "job.yaml", "--workspace", "ws", "--progress", "none"],
        &[
            ("CARGO_TARGET_DIR", &target.display().to_string()),
            ("OPENAI_API_KEY", "sk-test"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        target.join("debug").is_dir(),
        "the check did not build into the caller's CARGO_TARGET_DIR"
    );
    assert!(!ws.join("target").exists());
}
