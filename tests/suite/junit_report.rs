//! The run's JUnit file as report readers read it: the real binary against
//! the fake model server, the file checked against the Jenkins schema and
//! read back with junitparser.
//!
//! Regression: a run whose model never submitted a plan (or gave up) while
//! a check failed wrote `<testcase name="agent"/>` with no failure, so every
//! reader showed "agent: passed" and the reason was nowhere in the file; a
//! check that printed nothing wrote an empty `<failure>` text, which dorny's
//! jest-junit reader crashes on; `file` held the job path as typed, absolute
//! paths included, so no reader could link it to the checkout.

use std::path::Path;

use quick_junit::{Report, TestCaseStatus};
use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, stderr};
use super::support::job::JobBuilder;
use super::support::junit_schema::{ReadCase, assert_readable};

/// A workspace with a typo, a job whose first check fails while the typo is
/// there and whose second fails printing nothing.
fn sandbox(base_url: &str) -> Sandbox {
    JobBuilder::new("fix-greeting", "fixer", base_url)
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: {base_url}}}"
        ))
        .file("ws/greeting.txt", "hello wrold\n")
        .tools("[read, ls]")
        .body(
            r#"max_plan_turns: 2
permissions: {default: allow}
checks:
  - {name: greeting fixed, run: grep -q "hello world" greeting.txt}
  - {name: silent, run: "false"}
"#,
        )
        .write()
}

/// Run the job (named by `job`) from `cwd` with `env`; the JUnit file, parsed.
fn run(
    sb: &Sandbox,
    cwd: &Path,
    job: &str,
    env: &[(&str, &str)],
) -> (Report, Option<Vec<ReadCase>>) {
    let junit = sb.path().join("junit.xml");
    let junit_arg = junit.display().to_string();
    let mut all_env = vec![("OPENAI_API_KEY", "sk-test")];
    all_env.extend_from_slice(env);
    let out = agentci_in(
        cwd,
        &[
            "run",
            job,
            "--workspace",
            &sb.workspace().display().to_string(),
            "--junit",
            &junit_arg,
            "--progress",
            "none",
        ],
        &all_env,
    );
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let read = assert_readable(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    (Report::deserialize_from_str(&xml).unwrap(), read)
}

/// `(message, text)` of the agent testcase's failure; panics if it passed.
fn agent_failure(report: &Report) -> (String, String) {
    let case = &report.test_suites[0].test_cases[0];
    assert_eq!(case.name.as_str(), "agent");
    match &case.status {
        TestCaseStatus::NonSuccess {
            message,
            description,
            ..
        } => (
            message.as_deref().unwrap_or_default().to_string(),
            description.as_deref().unwrap_or_default().to_string(),
        ),
        other => panic!("the agent testcase did not fail: {other:?}"),
    }
}

#[test]
fn an_agent_that_never_plans_fails_its_testcase_with_the_reason() {
    let model = FakeModel::start(vec![
        Reply::text("I would rather talk about it."),
        Reply::text("Still no plan."),
    ]);
    let sb = sandbox(&model.base_url());
    let job = sb.path().join("job.yaml").display().to_string();
    let (report, read) = run(&sb, sb.path(), &job, &[]);
    let (message, text) = agent_failure(&report);
    assert_eq!(
        message,
        "the model did not submit a plan within 2 planning turns"
    );
    assert!(text.contains("plan: none submitted"), "{text}");
    assert!(text.contains("checks: 0 passed, 2 failed"), "{text}");

    // A check that printed nothing still says why it failed.
    let silent = &report.test_suites[0].test_cases[2];
    match &silent.status {
        TestCaseStatus::NonSuccess { description, .. } => assert_eq!(
            description.as_deref(),
            Some("check failed: exit code 1; it printed nothing")
        ),
        other => panic!("{other:?}"),
    }
    // The job file was named by its absolute path; `file` is relative to
    // the directory agentci ran in.
    for case in &report.test_suites[0].test_cases {
        assert_eq!(case.extra.get("file").map(|f| f.as_str()), Some("job.yaml"));
    }
    if let Some(read) = read {
        let agent = &read[0];
        assert_eq!(agent.name, "agent");
        assert!(
            !agent.passed,
            "junitparser reads the agent as passed: {read:?}"
        );
        assert_eq!(agent.results[0].0, "failure");
        assert_eq!(agent.results[0].1.as_deref(), Some(message.as_str()));
        assert_eq!(agent.file.as_deref(), Some("job.yaml"));
    }
}

#[test]
fn an_agent_that_gives_up_mid_plan_fails_its_testcase_although_checks_failed_too() {
    let read_again = || Reply::tool_call("read", json!({"path": "greeting.txt"}));
    let mut script = vec![Reply::plan(&[
        ("Read the greeting", "the typo is found"),
        ("Fix it", "greeting.txt says hello world"),
    ])];
    // Warned at the third read, the step ends at the fourth; the model gives up the next.
    script.extend((0..4).map(|_| read_again()));
    script.push(Reply::tool_call(
        "step_done",
        json!({"summary": "cannot go on", "status": "blocked"}),
    ));
    script.push(Reply::text("Gave up."));
    let model = FakeModel::start(script);
    let sb = sandbox(&model.base_url());
    let (report, read) = run(&sb, sb.path(), "job.yaml", &[]);
    let (message, text) = agent_failure(&report);
    assert!(message.contains("repeating itself"), "{message}");
    assert!(text.contains("repeating itself"), "{text}");
    if let Some(read) = read {
        assert!(!read[0].passed, "{read:?}");
    }
}

#[test]
fn file_is_relative_to_github_workspace_when_set() {
    let model = FakeModel::start(vec![Reply::text("no"), Reply::text("no")]);
    let sb = sandbox(&model.base_url());
    let ws = sb.workspace();
    // Run from inside the workspace: the job is outside the current
    // directory but inside the checkout.
    let root = sb.path().display().to_string();
    let (report, _) = run(&sb, &ws, "../job.yaml", &[("GITHUB_WORKSPACE", &root)]);
    let file = |r: &Report| {
        r.test_suites[0].test_cases[0]
            .extra
            .get("file")
            .map(|f| f.as_str().to_string())
    };
    assert_eq!(file(&report).as_deref(), Some("job.yaml"));

    // Without it, a job outside the current directory keeps the path as given.
    let model = FakeModel::start(vec![Reply::text("no"), Reply::text("no")]);
    let sb = sandbox(&model.base_url());
    let (report, _) = run(&sb, &sb.workspace(), "../job.yaml", &[]);
    assert_eq!(file(&report).as_deref(), Some("../job.yaml"));
}
