//! SIGTERM and SIGINT during `agentci run`: the run stops within seconds,
//! the trace ends with `run.completed` `interrupted`, the JUnit file is
//! written, tools' processes are gone, and the exit code is 143 or 130.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl};
use super::support::trace_schema::assert_valid_trace;

fn sandbox(base_url: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.skill("waiter", Some("Bash(sleep:*)"));
    sb.write(
        "job.yaml",
        &format!(
            "name: wait\nskill: waiter\ngoal: Wait.\nworkspace: ws\nskills_path: [skills]\n\
             model: {{provider: openai, name: fake-model, base_url: {base_url}}}\n\
             tools: [exec]\npermissions: {{default: deny, allow: [\"exec(sleep *)\"]}}\n\
             checks:\n  - {{name: never runs, run: 'true'}}\n"
        ),
    );
    sb
}

fn spawn(sb: &Sandbox) -> Child {
    Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args([
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--junit",
            "out/junit.xml",
            "--progress",
            "none",
        ])
        .current_dir(sb.path())
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Wait until `ready` holds, for at most `limit`.
fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn trace_has(path: &Path, needle: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle))
}

/// Processes whose command line holds `marker` (a `sleep` with an unusual duration).
fn processes_with(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| {
            let text = String::from_utf8_lossy(cmdline).replace('\0', " ");
            text.starts_with("sleep ") && text.contains(marker)
        })
        .count()
}

/// Send `signal`, then wait for the exit code; panics after 5 seconds.
fn signal_and_wait(child: &mut Child, signal: i32) -> (i32, Duration) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill only sends a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let sent = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code().expect("exited, not killed"), sent.elapsed());
        }
        if sent.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("agentci did not exit within 5 seconds of the signal");
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
        wait_until(Duration::from_secs(10), || processes_with(MARKER) > 0),
        "the exec tool never started sleep"
    );
    let (code, took) = signal_and_wait(&mut child, libc::SIGTERM);
    assert_eq!(code, 143);
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_interrupted(&sb, "SIGTERM");
    assert!(
        wait_until(Duration::from_secs(1), || processes_with(MARKER) == 0),
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
        wait_until(Duration::from_secs(10), || trace_has(
            &trace_path,
            "\"model.request\""
        )),
        "the run never called the model"
    );
    // Let the request reach the server, which holds it for a minute.
    assert!(wait_until(Duration::from_secs(5), || !model
        .requests()
        .is_empty()));
    let (code, took) = signal_and_wait(&mut child, libc::SIGINT);
    assert_eq!(code, 130);
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_interrupted(&sb, "SIGINT");
}
