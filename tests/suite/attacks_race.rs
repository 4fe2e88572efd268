//! Attacks on the file tools' boundary, end to end: the real binary, a
//! scripted hostile model on the fake model server, real processes racing
//! the tools, real git repositories. Each is tried as root and as an
//! unprivileged user and judged by its side effect: what the outside folder,
//! `.git/config` or the output folder hold afterwards, and what the tool
//! results showed.
//!
//! Each test is an attack that got through before: a background `exec`
//! swapping a folder for a symlink to an outside folder while the model
//! wrote, edited and read through it (the tools checked a path, then used
//! it by name); `write` setting `core.fsmonitor` in `.git/config` (and in a
//! nested `sub/.git`) with only `git status` allowed; `write` into a custom
//! `outputs.dir` inside the workspace.

use std::path::Path;

use serde_json::{Value, json};

use super::git_output::init_repo;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, stderr};
use super::support::users::RunAs;

const OUTSIDE_SECRET: &str = "OUTSIDE-SECRET-LINE";
const OUTSIDE_TARGET: &str = "outside target\n";
/// A name that exists only in the outside folder.
const ONLY_OUTSIDE: &str = "only-outside.txt";

/// A job in `sb` against `base_url` with every file tool and `exec`, and `extra` keys.
fn job(sb: &Sandbox, base_url: &str, permissions: &str, extra: &str) {
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: races
skill: fixer
goal: Do what the model was scripted to do.
model:
  provider: openai
  name: fake-model
  base_url: {base_url}
tools: [read, write, edit, grep, find, ls, exec, process]
workspace: ws
skills_path: [skills]
allow_dirty: true
budget: {{max_turns: 40, max_tool_calls: 1000}}
permissions:
{permissions}
{extra}"#
        ),
    );
}

/// A script whose execution turns are `turns`, then done.
fn script_with(turns: Vec<Reply>) -> Vec<Reply> {
    let mut script = vec![Reply::plan(&[("Try things", "they are tried")])];
    script.extend(turns);
    script.push(Reply::step_done("tried"));
    script.push(Reply::text("done"));
    script
}

fn run_as(sb: &Sandbox, user: RunAs, args: &[&str]) -> std::process::Output {
    let mut all = vec!["run", "job.yaml", "--progress", "plain"];
    all.extend_from_slice(args);
    sb.agentci_as(user, &all, &[("OPENAI_API_KEY", "sk-test")])
}

/// Every tool result the model got back, by call id.
fn tool_messages(model: &FakeModel) -> Vec<(String, String)> {
    let mut seen = std::collections::BTreeMap::new();
    for request in model.requests() {
        for m in request["messages"].as_array().cloned().unwrap_or_default() {
            if m["role"] == "tool" {
                seen.insert(
                    m["tool_call_id"].as_str().unwrap_or_default().to_string(),
                    m["content"].as_str().unwrap_or_default().to_string(),
                );
            }
        }
    }
    seen.into_iter().collect()
}

fn tool_message(model: &FakeModel, id: &str) -> String {
    tool_messages(model)
        .into_iter()
        .find(|(call, _)| call == id)
        .unwrap_or_else(|| panic!("no tool message for {id}"))
        .1
}

/// The files of `dir` and their contents, sorted by name.
fn folder_contents(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let text = std::fs::read_to_string(e.path()).unwrap_or_else(|_| "<not a file>".into());
            (e.file_name().to_string_lossy().into_owned(), text)
        })
        .collect();
    files.sort();
    files
}

// ------------------------------------------- a folder swapped mid-call

/// Swaps `data` and `link` (a symlink to the outside folder) with
/// `renameat2(RENAME_EXCHANGE)` as fast as it can, for at most a minute;
/// the run ends it with its background session.
const SWAPPER: &str = r#"
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
open("swapper-ready", "w").close()
end = time.time() + 60
while time.time() < end:
    libc.renameat2(AT_FDCWD, b"data", AT_FDCWD, b"link", RENAME_EXCHANGE)
"#;

/// The turns of the race: start the swapper, wait until it runs, then
/// `write` 200 times, `edit` 40 times, `read`, `grep`, `find` and `ls` 40
/// times each, all through `data/`.
fn race_turns() -> Vec<Reply> {
    let mut turns = vec![
        Reply::tool_call(
            "exec",
            json!({"command": "python3 swapper.py", "background": true}),
        ),
        Reply::tool_call(
            "exec",
            json!({"command": "while [ ! -e swapper-ready ]; do sleep 0.05; done; sleep 0.2"}),
        ),
    ];
    let batch = |prefix: &str, count: usize, call: &dyn Fn(usize) -> (&'static str, Value)| {
        let calls: Vec<(String, &'static str, Value)> = (0..count)
            .map(|i| {
                let (tool, args) = call(i);
                (format!("{prefix}_{i}"), tool, args)
            })
            .collect();
        calls
    };
    let mut all = batch("write", 200, &|i| {
        (
            "write",
            json!({"path": "data/x.txt", "content": format!("attempt {i}\n")}),
        )
    });
    // Arguments vary from call to call, as a model's would.
    all.extend(batch("edit", 40, &|i| {
        (
            "edit",
            json!({"path": "data/target.txt", "old_text": "target", "new_text": format!("target{i}")}),
        )
    }));
    all.extend(batch("read", 40, &|i| {
        ("read", json!({"path": "data/secret.txt", "limit": i + 1}))
    }));
    all.extend(batch("grep", 40, &|i| {
        (
            "grep",
            json!({"pattern": "OUTSIDE-SECRET-LIN[E]", "path": "data", "max_results": i + 1}),
        )
    }));
    all.extend(batch("find", 40, &|i| {
        (
            "find",
            json!({"pattern": "*", "path": "data", "max_results": i + 1}),
        )
    }));
    all.extend(batch("ls", 40, &|i| {
        ("ls", json!({"path": "data", "depth": i % 10 + 1}))
    }));
    // Ten calls a turn, so the race spans many batches.
    for chunk in all.chunks(10) {
        turns.push(Reply::tool_calls(
            chunk
                .iter()
                .map(|(id, tool, args)| (id.as_str(), *tool, args.clone()))
                .collect(),
        ));
    }
    turns
}

/// Regression: the tools checked `data/x.txt`, then opened it by name; a
/// background process swapping `data` for a symlink to an outside folder
/// made 11–41 of 200 writes land outside, edits change an outside file and
/// reads return outside content.
#[test]
fn a_folder_swapped_for_a_symlink_never_leads_a_file_tool_outside() {
    for user in RunAs::each() {
        let model = FakeModel::start(script_with(race_turns()));
        let sb = Sandbox::new();
        job(
            &sb,
            &model.base_url(),
            "  default: allow",
            "loop_guard: {repeats: 100}",
        );
        sb.write("ws/swapper.py", SWAPPER);
        sb.write("ws/data/x.txt", "inside\n");
        sb.write("ws/data/secret.txt", "inside secret\n");
        sb.write("ws/data/target.txt", "inside target\n");
        sb.write(&format!("outside/{ONLY_OUTSIDE}"), "outside only\n");
        sb.write("outside/x.txt", "outside x\n");
        sb.write("outside/secret.txt", &format!("{OUTSIDE_SECRET}\n"));
        sb.write("outside/target.txt", OUTSIDE_TARGET);
        let outside = sb.path().join("outside");
        std::os::unix::fs::symlink(&outside, sb.workspace().join("link")).unwrap();
        let before = folder_contents(&outside);

        let out = run_as(&sb, user, &[]);
        assert!(
            out.status.code().is_some(),
            "as {}: stderr: {}",
            user.label(),
            stderr(&out)
        );
        assert!(
            sb.workspace().join("swapper-ready").exists(),
            "as {}: the swapper never ran: {}",
            user.label(),
            stderr(&out)
        );
        assert_eq!(
            folder_contents(&outside),
            before,
            "as {}: a write or edit landed outside",
            user.label()
        );
        let messages = tool_messages(&model);
        let mut wrote = 0;
        for (id, text) in &messages {
            assert!(
                !text.contains(OUTSIDE_SECRET) && !text.contains(ONLY_OUTSIDE),
                "as {}: {id} showed the outside folder: {text}",
                user.label()
            );
            if id.starts_with("write_") && !text.starts_with("ERROR") {
                wrote += 1;
            }
        }
        // The race is real: some calls went through while `data` was the folder.
        assert!(wrote > 0, "as {}: no write succeeded", user.label());
    }
}

// ---------------------------------------------------- .git is read-only

const FSMONITOR: &str = "[core]\n\tfsmonitor = touch PWNED\n";

/// Regression: with only `exec(git status*)` allowed, `write` set
/// `core.fsmonitor` in `.git/config` (and in a nested `sub/.git/config`),
/// and the next `git status` ran the command.
#[test]
fn git_folders_are_read_only_to_the_file_tools() {
    for user in RunAs::each() {
        let turns = vec![
            Reply::tool_calls(vec![
                (
                    "write_config",
                    "write",
                    json!({"path": ".git/config", "content": FSMONITOR}),
                ),
                (
                    "edit_config",
                    "edit",
                    json!({"path": ".git/config", "old_text": "[core]", "new_text": FSMONITOR}),
                ),
                (
                    "write_nested",
                    "write",
                    json!({"path": "sub/.git/config", "content": FSMONITOR}),
                ),
                (
                    "edit_nested",
                    "edit",
                    json!({"path": "sub/.git/config", "old_text": "[core]", "new_text": FSMONITOR}),
                ),
                (
                    "write_hook",
                    "write",
                    json!({"path": "sub/../.git/hooks/pre-commit", "content": "touch PWNED"}),
                ),
                (
                    "write_through_link",
                    "write",
                    json!({"path": "cfg/config", "content": FSMONITOR}),
                ),
                (
                    "write_gitfile",
                    "write",
                    json!({"path": "wt/.git", "content": "gitdir: /tmp/elsewhere\n"}),
                ),
                ("read_config", "read", json!({"path": ".git/config"})),
            ]),
            Reply::tool_call("exec", json!({"command": "git status --short"})),
        ];
        let model = FakeModel::start(script_with(turns));
        let sb = Sandbox::new();
        job(
            &sb,
            &model.base_url(),
            "  default: deny\n  allow: [read, write, edit, \"exec(git status*)\"]",
            "",
        );
        let ws = sb.workspace();
        init_repo(&ws, &[("README.md", "hello\n")]);
        init_repo(&ws.join("sub"), &[("lib.rs", "\n")]);
        sb.write("ws/wt/.git", "gitdir: ../.git\n");
        std::os::unix::fs::symlink(".git", ws.join("cfg")).unwrap();
        let config = std::fs::read(ws.join(".git/config")).unwrap();
        let nested = std::fs::read(ws.join("sub/.git/config")).unwrap();

        let out = run_as(&sb, user, &[]);
        assert!(
            out.status.code().is_some(),
            "as {}: {}",
            user.label(),
            stderr(&out)
        );
        assert_eq!(std::fs::read(ws.join(".git/config")).unwrap(), config);
        assert_eq!(std::fs::read(ws.join("sub/.git/config")).unwrap(), nested);
        assert!(!ws.join(".git/hooks/pre-commit").exists());
        assert_eq!(sb.read("ws/wt/.git"), "gitdir: ../.git\n");
        assert!(
            !ws.join("PWNED").exists(),
            "as {}: fsmonitor ran",
            user.label()
        );
        for id in [
            "write_config",
            "edit_config",
            "write_nested",
            "edit_nested",
            "write_hook",
            "write_through_link",
            "write_gitfile",
        ] {
            let text = tool_message(&model, id);
            assert!(
                text.starts_with("ERROR OUTSIDE_WORKSPACE") && text.contains(".git"),
                "as {}: {id}: {text}",
                user.label()
            );
        }
        insta::assert_snapshot!(
            "git_config_write_refused",
            tool_message(&model, "write_config")
        );
        // Reading stays allowed.
        let read = tool_message(&model, "read_config");
        assert!(read.contains("[core]"), "as {}: {read}", user.label());
    }
}

// ------------------------------------- agentci's own outputs are not tools'

/// Regression: with `outputs.dir: out` the run folder sat inside the
/// workspace, and `write` could change it (only `.agentci/` was refused).
#[test]
fn a_custom_output_folder_inside_the_workspace_is_refused_to_the_tools() {
    for user in RunAs::each() {
        let turns = vec![Reply::tool_calls(vec![
            (
                "write_folder",
                "write",
                json!({"path": "out/x.txt", "content": "planted"}),
            ),
            (
                "write_trace",
                "write",
                json!({"path": "out/trace.jsonl", "content": "{}\n"}),
            ),
            (
                "write_patch",
                "write",
                json!({"path": "changes.patch", "content": "planted"}),
            ),
            ("read_trace", "read", json!({"path": "out/trace.jsonl"})),
            ("find_all", "find", json!({"pattern": "*"})),
        ])];
        let model = FakeModel::start(script_with(turns));
        let sb = Sandbox::new();
        job(
            &sb,
            &model.base_url(),
            "  default: allow",
            "outputs: {dir: out, patch: changes.patch}",
        );
        sb.write("ws/README.md", "hello\n");
        init_repo(&sb.workspace(), &[("README.md", "hello\n")]);

        let out = run_as(&sb, user, &[]);
        assert!(
            out.status.code().is_some(),
            "as {}: {}",
            user.label(),
            stderr(&out)
        );
        let ws = sb.workspace();
        assert!(
            !ws.join("out/x.txt").exists(),
            "as {}: {}",
            user.label(),
            tool_message(&model, "write_folder")
        );
        let trace = std::fs::read_to_string(ws.join("out/trace.jsonl")).unwrap();
        assert!(trace.lines().count() > 3, "as {}: {trace}", user.label());
        assert!(!trace.lines().any(|l| l == "{}"), "as {}", user.label());
        for id in ["write_folder", "write_trace", "write_patch", "read_trace"] {
            let text = tool_message(&model, id);
            assert!(
                text.starts_with("ERROR OUTSIDE_WORKSPACE")
                    && text.contains("agentci's own output"),
                "as {}: {id}: {text}",
                user.label()
            );
        }
        insta::assert_snapshot!(
            "output_folder_write_refused",
            tool_message(&model, "write_folder")
        );
        let found = tool_message(&model, "find_all");
        assert!(
            !found.contains("out/") && !found.contains("changes.patch"),
            "as {}: {found}",
            user.label()
        );
    }
}
