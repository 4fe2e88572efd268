//! `agentci eval` end to end: suites of replayed cases that pass, fail, are
//! flaky or error; sharding and merging; baselines; resuming; git fixtures;
//! the JUnit report against the schema; and the suites shipped in
//! `fixtures/`, which must run offline with their expected outcomes.
//!
//! The cassettes these tests replay are recorded in the test itself with
//! `agentci eval --record` against the scripted fake model server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use super::examples::{
    fix_failing_test_batched_script, fix_failing_test_script, write_changelog_batched_script,
    write_changelog_script,
};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, stderr, stdout};
use super::support::junit_schema::assert_readable;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(super) fn good_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Fix the status", "notes.txt says fixed")]),
        Reply::tool_call(
            "edit",
            json!({"path": "notes.txt", "old_text": "status: broken", "new_text": "status: fixed"}),
        ),
        Reply::step_done("status fixed"),
        Reply::text("Set the status to fixed."),
    ]
}

pub(super) fn bad_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Fix the status", "notes.txt says fixed")]),
        Reply::tool_call(
            "edit",
            json!({"path": "notes.txt", "old_text": "status: broken", "new_text": "status: still broken"}),
        ),
        Reply::step_done("tried"),
        Reply::text("Could not fix it."),
    ]
}

pub(super) const JOB: &str = "version: 1
name: fix-notes
skill: notes-fixer
skills_path: [skills]
goal: Change the status in notes.txt to fixed.
model: {provider: openai, name: scripted}
tools: [read, edit, ls]
permissions: {default: allow}
budget: {max_turns: 10}
checks:
  - {name: fixed, run: \"grep -q 'status: fixed' notes.txt\"}
";

const SUITE: &str = "version: 1
name: notes
job: job.yaml
cases:
  - name: passes
    fixture: fixture
    cassette: cassettes/good.jsonl
    assert:
      - file_contains: {path: notes.txt, pattern: 'status: fixed'}
      - tool_called: edit
      - tool_not_called: write
      - diff_touches_only: [notes.txt]
      - file_unchanged: keep.txt
      - final_text_matches: fixed
  - name: fails
    fixture: fixture
    cassette: cassettes/bad.jsonl
    assert:
      - file_contains: {path: notes.txt, pattern: 'status: fixed'}
  - name: expected-failure
    fixture: fixture
    cassette: cassettes/bad.jsonl
    assert:
      - status: failed
      - run: grep -q 'still broken' notes.txt
  - name: flaky
    fixture: fixture
    cassettes: [cassettes/good.jsonl, cassettes/bad.jsonl]
    min_pass_rate: 0.5
  - name: errors
    fixture: fixture
    goal: Something else entirely, which the cassette never saw.
    cassette: cassettes/good.jsonl
";

/// A sandbox with the skill, the job and the fixture a suite's cases
/// start from.
pub(super) fn job_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.skill("notes-fixer", None);
    sandbox.write("job.yaml", JOB);
    sandbox.write("fixture/notes.txt", "status: broken\n");
    sandbox
}

/// A sandbox with a skill, a job, a fixture and the two recorded cassettes.
pub(super) fn notes_sandbox() -> Sandbox {
    let sandbox = job_sandbox();
    sandbox.write("fixture/keep.txt", "leave me\n");
    sandbox.write(
        "record.yaml",
        "version: 1\nname: rec\njob: job.yaml\ncases:\n  - {name: good, fixture: fixture, cassette: cassettes/good.jsonl}\n  - {name: bad, fixture: fixture, cassette: cassettes/bad.jsonl}\n",
    );
    for (case, script) in [("good", good_script()), ("bad", bad_script())] {
        let model = FakeModel::start(script);
        let out = sandbox.agentci(&[
            "eval",
            "record.yaml",
            "--record",
            "--filter",
            case,
            "--model",
            "openai:scripted",
            "--base-url",
            &model.base_url(),
            "--out",
            "rec",
            "--progress",
            "none",
        ]);
        assert!(
            sandbox
                .path()
                .join(format!("cassettes/{case}.jsonl"))
                .is_file(),
            "recording {case}: {}",
            stderr(&out)
        );
        assert_eq!(model.remaining(), 0, "{case}: {}", stderr(&out));
    }
    sandbox.write("suite.yaml", SUITE);
    sandbox
}

/// `agentci eval ARGS` with its temporary workspaces in the sandbox, which
/// must all be gone when it exits: they are removed in the background
/// (regression: an early exit must not leave them behind).
pub(super) fn eval(sandbox: &Sandbox, args: &[&str]) -> Output {
    let mut all = vec!["eval"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--progress", "plain"]);
    let temp = sandbox.path().join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let out = agentci_in(
        sandbox.path(),
        &all,
        &[("TMPDIR", &temp.display().to_string())],
    );
    let left: Vec<_> = std::fs::read_dir(&temp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "workspaces left behind: {left:?}");
    out
}

pub(super) fn results(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

/// `case name → (status, flaky, passed, failed, errored)`.
fn verdicts(results: &Value) -> BTreeMap<String, (String, bool, u64, u64, u64)> {
    results["suites"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["cases"].as_array().unwrap())
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                (
                    c["status"].as_str().unwrap().to_string(),
                    c["flaky"].as_bool().unwrap(),
                    c["attempts_passed"].as_u64().unwrap(),
                    c["attempts_failed"].as_u64().unwrap(),
                    c["attempts_errored"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// Every file under `dir` with its contents.
fn listing(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(listing(&path));
        } else {
            out.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    out
}

#[test]
fn eval_reports_passing_failing_flaky_and_erroring_cases() {
    let sandbox = notes_sandbox();
    let fixture_before = listing(&sandbox.path().join("fixture"));
    let out = eval(
        &sandbox,
        &["suite.yaml", "--repeat", "2", "--jobs", "2", "--out", "out"],
    );
    // 3 of 5 cases pass, below the default gate of 100%.
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let out_dir = sandbox.path().join("out");
    let results = results(&out_dir);
    let v = verdicts(&results);
    assert_eq!(v["passes"], ("passed".into(), false, 2, 0, 0));
    assert_eq!(v["fails"], ("failed".into(), false, 0, 2, 0));
    assert_eq!(v["expected-failure"], ("passed".into(), false, 2, 0, 0));
    assert_eq!(v["flaky"], ("passed".into(), true, 1, 1, 0));
    assert_eq!(v["errors"], ("error".into(), false, 0, 0, 2));
    let suite = &results["suites"][0];
    assert_eq!(suite["cases_passed"], 3);
    assert_eq!(suite["gate_passed"], false);
    let flaky = &suite["cases"][3];
    assert_eq!(flaky["pass_at_1"], 0.5);
    assert_eq!(flaky["pass_at_k"], 1.0);
    assert_eq!(flaky["pass_pow_k"], 0.0);
    // A failed assertion says what was wrong; an error says why the run broke.
    let failed = &suite["cases"][1]["attempts"][0];
    assert_eq!(failed["outcome"], "failed");
    let missed = failed["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["passed"] == false)
        .map(|a| a["message"].as_str().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(
        missed,
        vec![
            "the run failed (1 of 1 checks failed), expected passed",
            "notes.txt does not match /status: fixed/"
        ]
    );
    let errored = &suite["cases"][4]["attempts"][0];
    assert_eq!(errored["run_status"], "provider_unavailable");
    assert!(
        errored["reason"].as_str().unwrap().contains("diverged"),
        "{errored}"
    );
    // Each attempt has its own run folder with a trace and JUnit file.
    for n in ["1", "2"] {
        let dir = out_dir.join("notes/flaky").join(n);
        assert!(dir.join("trace.jsonl").is_file() && dir.join("junit.xml").is_file());
        assert!(dir.join("attempt.json").is_file());
    }
    assert!(
        stdout(&out).contains("| notes | flaky | ✅ passed (flaky) | 1/2"),
        "{}",
        stdout(&out)
    );
    assert!(out_dir.join("summary.md").is_file());
    // The fixture is never the workspace: nothing in it changed.
    assert_eq!(listing(&sandbox.path().join("fixture")), fixture_before);

    let junit_path = out_dir.join("junit.xml");
    assert_readable(&junit_path);
    let xml = std::fs::read_to_string(&junit_path).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&xml).unwrap();
    let ts = &report.test_suites[0];
    let names: Vec<&str> = ts.test_cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["passes", "fails", "expected-failure", "flaky", "errors"]
    );
    assert_eq!((ts.tests, ts.failures, ts.errors), (5, 1, 1));
    assert!(xml.contains("<flakyFailure"), "{xml}");
    assert!(xml.contains("<rerunFailure"), "{xml}");
    assert!(xml.contains("<rerunError"), "{xml}");
    let props: BTreeMap<&str, &str> = ts
        .properties
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    assert_eq!(props["model"], "replay:scripted");
    assert!(props["turns"].parse::<u32>().unwrap() > 0);
    assert_eq!(props["cost_usd"], "unknown");
}

#[test]
fn shards_cover_every_case_once_and_merge_like_one_run() {
    let sandbox = notes_sandbox();
    let whole = eval(&sandbox, &["suite.yaml", "--out", "whole"]);
    assert_eq!(whole.status.code(), Some(1), "{}", stderr(&whole));
    let mut seen = Vec::new();
    for i in 1..=3 {
        let shard = format!("{i}/3");
        let out_dir = format!("shard{i}");
        let out = eval(
            &sandbox,
            &["suite.yaml", "--shard", &shard, "--out", &out_dir],
        );
        assert!(out.status.code().is_some(), "{}", stderr(&out));
        let r = results(&sandbox.path().join(&out_dir));
        assert_eq!(r["shard"], shard.as_str());
        let names: Vec<String> = verdicts(&r).into_keys().collect();
        assert!(names.len() == 1 || names.len() == 2, "{names:?}");
        seen.extend(names);
    }
    seen.sort();
    let mut all: Vec<String> = verdicts(&results(&sandbox.path().join("whole")))
        .into_keys()
        .collect();
    all.sort();
    assert_eq!(seen, all, "every case exactly once");

    let merged = sandbox.agentci(&[
        "report", "merge", "shard1", "shard2", "shard3", "--out", "merged",
    ]);
    assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
    let m = results(&sandbox.path().join("merged"));
    let w = results(&sandbox.path().join("whole"));
    for key in [
        "cases_total",
        "cases_passed",
        "cases_failed",
        "cases_errored",
        "cases_flaky",
        "pass_rate",
        "pass_at_1",
        "pass_at_k",
        "pass_pow_k",
        "gate_passed",
        "turns",
        "input_tokens",
        "output_tokens",
    ] {
        assert_eq!(m["suites"][0][key], w["suites"][0][key], "{key}");
    }
    assert_eq!(verdicts(&m), verdicts(&w));
    assert_readable(&sandbox.path().join("merged/junit.xml"));
    // Giving the same shard twice is refused rather than double counted.
    let twice = sandbox.agentci(&[
        "report", "merge", "shard1", "shard1", "shard2", "shard3", "--out", "bad",
    ]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(
        stderr(&twice).contains("shard 1/3 is given more than once"),
        "{}",
        stderr(&twice)
    );
    // Regression: a missing shard merged into a smaller suite, exit 0 if it passed.
    let partial = sandbox.agentci(&["report", "merge", "shard1", "shard3", "--out", "bad"]);
    assert_eq!(partial.status.code(), Some(2));
    assert!(
        stderr(&partial).contains("shard 2/3 is missing"),
        "{}",
        stderr(&partial)
    );
    assert!(!sandbox.path().join("bad").exists());
}

// Regression: a case's duration is the sum over its attempts, and was
// compared as one figure, so `--repeat 3` against a baseline run once was a
// "mean case duration" regression though every attempt took as long.
#[test]
fn a_baseline_run_with_another_repeat_compares_per_attempt() {
    let sandbox = notes_sandbox();
    let args = [
        "suite.yaml",
        "--filter",
        "passes",
        "--repeat",
        "3",
        "--out",
        "now",
    ];
    let first = eval(&sandbox, &args);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    // The baseline: the same attempts' figures, as a run with `--repeat 1`
    // taking exactly as long per attempt would have written them.
    let mut base = results(&sandbox.path().join("now"));
    base["repeat"] = 1.into();
    for suite in base["suites"].as_array_mut().unwrap() {
        for case in suite["cases"].as_array_mut().unwrap() {
            let attempts = case["attempts"].as_array().unwrap().len() as u64;
            assert_eq!(attempts, 3);
            case["duration_ms"] = (case["duration_ms"].as_u64().unwrap() / attempts).into();
            case["attempts_passed"] = 1.into();
            case["attempts"].as_array_mut().unwrap().truncate(1);
        }
        let mean = suite["cases"][0]["duration_ms"].clone();
        suite["mean_duration_ms"] = mean;
    }
    sandbox.write("base.json", &base.to_string());
    // The same attempts again (kept from before, so their times are the
    // ones above), compared with the baseline.
    let mut again = args.to_vec();
    again.extend(["--baseline", "base.json"]);
    let out = eval(&sandbox, &again);
    let err = stderr(&out);
    assert!(err.contains("3 kept from before"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("no regression"), "{err}");
}

#[test]
fn baseline_flags_a_regression_by_name_and_passes_without_one() {
    let sandbox = notes_sandbox();
    let lenient = ["--min-pass-rate", "0", "--max-duration-increase", "1000"];
    let mut args = vec!["suite.yaml", "--filter", "passes", "--out", "base"];
    args.extend(lenient);
    let base = eval(&sandbox, &args);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));

    // The same suite again: nothing regressed.
    let mut args = vec![
        "suite.yaml",
        "--filter",
        "passes",
        "--out",
        "again",
        "--baseline",
        "base/results.json",
    ];
    args.extend(lenient);
    let again = eval(&sandbox, &args);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("no regression"),
        "{}",
        stderr(&again)
    );

    // The case now replays the bad session: it regresses, and is named.
    sandbox.write(
        "suite.yaml",
        &SUITE.replacen("cassettes/good.jsonl", "cassettes/bad.jsonl", 1),
    );
    let mut args = vec![
        "suite.yaml",
        "--filter",
        "passes",
        "--out",
        "now",
        "--baseline",
        "base/results.json",
    ];
    args.extend(lenient);
    let now = eval(&sandbox, &args);
    assert_eq!(now.status.code(), Some(1), "{}", stderr(&now));
    let err = stderr(&now);
    assert!(
        err.contains("regression: notes/passes: passed in the baseline, failed now"),
        "{err}"
    );
    assert!(
        err.contains("regression: notes: pass rate 100.0% → 0.0%"),
        "{err}"
    );
}

#[test]
fn resume_skips_finished_attempts_and_retry_errors_reruns_only_errors() {
    let sandbox = notes_sandbox();
    let first = eval(&sandbox, &["suite.yaml", "--out", "out"]);
    assert!(
        stderr(&first).contains("5 attempts to run, 0 kept"),
        "{}",
        stderr(&first)
    );
    let attempt = sandbox.path().join("out/notes/passes/1/attempt.json");
    let written = std::fs::read_to_string(&attempt).unwrap();

    let resumed = eval(&sandbox, &["suite.yaml", "--out", "out"]);
    assert!(
        stderr(&resumed).contains("0 attempts to run, 5 kept"),
        "{}",
        stderr(&resumed)
    );
    assert_eq!(std::fs::read_to_string(&attempt).unwrap(), written);
    assert_eq!(
        verdicts(&results(&sandbox.path().join("out")))["passes"].0,
        "passed"
    );

    let retried = eval(&sandbox, &["suite.yaml", "--out", "out", "--retry-errors"]);
    let err = stderr(&retried);
    assert!(err.contains("1 attempts to run, 4 kept"), "{err}");
    assert!(err.contains("notes/errors #1: error"), "{err}");
    assert!(!err.contains("notes/passes #1"), "{err}");
    assert_eq!(std::fs::read_to_string(&attempt).unwrap(), written);

    // A second repeat only adds the new attempts.
    let more = eval(&sandbox, &["suite.yaml", "--out", "out", "--repeat", "2"]);
    assert!(
        stderr(&more).contains("5 attempts to run, 5 kept"),
        "{}",
        stderr(&more)
    );
    // Changing a case's definition re-runs it.
    sandbox.write(
        "suite.yaml",
        &SUITE.replace(
            "final_text_matches: fixed",
            "final_text_matches: '(?i)status'",
        ),
    );
    let changed = eval(&sandbox, &["suite.yaml", "--out", "out", "--repeat", "2"]);
    assert!(
        stderr(&changed).contains("2 attempts to run, 8 kept"),
        "{}",
        stderr(&changed)
    );
}

#[test]
fn git_fixture_is_checked_out_at_its_revision() {
    let sandbox = notes_sandbox();
    let repo_dir = sandbox.path().join("notes-repo");
    let repo = git2::Repository::init(&repo_dir).unwrap();
    let signature = git2::Signature::now("t", "t@example.com").unwrap();
    let commit = |text: &str, parents: &[&git2::Commit]| {
        std::fs::write(repo_dir.join("notes.txt"), text).unwrap();
        std::fs::write(repo_dir.join("keep.txt"), "leave me\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("notes.txt")).unwrap();
        index.add_path(Path::new("keep.txt")).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        index.write().unwrap();
        let id = repo
            .commit(Some("HEAD"), &signature, &signature, text, &tree, parents)
            .unwrap();
        repo.find_commit(id).unwrap()
    };
    let first = commit("status: broken\n", &[]);
    commit("status: fixed\n", &[&first]);
    let suite = SUITE.replacen(
        "fixture: fixture",
        &format!("fixture: {{git: notes-repo, rev: {}}}", first.id()),
        1,
    );
    sandbox.write("suite.yaml", &suite);
    let out = eval(
        &sandbox,
        &["suite.yaml", "--filter", "passes", "--out", "out"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&sandbox.path().join("out"));
    assert_eq!(
        r["suites"][0]["cases"][0]["attempts"][0]["changed"],
        json!(["notes.txt"])
    );
    // The source repository is untouched.
    assert_eq!(
        std::fs::read_to_string(repo_dir.join("notes.txt")).unwrap(),
        "status: fixed\n"
    );
}

#[test]
fn suite_errors_name_file_line_and_column() {
    let sandbox = notes_sandbox();
    sandbox.write(
        "broken.yaml",
        "version: 1\njob: job.yaml\ncases:\n  - name: a\n    fixture: fixture\n    cassette: cassettes/good.jsonl\n    assert:\n      - file_contains: {path: x, pattern: '('}\n      - status: done\n  - name: a\n    fixture: nowhere\n",
    );
    let out = eval(&sandbox, &["broken.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("broken.yaml:8:9: error: `file_contains`: invalid regular expression"),
        "{err}"
    );
    assert!(
        err.contains("broken.yaml:9:9: error: unknown status `done`"),
        "{err}"
    );
    assert!(
        err.contains("broken.yaml:10:11: error: case name `a` is used twice"),
        "{err}"
    );
    assert!(
        err.contains("broken.yaml:11:14: error: fixture folder"),
        "{err}"
    );
    // Regression: an unknown key stopped the parse, hiding the problems after it.
    sandbox.write(
        "typo.yaml",
        "job: job.yaml\ncases:\n  - name: a\n    fixtur: fixture\n  - name: b\n    fixture: nowhere\n    bogus: 1\n",
    );
    let out = eval(&sandbox, &["typo.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("typo.yaml:4:5: error: unknown key `fixtur`"),
        "{err}"
    );
    assert!(
        err.contains("typo.yaml:7:5: error: unknown key `bogus`"),
        "{err}"
    );
    assert!(
        err.contains("typo.yaml:6:14: error: fixture folder"),
        "{err}"
    );
}

/// The suites shipped in `fixtures/`, replayed offline from their cassettes.
#[test]
fn shipped_suites_run_offline_with_their_expected_outcomes() {
    let out_dir = tempfile::tempdir().unwrap();
    let fixture = repo().join("fixtures/fix-failing-test/calc-add");
    let before = listing(&fixture);
    let out = agentci_in(
        &repo(),
        &[
            "eval",
            "fixtures/fix-failing-test/suite.yaml",
            "fixtures/write-changelog/suite.yaml",
            "--out",
            &out_dir.path().display().to_string(),
            "--progress",
            "plain",
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}\nstdout: {}",
        stderr(&out),
        stdout(&out)
    );
    let r = results(out_dir.path());
    let v = verdicts(&r);
    assert_eq!(v.len(), 9);
    assert!(v.values().all(|c| c.0 == "passed"), "{v:?}");
    let run_status = |suite: usize, case: &str| {
        r["suites"][suite]["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == case)
            .unwrap()["attempts"][0]["run_status"]
            .clone()
    };
    assert_eq!(run_status(0, "add-subtracts"), "passed");
    assert_eq!(run_status(0, "wrong-fix-is-caught"), "failed");
    assert_eq!(run_status(0, "tiny-budget"), "budget_exceeded");
    assert_eq!(run_status(1, "released-section-edit-is-caught"), "failed");
    assert_eq!(listing(&fixture), before);
    assert_readable(&out_dir.path().join("junit.xml"));
}

/// How a scripted model works: one call per turn, or as many as a
/// response can carry (issue 26).
#[derive(Clone, Copy, PartialEq)]
enum Batching {
    OneCallPerTurn,
    Batched,
}

fn fix_script(
    batching: Batching,
    (grep, old, new): (&str, &str, &str),
    summary: &str,
    fix_works: bool,
) -> Vec<Reply> {
    let plan = json!({"steps": [
        {"title": "Reproduce the failure", "expected_outcome": "cargo test shows which test fails"},
        {"title": "Fix the code under test", "expected_outcome": "the function does what its test says"},
        {"title": "Confirm the fix", "expected_outcome": "cargo test passes"},
    ]});
    let test = json!({"command": "cargo test --quiet"});
    let edit = json!({"path": "src/lib.rs", "old_text": old, "new_text": new});
    let mut script = vec![
        Reply::tool_calls(vec![
            ("call_1", "ls", json!({})),
            ("call_2", "grep", json!({"pattern": grep, "path": "src"})),
        ]),
        Reply::tool_calls(vec![("call_3", "read", json!({"path": "src/lib.rs"}))]),
    ];
    if batching == Batching::OneCallPerTurn {
        script.extend([
            Reply::tool_calls(vec![("call_4", "submit_plan", plan)]),
            Reply::tool_calls(vec![("call_5", "exec", test.clone())]),
            Reply::step_done("a test fails"),
            Reply::tool_calls(vec![("call_7", "edit", edit)]),
            Reply::step_done("edited the function"),
            Reply::tool_calls(vec![("call_9", "exec", test)]),
            Reply::step_done("ran cargo test"),
            Reply::text(summary),
        ]);
        return script;
    }
    let last_done = json!({"summary": "ran cargo test", "report": summary});
    script.extend([
        Reply::tool_calls(vec![
            ("call_4", "submit_plan", plan),
            ("call_5", "exec", test.clone()),
        ]),
        Reply::tool_calls(vec![(
            "call_6",
            "step_done",
            json!({"summary": "a test fails"}),
        )]),
        Reply::tool_calls(vec![
            ("call_7", "edit", edit),
            (
                "call_8",
                "step_done",
                json!({"summary": "edited the function"}),
            ),
        ]),
        Reply::tool_calls(vec![
            ("call_9", "exec", test),
            ("call_10", "step_done", last_done.clone()),
        ]),
    ]);
    // A fix that does not work: `cargo test` fails, the step_done that
    // came with it is not applied, and the model ends the step after.
    if !fix_works {
        script.push(Reply::tool_calls(vec![("call_11", "step_done", last_done)]));
    }
    script
}

fn changelog_script(batching: Batching, old: &str, new: &str, summary: &str) -> Vec<Reply> {
    let plan = json!({"steps": [
        {"title": "Add the entry", "expected_outcome": "one bullet in the right section"}
    ]});
    let edit = json!({"path": "CHANGELOG.md", "old_text": old, "new_text": new});
    let read = Reply::tool_calls(vec![("call_1", "read", json!({"path": "CHANGELOG.md"}))]);
    if batching == Batching::OneCallPerTurn {
        return vec![
            read,
            Reply::tool_calls(vec![("call_2", "submit_plan", plan)]),
            Reply::tool_calls(vec![("call_3", "edit", edit)]),
            Reply::step_done("added the entry"),
            Reply::text(summary),
        ];
    }
    // A one-step plan, its edit and its step_done with the report: one response.
    vec![
        read,
        Reply::tool_calls(vec![
            ("call_2", "submit_plan", plan),
            ("call_3", "edit", edit),
            (
                "call_4",
                "step_done",
                json!({"summary": "added the entry", "report": summary}),
            ),
        ]),
    ]
}

/// The scripted session behind each shipped case's cassette (batched), or
/// the same sessions one call per turn.
fn shipped_scripts(batching: Batching) -> Vec<(&'static str, &'static str, Vec<Reply>)> {
    let fixed = "- `add` now returns the sum of its arguments; it returned their difference.\n";
    let (example, changelog) = match batching {
        Batching::Batched => (
            fix_failing_test_batched_script as fn() -> Vec<Reply>,
            write_changelog_batched_script as fn() -> Vec<Reply>,
        ),
        Batching::OneCallPerTurn => (
            fix_failing_test_script as fn() -> Vec<Reply>,
            write_changelog_script as fn() -> Vec<Reply>,
        ),
    };
    vec![
        ("fix-failing-test", "add-subtracts", example()),
        (
            "fix-failing-test",
            "mul-off-by-one",
            fix_script(
                batching,
                ("fn mul", "    a * b + 1", "    a * b"),
                "Fixed `mul`: it added one to the product.",
                true,
            ),
        ),
        ("fix-failing-test", "tests-kept", example()),
        (
            "fix-failing-test",
            "wrong-fix-is-caught",
            fix_script(
                batching,
                ("fn add", "    a - b", "    b - a"),
                "Swapped the operands of `add`.",
                false,
            ),
        ),
        ("fix-failing-test", "tiny-budget", example()),
        ("write-changelog", "fixed-entry", changelog()),
        (
            "write-changelog",
            "added-entry",
            changelog_script(
                batching,
                "## Unreleased\n",
                "## Unreleased\n\n### Added\n- `sub` returns the difference of its arguments.\n",
                "Added an `### Added` entry for `sub`.",
            ),
        ),
        (
            "write-changelog",
            "creates-unreleased",
            changelog_script(
                batching,
                "## 0.1.0\n",
                &format!("## Unreleased\n\n### Fixed\n{fixed}\n## 0.1.0\n"),
                "Added an Unreleased section with a Fixed entry.",
            ),
        ),
        (
            "write-changelog",
            "released-section-edit-is-caught",
            changelog_script(
                batching,
                "## 0.1.0\n",
                &format!("## 0.1.0\n\n### Fixed\n{fixed}"),
                "Added a Fixed entry.",
            ),
        ),
    ]
}

/// Run one case of a shipped suite live against `model`, recording its
/// cassette or not; the eval's output.
fn eval_case_live(
    suite: &str,
    case: &str,
    model: &FakeModel,
    record: bool,
) -> std::process::Output {
    let out_dir = tempfile::tempdir().unwrap();
    let suite_path = format!("fixtures/{suite}/suite.yaml");
    let base_url = model.base_url();
    let out_path = out_dir.path().display().to_string();
    let mut args = vec![
        "eval",
        &suite_path,
        "--filter",
        case,
        "--model",
        "openai:scripted-example",
        "--base-url",
        &base_url,
        "--jobs",
        "1",
        "--out",
        &out_path,
        "--progress",
        "plain",
    ];
    if record {
        args.push("--record");
    }
    agentci_in(&repo(), &args, &[])
}

/// Issue 26: a model that makes one call per turn, as older and smaller
/// models do, still completes every shipped suite's case with the
/// outcome the case expects (the batching sessions are the cassettes).
#[test]
fn shipped_suites_pass_live_with_a_model_that_does_not_batch() {
    for (suite, case, script) in shipped_scripts(Batching::OneCallPerTurn) {
        let model = FakeModel::start(script);
        let out = eval_case_live(suite, case, &model, false);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{suite}/{case}: {}",
            stderr(&out)
        );
    }
}

#[test]
#[ignore = "rewrites the cassettes of fixtures/*/suite.yaml; run after an intended protocol change"]
fn regenerate_eval_cassettes() {
    for (suite, case, script) in shipped_scripts(Batching::Batched) {
        let model = FakeModel::start(script);
        let out = eval_case_live(suite, case, &model, true);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{suite}/{case}: {}",
            stderr(&out)
        );
    }
}

/// Regression: eval accepted only `openai:` models (for `--model` and a
/// case's `model:`) after the Anthropic provider was added. A case naming
/// an Anthropic model records against the fake server in its wire format,
/// then replays offline.
#[test]
fn a_case_can_name_an_anthropic_model_and_record_it() {
    let sandbox = job_sandbox();
    sandbox.write(
        "suite.yaml",
        "version: 1\nname: claude\njob: job.yaml\ncases:\n  - name: fix\n    fixture: fixture\n    model: anthropic:claude-haiku-4-5\n    cassette: cassettes/fix.jsonl\n",
    );
    let model = FakeModel::start(good_script());
    let url = model.base_url();
    let record = agentci_in(
        sandbox.path(),
        &[
            "eval",
            "suite.yaml",
            "--record",
            "--base-url",
            &url,
            "--out",
            "rec",
        ],
        &[("ANTHROPIC_API_KEY", "test-key")],
    );
    assert_eq!(record.status.code(), Some(0), "{}", stderr(&record));
    assert!(
        model
            .captured()
            .iter()
            .all(|r| r.path == "/v1/messages" && r.body["model"] == "claude-haiku-4-5")
    );
    let header: Value =
        serde_json::from_str(sandbox.read("cassettes/fix.jsonl").lines().next().unwrap()).unwrap();
    assert_eq!(header["provider"], "anthropic");
    drop(model);
    let replay = eval(&sandbox, &["suite.yaml", "--out", "replay"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    // `--model` takes every provider too, and still rejects unknown ones by name.
    let unknown = eval(&sandbox, &["suite.yaml", "--model", "gemini:pro"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("unknown provider `gemini`"),
        "{}",
        stderr(&unknown)
    );
}

/// Regression: `--record` saved `cassettes/<case>.jsonl` (and `<case>-2.jsonl`
/// for a second attempt) for a case naming no cassette, but the next run
/// ignored them and ran live. Also refused up front: two attempts recording
/// into one cassette, and a `--filter` that matches no case (exit 0 having
/// run nothing).
#[test]
fn recorded_cassettes_are_replayed_and_record_collisions_are_refused() {
    let sandbox = job_sandbox();
    sandbox.write(
        "suite.yaml",
        "version: 1\nname: s\njob: job.yaml\ncases:\n  - {name: good, fixture: fixture}\n",
    );
    let mut script = good_script();
    script.extend(bad_script());
    let model = FakeModel::start(script);
    let url = model.base_url();
    let record = eval(
        &sandbox,
        &[
            "suite.yaml",
            "--record",
            "--repeat",
            "2",
            "--jobs",
            "1",
            "--model",
            "openai:scripted",
            "--base-url",
            &url,
            "--out",
            "rec",
        ],
    );
    // The second attempt replays the bad session: 1 of 2 passed.
    assert_eq!(record.status.code(), Some(1), "{}", stderr(&record));
    assert_eq!(model.remaining(), 0);
    drop(model);
    for name in ["good.jsonl", "good-2.jsonl"] {
        assert!(
            sandbox.path().join("cassettes").join(name).is_file(),
            "{name}"
        );
    }
    let replay = eval(
        &sandbox,
        &["suite.yaml", "--repeat", "2", "--out", "replay"],
    );
    let v = verdicts(&results(&sandbox.path().join("replay")));
    assert_eq!(
        v["good"],
        ("failed".into(), true, 1, 1, 0),
        "{}",
        stderr(&replay)
    );

    let shared = notes_sandbox();
    let refused = eval(&shared, &["suite.yaml", "--record", "--out", "x"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = stderr(&refused);
    assert!(
        err.contains("suite.yaml: error: --record: `notes/passes` attempt 1 and `notes/flaky` attempt 1 would both record to")
            && err.contains("cassettes/good.jsonl; give each case its own `cassette`"),
        "{err}"
    );
    assert!(!shared.path().join("x").exists());
    // Regression: --record --repeat 3 on a case naming one cassette saved two
    // more cassettes that replay never used.
    let short = eval(
        &shared,
        &[
            "suite.yaml",
            "--record",
            "--repeat",
            "3",
            "--filter",
            "passes",
            "--out",
            "z",
        ],
    );
    assert_eq!(short.status.code(), Some(2));
    let err = stderr(&short);
    assert!(
        err.contains("case `passes` names 1 cassette(s) but --repeat 3 records 3 attempts"),
        "{err}"
    );
    assert!(!shared.path().join("z").exists());
    let nothing = eval(&shared, &["suite.yaml", "--filter", "pases", "--out", "y"]);
    assert_eq!(nothing.status.code(), Some(2));
    assert!(
        stderr(&nothing).contains("--filter: `pases` matches no case"),
        "{}",
        stderr(&nothing)
    );
}
