//! An eval case's overrides (its `goal`, `vars` and `budget`) and the
//! job-shaping flags of `agentci run` go into the job before it is
//! validated, never into a validated job: an override that would make the
//! job invalid is a validation error at the place it was written (the
//! case's key in the suite file, or the flag), said once and in the job's
//! own words, and that attempt never reaches the model; a valid override
//! still takes effect.

use serde_json::Value;

use super::eval::{eval, good_script, job_sandbox, results};
use super::support::fake_model::FakeModel;
use super::support::harness::{agentci_in, stderr, stdout};

// A hostile or careless case: its goal names a variable neither the job nor
// the case defines. Before, the goal was substituted into the validated job
// after the fact; now the job's own checks see it, and point at the case's
// `goal` in the suite file (line 7, column 11).
#[test]
fn an_override_that_breaks_the_job_is_a_validation_error_naming_the_case() {
    let sandbox = job_sandbox();
    sandbox.write(
        "suite.yaml",
        "version: 1\nname: overrides\njob: job.yaml\ncases:\n\
         \x20 - name: unknown-var\n    fixture: fixture\n    goal: 'Fix ${{ vars.nope }} now.'\n\
         \x20 - name: one-turn\n    fixture: fixture\n    budget: {max_turns: 1}\n",
    );
    let model = FakeModel::start(good_script());
    let url = model.base_url();
    let out = eval(
        &sandbox,
        &[
            "suite.yaml",
            "--model",
            "openai:scripted",
            "--base-url",
            &url,
            "--out",
            "out",
        ],
    );
    let results = results(&sandbox.path().join("out"));
    let cases = results["suites"][0]["cases"].as_array().unwrap();
    let attempt = |name: &str| -> &Value {
        &cases.iter().find(|c| c["name"] == name).unwrap()["attempts"][0]
    };

    let broken = attempt("unknown-var");
    assert_eq!(broken["outcome"], "error", "{}", stderr(&out));
    let reason = broken["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("cannot load the job: suite.yaml:7:11: error: ")
            && reason.contains("nope"),
        "{reason}"
    );
    assert!(broken["run_status"].is_null(), "{broken}");
    assert!(broken["trace"].is_null(), "{broken}");

    // The budget override still applies: one turn, then the budget stops the run.
    assert_eq!(attempt("one-turn")["run_status"], "budget_exceeded");
    let requests = model.captured();
    assert!(!requests.is_empty());
    assert!(
        requests
            .iter()
            .all(|r| !r.body.to_string().contains("now.")),
        "the broken case reached the model"
    );
}

// A case's budget is checked by the job's checks, not by a second copy of
// them in the suite checker: one message per problem, in the job's words
// (`such as 2.5`, where the copy said `0.5`), at the case's key in the
// suite file, before any case runs.
#[test]
fn a_bad_case_budget_is_one_message_at_the_case_key() {
    let sandbox = job_sandbox();
    sandbox.write(
        "suite.yaml",
        "version: 1\nname: budgets\njob: job.yaml\ncases:\n\
         \x20 - name: fine\n    fixture: fixture\n    budget: {max_turns: 2}\n\
         \x20 - name: bad\n    fixture: fixture\n\
         \x20   budget: {max_turns: many, max_cost_usd: 0, timeout: 0s}\n",
    );
    let out = eval(&sandbox, &["suite.yaml", "--out", "out"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    for key in ["`max_turns`", "`max_cost_usd`", "`timeout`"] {
        assert_eq!(text.matches(key).count(), 1, "{key} once: {text}");
    }
    assert!(!text.contains("1073741"), "no made-up line: {text}");
    assert!(!sandbox.path().join("out/results.json").exists());
    insta::assert_snapshot!("eval_bad_case_budget", text);

    // `validate` says the same of the suite.
    let validate = agentci_in(sandbox.path(), &["validate", "suite.yaml"], &[]);
    assert_eq!(validate.status.code(), Some(2), "{}", stderr(&validate));
    let said = format!("{}{}", stdout(&validate), stderr(&validate));
    assert_eq!(
        said.matches("suite.yaml:10:25: error: `max_turns` must be a whole number")
            .count(),
        1,
        "{said}"
    );
}

// A budget flag's bad value is checked by the same job check as a job
// file's key, and the message names the flag, once.
#[test]
fn a_bad_budget_flag_is_one_message_naming_the_flag() {
    let sandbox = job_sandbox();
    let out = agentci_in(
        sandbox.path(),
        &[
            "run",
            "job.yaml",
            "--workspace",
            "fixture",
            "--max-cost",
            "lots",
            "--max-tokens",
            "1.5",
            "--checks-rounds",
            "0",
            "--progress",
            "plain",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    for flag in ["--max-cost:", "--max-tokens:", "--checks-rounds:"] {
        assert_eq!(text.matches(flag).count(), 1, "{flag} once: {text}");
    }
    assert!(
        !text.contains("job.yaml:"),
        "no place in the job file: {text}"
    );
    insta::assert_snapshot!("run_bad_budget_flags", text);
}
