//! SIGTERM and SIGINT during `agentci run`: the run stops within seconds,
//! the trace ends with `run.completed` `interrupted`, the JUnit file is
//! written, tools' processes are gone, and the exit code is 143 or 130.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl};
use super::support::job::{JobBuilder, JobRun};
use super::support::trace_schema::assert_valid_trace;
use super::support::wait::{HANG, file_has, wait_for};

fn sandbox(base_url: &str) -> Sandbox {
    JobBuilder::new("wait", "waiter", base_url)
        .allowed_tools("Bash(sleep:*)")
        .goal("Wait.")
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: {base_url}}}"
        ))
        .tools("[exec]")
        .body(
            "permissions: {default: deny, allow: [\"exec(sleep *)\"]}\n\
             checks:\n  - {name: never runs, run: 'true'}\n",
        )
        .write()
}

fn spawn(sb: &Sandbox) -> Child {
    JobRun::new(sb)
        .junit()
        .progress("none")
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

pub(super) use super::support::wait::{processes_with, wait_until};

fn trace_has(path: &Path, needle: &str) -> bool {
    file_has(path, needle)
}

/// Send `signal`, then wait for the exit code; panics after [`HANG`].
pub(super) fn signal_and_wait(child: &mut Child, signal: i32) -> (i32, Duration) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill only sends a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let sent = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let took = sent.elapsed();
            eprintln!("agentci exited {took:?} after signal {signal}");
            return (status.code().expect("exited, not killed"), took);
        }
        if sent.elapsed() > HANG {
            let _ = child.kill();
            panic!("agentci did not exit within {HANG:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_interrupted(sb: &Sandbox, by: &str) {
    let trace_path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&trace_path);
    let trace = read_jsonl(&trace_path);
    let last = trace.last().unwrap();
    assert_eq!(last["type"], "run.completed");
    assert_eq!(last["status"], "interrupted");
    assert_eq!(last["reason"], format!("interrupted by {by}"));
    // The signal is data in the trace, not only words in the reason.
    let number = if by == "SIGTERM" {
        libc::SIGTERM
    } else {
        libc::SIGINT
    };
    assert_eq!(last["signal"], number, "{last}");
    let checks = events(&trace, "check.completed");
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0]["outcome"], "skipped");
    let junit = std::fs::read_to_string(sb.path().join("out/junit.xml")).unwrap();
    assert!(junit.contains("type=\"interrupted\""), "{junit}");
}

#[test]
fn sigterm_during_a_tool_call_kills_it_and_exits_143() {
    const MARKER: &str = "29.75";
    let model = FakeModel::start(vec![
        Reply::plan(&[("Wait", "waited")]),
        Reply::tool_call("exec", json!({"command": format!("sleep {MARKER}")})),
        Reply::step_done("waited"),
        Reply::text("Done."),
    ]);
    let sb = sandbox(&model.base_url());
    let mut child = spawn(&sb);
    assert!(
        wait_until(HANG, || processes_with(MARKER) > 0),
        "the exec tool never started sleep"
    );
    let (code, _) = signal_and_wait(&mut child, libc::SIGTERM);
    assert_eq!(code, 143);
    assert_interrupted(&sb, "SIGTERM");
    assert!(
        wait_until(Duration::from_secs(10), || processes_with(MARKER) == 0),
        "the tool's sleep outlived the run"
    );
}

#[test]
fn sigint_during_a_model_call_exits_130() {
    let model = FakeModel::start(vec![Reply::delay(
        Duration::from_secs(60),
        Reply::plan(&[("Never", "never")]),
    )]);
    let sb = sandbox(&model.base_url());
    let trace_path = sb.path().join("out/trace.jsonl");
    let mut child = spawn(&sb);
    assert!(
        wait_until(HANG, || trace_has(&trace_path, "\"model.request\"")),
        "the run never called the model"
    );
    // Let the request reach the server, which holds it for a minute.
    wait_for("the model server to hold the request", || {
        !model.requests().is_empty()
    });
    let (code, _) = signal_and_wait(&mut child, libc::SIGINT);
    assert_eq!(code, 130);
    assert_interrupted(&sb, "SIGINT");
}

#[test]
fn sigterm_during_a_check_kills_it_and_skips_the_rest() {
    const MARKER: &str = "31.25";
    let model = FakeModel::start(vec![
        Reply::plan(&[("Nothing", "nothing")]),
        Reply::step_done("nothing to do"),
        Reply::text("Done."),
    ]);
    let sb = sandbox(&model.base_url());
    let job = sb.read("job.yaml").replace(
        "checks:\n  - {name: never runs, run: 'true'}\n",
        &format!("checks:\n  - {{name: slow, run: 'sleep {MARKER}'}}\n  - {{name: never runs, run: 'true'}}\n"),
    );
    sb.write("job.yaml", &job);
    let mut child = spawn(&sb);
    assert!(
        wait_until(HANG, || processes_with(MARKER) > 0),
        "the check never started"
    );
    let (code, _) = signal_and_wait(&mut child, libc::SIGTERM);
    assert_eq!(code, 143);
    let trace = read_jsonl(&sb.path().join("out/trace.jsonl"));
    let last = trace.last().unwrap();
    assert_eq!(last["status"], "interrupted");
    let outcomes: Vec<&str> = events(&trace, "check.completed")
        .iter()
        .map(|c| c["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["skipped", "skipped"]);
    assert!(
        std::fs::read_to_string(sb.path().join("out/junit.xml"))
            .unwrap()
            .contains("type=\"interrupted\"")
    );
    assert!(
        wait_until(Duration::from_secs(10), || processes_with(MARKER) == 0),
        "the check's sleep outlived the run"
    );
}

/// SIGTERM while the git step pushes to a remote that never answers: the
/// commit already made is in the trace, `run.completed` is still the last
/// line, and the run exits 143 (within seconds: [`signal_and_wait`]).
#[test]
fn sigterm_during_a_hung_push_still_ends_the_trace_and_exits_143() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (reached, push_reached) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Accept, say so, and never answer.
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
            let _ = reached.send(());
        }
    });
    let model = FakeModel::start(vec![
        Reply::plan(&[("Note", "a note is written")]),
        Reply::tool_call("write", json!({"path": "NOTES.md", "content": "note\n"})),
        Reply::step_done("wrote it"),
        Reply::text("Done."),
    ]);
    let sb = Sandbox::new();
    super::git_output::init_repo(&sb.workspace(), &[("a.txt", "a\n")]);
    sb.skill("writer", None);
    sb.write(
        "job.yaml",
        &format!(
            "name: note\nskill: writer\ngoal: Write a note.\nworkspace: ws\nskills_path: [skills]\n\
             model: {{provider: openai, name: fake-model, base_url: {}}}\n\
             tools: [write]\npermissions: {{default: allow}}\n\
             checks:\n  - {{name: ok, run: 'true'}}\n\
             outputs:\n  commit: {{branch: agentci/note}}\n  push: {{remote: 'http://127.0.0.1:{port}/r.git'}}\n",
            model.base_url()
        ),
    );
    let trace_path = sb.path().join("out/trace.jsonl");
    let mut child = spawn(&sb);
    assert!(
        wait_until(HANG, || trace_has(&trace_path, "\"git.commit\"")),
        "the run never committed"
    );
    // The push is under way once the remote has its connection.
    push_reached
        .recv_timeout(HANG)
        .expect("the push never connected to the remote");
    let (code, _) = signal_and_wait(&mut child, libc::SIGTERM);
    assert_eq!(code, 143);
    assert_valid_trace(&trace_path);
    let trace = read_jsonl(&trace_path);
    let last = trace.last().unwrap();
    assert_eq!(last["type"], "run.completed");
    assert_eq!(last["status"], "interrupted");
    assert_eq!(last["signal"], libc::SIGTERM, "{last}");
    assert_eq!(events(&trace, "git.commit").len(), 1);
    assert!(events(&trace, "git.push").is_empty());
    let junit = std::fs::read_to_string(sb.path().join("out/junit.xml")).unwrap();
    assert!(junit.contains("interrupted by SIGTERM"), "{junit}");
}
