//! `agentci run --resume RUN_DIR`: a run killed with SIGKILL while the
//! model thinks, or stopped by its budget, goes on from its last checkpoint
//! to the end; the trace is one run (gapless `seq`, one `run.started`, a
//! `run.resumed` at the seam, one `run.completed`), the workspace ends as an
//! uninterrupted run's, and no tool call whose result the model had is run
//! again. A checkpoint of another job, skill or agentci version, and a run
//! that is done, are refused. The real binary against the fake model server.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::signals::wait_until;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{
    Sandbox, agentci_in, events, outside_github, read_jsonl, stderr, stdout,
};
use super::support::job::{JobBuilder, JobRun};
use super::support::trace_schema::assert_valid_trace;

/// A job that writes two files, one per step; its check wants both. The
/// model's address is given with `--base-url`, so a resumed run may reach
/// the model elsewhere with the same job file.
fn sandbox(job_extra: &str) -> Sandbox {
    JobBuilder::new("two-files", "writer", "")
        .goal("Write a.txt and b.txt.")
        .model_inline("{provider: openai, name: fake-model}")
        .tools("[read, write]")
        .body(&format!(
            "permissions: {{default: allow}}\n\
             checks:\n  - {{name: both written, run: 'test -f a.txt && test -f b.txt'}}\n\
             {job_extra}"
        ))
        .write()
}

fn plan() -> Reply {
    Reply::plan(&[("write a", "a.txt exists"), ("write b", "b.txt exists")])
}

fn write(path: &str, content: &str) -> Reply {
    Reply::tool_call("write", json!({"path": path, "content": content}))
}

/// What an uninterrupted run is sent, in order.
fn whole_script() -> Vec<Reply> {
    vec![
        plan(),
        write("a.txt", "one\n"),
        Reply::step_done("wrote a"),
        write("b.txt", "two\n"),
        Reply::step_done("wrote b"),
        Reply::text("Both files are written."),
    ]
}

fn run_dir(sb: &Sandbox) -> PathBuf {
    sb.path().join("out/run")
}

/// `agentci run job.yaml --out out/run` with `flags`: a resume is given the
/// flags the run started with, plus `--resume`.
fn run(sb: &Sandbox, model: &FakeModel, flags: &[&str]) -> std::process::Output {
    JobRun::bare(sb)
        .args(&["--base-url", &model.base_url(), "--progress", "none"])
        .args(flags)
        .args(&["--out", "out/run"])
        .output()
}

fn resume(sb: &Sandbox, model: &FakeModel, flags: &[&str]) -> std::process::Output {
    let dir = run_dir(sb).display().to_string();
    let mut args = vec!["--resume", dir.as_str()];
    args.extend_from_slice(flags);
    run(sb, model, &args)
}

fn trace(sb: &Sandbox) -> Vec<Value> {
    read_jsonl(&run_dir(sb).join("trace.jsonl"))
}

fn files(dir: &Path) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect();
    found.sort();
    found
}

/// The conversation a request sent, without the tools.
fn messages(request: &Value) -> Value {
    request["messages"].clone()
}

/// `agentci run` in `sb`, killed (SIGKILL: no chance to write anything)
/// once the model has been sent `requests` requests.
fn run_killed_at_request(sb: &Sandbox, model: &FakeModel, requests: usize) {
    let url = model.base_url();
    let mut child = outside_github(&mut Command::new(env!("CARGO_BIN_EXE_agentci")))
        .args(["run", "job.yaml", "--base-url", &url, "--progress", "none"])
        .args(["--out", "out/run"])
        .current_dir(sb.path())
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || model.requests().len()
            == requests),
        "the run never sent request {requests}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_run_killed_while_the_model_thinks_resumes_to_the_end_of_an_uninterrupted_run() {
    // The run the resumed one must end like.
    let whole = sandbox("");
    let model = FakeModel::start(whole_script());
    let out = run(&whole, &model, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // The same run, killed (SIGKILL: no chance to write anything) while the
    // fourth request, the second step's first turn, waits for its answer.
    let sb = sandbox("");
    let mut script = whole_script();
    script.insert(3, Reply::hang());
    let model = FakeModel::start(script);
    run_killed_at_request(&sb, &model, 4);
    let killed = trace(&sb);
    assert!(events(&killed, "run.completed").is_empty());
    // A kill mid-write leaves half a line; the resume drops it.
    let trace_file = run_dir(&sb).join("trace.jsonl");
    let mut text = std::fs::read_to_string(&trace_file).unwrap();
    text.push_str(r#"{"seq":999,"ts":"2026-"#);
    std::fs::write(&trace_file, text).unwrap();

    let out = resume(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_valid_trace(&trace_file);
    let trace = trace(&sb);
    assert_eq!(events(&trace, "run.started").len(), 1);
    assert_eq!(events(&trace, "run.completed").len(), 1);
    let resumed = events(&trace, "run.resumed");
    assert_eq!(resumed.len(), 1);
    let resumed = resumed[0];
    assert_eq!(resumed["from_turn"], 3);
    assert_eq!(resumed["from_step"], 1);
    assert_eq!(resumed["previous_status"], Value::Null);
    assert_eq!(resumed["torn_line_dropped"], true);
    // The held request (and nothing else) was after the checkpoint.
    assert_eq!(resumed["events_dropped"], 1);
    let done = events(&trace, "run.completed")[0];
    assert_eq!(done["status"], "passed");
    assert_eq!(done["totals"]["turns"], 6);

    // The workspace ends as the uninterrupted run's, and a.txt was written once.
    assert_eq!(files(&sb.workspace()), files(&whole.workspace()));
    let writes: Vec<&Value> = events(&trace, "tool.call")
        .into_iter()
        .filter(|e| e["tool"] == "write")
        .collect();
    assert_eq!(writes.len(), 2, "{writes:?}");
    // The resumed run sent the model what the killed run had sent it.
    let requests = model.requests();
    assert_eq!(requests.len(), 7);
    assert_eq!(messages(&requests[4]), messages(&requests[3]));
    // The JUnit file is rebuilt from the whole trace: the run passed.
    let junit = std::fs::read_to_string(run_dir(&sb).join("junit.xml")).unwrap();
    assert!(junit.contains("both written"), "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(!junit.contains("<error"), "{junit}");
}

/// Issue 26: a model that batches. The run is killed while the model
/// thinks about the turn after the response that brought the plan with the
/// first step's call: the resumed run goes on in that step (its plan, its
/// open step and the call's result with the step's instructions are in
/// the checkpoint), sends what the killed run sent, writes a.txt once and
/// ends with the report the last step_done gave.
#[test]
fn a_run_killed_after_planning_with_calls_resumes_in_the_step_it_opened() {
    let report = "Wrote a.txt and b.txt; the check will judge both.";
    let script = |hang: bool| {
        let mut script = vec![
            Reply::tool_calls(vec![
                (
                    "plan",
                    "submit_plan",
                    json!({"steps": [
                        {"title": "write a", "expected_outcome": "a.txt exists"},
                        {"title": "write b", "expected_outcome": "b.txt exists"}
                    ]}),
                ),
                ("a", "write", json!({"path": "a.txt", "content": "one\n"})),
            ]),
            Reply::step_done("wrote a"),
            Reply::tool_calls(vec![
                ("b", "write", json!({"path": "b.txt", "content": "two\n"})),
                (
                    "done",
                    "step_done",
                    json!({"summary": "wrote b", "report": report}),
                ),
            ]),
        ];
        if hang {
            script.insert(1, Reply::hang());
        }
        script
    };
    let sb = sandbox("");
    let model = FakeModel::start(script(true));
    run_killed_at_request(&sb, &model, 2);

    let out = resume(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_valid_trace(&run_dir(&sb).join("trace.jsonl"));
    let trace = trace(&sb);
    let resumed = events(&trace, "run.resumed");
    assert_eq!(resumed[0]["from_turn"], 1);
    assert_eq!(resumed[0]["from_step"], 0);
    let done = events(&trace, "run.completed")[0];
    assert_eq!(done["status"], "passed");
    assert_eq!(done["summary"], report);
    assert_eq!(done["totals"]["turns"], 3);
    // Step 1 started once, with the plan; the resumed run went on in it.
    assert_eq!(events(&trace, "step.started").len(), 2);
    let writes = events(&trace, "tool.call")
        .into_iter()
        .filter(|e| e["tool"] == "write")
        .count();
    assert_eq!(writes, 2);
    assert_eq!(sb.read("ws/a.txt"), "one\n");
    assert_eq!(sb.read("ws/b.txt"), "two\n");
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(messages(&requests[2]), messages(&requests[1]));
    let last = messages(&requests[1]);
    let result = last.as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(result.contains("Step 1 of 2: write a"), "{result}");
}

#[test]
fn a_budget_stopped_run_goes_on_with_a_raised_budget() {
    let sb = sandbox("budget: {max_turns: 3}\n");
    let model = FakeModel::start(whole_script());
    let out = run(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        events(&trace(&sb), "run.completed")[0]["status"],
        "budget_exceeded"
    );

    let out = resume(&sb, &model, &["--max-turns", "10"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace_file = run_dir(&sb).join("trace.jsonl");
    assert_valid_trace(&trace_file);
    let trace = trace(&sb);
    assert_eq!(events(&trace, "run.completed").len(), 1);
    assert_eq!(events(&trace, "budget.exceeded").len(), 0);
    let done = events(&trace, "run.completed")[0];
    assert_eq!(done["status"], "passed");
    assert_eq!(done["totals"]["turns"], 6);
    assert_eq!(model.remaining(), 0);
    assert_eq!(
        std::fs::read_to_string(sb.workspace().join("b.txt")).unwrap(),
        "two\n"
    );

    let mut resumed = events(&trace, "run.resumed")[0].clone();
    resumed["ts"] = json!("[ts]");
    resumed["run_id"] = json!("[run_id]");
    insta::assert_json_snapshot!("run_resumed_after_budget", resumed);
}

#[test]
fn a_run_stopped_by_a_failing_provider_goes_on_when_it_answers_again() {
    let sb = sandbox("");
    let mut script = whole_script();
    // Not retried: a client error.
    script.insert(3, Reply::status(403, "the key has no access"));
    let model = FakeModel::start(script);
    let out = run(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));

    let out = resume(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_valid_trace(&run_dir(&sb).join("trace.jsonl"));
    let trace = trace(&sb);
    let resumed = events(&trace, "run.resumed")[0];
    assert_eq!(resumed["previous_status"], "provider_unavailable");
    assert_eq!(resumed["budget_changed"], json!([]));
    assert_eq!(events(&trace, "run.completed")[0]["status"], "passed");
    // The failed request was sent again, the same.
    let requests = model.requests();
    assert_eq!(messages(&requests[4]), messages(&requests[3]));
}

/// A run stopped by its budget, ready to be resumed.
fn stopped_run() -> (Sandbox, FakeModel) {
    let sb = sandbox("budget: {max_turns: 2}\n");
    let model = FakeModel::start(whole_script());
    let out = run(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    (sb, model)
}

#[test]
fn a_checkpoint_of_another_job_or_skill_is_refused() {
    let (sb, model) = stopped_run();
    let job = sb.read("job.yaml").replace("Write a.txt", "Write c.txt");
    sb.write("job.yaml", &job);
    let out = resume(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("another job"), "{err}");
    assert!(err.contains("job.yaml"), "{err}");
    assert!(err.contains("checkpoint/state.json"), "{err}");

    let (sb, model) = stopped_run();
    let skill = sb.read("skills/writer/SKILL.md") + "\nAlso be brief.\n";
    sb.write("skills/writer/SKILL.md", &skill);
    let out = resume(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("another skill"), "{err}");
    assert!(err.contains("SKILL.md"), "{err}");
    // Nothing was touched: the stopped run's trace is as it was.
    assert_eq!(
        events(&trace(&sb), "run.completed")[0]["status"],
        "budget_exceeded"
    );
}

#[test]
fn a_checkpoint_of_another_agentci_version_is_refused() {
    let (sb, model) = stopped_run();
    let record = run_dir(&sb).join("checkpoint/state.json");
    let mut state: Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    state["agentci_version"] = json!("0.0.1-other");
    std::fs::write(&record, state.to_string()).unwrap();
    let out = resume(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("agentci 0.0.1-other"), "{err}");
    assert!(err.contains(env!("CARGO_PKG_VERSION")), "{err}");
    assert!(err.contains("state.json"), "{err}");
}

#[test]
fn a_finished_run_has_nothing_to_resume() {
    let sb = sandbox("");
    let model = FakeModel::start(whole_script());
    let out = run(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let before = std::fs::read_to_string(run_dir(&sb).join("trace.jsonl")).unwrap();
    let out = resume(&sb, &model, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("nothing to resume"), "{err}");
    assert!(err.contains("`passed`"), "{err}");
    let after = std::fs::read_to_string(run_dir(&sb).join("trace.jsonl")).unwrap();
    assert_eq!(before, after);
}

#[test]
fn resume_refuses_a_cassette_and_a_folder_without_a_checkpoint() {
    let (sb, model) = stopped_run();
    let out = resume(&sb, &model, &["--record", "out/cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--record"), "{}", stderr(&out));

    let url = model.base_url();
    let out = agentci_in(
        sb.path(),
        &["run", "job.yaml", "--base-url", &url, "--resume", "ws"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no checkpoint"), "{}", stderr(&out));
}

#[test]
fn a_resumed_run_streams_its_events_on_stdout_with_json() {
    let (sb, model) = stopped_run();
    let out = resume(&sb, &model, &["--json", "--max-turns", "10"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let kinds: Vec<&str> = lines.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(kinds.contains(&"run.resumed"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"run.completed"), "{kinds:?}");
    // The trace file goes on as well, and holds what stdout showed.
    assert_valid_trace(&run_dir(&sb).join("trace.jsonl"));
    let trace = trace(&sb);
    assert_eq!(events(&trace, "run.completed")[0]["status"], "passed");
    assert_eq!(events(&trace, "run.completed")[0], lines.last().unwrap());
}
