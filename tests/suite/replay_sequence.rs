//! Replaying a cassette after the skill was edited: the strict replay says
//! what changed (the skill text) and how to fix it; a `sequence` replay
//! serves the recorded answers in order anyway and says how far the
//! requests drifted (`replay.drift`, results.json, summary.md, the HTML
//! report); a cassette that runs out says so.

use serde_json::{Value, json};

use super::eval::{eval, results};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr};
use super::support::job::JobBuilder;
use super::support::job::JobRun;
use super::support::trace_schema::assert_valid_trace;

fn sandbox(base_url: &str) -> Sandbox {
    sandbox_with(base_url, "")
}

/// The typo-fixing job, with `extra` lines added to the job file.
pub(super) fn sandbox_with(base_url: &str, extra: &str) -> Sandbox {
    JobBuilder::new("fix-greeting", "fixer", base_url)
        .allowed_tools("Read Edit")
        .file("ws/greeting.txt", "hello wrold\n")
        .tools("[read, edit]")
        .body(&format!(
            r#"permissions:
  default: deny
  allow: [read, "edit(*.txt)"]
checks:
  - name: greeting fixed
    run: grep -q "hello world" greeting.txt
{extra}"#
        ))
        .write()
}

pub(super) fn script() -> Vec<Reply> {
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
    JobRun::new(sb).args(args).output()
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

/// The recorded sandbox with one more line in the skill's instructions.
fn edited_skill(sb: &Sandbox) {
    let skill = sb.read("skills/fixer/SKILL.md");
    sb.write(
        "skills/fixer/SKILL.md",
        &format!("{skill}Always keep the line endings.\n"),
    );
}

#[test]
fn sequence_replay_after_a_skill_edit_passes_and_counts_the_drift() {
    let sb = recorded();
    edited_skill(&sb);
    let out = run(
        &sb,
        &["--replay", "cassette.jsonl", "--replay-match", "sequence"],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(sb.read("ws/greeting.txt"), "hello world\n");
    let trace = sb.trace("out/trace.jsonl");
    assert_valid_trace(&sb.path().join("out/trace.jsonl"));
    let drift = events(&trace, "replay.drift");
    assert_eq!(drift.len(), 1, "{trace:?}");
    // Every request carries the system prompt: all four turns are out of date.
    assert_eq!(drift[0]["turns"], 4);
    assert_eq!(drift[0]["drifted"], 4);
    assert_eq!(drift[0]["recorded"], 4);
    assert_eq!(drift[0]["parts"], json!({"skill text": 4}));
    assert_eq!(drift[0]["first_drifted_turn"], 1);
    // Just before run.completed.
    let kinds: Vec<&str> = trace.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds[kinds.len() - 2..], ["replay.drift", "run.completed"]);
}

#[test]
fn sequence_replay_of_an_unchanged_job_reports_no_drift() {
    let sb = recorded();
    let job = sb.read("job.yaml").replace(
        "  base_url: http://127.0.0.1:9/v1\n",
        "  base_url: http://127.0.0.1:9/v1\n  replay: {match: sequence}\n",
    );
    sb.write("job.yaml", &job);
    let out = run(&sb, &["--replay", "cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let trace = sb.trace("out/trace.jsonl");
    let drift = events(&trace, "replay.drift");
    assert_eq!(drift[0]["drifted"], 0, "{drift:?}");
    assert_eq!(drift[0]["first_drifted_turn"], Value::Null);
}

/// A model that now needs more turns than were recorded: the sequence
/// replay cannot invent an answer and says so.
#[test]
fn a_sequence_replay_that_runs_out_of_answers_says_so() {
    let sb = recorded();
    let cassette = sb.read("cassette.jsonl");
    let lines: Vec<&str> = cassette.lines().collect();
    // Header and the first two exchanges: the step never ends.
    sb.write("cassette.jsonl", &format!("{}\n", lines[..3].join("\n")));
    let out = run(
        &sb,
        &["--replay", "cassette.jsonl", "--replay-match", "sequence"],
    );
    assert_eq!(out.status.code(), Some(4), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("has only 2 exchanges and the run asked for answer 3")
            && err.contains("took more turns than the recording; re-record with --record"),
        "{err}"
    );
    // The trace is whole: the drift so far, then how the run ended.
    let trace = sb.trace("out/trace.jsonl");
    assert_eq!(events(&trace, "replay.drift")[0]["turns"], 2);
    assert_eq!(events(&trace, "run.completed").len(), 1);
}

#[test]
fn a_wrong_replay_match_is_named_at_its_place() {
    let sb = recorded();
    let job = sb.read("job.yaml").replace(
        "  base_url: http://127.0.0.1:9/v1\n",
        "  base_url: http://127.0.0.1:9/v1\n  replay: {match: loose}\n",
    );
    sb.write("job.yaml", &job);
    let err = stderr(&run(&sb, &["--replay", "cassette.jsonl"]));
    assert!(
        err.contains("job.yaml:9:19: error: unknown replay match `loose`; expected `strict`"),
        "{err}"
    );
    let sb = recorded();
    let out = run(
        &sb,
        &["--replay", "cassette.jsonl", "--replay-match", "fuzzy"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--replay-match: error: unknown replay match `fuzzy`"),
        "{}",
        stderr(&out)
    );
}

/// A suite replaying the recorded cassette, with its fixture.
fn suite(sb: &Sandbox) {
    sb.write("fixture/greeting.txt", "hello wrold\n");
    sb.write(
        "suite.yaml",
        r#"version: 1
name: greetings
job: job.yaml
cases:
  - name: fix-typo
    fixture: fixture
    cassette: cassette.jsonl
    assert:
      - file_contains: {path: greeting.txt, pattern: hello world}
"#,
    );
}

#[test]
fn eval_after_a_skill_edit_fails_strict_and_passes_in_sequence_with_the_drift() {
    let sb = recorded();
    suite(&sb);
    let before = eval(&sb, &["suite.yaml", "--out", "before"]);
    assert_eq!(before.status.code(), Some(0), "{}", stderr(&before));
    assert!(
        results(&sb.path().join("before"))["suites"][0]["cases"][0]
            .get("replay_drift")
            .is_none()
    );
    edited_skill(&sb);

    let strict = eval(&sb, &["suite.yaml", "--out", "strict"]);
    assert_ne!(strict.status.code(), Some(0), "{}", stderr(&strict));
    let strict_results = results(&sb.path().join("strict"));
    let case = &strict_results["suites"][0]["cases"][0];
    assert_eq!(case["status"], "error", "{case}");
    let reason = case["attempts"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("the skill text (system prompt) changed since the recording")
            && reason.contains("re-record with --record"),
        "{reason}"
    );

    let sequence = eval(
        &sb,
        &[
            "suite.yaml",
            "--replay-match",
            "sequence",
            "--out",
            "sequence",
            "--html",
            "html",
        ],
    );
    assert_eq!(sequence.status.code(), Some(0), "{}", stderr(&sequence));
    let seq_results = results(&sb.path().join("sequence"));
    let case = &seq_results["suites"][0]["cases"][0];
    assert_eq!(case["status"], "passed", "{case}");
    let figure = json!({
        "turns": 4, "drifted": 4, "recorded": 4,
        "parts": {"skill text": 4}, "first_drifted_turn": 1
    });
    assert_eq!(case["replay_drift"], figure);
    assert_eq!(case["attempts"][0]["replay_drift"], figure);
    let summary = std::fs::read_to_string(sb.path().join("sequence/summary.md")).unwrap();
    let notes = &summary[summary.find("### Replayed in sequence").unwrap()..];
    insta::assert_snapshot!("sequence_replay_summary_note", notes);
    let html = std::fs::read_to_string(sb.path().join("html/index.html")).unwrap();
    assert!(
        html.contains("recordings out of date in 4/4 turns (skill text 4)"),
        "the HTML report shows no drift"
    );
}
