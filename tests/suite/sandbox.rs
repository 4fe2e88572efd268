//! The kernel sandbox around every process a run starts, attacked the way a
//! hostile model would: the real binary, the fake model server, real child
//! processes. Where this machine's kernel cannot enforce a protection the
//! test checks the degraded report instead and says so in its output.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, read_jsonl, stderr};
use super::support::job::{JobBuilder, JobRun, TRACE};
use super::support::prerequisites;
use super::support::wait::{kill_all_with, pids_with, wait_for};

const KEY: &str = "sk-test-secret-4f1c9a7e2b";

/// A job whose model runs each of `commands` with `exec`, one turn each,
/// with every tool allowed: only the kernel stands in the way.
fn job(sb: &Sandbox, base_url: &str, sandbox: &str, extra: &str) {
    JobBuilder::new("attack", "runner", base_url)
        .goal("Run the commands.")
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: {base_url}}}"
        ))
        .body(&format!(
            "permissions: {{default: allow}}\n{sandbox}\n{extra}"
        ))
        .write_in(sb);
}

fn script(commands: &[&str]) -> Vec<Reply> {
    let mut script = vec![Reply::plan(&[("Run the commands", "they ran")])];
    for (i, command) in commands.iter().enumerate() {
        script.push(Reply::tool_calls(vec![(
            &format!("call_{i}"),
            "exec",
            json!({ "command": command }),
        )]));
    }
    script.push(Reply::step_done("ran them"));
    script.push(Reply::text("done"));
    script
}

/// Run the job with the key in agentci's environment; the trace.
fn run(sb: &Sandbox, extra_env: &[(&str, &str)]) -> (std::process::Output, Vec<Value>) {
    let out = JobRun::new(sb)
        .junit()
        .progress("plain")
        .env("OPENAI_API_KEY", KEY)
        .envs(extra_env)
        .output();
    (out, sb.trace(TRACE))
}

/// What the model got back from `exec` call `i`.
pub(super) fn exec_output(model: &FakeModel, i: usize) -> String {
    model.tool_result(&format!("call_{i}"))
}

/// Whether `run.started` says the kernel enforces `what`; when it does not,
/// the run must have said so, and the test says which path it checked.
pub(super) fn enforced(trace: &[Value], what: &str) -> bool {
    let sandbox = &events(trace, "run.started")[0]["sandbox"];
    let on = sandbox["enforced"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == what);
    if !on {
        let degraded = events(trace, "sandbox.degraded");
        assert!(
            degraded
                .iter()
                .any(|d| d["missing"].as_array().unwrap().iter().any(|m| m == what)),
            "{what} neither enforced nor reported missing: {sandbox}"
        );
        eprintln!("degraded path: this kernel cannot enforce {what}; checked the report instead");
    } else {
        eprintln!("enforced path: the kernel enforces {what}");
    }
    on
}

#[test]
fn writing_outside_the_workspace_is_stopped_by_the_kernel_not_a_rule() {
    let model = FakeModel::start(script(&[
        "echo escaped > ../outside.txt; echo inside > inside.txt; echo \"$TMPDIR\" > tmp.txt; echo private > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    ]));
    let sb = Sandbox::new();
    job(&sb, &model.base_url(), "", "");
    let (out, trace) = run(&sb, &[]);
    assert!(out.status.code().is_some(), "{}", stderr(&out));
    let started = &events(&trace, "run.started")[0];
    assert_eq!(started["sandbox"]["profile"], "workspace-write");
    let result = &events(&trace, "tool.result")[0];
    assert_eq!(result["data"]["sandbox"], "workspace-write");
    // Writes inside the workspace and the private temporary folder work.
    assert_eq!(sb.read("ws/inside.txt"), "inside\n");
    assert!(exec_output(&model, 0).contains("private"));
    let tmp = sb.read("ws/tmp.txt");
    assert!(tmp.contains("agentci-"), "TMPDIR is the run's own: {tmp}");
    assert!(
        !Path::new(tmp.trim()).exists(),
        "the private temporary folder is removed with the run"
    );
    if enforced(&trace, "filesystem") {
        assert!(
            !sb.path().join("outside.txt").exists(),
            "a write outside the workspace got through"
        );
        // Landlock says "Permission denied"; where everything outside the
        // writable folders is mounted read-only, the mount says it first.
        let said = exec_output(&model, 0);
        assert!(
            said.contains("ermission denied") || said.contains("ead-only file system"),
            "{said}"
        );
    }
}

/// The same write under `sandbox: off` goes through: the test above would
/// fail without the sandbox.
#[test]
fn sandbox_off_is_no_sandbox() {
    let model = FakeModel::start(script(&["echo escaped > ../outside.txt"]));
    let sb = Sandbox::new();
    job(&sb, &model.base_url(), "sandbox: off", "");
    let (_, trace) = run(&sb, &[]);
    assert_eq!(sb.read("outside.txt"), "escaped\n");
    assert_eq!(events(&trace, "tool.result")[0]["data"]["sandbox"], "off");
    assert!(events(&trace, "sandbox.degraded").is_empty());
}

/// Attack: read agentci's environment through /proc. `rev` so no masking
/// of the key's exact value could hide a leak. Under `sandbox: off` a
/// command run as root used to read the key from `/proc/<agentci>/environ`;
/// agentci now empties the block that file shows at start, so it finds
/// nothing there either (tests/suite/sandbox_degraded.rs tries a machine
/// that refuses namespaces).
#[test]
fn the_api_key_in_agentcis_environment_is_out_of_reach() {
    // Without a sandbox every process of the machine is in view, and the
    // other tests of this suite start agentci with the same key (before it
    // empties its block, or through `setpriv`), so there only agentci's own
    // block is judged.
    let scan_all = "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a API_KEY | rev; \
                    cat /proc/$PPID/environ | rev; ls /proc | grep -c '^[0-9]'";
    let scan_parent = "cat /proc/$PPID/environ | rev";
    let leaked: String = KEY.chars().rev().collect();
    for (sandbox, steal) in [("", scan_all), ("sandbox: off", scan_parent)] {
        let leaks = false;
        let model = FakeModel::start(script(&[steal]));
        let sb = Sandbox::new();
        job(&sb, &model.base_url(), sandbox, "");
        let (_, trace) = run(&sb, &[]);
        let text = serde_json::to_string(&model.requests()).unwrap();
        if sandbox.is_empty() && !enforced(&trace, "processes") {
            continue;
        }
        assert_eq!(
            text.contains(&leaked),
            leaks,
            "`{sandbox}`: {}",
            exec_output(&model, 0)
        );
    }
}

/// Attack: daemons that leave the process group (`setsid`, `setsid -f`, a
/// double fork) keep writing after the call and the run.
#[test]
fn nothing_a_call_starts_outlives_it() {
    let sb = Sandbox::new();
    // Absolute paths: the test finds the daemons by their command line.
    let path = |name: &str| sb.workspace().join(name).display().to_string();
    let beat = |name: &str| {
        format!(
            "sh -c 'while :; do echo x >> {}; sleep 0.05; done'",
            path(name)
        )
    };
    let command = format!(
        "setsid {} & setsid -f {} ; ( ( {} & ) & ) ; \
         until [ -s a.txt ] && [ -s b.txt ] && [ -s c.txt ]; do sleep 0.05; done",
        beat("a.txt"),
        beat("b.txt"),
        beat("c.txt")
    );
    let model = FakeModel::start(script(&[&command, "sleep 0.3"]));
    job(&sb, &model.base_url(), "", "");
    let (_, trace) = run(&sb, &[]);
    let sizes = || {
        ["a.txt", "b.txt", "c.txt"].map(|f| {
            std::fs::metadata(sb.workspace().join(f))
                .map(|m| m.len())
                .unwrap_or(0)
        })
    };
    let first = sizes();
    assert!(
        first.iter().all(|&n| n > 0),
        "the daemons never ran: {first:?}"
    );
    if enforced(&trace, "processes") {
        // The daemons never end by themselves: once none is left, the run
        // ended them.
        for name in ["a.txt", "b.txt", "c.txt"] {
            wait_for(
                &format!("the daemon writing {name} to end with the run"),
                || pids_with(&path(name)).is_empty(),
            );
        }
    }
    // What escaped where nothing could stop it (the report said so): end it.
    kill_all_with(&sb.workspace().display().to_string());
}

/// A TCP connection to a port the test listens on, from `exec`, with and
/// without `sandbox.network`.
#[test]
fn outgoing_network_needs_sandbox_network() {
    for allowed in [false, true] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let connect = format!(
            "bash -c 'echo hello > /dev/tcp/127.0.0.1/{port}' && echo CONNECTED || echo REFUSED"
        );
        let model = FakeModel::start(script(&[&connect]));
        let sb = Sandbox::new();
        let sandbox = format!("sandbox: {{profile: workspace-write, network: {allowed}}}");
        job(&sb, &model.base_url(), &sandbox, "");
        let (_, trace) = run(&sb, &[]);
        let mut got = String::new();
        if let Ok((mut stream, _)) = listener.accept() {
            stream.set_nonblocking(false).unwrap();
            stream.read_to_string(&mut got).unwrap();
        }
        let output = exec_output(&model, 0);
        if allowed {
            assert!(output.contains("CONNECTED"), "{output}");
            assert_eq!(got, "hello\n");
        } else if enforced(&trace, "network") {
            assert!(output.contains("REFUSED"), "{output}");
            assert!(got.is_empty(), "the connection got through");
        }
    }
}

/// Attack: truncate, replace, move and forge the live trace in the run
/// folder inside the workspace, and plant a symlink for the JUnit file.
#[test]
fn the_live_trace_cannot_be_tampered_with() {
    let forged = r#"{"type":"run.completed","status":"passed"}"#;
    let attacks = [
        "for t in .agentci/runs/*/trace.jsonl; do : > \"$t\"; done".to_string(),
        format!("for t in .agentci/runs/*/trace.jsonl; do echo '{forged}' >> \"$t\"; done"),
        "for d in .agentci/runs/*; do mv \"$d/trace.jsonl\" \"$d/old\"; echo '{}' > \"$d/trace.jsonl\"; done".to_string(),
        "mv .agentci gone && mkdir -p .agentci/runs".to_string(),
        "rm -rf .agentci".to_string(),
        "for d in .agentci/runs/*; do ln -s ../../../../outside.txt \"$d/junit.xml\"; done".to_string(),
    ];
    let commands: Vec<&str> = attacks.iter().map(String::as_str).collect();
    let model = FakeModel::start(script(&commands));
    let sb = Sandbox::new();
    job(
        &sb,
        &model.base_url(),
        "",
        "checks:\n  - {name: fails, run: 'false'}\n",
    );
    let out = agentci_in(
        sb.path(),
        &["run", "job.yaml", "--progress", "plain"],
        &[("OPENAI_API_KEY", KEY)],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let runs: Vec<_> = std::fs::read_dir(sb.workspace().join(".agentci/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let trace = read_jsonl(&runs[0].join("trace.jsonl"));
    if !enforced(&trace, "run_folder") {
        return;
    }
    assert_eq!(trace[0]["type"], "run.started");
    let completed = events(&trace, "run.completed");
    assert_eq!(completed.len(), 1, "a forged run.completed got in");
    assert_eq!(completed[0]["status"], "failed");
    assert_eq!(trace.last().unwrap()["type"], "run.completed");
    assert_eq!(events(&trace, "tool.result").len(), attacks.len());
    assert!(!sb.workspace().join("gone").exists());
    assert!(!sb.path().join("outside.txt").exists());
    assert!(runs[0].join("junit.xml").is_file());
}

/// Pretending Landlock is absent: with `sandbox.require: false` a warning
/// and `sandbox.degraded`; by default the run stops with exit 2 before any
/// call.
#[test]
fn a_degraded_sandbox_is_reported_and_refused_unless_accepted() {
    let pretend = [("AGENTCI_TEST_SANDBOX_UNSUPPORTED", "landlock")];
    let model = FakeModel::start(script(&["echo hi"]));
    let sb = Sandbox::new();
    job(&sb, &model.base_url(), "sandbox: {require: false}", "");
    let (out, trace) = run(&sb, &pretend);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let degraded = events(&trace, "sandbox.degraded");
    assert_eq!(degraded.len(), 1);
    assert_eq!(degraded[0]["missing"], json!(["filesystem"]));
    let warning = stderr(&out)
        .lines()
        .find(|l| l.contains("degraded"))
        .unwrap_or_default()
        .to_string();
    insta::assert_snapshot!("degraded_warning", warning);

    let model = FakeModel::start(script(&["echo hi"]));
    let sb = Sandbox::new();
    job(&sb, &model.base_url(), "", "");
    let (out, trace) = run(&sb, &pretend);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(events(&trace, "tool.call").is_empty());
    let completed = events(&trace, "run.completed");
    let reason = completed[0]["reason"].as_str().unwrap();
    assert!(reason.contains("require: false}` to accept"), "{reason}");
    assert!(model.requests().is_empty(), "the model was never called");
    let refusal = stderr(&out)
        .lines()
        .find(|l| l.contains("refuses to start"))
        .unwrap_or_default()
        .to_string();
    insta::assert_snapshot!("degraded_refusal", refusal);
}

#[test]
fn checks_run_in_the_sandbox_and_say_so() {
    let model = FakeModel::start(script(&[]));
    let sb = Sandbox::new();
    job(
        &sb,
        &model.base_url(),
        "sandbox: read-only",
        "checks:\n  - {name: write, run: 'echo x > made.txt'}\n",
    );
    let (_, trace) = run(&sb, &[]);
    let check = &events(&trace, "check.completed")[0];
    assert_eq!(check["sandbox"], "read-only");
    if enforced(&trace, "filesystem") {
        assert_eq!(check["outcome"], "failed", "{check}");
        assert!(!sb.workspace().join("made.txt").exists());
    }
}

#[test]
fn sandbox_values_are_checked_with_their_place() {
    let sb = Sandbox::new();
    for (value, expected) in [
        ("sandbox: strict", "unknown sandbox profile `strict`"),
        (
            "sandbox: {network: 1}",
            "`sandbox.network` must be `true` or `false`",
        ),
        ("sandbox: {profile: off, shell: bash}", "shell"),
    ] {
        job(&sb, "http://127.0.0.1:9", value, "");
        let out = agentci_in(sb.path(), &["validate", "job.yaml"], &[]);
        let err = format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout));
        assert_eq!(out.status.code(), Some(2), "{value}: {err}");
        assert!(err.contains(expected), "{value}: {err}");
        assert!(err.contains("job.yaml:"), "{value}: no place: {err}");
    }
}

#[test]
fn doctor_says_what_this_machine_enforces() {
    let sb = Sandbox::new();
    let out = agentci_in(sb.path(), &["doctor"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "landlock:",
        "pid namespace:",
        "network namespace:",
        "seccomp:",
    ] {
        assert!(text.contains(line), "{text}");
    }
    let out = agentci_in(sb.path(), &["doctor", "--json"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(value["support"]["landlock_abi"].is_u64(), "{value}");
    assert_eq!(value["enforced"].as_array().unwrap().len(), 12);
    // Pretending Landlock, namespaces and seccomp are gone shows them
    // missing; dropping capabilities needs none of them, and the process
    // limit (a control group, or RLIMIT_NPROC) none either.
    let out = agentci_in(
        sb.path(),
        &["doctor", "--json"],
        &[(
            "AGENTCI_TEST_SANDBOX_UNSUPPORTED",
            "landlock,namespaces,seccomp",
        )],
    );
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["support"]["landlock_abi"], 0);
    assert!(
        value["enforced"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| match e["name"].as_str() {
                Some("capabilities") => e["enforced"] == true,
                // A control group, or RLIMIT_NPROC for a user who is not root.
                Some("process_limit") => {
                    let root = value["support"]["root"] == true;
                    e["enforced"] == (value["support"]["control_groups"] == true || !root)
                }
                _ => e["enforced"] == false,
            }),
        "{value}"
    );
}

/// Attack 6: an eval `run:` assertion got agentci's whole environment and
/// what it printed landed unmasked in junit.xml, results.json and
/// attempt.json. Now it gets the scrubbed environment (plus the job's
/// `env:`), cannot read agentci's through /proc, and its output is masked.
#[test]
fn an_eval_assertion_cannot_leak_the_key() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Look", "looked")]),
        Reply::step_done("looked"),
        Reply::text("done"),
    ]);
    let sb = Sandbox::new();
    sb.skill("runner", None);
    sb.write(
        "job.yaml",
        "version: 1\nname: leak\nskill: runner\nskills_path: [skills]\ngoal: Look.\n\
         model: {provider: openai, name: scripted}\ntools: [ls]\npermissions: {default: allow}\n\
         secrets: [OPENAI_API_KEY]\nenv: {TOKEN: '${{ secrets.OPENAI_API_KEY }}'}\n",
    );
    sb.write("fixture/notes.txt", "hello\n");
    sb.write(
        "suite.yaml",
        "version: 1\nname: leak\njob: job.yaml\ncases:\n  - name: leaky\n    fixture: fixture\n    assert:\n      - run: \"echo token=$TOKEN; echo key=$OPENAI_API_KEY; cat /proc/*/environ 2>/dev/null | tr '\\\\0' '\\\\n' | grep -a API_KEY | rev; exit 1\"\n",
    );
    let out = agentci_in(
        sb.path(),
        &[
            "eval",
            "suite.yaml",
            "--model",
            "openai:scripted",
            "--base-url",
            &model.base_url(),
            "--out",
            "out",
            "--progress",
            "plain",
        ],
        &[("OPENAI_API_KEY", KEY)],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let reversed: String = KEY.chars().rev().collect();
    let mut seen = Vec::new();
    let mut stack = vec![sb.path().join("out")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert!(!text.contains(KEY), "{} shows the key", path.display());
            assert!(
                !text.contains(&reversed),
                "{} shows the key read from /proc",
                path.display()
            );
            seen.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    for name in ["results.json", "junit.xml", "attempt.json"] {
        assert!(seen.iter().any(|s| s == name), "no {name} in {seen:?}");
    }
    let results = std::fs::read_to_string(sb.path().join("out/results.json")).unwrap();
    assert!(
        results.contains("token=***"),
        "the assertion ran, masked: {results}"
    );
    assert!(
        results.contains("key=\\n") || results.contains("key="),
        "{results}"
    );
}

/// Regression: agentci marks its process non-dumpable, which leaves a
/// forked child's `/proc` files to root, so a user who is not root could
/// not write its user namespace's maps and every namespace was reported
/// missing, even where the kernel allows them (`unshare -U` works).
#[test]
fn a_user_who_is_not_root_gets_the_namespaces_the_kernel_allows() {
    use super::support::users::{RunAs, is_root};
    if !is_root() {
        return prerequisites::lacking(
            "the test of an unprivileged user's namespaces",
            "root (to switch to an unprivileged user)",
            "AGENTCI_REQUIRE_ROOT",
        );
    }
    let kernel_allows = std::process::Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .args(["unshare", "-U", "-m", "-p", "-n", "-f", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !kernel_allows {
        return prerequisites::lacking(
            "the test of an unprivileged user's namespaces",
            "a kernel that gives unprivileged users namespaces",
            "AGENTCI_REQUIRE_NAMESPACES",
        );
    }
    let sb = Sandbox::new();
    let out = sb.agentci_as(RunAs::Unprivileged, &["doctor", "--json"], &[]);
    let doctor: Value = serde_json::from_slice(&out.stdout).unwrap();
    let support = &doctor["support"];
    for what in [
        "user_namespaces",
        "mount_namespace",
        "pid_namespace",
        "network_namespace",
    ] {
        assert_eq!(support[what], true, "{what}: {doctor}");
    }
}
