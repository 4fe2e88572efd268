//! `checks_rounds`: when the checks fail and rounds remain, what failed goes
//! back to the agent as a new step, with the conversation, plan and budget
//! it has; the JUnit file records earlier failed rounds as `flakyFailure`
//! (a later round passed) or `rerunFailure` (none did). The real binary
//! against the fake model server, the JUnit file checked against the
//! Jenkins schema and read back with junitparser.

use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, read_jsonl, stderr};
use super::support::job::JobBuilder;
use super::support::junit_schema::assert_readable;
use super::support::trace_schema::assert_valid_trace;

/// A secret the job passes to its checks; the failing check prints it, and
/// it is masked wherever it appears.
const TOKEN: &str = "s3cr3t-round-token-42";

/// A workspace with a typo and a job whose check fails while it is there.
/// The check also prints a secret and a long log before failing.
fn sandbox(base_url: &str, job_extra: &str) -> Sandbox {
    JobBuilder::new("fix-greeting", "fixer", base_url)
        .goal("Make the greeting say hello world.")
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: {base_url}}}"
        ))
        .file("ws/greeting.txt", "hello wrold\n")
        .tools("[read, write]")
        .body(&format!(
            r#"secrets: [ROUND_TOKEN]
env:
  ROUND_TOKEN: "${{{{ secrets.ROUND_TOKEN }}}}"
permissions: {{default: allow}}
checks:
  - name: builds
    run: "true"
  - name: greeting fixed
    run: 'seq 1 20000; echo "token $ROUND_TOKEN"; grep -q "hello world" greeting.txt'
{job_extra}"#
        ))
        .write()
}

/// Run the job; exit code, trace, parsed JUnit and its XML.
fn run(sb: &Sandbox, flags: &[&str]) -> (Option<i32>, Vec<Value>, Report, String) {
    run_with(sb, flags, &[])
}

/// [`run`] with more environment variables.
fn run_with(
    sb: &Sandbox,
    flags: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, Vec<Value>, Report, String) {
    let junit = sb.path().join("junit.xml");
    let trace = sb.path().join("trace.jsonl");
    let job = sb.path().join("job.yaml").display().to_string();
    let workspace = sb.workspace().display().to_string();
    let (junit_arg, trace_arg) = (junit.display().to_string(), trace.display().to_string());
    let mut args = vec![
        "run",
        job.as_str(),
        "--workspace",
        &workspace,
        "--junit",
        &junit_arg,
        "--trace",
        &trace_arg,
        "--progress",
        "none",
    ];
    args.extend_from_slice(flags);
    let mut all_env = vec![("OPENAI_API_KEY", "sk-test"), ("ROUND_TOKEN", TOKEN)];
    all_env.extend_from_slice(env);
    let out = agentci_in(sb.path(), &args, &all_env);
    eprintln!("stderr: {}", stderr(&out));
    assert_readable(&junit);
    assert_valid_trace(&trace);
    let xml = std::fs::read_to_string(&junit).unwrap();
    let report = Report::deserialize_from_str(&xml).unwrap();
    (out.status.code(), read_jsonl(&trace), report, xml)
}

/// Round 1: plan one step, finish it without fixing anything, summarize.
fn lazy_round() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Look at the greeting", "the greeting is understood")]),
        Reply::step_done("looked at it"),
        Reply::text("I looked at the greeting."),
    ]
}

/// A later round that fixes the typo.
fn fixing_round() -> Vec<Reply> {
    vec![
        Reply::tool_call(
            "write",
            json!({"path": "greeting.txt", "content": "hello world\n"}),
        ),
        Reply::step_done("fixed the typo"),
        Reply::text("The greeting now says hello world."),
    ]
}

/// A later round that changes nothing.
fn idle_round() -> Vec<Reply> {
    vec![
        Reply::step_done("tried"),
        Reply::text("I could not fix it."),
    ]
}

/// The round, check and plan events, without times.
fn round_story(trace: &[Value]) -> Vec<Value> {
    trace
        .iter()
        .filter(|e| {
            let kind = e["type"].as_str().unwrap_or_default();
            kind.starts_with("round.") || kind == "plan.updated" || kind == "check.completed"
        })
        .map(|e| {
            let mut e = e.clone();
            let map = e.as_object_mut().unwrap();
            for key in ["seq", "ts", "run_id", "duration_ms", "sandbox"] {
                map.remove(key);
            }
            // The log is long: its end is what matters.
            if let Some(output) = map.get("output").and_then(Value::as_str)
                && output.len() > 60
            {
                let tail: String = output.chars().rev().take(60).collect();
                let tail: String = tail.chars().rev().collect();
                map.insert("output".into(), Value::String(format!("…{tail}")));
            }
            e
        })
        .collect()
}

/// The JUnit file with its timestamp and times redacted, and the long log cut.
fn redact_junit(xml: &str) -> String {
    let timestamp = regex::Regex::new(r#"timestamp="[^"]*""#).unwrap();
    let time = regex::Regex::new(r#"\btime="[^"]*""#).unwrap();
    let log = regex::Regex::new(r"(\d+\n){3,}").unwrap();
    let dir = regex::Regex::new(r#"value="/[^"]*""#).unwrap();
    let xml = timestamp.replace_all(xml, r#"timestamp="[timestamp]""#);
    let xml = time.replace_all(&xml, r#"time="[time]""#);
    let xml = log.replace_all(&xml, "[numbers]\n");
    dir.replace_all(&xml, r#"value="[path]""#).into_owned()
}

fn case<'r>(report: &'r Report, name: &str) -> &'r TestCaseStatus {
    let cases = &report.test_suites[0].test_cases;
    &cases
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("no testcase {name:?}"))
        .status
}

/// The user messages of each request, as the model received them.
fn user_texts(model: &FakeModel) -> Vec<String> {
    let last = model.requests().last().cloned().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_check_that_fails_then_passes_is_flaky_and_the_run_passes() {
    let model = FakeModel::start([lazy_round(), fixing_round()].concat());
    let sb = sandbox(&model.base_url(), "checks_rounds: 3\n");
    let (code, trace, report, xml) = run(&sb, &[]);
    assert_eq!(code, Some(0));
    assert_eq!(sb.read("ws/greeting.txt"), "hello world\n");
    assert_eq!(model.remaining(), 0);

    let done = events(&trace, "run.completed")[0];
    assert_eq!(done["status"], "passed");
    assert_eq!(done["checks_passed"], 2);
    assert_eq!(done["checks_failed"], 0);
    assert_eq!(done["totals"]["turns"], 6);

    // The failing check went back to the model: its name, exit code and the
    // end of its output, masked and capped; the conversation was kept.
    let users = user_texts(&model);
    let feedback = users
        .iter()
        .find(|t| t.contains("Round 2 of 3"))
        .expect("a round message");
    assert!(feedback.contains("`greeting fixed`"), "{feedback}");
    assert!(feedback.contains("exit code 1"), "{feedback}");
    assert!(feedback.contains("20000"), "{feedback}");
    assert!(!feedback.contains("`builds`"), "{feedback}");
    assert!(
        feedback.len() < 4_000,
        "not capped: {} bytes",
        feedback.len()
    );
    assert!(users[0].contains("Make the greeting say hello world."));
    for request in model.requests() {
        assert!(
            !request.to_string().contains(TOKEN),
            "the secret reached the model"
        );
    }

    match case(&report, "greeting fixed") {
        TestCaseStatus::Success { flaky_runs } => {
            assert_eq!(flaky_runs.len(), 1);
            assert_eq!(flaky_runs[0].kind, NonSuccessKind::Failure);
        }
        other => panic!("not a flaky success: {other:?}"),
    }
    assert!(matches!(
        case(&report, "builds"),
        TestCaseStatus::Success { flaky_runs } if flaky_runs.is_empty()
    ));
    assert!(!xml.contains(TOKEN));

    insta::assert_json_snapshot!("rounds_flaky_events", round_story(&trace));
    insta::assert_snapshot!("rounds_flaky_junit", redact_junit(&xml));
}

#[test]
fn a_check_that_never_passes_fails_after_the_last_round_within_budget() {
    // Round 1 takes 3 turns and round 2 two more: the budget of 6 turns is
    // shared, so the third round gets one turn (its step, no summary).
    let model = FakeModel::start([lazy_round(), idle_round(), idle_round()].concat());
    let sb = sandbox(&model.base_url(), "budget: {max_turns: 6}\n");
    let (code, trace, report, xml) = run(&sb, &["--checks-rounds", "3"]);
    assert_eq!(code, Some(1));
    let done = events(&trace, "run.completed")[0];
    assert_eq!(done["status"], "failed");
    assert_eq!(done["checks_failed"], 1);
    assert_eq!(done["totals"]["turns"], 6);
    assert_eq!(events(&trace, "round.started").len(), 3);
    let completed = events(&trace, "round.completed");
    assert_eq!(completed.len(), 3);
    assert_eq!(completed[2]["round"], 3);
    assert_eq!(completed[2]["checks_failed"], 1);
    // Round 3 had one turn left: the step, but no summary turn.
    assert_eq!(events(&trace, "model.request").len(), 6);
    assert_eq!(model.remaining(), 1);

    match case(&report, "greeting fixed") {
        TestCaseStatus::NonSuccess { kind, reruns, .. } => {
            assert_eq!(*kind, NonSuccessKind::Failure);
            assert_eq!(reruns.runs.len(), 2);
            assert_eq!(reruns.kind, quick_junit::FlakyOrRerun::Rerun);
        }
        other => panic!("did not fail: {other:?}"),
    }
    insta::assert_snapshot!("rounds_never_junit", redact_junit(&xml));
}

#[test]
fn one_round_is_the_default_and_writes_no_round_events() {
    let model = FakeModel::start(lazy_round());
    let sb = sandbox(&model.base_url(), "");
    let (code, trace, report, _) = run(&sb, &[]);
    assert_eq!(code, Some(1));
    assert!(events(&trace, "round.started").is_empty());
    assert!(events(&trace, "round.completed").is_empty());
    assert!(matches!(
        case(&report, "greeting fixed"),
        TestCaseStatus::NonSuccess { reruns, .. } if reruns.runs.is_empty()
    ));
}

#[test]
fn zero_rounds_is_refused_with_the_place_and_the_fix() {
    let sb = sandbox("http://127.0.0.1:9", "checks_rounds: 0\n");
    let job = sb.path().join("job.yaml").display().to_string();
    let out = agentci_in(sb.path(), &["run", &job], &[("OPENAI_API_KEY", "sk-test")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("checks_rounds"), "{err}");
    assert!(err.contains("job.yaml:"), "{err}");
}

#[test]
fn a_budget_that_runs_out_in_a_later_round_keeps_the_earlier_failure() {
    // Round 1 takes 3 of the 4 turns; round 2's first call is the last.
    let model = FakeModel::start(
        [
            lazy_round(),
            vec![Reply::tool_call("read", json!({"path": "greeting.txt"}))],
        ]
        .concat(),
    );
    let sb = sandbox(
        &model.base_url(),
        "checks_rounds: 2\nbudget: {max_turns: 4}\n",
    );
    let (code, trace, report, _) = run(&sb, &[]);
    assert_eq!(code, Some(3));
    let done = events(&trace, "run.completed")[0];
    assert_eq!(done["status"], "budget_exceeded");
    assert_eq!(done["totals"]["turns"], 4);
    let completed = events(&trace, "round.completed");
    assert_eq!(completed.len(), 2);
    assert_eq!(completed[1]["checks_failed"], 0);
    // Round 2's checks were skipped; the testcase still shows round 1's failure.
    match case(&report, "greeting fixed") {
        TestCaseStatus::NonSuccess {
            message, reruns, ..
        } => {
            assert_eq!(message.as_deref(), Some("check failed: exit code 1"));
            assert!(reruns.runs.is_empty());
        }
        other => panic!("the round 1 failure was lost: {other:?}"),
    }
}

#[test]
fn the_step_summary_shows_the_last_round() {
    let model = FakeModel::start([lazy_round(), fixing_round()].concat());
    let sb = sandbox(&model.base_url(), "checks_rounds: 2\n");
    let summary = sb.path().join("summary.md");
    let summary_arg = summary.display().to_string();
    let workspace = sb.path().display().to_string();
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_STEP_SUMMARY", summary_arg.as_str()),
        ("GITHUB_WORKSPACE", workspace.as_str()),
    ];
    let (code, ..) = run_with(&sb, &[], &env);
    assert_eq!(code, Some(0));
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(
        summary.contains("| greeting fixed | ✅ passed |"),
        "{summary}"
    );
    assert!(!summary.contains("❌"), "{summary}");
}

// A model that leaves a kept background session running at the end of its
// work must not have it judged by the checks: it is killed before round
// 1's checks, and round 2 starts with no session of round 1 alive.
#[test]
fn a_kept_background_session_ends_before_each_rounds_checks() {
    let started = Reply::tool_call(
        "exec",
        json!({"command": "sleep 300", "background": true, "keep": true}),
    );
    let listed = Reply::tool_call("process", json!({"action": "list"}));
    let model = FakeModel::start(vec![
        Reply::plan(&[("Start a helper", "it runs")]),
        started,
        Reply::step_done("started it"),
        Reply::text("A helper runs."),
        listed,
        Reply::step_done("nothing to fix"),
        Reply::text("I could not fix it."),
    ]);
    let sb = sandbox(&model.base_url(), "checks_rounds: 2\n");
    let job = sb.read("job.yaml").replace(
        "tools: [read, write]",
        "tools: [read, write, exec, process]",
    );
    sb.write("job.yaml", &job);
    let (code, trace, _, _) = run(&sb, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(model.remaining(), 0);

    let position = |pred: &dyn Fn(&Value) -> bool| trace.iter().position(pred).unwrap();
    let killed = position(&|e| {
        e["type"] == "warning"
            && e["source"] == "process"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("end of the run"))
    });
    let first_check = position(&|e| e["type"] == "check.completed");
    let second_round = position(&|e| e["type"] == "round.started" && e["round"] == 2);
    assert!(killed < first_check, "the session outlived round 1's work");
    assert!(first_check < second_round);

    // Round 2's `process list` sees round 1's session killed, not running.
    let listing = trace
        .iter()
        .rfind(|e| e["type"] == "tool.result" && e["tool"] == "process")
        .unwrap();
    let session = &listing["data"]["sessions"][0];
    assert_eq!(session["running"], false, "{listing}");
    assert_eq!(
        session["state"], "killed at the end of the run",
        "{listing}"
    );
}
