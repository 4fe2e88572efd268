//! Attacks through the folders on the way to agentci's outputs, end to end:
//! a pull request's checkout commits `.agentci`, `.agentci/runs` or an
//! `outputs.*` folder as a symlink to a folder elsewhere, and the real
//! binary runs on it under a `pull_request` event (`trust_workspace`
//! left false). Judged by the side effect: the folder the link points to
//! must be byte for byte as it was (no file made, replaced or deleted
//! there), the run must stop at start (exit 2) naming the link, and no
//! model request may be made. Each attack runs as root and as an
//! unprivileged user.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, stderr};
use super::support::job::{JobBuilder, JobRun};
use super::support::users::RunAs;

/// What a folder holds: each entry's path, and its bytes or link target.
fn contents(dir: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.is_symlink() {
                format!("link to {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "folder".to_string()
            } else {
                format!("file {:?}", std::fs::read(&path).unwrap())
            };
            found.insert(name, what);
        }
    }
    found
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
}

/// A checkout whose workspace is a git repository committing `link` (a
/// path in the workspace) as a symlink to `elsewhere/` (in the sandbox,
/// outside the workspace), which holds what an attacker would want
/// replaced or deleted: a `junit.xml`, and stale checkpoint messages.
fn checkout(base_url: &str, link: &str, body: &str) -> Sandbox {
    let sb = JobBuilder::new("planted-link", "fixer", base_url)
        .goal("Summarize the repository.")
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: \"{base_url}\"}}"
        ))
        .file("ws/README.md", "# project\n")
        .tools("[read]")
        .body(body)
        .write();
    sb.write("elsewhere/junit.xml", "<testsuites name=\"precious\"/>\n");
    sb.write(
        "elsewhere/checkpoint/messages-0-1.jsonl",
        "{\"precious\":1}\n",
    );
    sb.write("elsewhere/checkpoint/state.json", "{\"precious\":2}\n");
    sb.write("elsewhere/runs/keep.txt", "precious\n");
    let ws = sb.workspace();
    let link_path = ws.join(link);
    std::fs::create_dir_all(link_path.parent().unwrap()).unwrap();
    let depth = link.matches('/').count() + 1;
    let target = format!("{}elsewhere", "../".repeat(depth));
    std::os::unix::fs::symlink(&target, &link_path).unwrap();
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "the pull request"]);
    sb
}

/// A `pull_request` event as GitHub sends it (the fields read).
fn pull_request_env(sb: &Sandbox) -> Vec<(String, String)> {
    let payload = json!({
        "action": "opened",
        "number": 7,
        "pull_request": {"title": "Tidy up", "body": "Small change.", "head": {"ref": "tidy"}},
        "repository": {"full_name": "o/r"}
    });
    let path = sb.write("event.json", &payload.to_string());
    vec![
        ("GITHUB_EVENT_NAME".into(), "pull_request".into()),
        ("GITHUB_EVENT_PATH".into(), path.display().to_string()),
    ]
}

fn run(sb: &Sandbox, user: RunAs, extra: &[&str]) -> std::process::Output {
    let env = pull_request_env(sb);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    JobRun::bare(sb)
        .args(extra)
        .progress("none")
        .user(user)
        .envs(&env)
        .output()
}

/// The attack of `link` (with the job's `body`), tried as each user:
/// exit 2 naming the link, no model request, `elsewhere/` untouched.
fn refused_before_anything(link: &str, body: &str, extra: &[&str]) {
    for user in RunAs::each() {
        let model = FakeModel::start(vec![Reply::text("never asked")]);
        let sb = checkout(&model.base_url(), link, body);
        let before = contents(&sb.path().join("elsewhere"));
        let out = run(&sb, user, extra);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", user.label());
        let named = sb.workspace().join(link).display().to_string();
        assert!(
            err.contains(&format!("{named} is a symbolic link")) && err.contains("Fix:"),
            "{}: the message names the link and the fix: {err}",
            user.label()
        );
        assert!(
            model.requests().is_empty(),
            "{}: a model request was made",
            user.label()
        );
        assert_eq!(
            contents(&sb.path().join("elsewhere")),
            before,
            "{}: the folder the link points to changed",
            user.label()
        );
    }
}

// Regression (issue 38, attack 1): `.agentci` committed as a symlink took
// the run folder (trace, JUnit, checkpoint, outputs/) to where it pointed.
#[test]
fn a_committed_agentci_link_stops_the_run_and_its_target_is_untouched() {
    refused_before_anything(".agentci", "", &[]);
}

// Regression (issue 38, attack 1): `.agentci/runs` as a symlink, the same.
#[test]
fn a_committed_runs_link_stops_the_run_and_its_target_is_untouched() {
    refused_before_anything(".agentci/runs", "", &[]);
}

// Regression (issue 38, attack 1): the folder of `outputs.dir` and
// `outputs.junit` as a symlink replaced the junit.xml where it pointed and
// deleted the stale checkpoint messages there.
#[test]
fn a_committed_output_folder_link_stops_the_run_and_its_target_is_untouched() {
    refused_before_anything("out", "outputs: {dir: out, junit: out/junit.xml}\n", &[]);
    // The user's --out inside the workspace is untrusted from the workspace down too.
    refused_before_anything("out", "", &["--out", "ws/out/run"]);
}

/// The plan, one read, the step done, the report: a run that passes.
fn quiet_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Look around", "the README is read")]),
        Reply::tool_call("read", json!({"path": "README.md"})),
        Reply::step_done("read it"),
        Reply::text("Nothing to change."),
    ]
}

// The normal case still works: the run folder and the outputs' folders
// are made, and everything is written into them.
#[test]
fn plain_output_folders_are_made_and_written() {
    for user in RunAs::each() {
        let model = FakeModel::start(quiet_script());
        let sb = JobBuilder::new("plain-folders", "fixer", &model.base_url())
            .goal("Summarize the repository.")
            .file("ws/README.md", "# project\n")
            .tools("[read]")
            .body(
                "permissions:\n  allow: [read]\n\
                 outputs: {dir: reports/run, junit: reports/junit/junit.xml}\n",
            )
            .write();
        let out = run(&sb, user, &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            user.label(),
            stderr(&out)
        );
        let reports = sb.workspace().join("reports");
        for file in [
            "run/trace.jsonl",
            "junit/junit.xml",
            "run/checkpoint/state.json",
        ] {
            let meta = std::fs::symlink_metadata(reports.join(file));
            assert!(
                meta.is_ok_and(|m| m.is_file() && m.len() > 0),
                "{}: {file} was not written",
                user.label()
            );
        }
        assert!(reports.join("run/outputs").is_dir(), "{}", user.label());
    }
}

// A folder swapped for a link during the run (a job without a sandbox,
// whose commands can reach the run folder) does not redirect the writes
// after it: the JUnit file and the checkpoint go into the folder agentci
// opened before the run, wherever it was moved, and nothing lands where
// the link points.
#[test]
fn a_folder_swapped_for_a_link_during_the_run_redirects_nothing() {
    for user in RunAs::each() {
        let model = FakeModel::start(vec![
            Reply::plan(&[("Swap the folder", "out is a link")]),
            Reply::tool_call(
                "exec",
                json!({"command": "mv out out.moved && ln -s ../elsewhere out"}),
            ),
            Reply::step_done("swapped"),
            Reply::text("Done."),
        ]);
        let sb = JobBuilder::new("swap-folder", "fixer", &model.base_url())
            .goal("Summarize the repository.")
            .file("ws/README.md", "# project\n")
            .tools("[read, exec]")
            .body("permissions:\n  default: allow\nsandbox: off\noutputs: {dir: out}\n")
            .write();
        sb.write("elsewhere/junit.xml", "<testsuites name=\"precious\"/>\n");
        sb.write(
            "elsewhere/checkpoint/messages-0-1.jsonl",
            "{\"precious\":1}\n",
        );
        let before = contents(&sb.path().join("elsewhere"));
        let out = run(&sb, user, &[]);
        let err = stderr(&out);
        assert!(
            sb.workspace().join("out").is_symlink(),
            "{}: the command did not swap the folder: {err}",
            user.label()
        );
        assert_eq!(
            contents(&sb.path().join("elsewhere")),
            before,
            "{}: a write went through the link: {err}",
            user.label()
        );
        let moved = sb.workspace().join("out.moved");
        for file in ["junit.xml", "trace.jsonl", "checkpoint/state.json"] {
            assert!(
                moved.join(file).is_file(),
                "{}: {file} is not in the folder opened before the run: {err}",
                user.label()
            );
        }
    }
}

// Issue 38, attack 1, for `agentci eval`: a checkout that commits its
// `--out` or `--html` folder as a symlink is refused before any case runs,
// naming the link, and nothing is written where it points; real folders
// get the results and the page.
#[test]
fn eval_out_and_html_links_are_refused_and_real_folders_written() {
    let sb = super::eval::notes_sandbox();
    sb.write("elsewhere/results.json", "{\"precious\":1}\n");
    sb.write("elsewhere/index.html", "precious\n");
    for flag in ["--out", "--html"] {
        let link = sb.path().join("planted");
        std::os::unix::fs::symlink("elsewhere", &link).unwrap();
        let before = contents(&sb.path().join("elsewhere"));
        let (out_dir, html_dir) = match flag {
            "--out" => ("planted/results", "html"),
            _ => ("out", "planted/page"),
        };
        let args = ["suite.yaml", "--out", out_dir, "--html", html_dir];
        let out = super::eval::eval(&sb, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains(&format!("{flag}: {} is a symbolic link", link.display())),
            "{flag}: {err}"
        );
        assert_eq!(contents(&sb.path().join("elsewhere")), before, "{flag}");
        std::fs::remove_file(&link).unwrap();
    }
    let args = [
        "suite.yaml",
        "--out",
        "out",
        "--html",
        "html",
        "--min-pass-rate",
        "0",
    ];
    let out = super::eval::eval(&sb, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for file in [
        "out/results.json",
        "out/junit.xml",
        "out/summary.md",
        "html/index.html",
    ] {
        assert!(sb.path().join(file).is_file(), "{file}: {}", stderr(&out));
    }
}
