//! `agentci eval --result-schema FILE`: every case's job gets the schema
//! before it is validated (as a case's goal and budget do), each attempt's
//! structured result lands in results.json, a model that never submits a
//! valid one fails its attempt (its final text still the run's summary), and a schema file that cannot be used stops
//! the evaluation before any case reaches the model. The real binary
//! against the fake model server.

use serde_json::{Value, json};

use super::eval::{eval, job_sandbox, results};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, stderr};

const SCHEMA: &str = r#"{"type": "object", "properties": {"status": {"enum": ["fixed", "unchanged"]}}, "required": ["status"], "additionalProperties": false}"#;

fn sandbox() -> Sandbox {
    let sandbox = job_sandbox();
    sandbox.write("schemas/result.json", SCHEMA);
    sandbox.write(
        "suite.yaml",
        "version: 1\nname: results\njob: job.yaml\ncases:\n\
         \x20 - {name: valid, fixture: fixture}\n\
         \x20 - {name: never-valid, fixture: fixture, goal: Fix notes.txt again.}\n",
    );
    sandbox
}

/// Fix the notes; the final turn submits `result` (one try, or three).
fn script(results: &[Value]) -> Vec<Reply> {
    let mut replies = vec![
        Reply::plan(&[("Fix the status", "notes.txt says fixed")]),
        Reply::tool_call(
            "edit",
            json!({"path": "notes.txt", "old_text": "status: broken", "new_text": "status: fixed"}),
        ),
        Reply::step_done("status fixed"),
    ];
    for (i, result) in results.iter().enumerate() {
        replies.push(
            Reply::tool_calls(vec![(&format!("r{i}"), "submit_result", result.clone())])
                .with_text("Set the status to fixed."),
        );
    }
    replies
}

fn attempt<'a>(results: &'a Value, case: &str) -> &'a Value {
    let cases = results["suites"][0]["cases"].as_array().unwrap();
    &cases.iter().find(|c| c["name"] == case).unwrap()["attempts"][0]
}

#[test]
fn every_cases_job_gets_the_schema_and_each_attempt_keeps_its_result() {
    let sb = sandbox();
    // A hostile model in the second case: a status the schema does not
    // allow, then a field it forbids, then no object at all.
    let bad = [
        json!({"status": "done"}),
        json!({"status": "fixed", "extra": true}),
        json!({"status": ["fixed"]}),
    ];
    let mut replies = script(&[json!({"status": "fixed"})]);
    replies.extend(script(&bad));
    let model = FakeModel::start(replies);
    let url = model.base_url();
    let out = eval(
        &sb,
        &[
            "suite.yaml",
            "--model",
            "openai:scripted",
            "--base-url",
            &url,
            "--out",
            "out",
            "--jobs",
            "1",
            "--result-schema",
            "schemas/result.json",
        ],
    );
    assert_eq!(model.remaining(), 0, "{}", stderr(&out));
    let results = results(&sb.path().join("out"));

    let valid = attempt(&results, "valid");
    assert_eq!(valid["outcome"], "passed", "{valid}");
    assert_eq!(valid["result"], json!({"status": "fixed"}));
    let trace = valid["trace"].as_str().unwrap();
    let trace = std::fs::read_to_string(sb.path().join("out").join(trace)).unwrap();
    assert!(
        trace.contains(r#""result":{"status":"fixed"}"#),
        "run.completed holds the result: {trace}"
    );

    let never = attempt(&results, "never-valid");
    assert_eq!(never["run_status"], "failed", "{never}");
    assert_eq!(never["outcome"], "failed", "{never}");
    assert!(never.get("result").is_none(), "{never}");
    // Without a valid result the run's summary is still the model's own words.
    let trace = never["trace"].as_str().unwrap();
    let trace = std::fs::read_to_string(sb.path().join("out").join(trace)).unwrap();
    let done: Value = trace
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "run.completed")
        .unwrap();
    assert_eq!(done["summary"], "Set the status to fixed.", "{done}");
    assert!(
        done["reason"]
            .as_str()
            .unwrap()
            .starts_with("the result did not match result_schema after 3 tries"),
        "{done}"
    );

    // The schema was offered in every case's final turn.
    let requests = model.captured();
    let offered = requests
        .iter()
        .filter(|r| r.body.to_string().contains("submit_result"))
        .count();
    assert!(offered >= 4, "{offered} requests offered submit_result");
}

#[test]
fn a_schema_file_that_cannot_be_used_stops_the_eval_before_any_case() {
    let sb = sandbox();
    sb.write("schemas/broken.json", r#"{"type": "object", "#);
    sb.write("schemas/not-a-schema.json", r#"{"type": 12}"#);
    let model = FakeModel::start(Vec::new());
    let url = model.base_url();
    for (file, says) in [
        ("schemas/missing.json", "cannot read"),
        ("schemas/broken.json", "broken.json"),
        ("schemas/not-a-schema.json", "not-a-schema.json"),
    ] {
        let out = eval(
            &sb,
            &[
                "suite.yaml",
                "--model",
                "openai:scripted",
                "--base-url",
                &url,
                "--out",
                "out",
                "--result-schema",
                file,
            ],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("--result-schema") && err.contains(says),
            "{err}"
        );
        assert!(!sb.path().join("out/results.json").exists());
    }
    assert!(model.captured().is_empty());
}
