//! SIGTERM and SIGINT during `agentci eval`: the evaluation stops within
//! seconds with exit 143 or 130, the running attempt's tool process and
//! every temporary workspace are gone, the results of what finished are
//! written with the interrupted attempt as an error, and running again into
//! the same `--out` re-runs only the interrupted case.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::signals::{processes_with, signal_and_wait, wait_until};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, outside_github, read_jsonl, stderr};
use super::support::wait::HANG;

/// Two identical cases (which one runs first is up to the scheduler) of a
/// job that may run `sleep`, live against the fake model.
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.skill("waiter", Some("Bash(sleep:*)"));
    sb.write(
        "job.yaml",
        "name: wait\nskill: waiter\ngoal: Wait.\nskills_path: [skills]\n\
         model: {provider: openai, name: fake-model}\n\
         tools: [exec]\npermissions: {default: deny, allow: [\"exec(sleep *)\"]}\n\
         checks:\n  - {name: ok, run: 'true'}\n",
    );
    sb.write("fixture/notes.txt", "nothing here\n");
    sb.write(
        "suite.yaml",
        "version: 1\nname: waits\njob: job.yaml\ncases:\n  - {name: one, fixture: fixture}\n  \
         - {name: two, fixture: fixture}\n",
    );
    std::fs::create_dir_all(sb.path().join("tmp")).unwrap();
    sb
}

fn temp(sb: &Sandbox) -> PathBuf {
    sb.path().join("tmp")
}

fn args(base_url: &str) -> Vec<String> {
    [
        "eval",
        "suite.yaml",
        "--model",
        "openai:fake-model",
        "--base-url",
        base_url,
        "--jobs",
        "1",
        "--out",
        "out",
        "--progress",
        "plain",
    ]
    .map(String::from)
    .to_vec()
}

fn spawn(sb: &Sandbox, base_url: &str) -> Child {
    outside_github(&mut Command::new(env!("CARGO_BIN_EXE_agentci")))
        .args(args(base_url))
        .current_dir(sb.path())
        .env_remove("OPENAI_API_KEY")
        .env("TMPDIR", temp(sb))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn quick_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Nothing", "nothing to do")]),
        Reply::step_done("nothing to do"),
        Reply::text("Done."),
    ]
}

fn assert_no_workspace_left(sb: &Sandbox) {
    let left: Vec<_> = std::fs::read_dir(temp(sb))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "workspaces left behind: {left:?}");
}

fn results(sb: &Sandbox) -> Value {
    serde_json::from_str(&std::fs::read_to_string(sb.path().join("out/results.json")).unwrap())
        .unwrap()
}

/// `case name → case` of the only suite.
fn cases(results: &Value) -> Vec<Value> {
    let suites = results["suites"].as_array().unwrap();
    assert_eq!(suites.len(), 1, "{results:#}");
    suites[0]["cases"].as_array().unwrap().clone()
}

fn attempt_file(sb: &Sandbox, case: &str) -> PathBuf {
    sb.path().join(format!("out/waits/{case}/1/attempt.json"))
}

fn assert_interrupted_attempt(sb: &Sandbox, case: &Value, by: &str) {
    let name = case["name"].as_str().unwrap();
    assert_eq!(case["status"], "error", "{case:#}");
    let attempt = &case["attempts"][0];
    assert_eq!(attempt["outcome"], "error");
    assert_eq!(attempt["interrupted"], true);
    assert_eq!(attempt["reason"], format!("interrupted by {by}"));
    assert!(
        !attempt_file(sb, name).exists(),
        "an interrupted attempt must not be kept for resuming"
    );
    let dir = sb.path().join(format!("out/waits/{name}/1"));
    let trace = read_jsonl(&dir.join("trace.jsonl"));
    let last = trace.last().unwrap();
    assert_eq!(last["type"], "run.completed");
    assert_eq!(last["status"], "interrupted");
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains("type=\"interrupted\""), "{junit}");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn sigterm_stops_the_running_attempt_keeps_the_finished_one_and_resumes() {
    const MARKER: &str = "28.75";
    let mut script = quick_script();
    script.extend([
        Reply::plan(&[("Wait", "waited")]),
        Reply::tool_call("exec", json!({"command": format!("sleep {MARKER}")})),
        Reply::step_done("waited"),
        Reply::text("Done."),
    ]);
    let model = FakeModel::start(script);
    let sb = sandbox();
    let mut child = spawn(&sb, &model.base_url());
    assert!(
        wait_until(HANG, || processes_with(MARKER) > 0),
        "the second attempt never started sleep"
    );
    let (code, _) = signal_and_wait(&mut child, libc::SIGTERM);
    assert_eq!(code, 143);
    assert!(
        wait_until(Duration::from_secs(10), || processes_with(MARKER) == 0),
        "the tool's sleep outlived the evaluation"
    );
    assert_no_workspace_left(&sb);

    let results = results(&sb);
    assert!(
        results["interrupted"]
            .as_str()
            .unwrap()
            .starts_with("interrupted by SIGTERM: 1 attempts stopped"),
        "{results:#}"
    );
    let both = cases(&results);
    assert_eq!(both.len(), 2);
    let (finished, stopped) = if both[0]["status"] == "passed" {
        (&both[0], &both[1])
    } else {
        (&both[1], &both[0])
    };
    assert_eq!(finished["status"], "passed", "{results:#}");
    assert!(attempt_file(&sb, finished["name"].as_str().unwrap()).is_file());
    assert_interrupted_attempt(&sb, stopped, "SIGTERM");
    let summary = read(&sb.path().join("out/summary.md"));
    assert!(summary.contains("**Interrupted**"), "{summary}");
    let junit = read(&sb.path().join("out/junit.xml"));
    assert!(junit.contains("interrupted by SIGTERM"), "{junit}");

    // Running again runs the interrupted case, which was not saved. The new
    // fake server listens on another port: another `--base-url` is another
    // model endpoint, so the finished attempt runs again too, and says why
    // (issue 22: a changed --base-url used to keep everything).
    let model = FakeModel::start([quick_script(), quick_script()].concat());
    let args = args(&model.base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let tmp = temp(&sb).display().to_string();
    let out = agentci_in(sb.path(), &args, &[("TMPDIR", &tmp)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("2 attempts to run, 0 kept"), "{err}");
    assert!(
        err.contains("eval: 1 re-run: the model settings changed\n"),
        "{err}"
    );
    assert_eq!(model.remaining(), 0);
    assert_no_workspace_left(&sb);
    let results = self::results(&sb);
    assert!(results.get("interrupted").is_none(), "{results:#}");
    let statuses: Vec<Value> = cases(&results)
        .into_iter()
        .map(|c| c["status"].clone())
        .collect();
    assert_eq!(statuses, ["passed", "passed"]);
}

#[test]
fn sigint_during_a_model_call_exits_130_and_leaves_out_what_never_started() {
    let model = FakeModel::start(vec![Reply::delay(
        Duration::from_secs(60),
        Reply::plan(&[("Never", "never")]),
    )]);
    let sb = sandbox();
    let mut child = spawn(&sb, &model.base_url());
    assert!(
        wait_until(HANG, || !model.requests().is_empty()),
        "the first attempt never called the model"
    );
    let (code, _) = signal_and_wait(&mut child, libc::SIGINT);
    assert_eq!(code, 130);
    assert_no_workspace_left(&sb);

    let results = results(&sb);
    assert!(
        results["interrupted"]
            .as_str()
            .unwrap()
            .starts_with("interrupted by SIGINT: 1 attempts stopped (errors), 1 not started"),
        "{results:#}"
    );
    // With --jobs 1 the other case never started: it is left out.
    let cases = cases(&results);
    assert_eq!(cases.len(), 1, "{results:#}");
    assert_interrupted_attempt(&sb, &cases[0], "SIGINT");
    assert!(read(&sb.path().join("out/summary.md")).contains("1 not started"));
    assert!(sb.path().join("out/junit.xml").is_file());
}
