//! Git as an output of `agentci run`: the dirty-workspace check, the patch,
//! the commit on a new branch and the push to a (local, bare) remote. The
//! real binary, the fake model server, and real repositories made with git2.

use std::path::Path;

use git2::{Repository, Signature};
use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr};
use super::support::job::JobBuilder;
use super::support::job::JobRun;

/// A repository in `dir` with `files` committed as its first commit.
pub fn init_repo(dir: &Path, files: &[(&str, &str)]) -> Repository {
    let repo = Repository::init(dir).unwrap();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    commit_all(&repo, "initial");
    repo
}

/// Stage everything and commit it on HEAD.
pub fn commit_all(repo: &Repository, message: &str) -> git2::Oid {
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("Test", "test@example.com").unwrap();
    let parent = repo.head().ok().map(|h| h.peel_to_commit().unwrap());
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .unwrap()
}

/// A sandbox whose workspace `ws` is a repository holding `greeting.txt`
/// with a typo; the job gets `extra` appended (outputs, allow_dirty).
fn sandbox(base_url: &str, extra: &str) -> (Sandbox, Repository) {
    let sb = Sandbox::new();
    let repo = init_repo(
        &sb.workspace(),
        &[("greeting.txt", "hello wrold\n"), ("README.md", "# demo\n")],
    );
    JobBuilder::new("fix-greeting", "fixer", base_url)
        .allowed_tools("Read Edit Write")
        .goal("Fix the typo in greeting.txt and add NOTES.md.")
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: {base_url}}}"
        ))
        .tools("[read, edit, write]")
        .body(&format!(
            r#"permissions: {{default: allow}}
checks:
  - {{name: greeting fixed, run: grep -q "hello world" greeting.txt}}
{extra}"#
        ))
        .write_in(&sb);
    (sb, repo)
}

/// A model that fixes the typo and writes a new file.
fn fixing_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Fix the typo", "greeting.txt says hello world")]),
        Reply::tool_call(
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        ),
        Reply::tool_call(
            "write",
            json!({"path": "NOTES.md", "content": "Fixed a typo.\n"}),
        ),
        Reply::step_done("fixed"),
        Reply::text("Fixed the typo and wrote NOTES.md."),
    ]
}

/// A model that changes a file but not the typo: the check fails.
fn failing_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Look", "nothing")]),
        Reply::tool_call(
            "write",
            json!({"path": "NOTES.md", "content": "Could not fix it.\n"}),
        ),
        Reply::step_done("gave up"),
        Reply::text("Gave up."),
    ]
}

fn run(sb: &Sandbox) -> (std::process::Output, Vec<Value>) {
    JobRun::new(sb).junit().progress("plain").traced_if_any()
}

fn run_status(trace: &[Value]) -> &str {
    let last = trace.last().unwrap();
    assert_eq!(last["type"], "run.completed");
    last["status"].as_str().unwrap()
}

#[test]
fn a_dirty_workspace_is_refused_before_the_run_unless_allowed() {
    let model = FakeModel::start(fixing_script());
    let (sb, _repo) = sandbox(&model.base_url(), "");
    sb.write("ws/README.md", "# demo, edited by hand\n");
    sb.write("ws/scratch.txt", "not committed\n");
    // agentci's own folder never makes the workspace dirty.
    sb.write("ws/.agentci/runs/old/trace.jsonl", "{}\n");

    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("uncommitted changes"), "{err}");
    assert!(
        err.contains("README.md") && err.contains("scratch.txt"),
        "{err}"
    );
    assert!(!err.contains(".agentci"), "{err}");
    // Both ways to run anyway: the flag and the job key.
    assert!(
        err.contains("`--allow-dirty`") && err.contains("allow_dirty: true"),
        "{err}"
    );
    assert!(trace.is_empty(), "nothing runs before the check");
    assert_eq!(model.requests().len(), 0);

    let job = sb.read("job.yaml");
    sb.write("job.yaml", &format!("{job}allow_dirty: true\n"));
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(run_status(&trace), "passed");
}

#[test]
fn git_outputs_need_a_repository_and_a_new_branch() {
    let model = FakeModel::start(Vec::new());
    let sb = Sandbox::new();
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        &format!(
            "name: j\nskill: fixer\ngoal: g\nskills_path: [skills]\nworkspace: ws\n\
             model: {{name: m, base_url: {}}}\noutputs: {{patch: changes.patch}}\n",
            model.base_url()
        ),
    );
    let (out, _) = run(&sb);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("need a git repository"),
        "{}",
        stderr(&out)
    );

    let (sb, repo) = sandbox(
        &model.base_url(),
        "outputs: {commit: {branch: agentci/fix}}\n",
    );
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    repo.branch("agentci/fix", &head, false).unwrap();
    let (out, _) = run(&sb);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("branch `agentci/fix` already exists"),
        "{}",
        stderr(&out)
    );
    assert_eq!(model.requests().len(), 0);
}

#[test]
fn the_patch_holds_the_agents_changes_and_applies_to_a_fresh_clone() {
    let model = FakeModel::start(fixing_script());
    // The patch is written inside the workspace: it must not end up in itself.
    let (sb, _repo) = sandbox(&model.base_url(), "outputs: {patch: out/changes.patch}\n");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));

    let patch_path = sb.workspace().join("out/changes.patch");
    let started = &events(&trace, "run.started")[0];
    assert_eq!(
        started["outputs"]["patch"],
        patch_path.display().to_string()
    );
    let patch = events(&trace, "git.patch");
    assert_eq!(patch.len(), 1);
    assert_eq!(patch[0]["path"], patch_path.display().to_string());
    assert_eq!(patch[0]["files_changed"], 2);
    assert_eq!(patch[0]["insertions"], 2);
    assert_eq!(patch[0]["deletions"], 1);
    let types: Vec<&str> = trace.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let at = |t: &str| types.iter().position(|x| *x == t).unwrap();
    assert!(at("check.completed") < at("git.patch") && at("git.patch") < at("run.completed"));

    let text = std::fs::read_to_string(&patch_path).unwrap();
    assert!(text.contains("-hello wrold\n+hello world\n"), "{text}");
    assert!(
        text.contains("new file mode") && text.contains("+Fixed a typo.\n"),
        "{text}"
    );
    assert!(
        !text.contains(".agentci") && !text.contains("changes.patch"),
        "{text}"
    );

    // Applied to a clone of the original commit it reproduces the agent's files.
    let clone_dir = sb.path().join("clone");
    let clone = Repository::clone(sb.workspace().to_str().unwrap(), &clone_dir).unwrap();
    let diff = git2::Diff::from_buffer(text.as_bytes()).unwrap();
    clone
        .apply(&diff, git2::ApplyLocation::WorkDir, None)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(clone_dir.join("greeting.txt")).unwrap(),
        "hello world\n"
    );
    assert_eq!(
        std::fs::read_to_string(clone_dir.join("NOTES.md")).unwrap(),
        "Fixed a typo.\n"
    );
}

#[test]
fn a_passing_run_commits_on_a_new_branch_and_pushes_it_to_a_bare_remote() {
    let model = FakeModel::start(fixing_script());
    let (sb, repo) = sandbox(
        &model.base_url(),
        r#"outputs:
  commit:
    branch: agentci/fix-greeting
    message: "fix: greeting typo"
    author: {name: Fixer Bot, email: bot@example.com}
  push: {remote: origin, token_env: AGENTCI_TEST_TOKEN}
"#,
    );
    let original = repo.head().unwrap().peel_to_commit().unwrap().id();
    let original_branch = repo.head().unwrap().name().unwrap().to_string();
    let bare_dir = sb.path().join("remote.git");
    Repository::init_bare(&bare_dir).unwrap();
    repo.remote("origin", bare_dir.to_str().unwrap()).unwrap();

    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let commit_event = events(&trace, "git.commit");
    assert_eq!(commit_event.len(), 1);
    assert_eq!(commit_event[0]["branch"], "agentci/fix-greeting");
    let sha = commit_event[0]["sha"].as_str().unwrap().to_string();
    let push_event = events(&trace, "git.push");
    assert_eq!(push_event.len(), 1);
    assert_eq!(push_event[0]["remote"], "origin");
    assert_eq!(push_event[0]["branch"], "agentci/fix-greeting");

    // The remote has the branch, at the commit the trace names.
    let bare = Repository::open_bare(&bare_dir).unwrap();
    let branch = bare
        .find_reference("refs/heads/agentci/fix-greeting")
        .unwrap();
    let commit = branch.peel_to_commit().unwrap();
    assert_eq!(commit.id().to_string(), sha);
    assert_eq!(commit.parent_ids().collect::<Vec<_>>(), vec![original]);
    assert_eq!(commit.author().name(), Ok("Fixer Bot"));
    assert_eq!(commit.author().email(), Ok("bot@example.com"));
    let message = commit.message().unwrap();
    assert!(message.starts_with("fix: greeting typo\n\n"), "{message}");
    for trailer in [
        "Agentci-Job: fix-greeting",
        "Agentci-Skill: fixer",
        "Agentci-Model: openai:fake-model",
        "Agentci-Status: passed",
    ] {
        assert!(message.contains(trailer), "{trailer} missing in {message}");
    }
    let tree = commit.tree().unwrap();
    let blob = |name: &str| {
        let entry = tree.get_path(Path::new(name)).unwrap();
        let object = entry.to_object(&bare).unwrap();
        String::from_utf8(object.as_blob().unwrap().content().to_vec()).unwrap()
    };
    assert_eq!(blob("greeting.txt"), "hello world\n");
    assert_eq!(blob("NOTES.md"), "Fixed a typo.\n");
    assert!(
        tree.get_path(Path::new(".agentci")).is_err(),
        "agentci's run folder must stay out of the commit"
    );

    // Locally: HEAD is the new branch, the branch the run started on has
    // not moved, and nothing is left uncommitted.
    let repo = Repository::open(sb.workspace()).unwrap();
    assert_eq!(repo.head().unwrap().shorthand(), Ok("agentci/fix-greeting"));
    assert_eq!(
        repo.find_reference(&original_branch).unwrap().target(),
        Some(original)
    );
    assert_eq!(
        std::fs::read_to_string(sb.workspace().join("greeting.txt")).unwrap(),
        "hello world\n",
        "the working tree keeps the agent's changes"
    );
    let dirty = repo
        .statuses(None)
        .unwrap()
        .iter()
        .filter(|s| !s.status().is_ignored())
        .count();
    assert_eq!(dirty, 0);
}

#[test]
fn no_commit_when_the_checks_fail_unless_on_failure() {
    let outputs = "outputs: {patch: changes.patch, commit: {branch: agentci/try}}\n";
    let model = FakeModel::start(failing_script());
    let (sb, repo) = sandbox(&model.base_url(), outputs);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert_eq!(run_status(&trace), "failed");
    assert!(events(&trace, "git.commit").is_empty());
    assert_eq!(
        events(&trace, "git.patch").len(),
        1,
        "the patch is written anyway"
    );
    let warnings = events(&trace, "warning");
    assert!(
        warnings
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("no commit")),
        "{warnings:?}"
    );
    assert!(
        repo.find_branch("agentci/try", git2::BranchType::Local)
            .is_err()
    );

    let model = FakeModel::start(failing_script());
    let (sb, repo) = sandbox(
        &model.base_url(),
        "outputs: {commit: {branch: agentci/try, on_failure: true}}\n",
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert_eq!(events(&trace, "git.commit").len(), 1);
    let branch = repo
        .find_branch("agentci/try", git2::BranchType::Local)
        .unwrap();
    let message = branch.get().peel_to_commit().unwrap();
    assert!(
        message
            .message()
            .unwrap()
            .contains("Agentci-Status: failed"),
        "{:?}",
        message.message()
    );
}

#[test]
fn an_unknown_remote_stops_the_run_before_it_and_a_failed_push_fails_it() {
    let outputs = "outputs: {commit: {branch: agentci/fix}, push: true}\n";
    let model = FakeModel::start(fixing_script());
    let (sb, repo) = sandbox(&model.base_url(), outputs);
    let (out, _) = run(&sb);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("has no remote `origin`"),
        "{}",
        stderr(&out)
    );
    assert_eq!(model.requests().len(), 0);

    // A remote that is configured but does not answer: the commit stays, the run fails.
    repo.remote("origin", sb.path().join("gone.git").to_str().unwrap())
        .unwrap();
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let last = trace.last().unwrap();
    assert_eq!(last["status"], "failed");
    let reason = last["reason"].as_str().unwrap();
    assert!(
        reason.contains("cannot push branch `agentci/fix` to `origin`"),
        "{reason}"
    );
    assert_eq!(events(&trace, "git.commit").len(), 1);
    assert!(events(&trace, "git.push").is_empty());
}
