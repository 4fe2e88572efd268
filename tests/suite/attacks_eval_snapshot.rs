//! Attacks on what `agentci eval` reads after an attempt, end to end: the
//! real binary, a scripted hostile model whose `exec` plants symlinks in the
//! attempt's workspace and keeps swapping a folder for a symlink, then a
//! judge that sees every file and the diff.
//!
//! The snapshot taken after the run feeds the judge, the diff and the
//! attempt's patch. It is read by descriptor beneath the workspace, so a
//! link is named (never followed) and a folder swapped for a link while it
//! is read cannot lead the read out. Judged by the side effect, as root and
//! as an unprivileged user: the outside file's text reaches no request the
//! judge is sent and no file agentci writes.

use serde_json::json;

use super::eval::results;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, stderr};
use super::support::users::RunAs;

const OUTSIDE_SECRET: &str = "outside-only-text-7731";

const JOB: &str = "version: 1
name: planter
skill: notes-fixer
skills_path: [skills]
goal: Change the status in notes.txt to fixed.
model: {provider: openai, name: scripted}
tools: [read, edit, exec]
permissions: {default: allow}
budget: {max_turns: 10}
";

const SUITE: &str = "version: 1
name: snapshot
job: job.yaml
cases:
  - name: planted
    fixture: fixture
    assert:
      - judge:
          rubric: The notes say fixed.
          sees: [diff, final_text, {files: ['**']}]
";

/// Links to the outside file and folder, and a background loop that swaps
/// `docs` between a folder and a link to the outside folder for as long as
/// it lives (the sandbox may end it with the command; either way the
/// snapshot must not follow it).
fn planting(outside: &str) -> String {
    format!(
        "ln -s {outside}/secret.txt leak.txt && ln -s {outside} outside-dir && \
         mkdir docs && echo inside > docs/a.txt && \
         (setsid sh -c 'for i in $(seq 1 20000); do \
            mv docs docs.real && ln -s {outside} docs && rm docs && mv docs.real docs; \
          done' >/dev/null 2>&1 &) ; echo planted"
    )
}

fn script(outside: &str) -> Vec<Reply> {
    vec![
        Reply::plan(&[("Fix the status", "notes.txt says fixed")]),
        Reply::tool_calls(vec![
            (
                "plant",
                "exec",
                json!({"command": planting(outside), "timeout_ms": 20000}),
            ),
            (
                "fix",
                "edit",
                json!({"path": "notes.txt", "old_text": "status: broken", "new_text": "status: fixed"}),
            ),
        ]),
        Reply::step_done("status fixed"),
        Reply::text("Set the status to fixed."),
        Reply::tool_calls(vec![(
            "judge-1",
            "submit_judgement",
            json!({"score": 0.9, "verdict": "pass", "reasons": ["The notes say fixed."]}),
        )]),
    ]
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &std::path::Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walkdir(dir) {
        if std::fs::read(&entry)
            .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
        {
            found.push(entry.display().to_string());
        }
    }
    found
}

/// Regular files below `dir`, symlinks not followed.
fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files
}

#[test]
fn links_planted_in_an_attempt_never_lead_the_judge_or_the_patch_outside() {
    for user in RunAs::each() {
        let sandbox = Sandbox::new();
        sandbox.skill("notes-fixer", None);
        sandbox.write("job.yaml", JOB);
        sandbox.write("fixture/notes.txt", "status: broken\n");
        sandbox.write("suite.yaml", SUITE);
        sandbox.write("outside/secret.txt", &format!("{OUTSIDE_SECRET}\n"));
        // The same name as the file inside `docs`: a read by name during a swap
        // would find this one.
        sandbox.write("outside/a.txt", &format!("{OUTSIDE_SECRET} in a folder\n"));
        let outside = sandbox.path().join("outside");
        let model = FakeModel::start(script(&outside.display().to_string()));
        let url = model.base_url();
        let out = sandbox.agentci_as(
            user,
            &[
                "eval",
                "suite.yaml",
                "--model",
                "openai:scripted",
                "--base-url",
                &url,
                "--out",
                "out",
                "--progress",
                "none",
                "--jobs",
                "1",
            ],
            &[],
        );
        let label = user.label();
        assert_eq!(model.remaining(), 0, "as {label}: {}", stderr(&out));
        let planted = model.tool_result("plant");
        assert!(
            planted.contains("planted"),
            "as {label}: the links were not planted: {planted}"
        );

        // The judge saw the links by name, not what they point at.
        let requests = model.requests();
        let judge_request = requests.last().unwrap().to_string();
        assert!(
            judge_request.contains("leak.txt") && judge_request.contains("not followed"),
            "as {label}: the judge was not shown the link: {judge_request}"
        );
        assert!(
            !judge_request.contains(OUTSIDE_SECRET),
            "as {label}: the outside file reached the judge: {judge_request}"
        );
        let results = results(&sandbox.path().join("out"));
        let case = &results["suites"][0]["cases"][0];
        assert_eq!(case["status"], "passed", "as {label}: {case:#}");

        // Nothing agentci wrote holds the outside text.
        let leaked = files_containing(&sandbox.path().join("out"), OUTSIDE_SECRET);
        assert!(leaked.is_empty(), "as {label}: outside text in {leaked:?}");
        assert_eq!(
            std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
            format!("{OUTSIDE_SECRET}\n"),
            "as {label}: the outside file changed"
        );
    }
}
