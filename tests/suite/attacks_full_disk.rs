//! A full disk must not cost the run its record: the model fills the
//! filesystem of the workspace (which holds the run folder,
//! `.agentci/runs/<run-id>/`), keeps calling tools and finishes. Tried as
//! root and as an unprivileged user on an 8 MiB tmpfs mounted in a mount
//! namespace of the test's own, and judged by what is on disk afterwards.
//!
//! What broke before: `sandbox.limits.file_size` caps one file, nothing
//! capped the disk, so every trace write after the fill failed with
//! ENOSPC, the trace ended without `run.completed`, no JUnit file was
//! written, and agentci printed `passed — the agent finished` while
//! exiting 2. Now space is reserved for the records before the first turn
//! and the trace holds what it cannot write in memory, so the records are
//! whole when the reserve is enough, and the run says they are incomplete
//! (never `passed`) when it is not.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr};
use super::support::junit_schema;
use super::support::prerequisites;
use super::support::users::{NOBODY, RunAs, is_root};

/// The tmpfs the workspace lives on: small enough to fill in a moment,
/// with room for the reserve (4 MiB) and the workspace.
const DISK: &str = "size=8m";

/// Fills the workspace's filesystem: `head` stops at ENOSPC, far below
/// `sandbox.limits.file_size` (1 GiB).
const FILL: &str = "head -c 64M /dev/zero > fill";

/// What one run on a full disk left behind, copied out of the tmpfs before
/// its mount namespace went away.
struct FullDiskRun {
    out: Output,
    model: FakeModel,
    /// The run folder's copy.
    run_dir: PathBuf,
    /// Holds the copy; removed when the run is dropped.
    _sandbox: Sandbox,
}

impl FullDiskRun {
    /// The status line agentci ends with.
    fn status_line(&self) -> String {
        let text = stderr(&self.out);
        text.lines()
            .rfind(|l| l.starts_with("agentci: "))
            .unwrap_or_else(|| panic!("no status line in:\n{text}"))
            .to_string()
    }

    /// The complete lines of the trace (a line cut short by the end of
    /// space is left out), checked to be numbered 1, 2, 3… without a gap.
    fn trace(&self) -> Vec<Value> {
        let bytes = std::fs::read(self.run_dir.join("trace.jsonl")).unwrap();
        let mut whole: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        // What follows the last newline is empty, or a cut line.
        whole.pop();
        let trace: Vec<Value> = whole
            .iter()
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        for (i, event) in trace.iter().enumerate() {
            assert_eq!(event["seq"], i as u64 + 1, "a gap in the trace at {event}");
        }
        trace
    }
}

/// Run `replies` as `user` with the workspace on a fresh 8 MiB tmpfs, of
/// which a file in the workspace takes `taken` (a `head -c` size) before
/// the run; the run folder is the default one inside it. `None` when this
/// machine cannot mount one (noted as a skip).
fn on_small_disk(user: RunAs, taken: &str, replies: Vec<Reply>) -> Option<FullDiskRun> {
    if !can_mount_tmpfs() {
        prerequisites::lacking(
            "the full-disk attacks",
            "a mount namespace to mount a small tmpfs in (`unshare -m`, or `unshare -Urm`)",
            "AGENTCI_REQUIRE_NAMESPACES",
        );
        return None;
    }
    let sb = Sandbox::new();
    let model = FakeModel::start(replies);
    sb.skill("runner", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: full-disk\nskill: runner\ngoal: Fill the disk, then go on.\n\
             model: {{provider: openai, name: fake-model, base_url: {}, \
             context_window: 2000000}}\n\
             workspace: ws\nskills_path: [skills]\npermissions: {{default: allow}}\n\
             checks:\n  - {{name: still judged, run: 'true'}}\n",
            model.base_url()
        ),
    );
    let copied = sb.path().join("copied");
    let agentci = sb.agentci_command_as(user, &["run", "job.yaml", "--progress", "none"], &[]);
    let owner = match user {
        RunAs::Unprivileged => format!(",uid={NOBODY},gid={NOBODY}"),
        RunAs::Current => String::new(),
    };
    // Mount, run agentci, then copy its records out: the mount goes away
    // with the namespace when the script ends.
    let script = format!(
        "set -e; mount -t tmpfs -o {DISK},mode=0755{owner} agentci-full-disk ws; \
         head -c {taken} /dev/zero > ws/checked-in.bin; set +e; \
         \"$@\"; code=$?; mkdir -p {copied}; cp -a ws/.agentci {copied}/; exit $code",
        copied = copied.display()
    );
    let mut cmd = Command::new("unshare");
    match is_root() {
        true => cmd.arg("-m"),
        // A user namespace of the current user's, in which it may mount.
        false => cmd.arg("-Urm"),
    };
    cmd.args(["sh", "-c", &script, "sh"])
        .arg(agentci.get_program())
        .args(agentci.get_args())
        .current_dir(sb.path());
    for (name, value) in agentci.get_envs() {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    let out = cmd.output().unwrap();
    let runs = copied.join(".agentci/runs");
    let run_dir = std::fs::read_dir(&runs)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", runs.display(), stderr(&out)))
        .next()
        .expect("a run folder")
        .unwrap()
        .path();
    Some(FullDiskRun {
        out,
        model,
        run_dir,
        _sandbox: sb,
    })
}

/// Whether this machine lets the test mount a tmpfs in a namespace of its own.
fn can_mount_tmpfs() -> bool {
    let unshare = if is_root() { "-m" } else { "-Urm" };
    let dir = tempfile::tempdir().unwrap();
    Command::new("unshare")
        .args([
            unshare,
            "sh",
            "-c",
            "mount -t tmpfs -o size=1m probe \"$1\"",
            "sh",
        ])
        .arg(dir.path())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The plan, a fill, then `after` (tool calls, one a turn), then the end.
fn fill_then(after: Vec<Reply>) -> Vec<Reply> {
    let mut replies = vec![
        Reply::plan(&[("Fill the disk", "it is full")]),
        Reply::tool_calls(vec![("call_fill", "exec", json!({"command": FILL}))]),
    ];
    replies.extend(after);
    replies.push(Reply::step_done("filled it and went on"));
    replies.push(Reply::text("done: the disk is full"));
    replies
}

/// The fill ran out of space: the attack did what it meant to.
fn assert_filled(run: &FullDiskRun) {
    let fill = run.model.tool_result("call_fill");
    assert!(
        fill.contains("No space left on device"),
        "the disk did not fill: {fill}"
    );
}

/// Attack: fill the disk, then keep calling tools and finish, the space
/// never coming back. The reserve holds the rest of the trace and the
/// JUnit file: the trace ends with `run.completed`, the report is valid,
/// and the run passes (its check passed) with exit 0.
#[test]
fn a_full_disk_keeps_the_trace_and_junit_whole() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let after = vec![
            Reply::tool_calls(vec![(
                "call_echo",
                "exec",
                json!({"command": "echo after the fill; df -k ."}),
            )]),
            Reply::tool_calls(vec![("call_ls", "ls", json!({}))]),
            Reply::tool_calls(vec![("call_read", "read", json!({"path": "missing.txt"}))]),
        ];
        let Some(run) = on_small_disk(user, "0", fill_then(after)) else {
            return;
        };
        assert_filled(&run);
        let trace = run.trace();
        let last = trace.last().unwrap();
        assert_eq!(last["type"], "run.completed", "{}", stderr(&run.out));
        assert_eq!(last["status"], "passed", "{last}");
        // What happened after the fill is in it, in order.
        let results: Vec<&str> = events(&trace, "tool.result")
            .iter()
            .map(|e| e["call_id"].as_str().unwrap())
            .collect();
        assert_eq!(
            results,
            ["call_fill", "call_echo", "call_ls", "call_read"],
            "{results:?}"
        );
        let junit = run.run_dir.join("junit.xml");
        assert!(junit.exists(), "no JUnit file: {}", stderr(&run.out));
        junit_schema::assert_readable(&junit);
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert!(
            xml.contains(r#"<property name="status" value="passed"/>"#),
            "{xml}"
        );
        assert!(
            run.status_line().starts_with("agentci: passed — "),
            "{}",
            stderr(&run.out)
        );
        assert_eq!(run.out.status.code(), Some(0), "{}", stderr(&run.out));
    }
}

/// Attack: a file of the pull request's takes 5 MiB of the 8 MiB before the
/// run, so the 4 MiB reserve cannot be made (the run warns), then the model
/// fills the rest, keeps calling tools and finishes, the space never
/// coming back. The records cannot be whole: the run must say so, naming
/// the trace and the error, and exit 2; it never says `passed`.
#[test]
fn records_that_cannot_be_written_are_reported_incomplete_not_passed() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let after = vec![
            Reply::tool_calls(vec![("call_echo", "exec", json!({"command": "echo on"}))]),
            Reply::tool_calls(vec![("call_ls", "ls", json!({}))]),
        ];
        let Some(run) = on_small_disk(user, "5M", fill_then(after)) else {
            return;
        };
        assert_filled(&run);
        let line = run.status_line();
        assert!(!line.contains("passed —"), "{line}");
        assert!(line.starts_with("agentci: error — "), "{line}");
        assert!(
            line.contains("the run's records are incomplete: failed to write trace to ")
                && line.contains("trace.jsonl: No space left on device"),
            "{line}"
        );
        assert_eq!(
            line.matches("records are incomplete").count(),
            1,
            "said once: {line}"
        );
        assert_eq!(run.out.status.code(), Some(2), "{}", stderr(&run.out));
        // What did reach the disk is whole lines, in order, from the start,
        // and it never says the run passed.
        let trace = run.trace();
        let warned = events(&trace, "warning").iter().any(|w| {
            w["message"]
                .as_str()
                .unwrap()
                .starts_with("cannot reserve 4 MiB for the run's records in ")
        });
        assert!(warned, "no warning that the reserve could not be made");
        assert!(
            events(&trace, "run.completed").is_empty(),
            "the trace could not have ended: {:?}",
            trace.last()
        );
    }
}
