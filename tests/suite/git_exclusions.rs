//! What `outputs.patch` and `outputs.commit` leave out: files over
//! `outputs.max_file_size` and binary files unless `outputs.include_binary`,
//! each named in the trace. The real binary, the fake model server and a
//! real repository read back with git2.

use git2::Repository;
use serde_json::json;

use super::git_output::init_repo;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr};
use super::support::job::JobBuilder;
use super::support::job::JobRun;

/// A model that fixes the source and also drops a large file and a small
/// binary one (a NUL byte, as git tells binary files) into the workspace.
fn script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Fix it", "src.txt is fixed")]),
        Reply::tool_call(
            "edit",
            json!({"path": "src.txt", "old_text": "wrold", "new_text": "world"}),
        ),
        // Made by a command: a 2 MB tool argument would not fit in a request.
        Reply::tool_call(
            "exec",
            json!({"command": "mkdir -p build && head -c 2000000 /dev/zero | tr '\\0' x > build/big.log && printf 'ELF\\000\\001\\002' > core.bin"}),
        ),
        Reply::step_done("fixed"),
        Reply::text("Fixed."),
    ]
}

fn sandbox(base_url: &str, extra: &str) -> (Sandbox, Repository) {
    let sb = Sandbox::new();
    let repo = init_repo(&sb.workspace(), &[("src.txt", "hello wrold\n")]);
    JobBuilder::new("exclusions", "fixer", base_url)
        .allowed_tools("Read Edit Bash")
        .goal("Fix the typo in src.txt.")
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: {base_url}}}"
        ))
        .tools("[read, edit, exec]")
        .body(&format!(
            r#"permissions: {{default: allow}}
checks:
  - {{name: fixed, run: grep -q "hello world" src.txt}}
outputs:
  patch: out/changes.diff
  commit: {{branch: agentci/fix, message: Fix the typo}}
{extra}"#
        ))
        .write_in(&sb);
    (sb, repo)
}

fn run(sb: &Sandbox) -> (std::process::Output, Vec<serde_json::Value>) {
    JobRun::new(sb).progress("plain").traced()
}

/// The paths the commit on `branch` changed against its parent.
fn committed_paths(repo: &Repository, branch: &str) -> Vec<String> {
    let commit = repo
        .find_branch(branch, git2::BranchType::Local)
        .unwrap()
        .get()
        .peel_to_commit()
        .unwrap();
    let parent = commit.parent(0).unwrap();
    let diff = repo
        .diff_tree_to_tree(
            Some(&parent.tree().unwrap()),
            Some(&commit.tree().unwrap()),
            None,
        )
        .unwrap();
    diff.deltas()
        .map(|d| d.new_file().path().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_large_file_and_a_binary_file_stay_out_of_the_commit_and_the_patch() {
    let model = FakeModel::start(script());
    let (sb, repo) = sandbox(&model.base_url(), "");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));

    assert_eq!(committed_paths(&repo, "agentci/fix"), vec!["src.txt"]);
    let patch = std::fs::read_to_string(sb.path().join("ws/out/changes.diff")).unwrap();
    assert!(patch.contains("+hello world"), "{patch}");
    assert!(
        !patch.contains("big.log") && !patch.contains("core.bin"),
        "{patch}"
    );
    // The files themselves are still there for the user.
    assert!(sb.path().join("ws/build/big.log").exists());
    assert!(sb.path().join("ws/core.bin").exists());

    let warnings = events(&trace, "warning");
    let left_out = warnings
        .iter()
        .find(|w| w["message"].as_str().unwrap().starts_with("left out"))
        .unwrap_or_else(|| panic!("no left-out warning in {warnings:?}"));
    let message = left_out["message"].as_str().unwrap();
    assert!(
        message.contains("build/big.log (2.0 MB, over the 1.0 MB limit)"),
        "{message}"
    );
    assert!(message.contains("core.bin (binary)"), "{message}");
    assert!(message.contains("outputs.include_binary"), "{message}");
    // The progress log says it too.
    assert!(
        stderr(&out).contains("left out of the patch and commit"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_job_can_let_binary_and_larger_files_in() {
    let model = FakeModel::start(script());
    let (sb, repo) = sandbox(
        &model.base_url(),
        "  max_file_size: 3000000\n  include_binary: true\n",
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let mut paths = committed_paths(&repo, "agentci/fix");
    paths.sort();
    assert_eq!(paths, vec!["build/big.log", "core.bin", "src.txt"]);
    assert!(
        !events(&trace, "warning")
            .iter()
            .any(|w| w["message"].as_str().unwrap().starts_with("left out"))
    );
}

#[test]
fn a_wrong_size_limit_is_an_error_at_its_line() {
    let model = FakeModel::start(Vec::new());
    let (sb, _repo) = sandbox(&model.base_url(), "  max_file_size: 1MB\n");
    let out = sb.agentci(&["validate", "job.yaml"]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    let err = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(err.contains("job.yaml:15:18"), "{err}");
    assert!(
        err.contains("`outputs.max_file_size` must be a whole number"),
        "{err}"
    );
}
