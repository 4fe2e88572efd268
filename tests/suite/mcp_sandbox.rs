//! A job's MCP servers are contained like `exec`: started through the
//! run's process runner under the job's sandbox profile, they cannot read
//! agentci's environment or write outside the workspace, and neither they
//! nor what they start outlive agentci — at the end of a command, when they
//! ignore their closed stdin, or when agentci is stopped by SIGTERM.
//! Driven through the real binary (`agentci mcp call JOB.yaml ...`, and one
//! `agentci run` stopped mid-call) with
//! tests/mcp-servers/test_server.py as a server that tries.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::mcp::{json, test_server};
use super::support::harness::{Sandbox, agentci_in, stderr};

/// A job with one server `test` running the test server with `args`.
fn job(sb: &Sandbox, sandbox: &str, args: &[&str]) -> PathBuf {
    sb.skill("s", None);
    let words = test_server(args);
    let args: Vec<String> = words[1..].iter().map(|w| format!("{w:?}")).collect();
    sb.write(
        "job.yaml",
        &format!(
            "name: j\nskill: s\nskills_path: [skills]\ngoal: g\nworkspace: ws\nmodel: {{name: m}}\n\
             {sandbox}\nmcp:\n  servers:\n    test:\n      command: {}\n      args: [{}]\n",
            words[0],
            args.join(", ")
        ),
    )
}

/// `agentci mcp call --json JOB test TOOL JSON`, with a secret in agentci's environment.
fn call(sb: &Sandbox, job: &Path, tool: &str, arguments: &str) -> std::process::Output {
    agentci_in(
        sb.path(),
        &[
            "mcp",
            "call",
            "--json",
            job.to_str().unwrap(),
            "test",
            tool,
            arguments,
        ],
        &[("AGENTCI_TEST_SECRET", "s3cret-value")],
    )
}

/// Processes whose command line holds `tag`, as seen from outside any sandbox.
fn processes_with(tag: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(tag) {
            found.push(format!("{name}: {}", String::from_utf8_lossy(&cmdline)));
        }
    }
    found
}

/// Waits a little for every process with `tag` to be gone (a killed
/// process is reaped asynchronously); the ones left.
fn left_with(tag: &str) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(tag);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn tag(name: &str) -> String {
    format!("agentci-test-{name}-{}", std::process::id())
}

#[test]
fn a_server_cannot_read_agentcis_environment_or_write_outside_the_workspace() {
    let sb = Sandbox::new();
    let job = job(
        &sb,
        "sandbox: {profile: workspace-write}",
        &["--write-tool"],
    );

    let secret = call(&sb, &job, "env", r#"{"name": "AGENTCI_TEST_SECRET"}"#);
    assert_eq!(secret.status.code(), Some(0), "{}", stderr(&secret));
    assert_eq!(json(&secret)["text"], "<unset>");

    let inside = sb.workspace().join("inside.txt");
    let args = serde_json::json!({"path": inside, "text": "ok"}).to_string();
    let wrote = call(&sb, &job, "write", &args);
    assert_eq!(json(&wrote)["text"], "written", "{}", stderr(&wrote));
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "ok");

    let outside = sb.path().join("outside.txt");
    let args = serde_json::json!({"path": outside, "text": "escaped"}).to_string();
    let refused = call(&sb, &job, "write", &args);
    let degraded = stderr(&refused).contains("degraded");
    if degraded && stderr(&refused).contains("writes outside the workspace are not blocked") {
        eprintln!("this kernel cannot enforce writes; the degraded sandbox was reported");
        return;
    }
    // The tool's own error: the server is up, the kernel said no.
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let result = json(&refused);
    assert!(
        result["text"].as_str().unwrap().contains("cannot write"),
        "{result}"
    );
    assert!(!outside.exists(), "the server wrote outside the workspace");
}

#[test]
fn what_a_server_starts_in_the_background_is_gone_when_agentci_is_done() {
    let sb = Sandbox::new();
    let child = tag("background");
    let job = job(
        &sb,
        "sandbox: {profile: workspace-write}",
        &["--background-child", &child],
    );
    let out = call(&sb, &job, "add", r#"{"a": 1, "b": 2}"#);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["text"], "3");
    if stderr(&out).contains("no private PID namespace") {
        eprintln!("no PID namespace here: a detached child can escape; reported as degraded");
        return;
    }
    assert_eq!(left_with(&child), Vec::<String>::new());
}

#[test]
fn a_server_that_keeps_running_after_stdin_closes_is_killed() {
    let sb = Sandbox::new();
    for sandbox in [
        "sandbox: {profile: workspace-write}",
        "sandbox: {profile: off}",
    ] {
        let server = tag("stubborn");
        let job = job(&sb, sandbox, &["--ignore-stdin-close", &server]);
        let out = call(&sb, &job, "add", r#"{"a": 2, "b": 2}"#);
        assert_eq!(out.status.code(), Some(0), "{sandbox}: {}", stderr(&out));
        assert_eq!(left_with(&server), Vec::<String>::new(), "{sandbox}");
    }
}

/// Starts `agentci mcp call` on a 60 s tool call of a server that ignores
/// its closed stdin and has a detached child, sends `signal` once both
/// run, and returns agentci's exit code and what is left running.
fn signalled_mid_call(signal: i32, name: &str) -> (Option<i32>, Vec<String>) {
    let sb = Sandbox::new();
    let server = tag(name);
    let child = tag(&format!("{name}-child"));
    let job = job(
        &sb,
        "sandbox: {profile: workspace-write}",
        // Ignoring the closed stdin: only the kill that follows agentci's
        // death can stop it.
        &[
            "--background-child",
            &child,
            "--ignore-stdin-close",
            &server,
        ],
    );
    let mut agentci = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(["mcp", "call", job.to_str().unwrap(), "test", "sleep"])
        .arg(r#"{"seconds": 60}"#)
        .current_dir(sb.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while processes_with(&server).is_empty() || processes_with(&child).is_empty() {
        assert!(Instant::now() < until, "the server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: a signal to the agentci this test started.
    unsafe {
        libc::kill(agentci.id() as i32, signal);
    }
    let status = agentci.wait().unwrap();
    let mut left = left_with(&server);
    left.extend(left_with(&child));
    (status.code(), left)
}

#[test]
fn on_sigterm_agentci_stops_its_servers_and_exits_143() {
    let (code, left) = signalled_mid_call(libc::SIGTERM, "sigterm");
    assert_eq!(code, Some(143));
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn servers_die_with_agentci_even_when_it_is_killed() {
    // No shutdown code runs: the kernel's parent-death signal does it.
    let (code, left) = signalled_mid_call(libc::SIGKILL, "sigkill");
    assert_eq!(code, None);
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn a_degraded_sandbox_stops_the_command_unless_accepted() {
    let sb = Sandbox::new();
    let run = |sandbox: &str| {
        let job = job(&sb, sandbox, &[]);
        agentci_in(
            sb.path(),
            &["mcp", "call", job.to_str().unwrap(), "test", "add"],
            &[("AGENTCI_TEST_SANDBOX_UNSUPPORTED", "landlock")],
        )
    };
    let out = run("sandbox: {profile: workspace-write, require: false}");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("warning: the sandbox `workspace-write` is degraded")
            && text.contains("writes outside the workspace are not blocked"),
        "{text}"
    );
    for required in ["", "sandbox: {profile: workspace-write, require: true}"] {
        let out = run(required);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("the run refuses to start")
                && stderr(&out).contains("require: false}` to accept"),
            "{}",
            stderr(&out)
        );
    }
}

/// The same in a run: SIGTERM while the model waits on a server's tool
/// call ends the run as interrupted (exit 143, `run.completed` last in the
/// trace) and leaves neither the server nor what it started.
#[test]
fn a_run_stopped_by_sigterm_mid_call_leaves_no_server_behind() {
    use super::support::fake_model::{FakeModel, Reply};
    let sb = Sandbox::new();
    let server = tag("run-sigterm");
    let child = tag("run-sigterm-child");
    let model = FakeModel::start(vec![
        Reply::plan(&[("Wait on the server", "it answered")]),
        Reply::tool_call("mcp__test__sleep", serde_json::json!({"seconds": 60})),
    ]);
    sb.skill("s", None);
    let words = test_server(&[
        "--background-child",
        &child,
        "--ignore-stdin-close",
        &server,
    ]);
    let args: Vec<String> = words[1..].iter().map(|w| format!("{w:?}")).collect();
    sb.write(
        "job.yaml",
        &format!(
            "name: j\nskill: s\nskills_path: [skills]\ngoal: g\nworkspace: ws\nallow_dirty: true\n\
             model: {{provider: openai, name: m, base_url: {}}}\n\
             permissions: {{default: allow}}\nsandbox: {{profile: workspace-write}}\n\
             mcp:\n  servers:\n    test:\n      command: {}\n      args: [{}]\n",
            model.base_url(),
            words[0],
            args.join(", ")
        ),
    );
    let mut agentci =
        super::support::harness::outside_github(&mut Command::new(env!("CARGO_BIN_EXE_agentci")))
            .args([
                "run",
                "job.yaml",
                "--trace",
                "out/trace.jsonl",
                "--progress",
                "none",
            ])
            .current_dir(sb.path())
            .env_remove("OPENAI_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    let trace = sb.path().join("out/trace.jsonl");
    let until = Instant::now() + Duration::from_secs(30);
    // The sleep call is running once its tool.call is in the trace.
    while processes_with(&child).is_empty()
        || !std::fs::read_to_string(&trace).is_ok_and(|t| t.contains("mcp__test__sleep"))
    {
        assert!(
            Instant::now() < until,
            "the run did not reach the server's tool call"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: a signal to the agentci this test started.
    unsafe {
        libc::kill(agentci.id() as i32, libc::SIGTERM);
    }
    let status = agentci.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    let mut left = left_with(&server);
    left.extend(left_with(&child));
    assert_eq!(left, Vec::<String>::new());
    let events = super::support::harness::read_jsonl(&trace);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run.completed");
    assert_eq!(last["status"], "interrupted");
}
