//! Background sessions end to end: `exec {background: true}` and the
//! `process` tool, with the real binary, the fake model server and real
//! child processes — a local HTTP server queried by a second `exec`, sessions
//! ended at the step's and the run's end, a policy denial, and a hostile
//! model's daemons that try to outlive the run.

use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use super::signals::{processes_with, signal_and_wait, wait_until};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl, stderr};
use super::support::job::{JobBuilder, JobRun};
use super::support::wait::{HANG, kill_all_with, pids_with, wait_for};

fn job(sb: &Sandbox, base_url: &str, extra: &str) {
    JobBuilder::new("background", "runner", base_url)
        .goal("Use a background server.")
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: {base_url}}}"
        ))
        .tools("[read, exec, process]")
        .body(&format!("{extra}\n"))
        .write_in(sb);
}

const ALLOW_ALL: &str = "permissions: {default: allow}";

fn run(sb: &Sandbox) -> (std::process::Output, Vec<Value>) {
    JobRun::new(sb)
        .progress("plain")
        .env("OPENAI_API_KEY", "sk-test")
        .traced()
}

/// The properties of `exec`'s schema as the first request offered it.
fn exec_properties(model: &FakeModel) -> Value {
    model.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "exec")
        .unwrap()["function"]["parameters"]["properties"]
        .clone()
}

/// What the model got back for call `id`.
fn result_text(model: &FakeModel, id: &str) -> String {
    model
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().unwrap().clone())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no tool message for {id}"))["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The `tool.result` event of call `id`.
fn result_event<'a>(trace: &'a [Value], id: &str) -> &'a Value {
    events(trace, "tool.result")
        .into_iter()
        .find(|r| r["call_id"] == id)
        .unwrap_or_else(|| panic!("no tool.result for {id}"))
}

fn call(id: &str, tool: &str, args: Value) -> Reply {
    Reply::tool_calls(vec![(id, tool, args)])
}

/// A loopback port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Processes whose command line holds `marker`, whatever they run.
fn alive_with(marker: &str) -> usize {
    pids_with(marker).len()
}

const SERVER: &str = r#"
import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        # Said before answering, so the client cannot see the answer first.
        print("served", self.path, flush=True)
        body = b"hello from the background"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("listening on", sys.argv[1], flush=True)
server.serve_forever()
"#;

const CLIENT: &str = r#"
import sys, time, urllib.request
for attempt in range(100):
    try:
        url = "http://127.0.0.1:%s/status" % sys.argv[1]
        print(urllib.request.urlopen(url, timeout=5).read().decode())
        break
    except OSError:
        time.sleep(0.1)
"#;

/// The typical CI use: start a server, query it from another command, read
/// what the server said, and find it gone after the run.
#[test]
fn a_background_server_is_queried_read_and_gone_after_the_run() {
    let port = free_port();
    // Retries while the server starts, as a careful model would: on a busy
    // machine its first line may come after exec stopped waiting for it.
    let query = format!("python3 client.py {port}");
    let model = FakeModel::start(vec![
        Reply::plan(&[("Serve and query", "the server answered")]),
        call(
            "start",
            "exec",
            json!({"command": format!("python3 server.py {port}"), "background": true}),
        ),
        call("query", "exec", json!({ "command": query })),
        // A read and a list in one turn run together as reads.
        Reply::tool_calls(vec![
            (
                "read",
                "process",
                json!({"action": "read", "session_id": 1}),
            ),
            ("list", "process", json!({"action": "list"})),
        ]),
        call(
            "again",
            "process",
            json!({"action": "read", "session_id": 1, "offset": 0}),
        ),
        Reply::step_done("queried"),
        Reply::text("done"),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/server.py", SERVER);
    sb.write("ws/client.py", CLIENT);
    // The server and its client are separate commands: with the network
    // allowed they share the host's loopback.
    job(
        &sb,
        &model.base_url(),
        &format!("{ALLOW_ALL}\nsandbox: {{profile: workspace-write, network: true}}"),
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    assert_eq!(exec_properties(&model)["background"]["type"], "boolean");
    let started = result_text(&model, "start");
    assert!(
        started.starts_with("started background session 1 (running)"),
        "{started}"
    );
    let shown_at_start = started.contains(&format!("listening on {port}"));
    let query = result_text(&model, "query");
    assert!(query.contains("hello from the background"), "{query}");
    // The read continues after what the start showed.
    let read = result_text(&model, "read");
    assert!(read.contains("served /status"), "{read}");
    assert_eq!(!read.contains("listening on"), shown_at_start, "{read}");
    let list = result_text(&model, "list");
    assert!(list.contains("1\trunning\t"), "{list}");
    let again = result_text(&model, "again");
    assert!(
        again.contains("listening on") && again.contains("served /status"),
        "{again}"
    );

    let batches = events(&trace, "tool.batch.started");
    let together = batches
        .iter()
        .find(|b| b["call_ids"] == json!(["read", "list"]))
        .expect("read and list in one batch");
    assert_eq!(together["parallel"], true);
    let start = result_event(&trace, "start");
    assert_eq!(start["data"]["session_id"], 1);
    assert_eq!(start["data"]["running"], true);
    // Its step ended it, and the trace says so.
    let warnings = events(&trace, "warning");
    assert!(
        warnings.iter().any(|w| w["source"] == "process"
            && w["message"]
                .as_str()
                .unwrap()
                .starts_with("background session 1 (`python3 server.py")
            && w["message"].as_str().unwrap().contains("end of step 1")),
        "{warnings:?}"
    );
    let marker = format!("server.py {port}");
    assert!(
        wait_until(Duration::from_secs(10), || alive_with(&marker) == 0),
        "the server outlived the run"
    );
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

/// A session not kept dies when its step ends; a kept one lives on into the
/// next step and dies with the run.
#[test]
fn step_end_kills_sessions_unless_kept() {
    let sb = Sandbox::new();
    // Absolute paths: the test finds the loops by their command line.
    let path = |file: &str| sb.workspace().join(file).display().to_string();
    let loop_to = |file: &str| format!("while :; do echo x >> {}; sleep 0.05; done", path(file));
    // Measured once the kept loop has written again: a loop still running
    // would have written too.
    let measure = "a=$(wc -c < a.txt); b=$(wc -c < b.txt); \
                   while [ $(wc -c < b.txt) -le $b ]; do sleep 0.05; done; \
                   echo \"a $a $(wc -c < a.txt) b $b $(wc -c < b.txt)\"";
    let model = FakeModel::start(vec![
        Reply::plan(&[("Start", "started"), ("Look", "looked")]),
        call(
            "a",
            "exec",
            json!({"command": loop_to("a.txt"), "background": true}),
        ),
        call(
            "b",
            "exec",
            json!({"command": loop_to("b.txt"), "background": true, "keep": true}),
        ),
        call(
            "wait",
            "exec",
            json!({"command": "until [ -s a.txt ] && [ -s b.txt ]; do sleep 0.05; done"}),
        ),
        Reply::step_done("started"),
        call("list", "process", json!({"action": "list"})),
        call("measure", "exec", json!({ "command": measure })),
        Reply::step_done("looked"),
        Reply::text("done"),
    ]);
    job(&sb, &model.base_url(), ALLOW_ALL);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let list = result_text(&model, "list");
    assert!(
        list.contains("1\tkilled at the end of its step\t"),
        "{list}"
    );
    assert!(list.contains("2\trunning, kept\t"), "{list}");
    let measured = result_text(&model, "measure");
    let numbers: Vec<u64> = measured
        .lines()
        .find(|l| l.starts_with("a "))
        .unwrap_or_else(|| panic!("{measured}"))
        .split(' ')
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(numbers[0], numbers[1], "session 1 ran on: {measured}");
    assert!(
        numbers[3] > numbers[2],
        "kept session 2 stopped: {measured}"
    );

    let warnings: Vec<&str> = events(&trace, "warning")
        .iter()
        .filter(|w| w["source"] == "process")
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with("background session 1 ") && warnings[0].contains("end of step 1")
    );
    assert!(
        warnings[1].starts_with("background session 2 ") && warnings[1].contains("end of the run")
    );
    // The loops never end by themselves: once none is left, the run ended them.
    wait_for("the kept session's loop to end with the run", || {
        pids_with(&path("b.txt")).is_empty()
    });
    assert!(pids_with(&path("a.txt")).is_empty());
}

/// A background command is judged by the same rules as any `exec`; a run
/// without the `process` tool cannot start sessions it could not stop; the
/// model's mistakes get errors that say what to do.
#[test]
fn background_commands_obey_the_policy_and_the_tool_set() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Try", "tried")]),
        call(
            "denied",
            "exec",
            json!({"command": "sleep 47.61", "background": true}),
        ),
        call(
            "allowed",
            "exec",
            json!({"command": "echo hi", "background": true}),
        ),
        call(
            "timeout",
            "exec",
            json!({"command": "echo hi", "background": true, "timeout_ms": 5}),
        ),
        call("keep", "exec", json!({"command": "echo hi", "keep": true})),
        call(
            "missing",
            "process",
            json!({"action": "read", "session_id": 9}),
        ),
        call("no_id", "process", json!({"action": "kill"})),
        // The API key is a secret: masked in what the session printed.
        call(
            "secret",
            "exec",
            json!({"command": "echo key=sk-test", "background": true}),
        ),
        call(
            "reread",
            "process",
            json!({"action": "read", "session_id": 2, "offset": 0}),
        ),
        Reply::step_done("tried"),
        Reply::text("done"),
    ]);
    let sb = Sandbox::new();
    job(
        &sb,
        &model.base_url(),
        "permissions: {default: deny, allow: [\"exec(echo *)\", process]}",
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let denied = result_text(&model, "denied");
    assert!(
        denied.starts_with("ERROR PERMISSION_DENIED: `exec` call denied"),
        "{denied}"
    );
    let decision = events(&trace, "permission.decision")
        .into_iter()
        .find(|d| d["call_id"] == "denied")
        .unwrap();
    assert_eq!(decision["decision"], "deny");
    let allowed = result_text(&model, "allowed");
    assert!(
        allowed.starts_with("started background session 1 ("),
        "{allowed}"
    );
    assert!(allowed.ends_with("\nhi\n"), "{allowed}");
    assert!(result_text(&model, "timeout").contains("leave `timeout_ms` out"));
    assert!(result_text(&model, "keep").contains("pass `background: true`"));
    assert_eq!(
        result_text(&model, "missing"),
        "ERROR NOT_FOUND: no session 9; the sessions are 1"
    );
    assert!(result_text(&model, "no_id").contains("`kill` needs the `session_id`"));
    for id in ["secret", "reread"] {
        let text = result_text(&model, id);
        assert!(
            text.contains("key=***") && !text.contains("sk-test"),
            "{text}"
        );
    }
    assert_eq!(processes_with("47.61"), 0);

    // Without `process` in the run's tools, `exec` has no `background`.
    let model = FakeModel::start(vec![
        Reply::plan(&[("Try", "tried")]),
        call(
            "bg",
            "exec",
            json!({"command": "sleep 47.62", "background": true}),
        ),
        Reply::step_done("tried"),
        Reply::text("done"),
    ]);
    let sb = Sandbox::new();
    job(&sb, &model.base_url(), ALLOW_ALL);
    let job_text = sb
        .read("job.yaml")
        .replace("[read, exec, process]", "[read, exec]");
    sb.write("job.yaml", &job_text);
    let (out, _) = run(&sb);
    // Its only call was refused and the job has no checks: nothing could happen.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(exec_properties(&model).get("background").is_none());
    let refused = result_text(&model, "bg");
    assert!(
        refused.starts_with("ERROR INVALID_ARGUMENT: invalid arguments for `exec`"),
        "{refused}"
    );
    assert_eq!(processes_with("47.62"), 0);
}

/// Attack: a kept session and one that exits at once leave daemons behind
/// (`setsid`, `setsid -f`, a double fork, `nohup`) that keep writing.
#[test]
fn daemons_of_a_session_do_not_outlive_the_run() {
    for sandbox in ["", "sandbox: off"] {
        daemons_do_not_outlive_the_run(sandbox);
    }
}

fn daemons_do_not_outlive_the_run(sandbox_line: &str) {
    let sb = Sandbox::new();
    // Absolute paths: the test finds the daemons by their command line.
    let workspace = sb.workspace();
    let beat = |name: &str| {
        let path = workspace.join(name);
        format!(
            "sh -c 'while :; do echo x >> {}; sleep 0.05; done'",
            path.display()
        )
    };
    let spawn_all = |p: &str| {
        format!(
            "setsid {} & setsid -f {} ; ( ( {} & ) & ) ; nohup {} >/dev/null 2>&1 &",
            beat(&format!("{p}a.txt")),
            beat(&format!("{p}b.txt")),
            beat(&format!("{p}c.txt")),
            beat(&format!("{p}d.txt"))
        )
    };
    let model = FakeModel::start(vec![
        Reply::plan(&[("Escape", "escaped")]),
        call(
            "kept",
            "exec",
            json!({"command": format!("{} echo started; sleep 47.71", spawn_all("k")), "background": true, "keep": true}),
        ),
        call(
            "gone",
            "exec",
            json!({"command": format!("{} echo started", spawn_all("g")), "background": true}),
        ),
        // Until the kept session's daemons have written.
        call(
            "wait",
            "exec",
            json!({"command": "until [ -s ka.txt ] && [ -s kb.txt ] && [ -s kc.txt ] && [ -s kd.txt ]; do sleep 0.05; done"}),
        ),
        Reply::step_done("escaped"),
        Reply::text("done"),
    ]);
    job(
        &sb,
        &model.base_url(),
        &format!("{ALLOW_ALL}\n{sandbox_line}"),
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sandbox = &events(&trace, "run.started")[0]["sandbox"];
    let pid_namespace = sandbox["enforced"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "processes");
    let files: Vec<String> = ["k", "g"]
        .iter()
        .flat_map(|p| ["a", "b", "c", "d"].map(|f| format!("{p}{f}.txt")))
        .collect();
    let sizes = || -> Vec<u64> {
        files
            .iter()
            .map(|f| {
                std::fs::metadata(sb.workspace().join(f))
                    .map(|m| m.len())
                    .unwrap_or(0)
            })
            .collect()
    };
    let first = sizes();
    // The kept session's daemons ran; the other session's may have been
    // killed (with its process group) before they wrote.
    assert!(first[..4].iter().all(|&n| n > 0), "{files:?}: {first:?}");
    for file in &files {
        // Without a PID namespace, only the process group is there to kill,
        // and `setsid` leaves it: the sandbox report says so.
        let escapes_group = file.ends_with("a.txt") || file.ends_with("b.txt");
        if pid_namespace || !escapes_group {
            // The daemons never end by themselves: once none writing `file`
            // is left, the run ended them.
            let path = sb.workspace().join(file).display().to_string();
            wait_for(
                &format!("`{sandbox_line}`: the daemons writing {file} to end with the run"),
                || pids_with(&path).is_empty(),
            );
        }
    }
    assert_eq!(processes_with("47.71"), 0, "`{sandbox_line}`");
    // What escaped the group where nothing else could stop it: end it, by pid.
    kill_all_with(&sb.workspace().display().to_string());
}

/// SIGTERM while a kept session runs: agentci exits 143 and the session is gone.
#[test]
fn sigterm_kills_the_sessions() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Serve", "served")]),
        call(
            "bg",
            "exec",
            json!({"command": "sleep 47.81", "background": true, "keep": true}),
        ),
        Reply::delay(Duration::from_secs(60), Reply::step_done("never")),
    ]);
    let sb = Sandbox::new();
    job(&sb, &model.base_url(), ALLOW_ALL);
    let mut child = JobRun::new(&sb)
        .progress("none")
        .env("OPENAI_API_KEY", "sk-test")
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(HANG, || processes_with("47.81") > 0),
        "the session never started"
    );
    wait_for("the model server to hold the third request", || {
        model.requests().len() >= 3
    });
    let (code, _) = signal_and_wait(&mut child, libc::SIGTERM);
    assert_eq!(code, 143);
    assert!(
        wait_until(Duration::from_secs(10), || processes_with("47.81") == 0),
        "the session outlived agentci"
    );
    let trace = read_jsonl(&sb.path().join("out/trace.jsonl"));
    assert_eq!(trace.last().unwrap()["status"], "interrupted");
}
