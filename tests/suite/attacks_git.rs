//! Attacks on the git step and on the repository, end to end: the real
//! binary, a scripted hostile model whose `exec` calls rewrite git's
//! configuration, plant hooks or write into skill folders, real
//! repositories, and a real `git commit` run afterwards the way a workflow
//! would.
//!
//! Each attack is tried as root and as an unprivileged user and judged by
//! its side effect: which marker files exist, what the files hold.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

use super::git_output::init_repo;
use super::sandbox::enforced;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl, stderr};
use super::support::users::RunAs;

const TOKEN: &str = "tok-4f1c9e-pinned-push-secret";
const BRANCH: &str = "agentci/fix";

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
    let out = sb.agentci_as(
        user,
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--junit",
            "out/junit.xml",
            "--progress",
            "plain",
        ],
        &[("GH_PUSH_TOKEN", TOKEN)],
    );
    let trace_path = sb.path().join("out/trace.jsonl");
    let trace = match trace_path.exists() {
        true => read_jsonl(&trace_path),
        false => Vec::new(),
    };
    (out, trace)
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
