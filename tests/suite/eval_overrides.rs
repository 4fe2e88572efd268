//! An eval case's overrides (its `goal` and `budget`) go into the job before
//! it is validated, never into a validated job: an override that would make
//! the job invalid is a validation error naming the case, and that attempt
//! never reaches the model; a valid override still takes effect.

use serde_json::Value;

use super::eval::{JOB, eval, good_script, results};
use super::support::fake_model::FakeModel;
use super::support::harness::{Sandbox, stderr};

// A hostile or careless case: its goal names a variable neither the job nor
// the case defines. Before, the goal was substituted into the validated job
// after the fact; now the job's own checks see it, and say which case.
#[test]
fn an_override_that_breaks_the_job_is_a_validation_error_naming_the_case() {
    let sandbox = Sandbox::new();
    sandbox.skill("notes-fixer", None);
    sandbox.write("job.yaml", JOB);
    sandbox.write("fixture/notes.txt", "status: broken\n");
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
        reason.starts_with("cannot load the job: case `unknown-var`: goal: ")
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
