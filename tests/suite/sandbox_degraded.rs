//! A machine that refuses namespaces, for real: the real binary started
//! under a seccomp filter that refuses `unshare`, `setns` and `clone` with
//! namespace flags (and answers `clone3` with `ENOSYS`), as Docker's
//! default profile does. agentci's sandbox then has no PID namespace, and
//! commands run next to agentci.
//!
//! What got through before: a command run as root (children kept every
//! capability there) read the API key from `/proc/<agentci>/environ`,
//! which shows the environment block `execve` wrote, whatever agentci
//! changed since; and the job's `env:` handed the key to every command.
//! Now agentci empties that block first thing, commands get no variable
//! holding a secret, and the run, `agentci doctor` and the GitHub
//! annotation say what is still exposed and how to get the full sandbox.
//! Tried as root and as an unprivileged user, judged by what the commands
//! printed and by the file itself, read from outside while agentci runs.
//!
//! And such a machine fails closed. What got through before: the run
//! warned and went on, so `exec` wrote outside the workspace (no Landlock
//! either), a `setsid` daemon outlived the run, and `exec` wrote into the
//! run folder's checkpoint. Now the run refuses to start (exit 2, no model
//! call, no child started) unless the job accepts the degraded sandbox
//! with `sandbox.require: false`; the tests of what is still exposed then
//! set it.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl, stderr, stdout};
use super::support::users::{RunAs, is_root};

/// The key, in agentci's environment only (the test process never has it).
const KEY: &str = "sk-test-degraded-7b3e91c4d2";
const KEY_ENV: &str = "AGENTCI_TEST_KEY";

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

/// The `clone` flags that make namespaces (Docker's profile allows `clone`
/// only with none of them).
const NAMESPACE_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// The filters of a machine that refuses namespaces: `unshare` and `setns`
/// with `EPERM`, `clone` with any namespace flag with `EPERM`, `clone3`
/// with `ENOSYS` (its flags are in memory a filter cannot read; libc then
/// falls back to `clone`).
fn namespaces_refused() -> Vec<BpfProgram> {
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    refused.insert(libc::SYS_unshare, Vec::new());
    refused.insert(libc::SYS_setns, Vec::new());
    let clone = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = u64::try_from(flag).unwrap();
            let set = SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
            .unwrap();
            SeccompRule::new(vec![set]).unwrap()
        })
        .collect();
    refused.insert(libc::SYS_clone, clone);
    let eperm = SeccompAction::Errno(u32::try_from(libc::EPERM).unwrap());
    let refused = SeccompFilter::new(refused, SeccompAction::Allow, eperm, ARCH).unwrap();
    let mut clone3 = BTreeMap::new();
    clone3.insert(libc::SYS_clone3, Vec::new());
    let enosys = SeccompAction::Errno(u32::try_from(libc::ENOSYS).unwrap());
    let clone3 = SeccompFilter::new(clone3, SeccompAction::Allow, enosys, ARCH).unwrap();
    vec![refused.try_into().unwrap(), clone3.try_into().unwrap()]
}

/// `cmd` started on the machine that refuses namespaces: the filters are
/// installed just before `exec` (of agentci, or of `setpriv`, which keeps
/// them across its own `exec` of agentci).
fn on_a_machine_without_namespaces(cmd: &mut Command) -> &mut Command {
    let programs = namespaces_refused();
    // SAFETY: the closure makes system calls only, on programs built
    // before the fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            for program in &programs {
                if seccompiler::apply_filter(program).is_err() {
                    return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
                }
            }
            Ok(())
        })
    }
}

/// A job with the key as the model's `api_key_env`, passed to commands as
/// `TOKEN` through `env:`, every call allowed; `extra` is more of the job.
fn job(sb: &Sandbox, base_url: &str, extra: &str) {
    sb.skill("runner", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: degraded\nskill: runner\ngoal: Run the commands.\n\
             model: {{provider: openai, name: fake-model, base_url: {base_url}, api_key_env: {KEY_ENV}}}\n\
             workspace: ws\nskills_path: [skills]\npermissions: {{default: allow}}\n\
             secrets: [{KEY_ENV}]\nenv: {{TOKEN: '${{{{ secrets.{KEY_ENV} }}}}', GREETING: hello}}\n\
             {extra}\n"
        ),
    );
}

/// The plan (answered late, so agentci is surely running while the test
/// looks at it), then each command in a turn of its own.
fn script(commands: &[&str]) -> Vec<Reply> {
    let plan = Reply::plan(&[("Run the commands", "they ran")]);
    let mut script = vec![Reply::delay(Duration::from_millis(1500), plan)];
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

/// Commands that look for the key: agentci's own environment file (its
/// pid is the command's parent's), every environment file this user can
/// read, the command's own environment, the job's `TOKEN`, and agentci's
/// memory. Output is reversed, or a count, so the masking of the key in
/// tool results cannot hide a leak.
const LOOKS: [&str; 5] = [
    "tr '\\0' '\\n' < /proc/$PPID/environ | rev; echo \"agentci's block: $(wc -c < /proc/$PPID/environ) bytes\"",
    "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\" 2>/dev/null; done | rev; echo scanned",
    "env | rev",
    "echo \"token=[$TOKEN] greeting=[$GREETING]\"",
    MEMORY_LOOK,
];

/// Every writable mapping of agentci's memory searched for the key, which
/// is written in pieces so that the command itself does not hold it.
const MEMORY_LOOK: &str = "/usr/bin/python3 - $PPID <<'EOF'
import sys
pid, needle, found = sys.argv[1], ('sk-te' + 'st-degraded-7b3e' + '91c4d2').encode(), 0
try:
    with open(f'/proc/{pid}/maps') as maps, open(f'/proc/{pid}/mem', 'rb') as mem:
        for line in maps:
            span, perms = line.split()[:2]
            start, end = (int(x, 16) for x in span.split('-'))
            if 'rw' in perms:
                try:
                    mem.seek(start)
                    found += needle in mem.read(end - start)
                except OSError:
                    pass
    print(f'memory: the key is in {found} mappings')
except OSError as e:
    print(f'memory: cannot read: {e.strerror}')
EOF";

/// What one run left: its output, trace, what each command printed, what
/// the test read from `/proc/<agentci>/environ` while agentci ran, and
/// every request the model got.
struct Degraded {
    out: Output,
    trace: Vec<Value>,
    printed: Vec<String>,
    block: std::io::Result<Vec<u8>>,
    model: FakeModel,
}

/// What a job that accepts the degraded sandbox writes.
const ACCEPTED: &str = "sandbox: {require: false}";

/// Run the job, whose model runs `LOOKS`, as `user` on the machine that
/// refuses namespaces.
fn run_degraded(user: RunAs, sandbox: &str, extra_env: &[(&str, &str)]) -> (Sandbox, Degraded) {
    run_commands_in(user, &LOOKS, sandbox, extra_env, |_| {})
}

/// Run the job, whose model runs `commands`, as `user` on the machine that
/// refuses namespaces, in a sandbox `prepare` sets up first.
fn run_commands_in(
    user: RunAs,
    commands: &[&str],
    sandbox: &str,
    extra_env: &[(&str, &str)],
    prepare: impl Fn(&Sandbox),
) -> (Sandbox, Degraded) {
    let model = FakeModel::start(script(commands));
    let sb = Sandbox::new();
    job(&sb, &model.base_url(), sandbox);
    prepare(&sb);
    let args = [
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "plain",
    ];
    let mut env = vec![(KEY_ENV, KEY)];
    env.extend_from_slice(extra_env);
    let mut cmd = sb.agentci_command_as(user, &args, &env);
    let child = on_a_machine_without_namespaces(&mut cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    let block = block_while_running(&mut child, &model);
    let out = child.wait_with_output().unwrap();
    let trace = read_jsonl(&sb.path().join("out/trace.jsonl"));
    let printed = (0..commands.len())
        .map(|i| printed_by(&model, &format!("call_{i}")))
        .collect();
    let degraded = Degraded {
        out,
        trace,
        printed,
        block,
        model,
    };
    (sb, degraded)
}

/// `/proc/<pid>/environ` of agentci read by the test (root can read it
/// whatever agentci's dumpable flag), once agentci has called the model:
/// by then it is agentci, past its first lines, and not finished. A run
/// that ends without calling the model has none to read.
fn block_while_running(agentci: &mut Child, model: &FakeModel) -> std::io::Result<Vec<u8>> {
    let started = Instant::now();
    while model.captured().is_empty() && started.elapsed() < Duration::from_secs(30) {
        if agentci.try_wait()?.is_some() {
            return Err(std::io::Error::other(
                "agentci ended without calling the model",
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::read(format!("/proc/{}/environ", agentci.id()))
}

/// The tool result the model got for `call_id`, or a note that it got none.
fn printed_by(model: &FakeModel, call_id: &str) -> String {
    model
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str().map(str::to_string))
        .unwrap_or_else(|| format!("<no result for {call_id}>"))
}

/// The key as the commands would print it, reversed, or as it is.
fn shows_key(text: &str) -> bool {
    let reversed: String = KEY.chars().rev().collect();
    text.contains(&reversed) || text.contains(KEY)
}

#[test]
fn the_key_stays_out_of_reach_when_namespaces_are_refused() {
    for user in RunAs::each() {
        let who = user.label();
        let (_sb, run) = run_degraded(user, ACCEPTED, &[]);
        assert_eq!(
            run.out.status.code(),
            Some(0),
            "as {who}: {}",
            stderr(&run.out)
        );
        // The machine is degraded for real, and the run says so.
        let degraded = events(&run.trace, "sandbox.degraded");
        assert_eq!(
            degraded.len(),
            1,
            "as {who}: not degraded: {}",
            stderr(&run.out)
        );
        let missing = degraded[0]["missing"].as_array().unwrap();
        assert!(missing.iter().any(|m| m == "processes"), "{missing:?}");
        eprintln!("as {who}: degraded path (namespaces refused by seccomp), missing {missing:?}");
        // agentci itself still had the key: the model got it.
        let sent = run.model.captured()[0].authorization.clone();
        assert_eq!(sent.as_deref(), Some(format!("Bearer {KEY}").as_str()));

        for (look, printed) in LOOKS.iter().zip(&run.printed) {
            assert!(
                !printed.starts_with("<no result"),
                "as {who}: {look}: {printed}"
            );
            assert!(
                !shows_key(printed),
                "as {who}: `{look}` found the key: {printed}"
            );
        }
        // Nothing any request carried shows it either.
        let sent = serde_json::to_string(&run.model.requests()).unwrap();
        assert!(!shows_key(&sent), "as {who}: a request shows the key");
        // The job's `env:` still reaches commands, without the secret.
        assert!(
            run.printed[3].contains("token=[] greeting=[hello]"),
            "as {who}: {}",
            run.printed[3]
        );
        let withheld = events(&run.trace, "warning")
            .into_iter()
            .find(|w| w["source"] == "env")
            .unwrap_or_else(|| panic!("as {who}: no warning names the withheld TOKEN"));
        assert!(withheld["message"].as_str().unwrap().contains("`TOKEN`"));

        // The file itself, read from outside while agentci ran.
        match &run.block {
            Ok(bytes) => {
                assert!(!shows_key(&String::from_utf8_lossy(bytes)), "as {who}");
                assert!(
                    bytes.iter().all(|&b| b == 0),
                    "as {who}: /proc/<agentci>/environ shows variables: {}",
                    String::from_utf8_lossy(bytes)
                );
                eprintln!(
                    "as {who}: /proc/<agentci>/environ read from outside: {} bytes, all NUL",
                    bytes.len()
                );
            }
            Err(e) if !is_root() => {
                eprintln!("as {who}: the test cannot read /proc/<agentci>/environ ({e})");
            }
            Err(e) => panic!("as {who}: root cannot read /proc/<agentci>/environ: {e}"),
        }
        eprintln!(
            "as {who}: agentci's own block, from a command: {}",
            last_line(&run.printed[0])
        );

        // agentci's memory holds the key; Landlock keeps a command from
        // opening it, and so does dropping root's capabilities. Where
        // both are missing the run says it is exposed.
        let memory = last_line(&run.printed[4]);
        assert!(
            memory.starts_with("memory:"),
            "as {who}: {}",
            run.printed[4]
        );
        let exposed = !enforced(&run.trace, "filesystem") && !enforced(&run.trace, "capabilities");
        if exposed && user == RunAs::Current && is_root() {
            let warning = stderr(&run.out);
            assert!(warning.contains("/proc/<pid>/mem"), "{warning}");
            eprintln!("as {who}: agentci's memory is exposed here, as the run said: {memory}");
        } else {
            let reached = !memory.contains("cannot read") && !memory.contains("is in 0 ");
            assert!(
                !reached,
                "as {who}: a command found the key in agentci's memory: {memory}"
            );
            eprintln!("as {who}: {memory}");
        }
    }
}

/// Whether `run.started` says the sandbox enforces `what`.
fn enforced(trace: &[Value], what: &str) -> bool {
    events(trace, "run.started")[0]["sandbox"]["enforced"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == what)
}

fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or_default()
}

/// The warning lines of the degraded run, as a user reads them.
#[test]
fn the_warnings_say_what_is_still_exposed_and_how_to_get_the_full_sandbox() {
    let (_sb, run) = run_degraded(RunAs::Current, ACCEPTED, &[]);
    let said = stderr(&run.out);
    let warnings: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("warning: sandbox:") || l.contains("warning: env:"))
        .collect();
    assert_eq!(warnings.len(), 2, "{said}");
    for expected in [
        "/proc/<ppid>/environ",
        "UDP",
        "the run folder",
        "`--privileged`",
        "--security-opt seccomp=unconfined",
    ] {
        assert!(
            warnings[0].contains(expected),
            "{expected}: {}",
            warnings[0]
        );
    }
    insta::assert_snapshot!("degraded_warnings_without_namespaces", warnings.join("\n"));
    eprintln!("degraded path (namespaces refused by seccomp): the warning lines checked");
}

/// By default (and with `sandbox.require: true` written out) the same
/// machine stops the run: exit 2, no model call, the reason naming what is
/// missing and the choices.
#[test]
fn by_default_the_run_refuses_to_start_when_namespaces_are_refused() {
    for (user, sandbox) in RunAs::each()
        .into_iter()
        .flat_map(|user| [(user, ""), (user, "sandbox: {require: true}")])
    {
        let (_sb, run) = run_degraded(user, sandbox, &[]);
        let who = user.label();
        assert_eq!(
            run.out.status.code(),
            Some(2),
            "as {who}: {}",
            stderr(&run.out)
        );
        assert!(
            run.model.requests().is_empty(),
            "as {who}: the model was called"
        );
        let completed = events(&run.trace, "run.completed");
        let reason = completed[0]["reason"].as_str().unwrap();
        for expected in [
            "the run refuses to start",
            "processes: no private PID namespace",
            "kernel.apparmor_restrict_unprivileged_userns=0",
            "`sandbox: off`",
            "require: false}` to accept the degraded sandbox knowingly",
        ] {
            assert!(reason.contains(expected), "as {who}: {expected}: {reason}");
        }
        assert!(stderr(&run.out).contains("the run refuses to start"));
        eprintln!("as {who}: degraded path, `{sandbox}`: the run refused to start");
    }
}

/// The attacks of a degraded sandbox (Landlock missing too): a write
/// outside the workspace, a `setsid` daemon meant to outlive the run, a
/// file planted in the run folder's checkpoint.
const ESCAPES: [&str; 3] = [
    "echo escaped > ../outside/escaped.txt && cat ../outside/escaped.txt",
    "setsid sh -c 'echo $$ > ../outside/daemon.pid; exec sleep 60' </dev/null >/dev/null 2>&1 & \
     sleep 1; echo started",
    "kill -0 \"$(cat ../outside/daemon.pid)\" && echo daemon-alive; \
     for d in .agentci/runs/*/checkpoint; do echo forged > \"$d/planted\"; done; \
     ls .agentci/runs/*/checkpoint",
];

/// Whether a process `pid` (read from `file`) is alive; killed if so.
fn alive_then_killed(file: &std::path::Path) -> bool {
    let Ok(text) = std::fs::read_to_string(file) else {
        return false;
    };
    let pid: i32 = text.trim().parse().unwrap();
    // SAFETY: kill with signal 0 only checks that the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    // SAFETY: the daemon this test's own run started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    alive
}

/// Files named `planted` anywhere under `dir`.
fn planted_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| match e.path().is_dir() {
            true => planted_under(&e.path()),
            false => vec![e.path()]
                .into_iter()
                .filter(|p| p.ends_with("planted"))
                .collect(),
        })
        .collect()
}

/// Attack: on a machine without namespaces or Landlock, `exec` writes
/// outside the workspace, leaves a daemon behind and writes into the
/// checkpoint. By default none of it happens: the run refuses to start.
/// With `sandbox.require: false` all of it does, as the warning says.
#[test]
fn a_degraded_sandbox_fails_closed_and_what_require_false_lets_through_is_said() {
    let no_landlock = [("AGENTCI_TEST_SANDBOX_UNSUPPORTED", "landlock")];
    for user in RunAs::each() {
        let who = user.label();
        let make_outside = |sb: &Sandbox| {
            std::fs::create_dir_all(sb.path().join("outside")).unwrap();
        };

        // The default: nothing runs.
        let (sb, run) = run_commands_in(user, &ESCAPES, "", &no_landlock, make_outside);
        assert_eq!(
            run.out.status.code(),
            Some(2),
            "as {who}: {}",
            stderr(&run.out)
        );
        assert!(
            run.model.requests().is_empty(),
            "as {who}: the model was called"
        );
        let outside = sb.path().join("outside");
        assert!(!outside.join("escaped.txt").exists(), "as {who}");
        assert!(
            !alive_then_killed(&outside.join("daemon.pid")),
            "as {who}: a daemon ran"
        );
        assert!(
            planted_under(&sb.workspace().join(".agentci")).is_empty(),
            "as {who}"
        );
        let reason = &events(&run.trace, "run.completed")[0]["reason"];
        let reason = reason.as_str().unwrap();
        assert!(
            reason.contains("filesystem: writes outside the workspace are not blocked")
                && reason.contains("Landlock (Linux 5.13"),
            "as {who}: {reason}"
        );
        eprintln!("as {who}: no namespaces, no Landlock: the run refused, nothing escaped");

        // Accepted knowingly: each attack gets through, and the warning said so.
        let (sb, run) = run_commands_in(user, &ESCAPES, ACCEPTED, &no_landlock, make_outside);
        assert_eq!(
            run.out.status.code(),
            Some(0),
            "as {who}: {}",
            stderr(&run.out)
        );
        let outside = sb.path().join("outside");
        assert!(
            outside.join("escaped.txt").exists(),
            "as {who}: {}",
            run.printed[0]
        );
        // The daemon outlived the call that started it; whether it also
        // outlives the run depends on a control group, which ends with the run.
        assert!(
            run.printed[2].contains("daemon-alive"),
            "as {who}: the daemon did not outlive its call: {} / {}",
            run.printed[1],
            run.printed[2]
        );
        let after = alive_then_killed(&outside.join("daemon.pid"));
        eprintln!("as {who}: the daemon outlived its call; still alive after the run: {after}");
        assert!(
            !planted_under(&sb.workspace().join(".agentci")).is_empty(),
            "as {who}: {}",
            run.printed[2]
        );
        let warning = stderr(&run.out);
        for said in [
            "writes outside the workspace are not blocked",
            "may outlive their call",
            "children can write the run folder",
            "the job accepts this with `sandbox.require: false`",
        ] {
            assert!(warning.contains(said), "as {who}: {said}: {warning}");
        }
        eprintln!("as {who}: `sandbox.require: false`: all three got through, as the warning said");
    }
}

/// Under GitHub Actions the degraded sandbox is one `::warning`
/// annotation, at the job's `sandbox:` line, saying how to get the full
/// sandbox in a workflow; its warning line is a log line, not a second one.
#[test]
fn under_github_actions_the_degraded_sandbox_is_an_annotation_with_the_fix() {
    let (sb, run) = run_degraded(RunAs::Current, ACCEPTED, &[("GITHUB_ACTIONS", "true")]);
    let said = stderr(&run.out);
    let annotations: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("::warning") && l.contains("sandbox degraded"))
        .collect();
    assert_eq!(annotations.len(), 1, "{said}");
    let annotation = annotations[0];
    for expected in [
        "title=agentci%3A sandbox degraded",
        "kernel.apparmor_restrict_unprivileged_userns=0",
        "options: --privileged",
        "--security-opt seccomp=unconfined",
        "UDP",
    ] {
        assert!(annotation.contains(expected), "{expected}: {annotation}");
    }
    assert!(
        !said
            .lines()
            .any(|l| l.starts_with("::warning") && l.contains("sandbox%3A the sandbox")),
        "the warning line became a second annotation: {said}"
    );
    // The withheld secrets are an annotation of their own.
    assert!(
        said.lines()
            .any(|l| l.starts_with("::warning") && l.contains("`TOKEN`")),
        "{said}"
    );
    let root = sb.path().display().to_string();
    insta::assert_snapshot!(
        "degraded_annotation_without_namespaces",
        annotation.replace(&root, "<sandbox>")
    );
    eprintln!("degraded path (namespaces refused by seccomp): the annotation checked");
}

/// `agentci doctor` on the same machine names what is still exposed and
/// how to get the full sandbox, in text and JSON.
#[test]
fn doctor_says_what_is_exposed_without_namespaces() {
    let abi = regex::Regex::new(r"ABI \d+").unwrap();
    for user in RunAs::each() {
        let sb = Sandbox::new();
        let who = user.label();
        let mut cmd = sb.agentci_command_as(user, &["doctor", "--json"], &[]);
        let out = on_a_machine_without_namespaces(&mut cmd).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "as {who}: {}", stderr(&out));
        let value: Value = serde_json::from_slice(&out.stdout).unwrap();
        let exposed: Vec<&str> = value["exposed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        for name in ["parent_environment", "udp", "run_folder"] {
            assert!(exposed.contains(&name), "as {who}: {exposed:?}");
        }
        assert!(
            value["full_sandbox"]
                .as_str()
                .unwrap()
                .contains("--privileged")
        );

        let mut cmd = sb.agentci_command_as(user, &["doctor"], &[]);
        let out = on_a_machine_without_namespaces(&mut cmd).output().unwrap();
        let text = stdout(&out);
        assert!(text.contains("still exposed to commands here:"), "{text}");
        // The Landlock ABI is this kernel's; who runs it decides a line too.
        let text = abi.replace(&text, "ABI <n>");
        let name = match user == RunAs::Current && is_root() {
            true => "doctor_without_namespaces_as_root",
            false => "doctor_without_namespaces_not_root",
        };
        insta::assert_snapshot!(name, text);
        eprintln!("as {who}: degraded path, doctor checked");
    }
}

/// MCP servers are the job's own programs and keep the secrets of their
/// own `env:` without namespaces; the job's `env:` secrets, meant for
/// commands, do not reach them either.
#[test]
fn an_mcp_server_keeps_its_own_secret_when_namespaces_are_refused() {
    let server = super::mcp::test_server(&[]);
    let calls = vec![
        ("call_0", "mcp__test__env", json!({"name": "SERVER_TOKEN"})),
        ("call_1", "mcp__test__env", json!({"name": "TOKEN"})),
    ];
    let model = FakeModel::start(vec![
        Reply::plan(&[("Ask the server", "it answered")]),
        Reply::tool_calls(calls),
        Reply::step_done("asked"),
        Reply::text("done"),
    ]);
    let sb = Sandbox::new();
    let mcp = format!(
        "mcp:\n  servers:\n    test:\n      command: {}\n      args: [{:?}]\n      \
         env: {{SERVER_TOKEN: '${{{{ env.{KEY_ENV} }}}}'}}\n",
        server[0], server[1]
    );
    job(&sb, &model.base_url(), &format!("{ACCEPTED}\n{mcp}"));
    let args = [
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "none",
    ];
    let mut cmd = sb.agentci_command_as(RunAs::Current, &args, &[(KEY_ENV, KEY)]);
    let out = on_a_machine_without_namespaces(&mut cmd).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace = read_jsonl(&sb.path().join("out/trace.jsonl"));
    assert!(!events(&trace, "sandbox.degraded").is_empty());
    // The server had the key (masked on its way back), not the job's TOKEN.
    assert!(
        printed_by(&model, "call_0").contains("***"),
        "{}",
        printed_by(&model, "call_0")
    );
    assert!(
        printed_by(&model, "call_1").contains("<unset>"),
        "{}",
        printed_by(&model, "call_1")
    );
    eprintln!("degraded path: the MCP server kept its own secret, not the job's env: one");
}
