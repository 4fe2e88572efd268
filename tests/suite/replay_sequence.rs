//! Replaying a cassette after the skill was edited: the strict replay says
//! what changed (the skill text) and how to fix it.

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, stderr};

fn sandbox(base_url: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.write("ws/greeting.txt", "hello wrold\n");
    sb.skill("fixer", Some("Read Edit"));
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: fix-greeting
skill: fixer
goal: Fix the typo in greeting.txt.
model:
  provider: openai
  name: fake-model
  base_url: {base_url}
tools: [read, edit]
workspace: ws
skills_path: [skills]
permissions:
  default: deny
  allow: [read, "edit(*.txt)"]
checks:
  - name: greeting fixed
    run: grep -q "hello world" greeting.txt
"#
        ),
    );
    sb
}

fn script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Fix the typo", "greeting.txt says hello world")]),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        )]),
        Reply::step_done("fixed the typo"),
        Reply::text("Fixed the typo in greeting.txt."),
    ]
}

fn run(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut all = vec!["run", "job.yaml", "--trace", "out/trace.jsonl"];
    all.extend_from_slice(args);
    sb.agentci(&all)
}

/// A sandbox holding a cassette recorded live for the unedited job.
fn recorded() -> Sandbox {
    let model = FakeModel::start(script());
    let live = sandbox(&model.base_url());
    let out = run(&live, &["--record", "cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    drop(model);
    let sb = sandbox("http://127.0.0.1:9/v1");
    std::fs::copy(
        live.path().join("cassette.jsonl"),
        sb.path().join("cassette.jsonl"),
    )
    .unwrap();
    sb
}

#[test]
fn unedited_replay_passes() {
    let sb = recorded();
    let out = run(&sb, &["--replay", "cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(sb.read("ws/greeting.txt"), "hello world\n");
}

#[test]
fn strict_replay_after_a_skill_edit_names_the_skill_text() {
    let sb = recorded();
    let skill = sb.read("skills/fixer/SKILL.md");
    sb.write(
        "skills/fixer/SKILL.md",
        &format!("{skill}Always keep the line endings.\n"),
    );
    let out = run(&sb, &["--replay", "cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(4), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("diverged"), "{err}");
    assert!(
        err.contains("the skill text (system prompt) changed since the recording"),
        "{err}"
    );
    assert!(err.contains("re-record with --record"), "{err}");
    // Nothing was served from a cassette that no longer fits: the file is untouched.
    assert_eq!(sb.read("ws/greeting.txt"), "hello wrold\n");
}
