//! Attacks through files, end to end: the real binary, a scripted hostile
//! model on the fake model server, real symlinks and hard links.
//!
//! Each test is an attack that got through before: `grep` showing a file a
//! `read` deny rule covers, agentci writing its JUnit and patch through a
//! symlink the agent planted, the trace swapped or cut under a live run,
//! and `edit`/`read` reaching a file outside the workspace through a hard
//! link.

use std::path::Path;

use serde_json::{Value, json};

use super::git_output::init_repo;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl, stderr, stdout};
use super::support::job::JobRun;
use super::support::users::RunAs;

const SECRET: &str = "s3cr3t-token-value";
const OUTSIDE_TEXT: &str = "outside line one\noutside line two\n";

/// A job in `sb` against `base_url` with every builtin tool and `permissions`.
fn job(sb: &Sandbox, base_url: &str, permissions: &str, extra: &str) {
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: attacks
skill: fixer
goal: Do what the model was scripted to do.
model:
  provider: openai
  name: fake-model
  base_url: {base_url}
tools: [read, write, edit, grep, find, ls, exec]
workspace: ws
skills_path: [skills]
allow_dirty: true
permissions:
{permissions}
{extra}"#
        ),
    );
}

/// A script whose execution turns are `calls`, one turn each, then done.
fn script_with(calls: Vec<Reply>) -> Vec<Reply> {
    let mut script = vec![Reply::plan(&[("Try things", "they are tried")])];
    script.extend(calls);
    script.push(Reply::step_done("tried"));
    script.push(Reply::text("done"));
    script
}

fn run(sb: &Sandbox) -> std::process::Output {
    JobRun::new(sb).junit().progress("plain").output()
}

/// The tool result the model got back for `call_id`.
fn tool_message(model: &FakeModel, call_id: &str) -> String {
    model.tool_result(call_id)
}

fn tool_result<'a>(trace: &'a [Value], call_id: &str) -> &'a Value {
    events(trace, "tool.result")
        .into_iter()
        .find(|e| e["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool.result for {call_id}"))
}

// ------------------------------------------------- edit obeys read rules

/// Regression: `edit(src/**)` allowed and `read(**/.env)` denied, `edit
/// src/.env` answered with a snippet of the edited lines, password and
/// all (and an edit that did not match told whether a text was there).
#[test]
fn edit_never_shows_or_changes_a_file_a_read_deny_rule_covers() {
    for user in RunAs::each() {
        let calls = [
            (
                "call_edit",
                json!({"path": "src/.env", "old_text": "PASSWORD=", "new_text": "PASSWORD=x"}),
            ),
            (
                "call_probe",
                json!({"path": "src/.env", "old_text": "PASSWORD=guess", "new_text": "y"}),
            ),
            (
                "call_link",
                json!({"path": "src/env-link", "old_text": "PASSWORD=", "new_text": "z"}),
            ),
            (
                "call_fine",
                json!({"path": "src/main.rs", "old_text": "old", "new_text": "new"}),
            ),
        ];
        let model = FakeModel::start(script_with(
            calls
                .iter()
                .map(|(id, args)| Reply::tool_calls(vec![(id, "edit", args.clone())]))
                .collect(),
        ));
        let sb = Sandbox::new();
        job(
            &sb,
            &model.base_url(),
            "  default: deny\n  allow: [read, \"edit(src/**)\"]\n  deny: [\"read(**/.env)\"]",
            "",
        );
        let secret = format!("PASSWORD={SECRET}\n");
        sb.write("ws/src/.env", &secret);
        sb.write("ws/src/main.rs", "fn old() {}\n");
        std::os::unix::fs::symlink(".env", sb.workspace().join("src/env-link")).unwrap();

        let out = sb.agentci_as(
            user,
            &[
                "run",
                "job.yaml",
                "--trace",
                "out/trace.jsonl",
                "--progress",
                "plain",
            ],
            &[],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "as {}: {}",
            user.label(),
            stderr(&out)
        );
        for (id, _) in &calls[..3] {
            let text = tool_message(&model, id);
            assert!(!text.contains(SECRET), "{id} showed the secret: {text}");
            assert!(text.starts_with("ERROR PERMISSION_DENIED"), "{id}: {text}");
            assert!(text.contains("deny: read(**/.env)"), "{id}: {text}");
        }
        assert_eq!(
            std::fs::read_to_string(sb.workspace().join("src/.env")).unwrap(),
            secret,
            "as {}: the denied file was edited",
            user.label()
        );
        let fine = tool_message(&model, "call_fine");
        assert!(fine.contains("fn new()"), "{fine}");
    }
}

// ------------------------------------------------- grep obeys read rules

/// Regression: `deny: read(**/.env)` refused `read .env`, but `grep . .env`,
/// `grep TOKEN .` and grep through a symlink to `.env` showed its lines.
#[test]
fn grep_never_shows_a_file_a_read_deny_rule_covers() {
    let calls = vec![
        ("call_named", json!({"pattern": ".", "path": ".env"})),
        ("call_all", json!({"pattern": "TOKEN"})),
        ("call_link", json!({"pattern": "TOKEN", "path": "env-link"})),
        (
            "call_linked_dir",
            json!({"pattern": "TOKEN", "path": "conf"}),
        ),
        ("call_glob", json!({"pattern": ".", "glob": ".env"})),
        (
            "call_case",
            json!({"pattern": "token", "case_sensitive": false}),
        ),
    ];
    let model = FakeModel::start(script_with(
        calls
            .iter()
            .map(|(id, args)| Reply::tool_calls(vec![(id, "grep", args.clone())]))
            .collect(),
    ));
    let sb = Sandbox::new();
    job(
        &sb,
        &model.base_url(),
        "  default: deny\n  allow: [read, grep, find, ls]\n  deny: [\"read(**/.env)\"]",
        "",
    );
    sb.write("ws/.env", &format!("TOKEN={SECRET}\n"));
    sb.write("ws/deploy/.env", &format!("TOKEN={SECRET}-deploy\n"));
    sb.write("ws/src/main.rs", "// reads TOKEN from the environment\n");
    std::os::unix::fs::symlink(".env", sb.workspace().join("env-link")).unwrap();
    std::os::unix::fs::symlink("deploy", sb.workspace().join("conf")).unwrap();

    let out = run(&sb);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    for (id, _) in &calls {
        let text = tool_message(&model, id);
        assert!(!text.contains(SECRET), "{id} showed the secret: {text}");
    }
    let named = tool_message(&model, "call_named");
    assert!(named.starts_with("ERROR PERMISSION_DENIED"), "{named}");
    assert!(named.contains("deny: read(**/.env)"), "{named}");
    let linked = tool_message(&model, "call_link");
    assert!(linked.starts_with("ERROR PERMISSION_DENIED"), "{linked}");

    // A sweep shows what it may and says how many files it left out, and why.
    let all = tool_message(&model, "call_all");
    assert!(all.contains("src/main.rs:1:// reads TOKEN"), "{all}");
    assert!(
        all.contains("2 files not searched: reading them is denied by the job's permission policy (deny: read(**/.env))"),
        "{all}"
    );
    let glob = tool_message(&model, "call_glob");
    assert!(glob.contains("no matches"), "{glob}");
    assert!(glob.contains("2 files not searched"), "{glob}");
    let dir = tool_message(&model, "call_linked_dir");
    assert!(dir.contains("1 file not searched"), "{dir}");

    // What the model reads, call by call.
    let seen: Vec<String> = calls
        .iter()
        .map(|(id, args)| format!("grep {args}\n{}", tool_message(&model, id)))
        .collect();
    insta::assert_snapshot!("grep_and_read_deny_rules", seen.join("\n\n"));

    let trace = sb.trace("out/trace.jsonl");
    assert_eq!(tool_result(&trace, "call_all")["data"]["denied_skipped"], 2);
    let raw = std::fs::read_to_string(sb.path().join("out/trace.jsonl")).unwrap();
    assert!(!raw.contains(SECRET), "the secret reached the trace");
}

/// `find` and `ls` list names, which are not contents: a denied file is
/// still listed, so the model knows why a grep left something out.
#[test]
fn find_and_ls_list_names_of_read_denied_files() {
    let model = FakeModel::start(script_with(vec![Reply::tool_calls(vec![
        ("call_ls", "ls", json!({})),
        ("call_find", "find", json!({"pattern": "*.env"})),
    ])]));
    let sb = Sandbox::new();
    job(
        &sb,
        &model.base_url(),
        "  default: deny\n  allow: [read, grep, find, ls]\n  deny: [\"read(**/.env)\", \"read(**/*.env)\"]",
        "",
    );
    sb.write("ws/.env", &format!("TOKEN={SECRET}\n"));
    sb.write("ws/prod.env", &format!("TOKEN={SECRET}\n"));
    run(&sb);
    let ls = tool_message(&model, "call_ls");
    assert!(ls.contains(".env"), "{ls}");
    let find = tool_message(&model, "call_find");
    assert!(find.contains("prod.env"), "{find}");
    assert!(!ls.contains(SECRET) && !find.contains(SECRET));
}

// ------------------------------------------------------------ hard links

/// The workspace file `src/x.txt` is a hard link to `outside/original.txt`.
fn hard_linked(sb: &Sandbox) -> std::path::PathBuf {
    let outside = sb.write("outside/original.txt", OUTSIDE_TEXT);
    std::fs::create_dir_all(sb.workspace().join("src")).unwrap();
    std::fs::hard_link(&outside, sb.workspace().join("src/x.txt")).unwrap();
    sb.write("ws/src/plain.txt", "outside line one, but a copy\n");
    outside
}

/// Regression: `edit src/x.txt`, a hard link to a file outside the
/// workspace, rewrote the outside file; `read` showed its content.
#[test]
fn hard_links_are_refused_for_content_and_never_written_through() {
    let model = FakeModel::start(script_with(vec![
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "src/x.txt"}))]),
        Reply::tool_calls(vec![("call_grep", "grep", json!({"pattern": "outside"}))]),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "src/x.txt", "old_text": "one", "new_text": "ONE"}),
        )]),
        Reply::tool_calls(vec![(
            "call_write",
            "write",
            json!({"path": "src/x.txt", "content": "replaced\n"}),
        )]),
    ]));
    let sb = Sandbox::new();
    job(&sb, &model.base_url(), "  default: allow", "");
    let outside = hard_linked(&sb);

    let out = run(&sb);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let read = tool_message(&model, "call_read");
    assert!(read.starts_with("ERROR PERMISSION_DENIED"), "{read}");
    assert!(read.contains("hard links"), "{read}");
    assert!(
        read.contains("permissions.allow_hard_links: true"),
        "{read}"
    );
    let grep = tool_message(&model, "call_grep");
    assert!(!grep.contains("outside line two"), "{grep}");
    assert!(grep.contains("src/plain.txt:1:"), "{grep}");
    assert!(
        grep.contains("1 file with other hard links not searched"),
        "{grep}"
    );
    let edit = tool_message(&model, "call_edit");
    assert!(edit.starts_with("ERROR PERMISSION_DENIED"), "{edit}");

    let seen: Vec<String> = ["call_read", "call_grep", "call_edit", "call_write"]
        .iter()
        .map(|id| format!("{id}\n{}", tool_message(&model, id)))
        .collect();
    insta::assert_snapshot!("hard_link_refusals", seen.join("\n\n"));

    // `write` shows nothing, so it goes ahead, by replacing the link.
    assert!(tool_message(&model, "call_write").starts_with("overwrote"));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), OUTSIDE_TEXT);
    assert_eq!(sb.read("ws/src/x.txt"), "replaced\n");
}

#[test]
fn allowed_hard_links_are_edited_by_replacing_them() {
    let model = FakeModel::start(script_with(vec![
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "src/x.txt"}))]),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "src/x.txt", "old_text": "one", "new_text": "ONE"}),
        )]),
    ]));
    let sb = Sandbox::new();
    job(
        &sb,
        &model.base_url(),
        "  default: allow\n  allow_hard_links: true",
        "",
    );
    let outside = hard_linked(&sb);
    std::fs::set_permissions(
        &outside,
        std::os::unix::fs::PermissionsExt::from_mode(0o640),
    )
    .unwrap();

    let out = run(&sb);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(tool_message(&model, "call_read").contains("outside line two"));
    assert!(tool_message(&model, "call_edit").starts_with("edited `src/x.txt`"));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), OUTSIDE_TEXT);
    assert_eq!(
        sb.read("ws/src/x.txt"),
        "outside line ONE\noutside line two\n"
    );
    let mode = std::fs::metadata(sb.workspace().join("src/x.txt")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o640,
        "edit keeps the file's permission bits"
    );
}

#[test]
fn allow_hard_links_must_be_a_boolean() {
    let sb = Sandbox::new();
    job(
        &sb,
        "http://127.0.0.1:9",
        "  default: allow\n  allow_hard_links: sometimes",
        "",
    );
    let out = sb.agentci(&["validate", "job.yaml"]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("`permissions.allow_hard_links` must be `true` or `false`"),
        "{text}"
    );
}

/// `read` refuses binaries; `edit` changed them blind.
#[test]
fn edit_refuses_a_binary_file_like_read() {
    let model = FakeModel::start(script_with(vec![Reply::tool_calls(vec![(
        "call_edit",
        "edit",
        json!({"path": "blob.bin", "old_text": "abc", "new_text": "xyz"}),
    )])]));
    let sb = Sandbox::new();
    job(&sb, &model.base_url(), "  default: allow", "");
    std::fs::write(sb.workspace().join("blob.bin"), b"abc\0def").unwrap();
    run(&sb);
    let edit = tool_message(&model, "call_edit");
    assert!(edit.contains("is a binary file"), "{edit}");
    assert_eq!(
        std::fs::read(sb.workspace().join("blob.bin")).unwrap(),
        b"abc\0def"
    );
}

// --------------------------------------------- agentci's own output files

fn exec(id: &str, command: &str) -> Reply {
    Reply::tool_calls(vec![(id, "exec", json!({ "command": command }))])
}

fn outside_victim(sb: &Sandbox) -> std::path::PathBuf {
    sb.write("victim/precious.txt", "precious\n")
}

fn assert_regular_file_or(path: &Path, context: &str) {
    let meta = std::fs::symlink_metadata(path).unwrap();
    assert!(
        meta.is_file(),
        "{} is not a regular file: {context}",
        path.display()
    );
}

fn assert_regular_file(path: &Path) {
    let meta =
        std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(meta.is_file(), "{} is not a regular file", path.display());
}

/// Regression: a `junit.xml` symlink planted in the run folder by `exec`
/// was followed when agentci wrote its JUnit, overwriting a file outside
/// the workspace; the patch path was open to the same trick.
#[test]
fn planted_symlinks_at_the_junit_and_patch_paths_are_replaced_not_followed() {
    let sb = Sandbox::new();
    let victim = outside_victim(&sb);
    let v = victim.display();
    let model = FakeModel::start(script_with(vec![exec(
        "call_plant",
        &format!(
            "for d in .agentci/runs/*; do ln -s {v} \"$d/junit.xml\"; done; \
                 ln -s {v} agent.patch; echo change >> README.md"
        ),
    )]));
    job(
        &sb,
        &model.base_url(),
        "  default: allow",
        "outputs:\n  patch: agent.patch\n",
    );
    init_repo(&sb.workspace(), &[("README.md", "hello\n")]);

    let out = sb.agentci(&["run", "job.yaml", "--progress", "plain"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let planted = tool_result(&run_trace(&sb), "call_plant").clone();
    assert_eq!(planted["ok"], true, "the links were planted: {planted}");

    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let run_dir = only_run_dir(&sb);
    assert_regular_file(&run_dir.join("junit.xml"));
    assert!(
        std::fs::read_to_string(run_dir.join("junit.xml"))
            .unwrap()
            .contains("<testsuites")
    );
    let patch = sb.workspace().join("agent.patch");
    assert_regular_file_or(&patch, &stderr(&out));
    assert!(std::fs::read_to_string(patch).unwrap().contains("+change"));
}

/// Regression: `exec` could replace the live trace and leave a forged
/// `run.completed` "passed" in its place.
#[test]
fn a_trace_replaced_during_the_run_is_put_back_and_the_run_is_an_error() {
    let model = FakeModel::start(script_with(vec![exec(
        "call_forge",
        "for d in .agentci/runs/*; do \
           printf '{\"type\":\"run.completed\",\"status\":\"passed\"}\\n' > \"$d/forged\"; \
           mv \"$d/forged\" \"$d/trace.jsonl\"; done",
    )]));
    let sb = Sandbox::new();
    // The sandbox keeps the run folder read-only for children (tests in
    // sandbox.rs); with it off, agentci's own check of the trace is what is left.
    job(&sb, &model.base_url(), "  default: allow", "sandbox: off\n");

    let out = sb.agentci(&["run", "job.yaml", "--progress", "plain"]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("replaced, moved or removed (agentci put its own trace back)"),
        "{}",
        stderr(&out)
    );
    let trace = run_trace(&sb);
    assert_eq!(
        trace[0]["type"], "run.started",
        "agentci's own trace is back"
    );
    assert_eq!(trace.last().unwrap()["type"], "run.completed");
    assert_eq!(tool_result(&trace, "call_forge")["ok"], true);
}

#[test]
fn a_trace_cut_during_the_run_is_an_error() {
    let model = FakeModel::start(script_with(vec![exec(
        "call_cut",
        "for d in .agentci/runs/*; do : > \"$d/trace.jsonl\"; done",
    )]));
    let sb = Sandbox::new();
    // The sandbox keeps the run folder read-only for children (tests in
    // sandbox.rs); with it off, agentci's own check of the trace is what is left.
    job(&sb, &model.base_url(), "  default: allow", "sandbox: off\n");

    let out = sb.agentci(&["run", "job.yaml", "--progress", "plain"]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("truncated or written to by something else"),
        "{}",
        stderr(&out)
    );
}

/// A `--trace` path holding a symlink before the run (a hostile repository
/// can ship one) is replaced, not followed.
#[test]
fn a_symlink_at_the_trace_path_before_the_run_is_replaced() {
    let model = FakeModel::start(script_with(vec![]));
    let sb = Sandbox::new();
    job(&sb, &model.base_url(), "  default: allow", "");
    let victim = outside_victim(&sb);
    std::fs::create_dir_all(sb.path().join("out")).unwrap();
    std::os::unix::fs::symlink(&victim, sb.path().join("out/trace.jsonl")).unwrap();
    std::os::unix::fs::symlink(&victim, sb.path().join("out/junit.xml")).unwrap();

    let out = run(&sb);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_regular_file(&sb.path().join("out/trace.jsonl"));
    assert_regular_file(&sb.path().join("out/junit.xml"));
    assert_eq!(sb.trace("out/trace.jsonl")[0]["type"], "run.started");
}

fn only_run_dir(sb: &Sandbox) -> std::path::PathBuf {
    let runs: Vec<_> = std::fs::read_dir(sb.workspace().join(".agentci/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.into_iter().next().unwrap()
}

fn run_trace(sb: &Sandbox) -> Vec<Value> {
    read_jsonl(&only_run_dir(sb).join("trace.jsonl"))
}
