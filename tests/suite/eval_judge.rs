//! Graded assertions (`judge:`): a model grades each attempt against a
//! rubric through one tool, the median of its samples decides, a judge that
//! answers badly is an `error` (never a pass), what it is sent is masked,
//! and its calls are recorded into the attempt's cassette and replayed
//! offline with the same verdicts. The real binary against the fake model
//! server, whose script holds the agent's turns, then the judge's answers.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::eval::{good_script, results};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, stderr};
use super::support::trace_schema::assert_valid_trace;

/// The notes job, priced so the judges' cost can be shown.
const JOB: &str = "version: 1
name: fix-notes
skill: notes-fixer
skills_path: [skills]
goal: Change the status in notes.txt to fixed.
model: {provider: openai, name: scripted, price: {input_per_mtok: 1, output_per_mtok: 2}}
secrets: [NOTES_TOKEN]
tools: [read, edit, ls]
permissions: {default: allow}
budget: {max_turns: 10}
checks:
  - {name: fixed, run: \"grep -q 'status: fixed' notes.txt\"}
";

const SECRET: &str = "s3cr3t-notes-token-4242";

fn sandbox(suite: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.skill("notes-fixer", None);
    sandbox.write("job.yaml", JOB);
    sandbox.write("fixture/notes.txt", "status: broken\n");
    sandbox.write("suite.yaml", suite);
    sandbox
}

/// `agentci eval ARGS` one attempt at a time (the fake serves one script),
/// with the job's secret in the environment.
fn eval(sandbox: &Sandbox, args: &[&str]) -> Output {
    let mut all = vec!["eval"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--progress", "none", "--jobs", "1"]);
    agentci_in(sandbox.path(), &all, &[("NOTES_TOKEN", SECRET)])
}

fn live(sandbox: &Sandbox, model: &FakeModel, out: &str, extra: &[&str]) -> Output {
    let url = model.base_url();
    let mut args = vec![
        "suite.yaml",
        "--model",
        "openai:scripted",
        "--base-url",
        &url,
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    eval(sandbox, &args)
}

/// The judge's answer through its tool.
fn judgement(score: f64, verdict: &str, reasons: &[&str]) -> Reply {
    Reply::tool_calls(vec![(
        "judge-1",
        "submit_judgement",
        json!({"score": score, "verdict": verdict, "reasons": reasons}),
    )])
    .with_usage(1000, 40)
}

fn case<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["suites"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name} in {results:#}"))
}

/// The first attempt's `judge:` assertions.
fn judged(results: &Value, name: &str) -> Vec<Value> {
    case(results, name)["attempts"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a.get("judge").is_some())
        .cloned()
        .collect()
}

fn traces_are_valid(out: &Path, results: &Value) {
    for case in results["suites"][0]["cases"].as_array().unwrap() {
        for attempt in case["attempts"].as_array().unwrap() {
            if let Some(trace) = attempt["trace"].as_str() {
                assert_valid_trace(&out.join(trace));
            }
        }
    }
}

const GRADED: &str = "version: 1
name: graded
job: job.yaml
cases:
  - name: clear
    fixture: fixture
    assert:
      - judge:
          rubric: The final text says plainly what changed in notes.txt.
          sees: [final_text, diff]
      - judge: {rubric: The diff touches only notes.txt., sees: [diff], pass_score: 0.5}
  - name: vague
    fixture: fixture
    goal: Change the status in notes.txt to fixed, and say so.
    assert:
      - judge:
          rubric: The final text says plainly what changed in notes.txt.
          pass_score: 0.6
";

fn vague_script() -> Vec<Reply> {
    let mut script = good_script();
    script.pop();
    script.push(Reply::text("Done."));
    script
}

/// The same case verdicts, scores and reasons, live and replayed.
fn verdicts(results: &Value) -> Vec<(String, String, Value)> {
    ["clear", "vague"]
        .iter()
        .map(|name| {
            let c = case(results, name);
            let attempt = &c["attempts"][0];
            (
                c["status"].as_str().unwrap().to_string(),
                attempt["outcome"].as_str().unwrap().to_string(),
                json!({
                    "judges": judged(results, name),
                    "totals": attempt["judge"],
                    "agent_tokens": [attempt["input_tokens"], attempt["output_tokens"]],
                }),
            )
        })
        .collect()
}

#[test]
fn a_judge_passes_one_attempt_and_fails_another_live_then_offline_alike() {
    let sandbox = sandbox(GRADED);
    let mut script = good_script();
    script.push(judgement(
        0.9,
        "pass",
        &["It says the status in notes.txt was set to fixed."],
    ));
    // A case's second judge is asked after its first.
    script.push(judgement(0.8, "pass", &["Only notes.txt changed."]));
    script.extend(vague_script());
    script.push(judgement(
        0.3,
        "fail",
        &["`Done.` does not say what changed."],
    ));
    let model = FakeModel::start(script);
    let out = live(&sandbox, &model, "live", &["--record"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(model.remaining(), 0, "{}", stderr(&out));
    let requests = model.requests();
    // The judge answers through its one tool, which it must call.
    let judge_request = &requests[4];
    assert_eq!(
        judge_request["tool_choice"], "required",
        "{judge_request:#}"
    );
    assert_eq!(
        judge_request["tools"][0]["function"]["name"],
        "submit_judgement"
    );
    assert!(
        requests[5]
            .to_string()
            .contains("The diff touches only notes.txt.")
    );
    drop(model);

    let live_results = results(&sandbox.path().join("live"));
    traces_are_valid(&sandbox.path().join("live"), &live_results);
    let live_verdicts = verdicts(&live_results);
    assert_eq!(live_verdicts[0].0, "passed", "{live_results:#}");
    assert_eq!(live_verdicts[1].0, "failed", "{live_results:#}");
    assert_eq!(judged(&live_results, "clear").len(), 2);
    let vague = judged(&live_results, "vague");
    assert_eq!(vague[0]["passed"], false);
    assert_eq!(vague[0]["judge"]["score"], 0.3);
    assert!(
        case(&live_results, "vague")["attempts"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("does not say what changed"),
        "{live_results:#}"
    );
    // The judge lines went into each attempt's cassette, after the run's.
    let cassette = std::fs::read_to_string(sandbox.path().join("cassettes/clear.jsonl")).unwrap();
    let last: Value = serde_json::from_str(cassette.lines().last().unwrap()).unwrap();
    assert_eq!(last["judge"], true, "{cassette}");

    // Offline: the server is gone; the cassettes answer the agent and the judges.
    let out = eval(
        &sandbox,
        &["suite.yaml", "--out", "replayed", "--html", "html"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let replayed = results(&sandbox.path().join("replayed"));
    traces_are_valid(&sandbox.path().join("replayed"), &replayed);
    assert_eq!(verdicts(&replayed), live_verdicts);

    // What a user reads, and the judges' totals apart from the agent's.
    let summary = std::fs::read_to_string(sandbox.path().join("replayed/summary.md")).unwrap();
    insta::with_settings!({filters => vec![(r"\d+\.\ds\b", "[TIME]")]}, {
        insta::assert_snapshot!("eval_judge_summary", summary);
    });
    let suite = &replayed["suites"][0];
    let cases: Vec<Value> = ["clear", "vague"]
        .iter()
        .map(|n| json!({"case": n, "judge": case(&replayed, n)["judge"]}))
        .collect();
    insta::assert_json_snapshot!(
        "eval_judge_totals",
        json!({
            "suite": {"judge": suite["judge"], "input_tokens": suite["input_tokens"], "cost_usd": suite["cost_usd"]},
            "cases": cases,
        })
    );
    // The HTML transcript shows each judge's verdict, scores and reasons.
    let html = std::fs::read_to_string(sandbox.path().join("html/index.html")).unwrap();
    for shown in [
        "verdict <b>fail</b>, median score <b>0.30</b>, pass_score 0.6",
        "<li>`Done.` does not say what changed.</li>",
        "verdict <b>pass</b>, median score <b>0.90</b>, pass_score 0.7",
    ] {
        assert!(html.contains(shown), "{shown} not in the HTML report");
    }
    // JUnit says why the failing judge failed.
    let junit = std::fs::read_to_string(sandbox.path().join("replayed/junit.xml")).unwrap();
    assert!(junit.contains("does not say what changed"), "{junit}");

    // A recorded judgement holds only for what the judge was sent: another
    // rubric is an error that says to re-record, never the old verdict.
    sandbox.write(
        "suite.yaml",
        &GRADED.replacen("says plainly what changed", "names the file it changed", 1),
    );
    let out = eval(&sandbox, &["suite.yaml", "--out", "edited"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let edited = results(&sandbox.path().join("edited"));
    assert_eq!(case(&edited, "clear")["status"], "error", "{edited:#}");
    let message = judged(&edited, "clear")[0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("the judge's request differs from the one recorded")
            && message.contains("agentci eval --record"),
        "{message}"
    );
    assert_eq!(case(&edited, "vague")["status"], "failed", "{edited:#}");
}

const BAD_ANSWERS: &str = "version: 1
name: bad-answers
job: job.yaml
cases:
  - name: invalid-json
    fixture: fixture
    assert:
      - judge: {rubric: The notes say fixed.}
  - name: no-tool-call
    fixture: fixture
    assert:
      - judge: {rubric: The notes say fixed.}
  - name: out-of-range
    fixture: fixture
    assert:
      - judge: {rubric: The notes say fixed.}
  - name: http-error
    fixture: fixture
    assert:
      - judge: {rubric: The notes say fixed.}
";

#[test]
fn a_judge_that_answers_badly_is_an_error_never_a_pass() {
    let sandbox = sandbox(BAD_ANSWERS);
    let mut script = good_script();
    script.push(Reply::raw_tool_call(
        "j1",
        "submit_judgement",
        r#"{"score": 0.9, "verdict": "pass", "reasons": ["#,
    ));
    script.extend(good_script());
    script.push(Reply::text("Score: 0.95. Verdict: pass."));
    script.extend(good_script());
    script.push(judgement(1.5, "pass", &["Perfect."]));
    script.extend(good_script());
    // A 400 is not retried.
    script.push(Reply::status(400, "Invalid 'messages': too long."));
    let model = FakeModel::start(script);
    let out = live(&sandbox, &model, "out", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(model.remaining(), 0, "{}", stderr(&out));
    let results = results(&sandbox.path().join("out"));
    traces_are_valid(&sandbox.path().join("out"), &results);
    for (name, expected) in [
        ("invalid-json", "the arguments are not valid JSON"),
        (
            "no-tool-call",
            "did not call `submit_judgement`: it answered in text",
        ),
        ("out-of-range", "/score"),
        ("http-error", "HTTP 400"),
    ] {
        let c = case(&results, name);
        assert_eq!(c["status"], "error", "{name}: {c:#}");
        assert_eq!(c["attempts"][0]["outcome"], "error", "{name}: {c:#}");
        let judge = &judged(&results, name)[0];
        assert_eq!(judge["passed"], false, "{name}");
        assert_eq!(judge["error"], true, "{name}");
        assert_eq!(judge["judge"]["verdict"], "error", "{name}");
        let message = judge["message"].as_str().unwrap();
        assert!(message.contains(expected), "{name}: {message}");
        let reason = c["attempts"][0]["reason"].as_str().unwrap();
        assert!(reason.contains("the judge errored"), "{name}: {reason}");
    }
}

const MEDIAN_AND_MASKED: &str = "version: 1
name: median
job: job.yaml
cases:
  - name: median
    fixture: fixture
    goal: Put the token into notes.txt and mark it fixed.
    assert:
      - judge:
          rubric: The notes say fixed and keep the token line.
          judges: 3
          pass_score: 0.7
          sees: [diff, {files: [notes.txt]}, trace_summary]
";

#[test]
fn three_judges_take_the_median_and_see_the_diff_masked() {
    let sandbox = sandbox(MEDIAN_AND_MASKED);
    let script = vec![
        Reply::plan(&[("Fix the status", "notes.txt says fixed")]),
        Reply::tool_call(
            "edit",
            json!({"path": "notes.txt", "old_text": "status: broken",
                   "new_text": format!("status: fixed\ntoken: {SECRET}")}),
        ),
        Reply::step_done("status fixed"),
        Reply::text("Set the status to fixed and kept the token."),
        judgement(0.2, "pass", &["Sample one."]),
        judgement(0.9, "pass", &["Sample two."]),
        judgement(
            0.8,
            "pass",
            &["The status is fixed and the token line is kept."],
        ),
    ];
    let model = FakeModel::start(script);
    let out = live(&sandbox, &model, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = model.requests();
    assert_eq!(requests.len(), 7);
    let results = results(&sandbox.path().join("out"));
    traces_are_valid(&sandbox.path().join("out"), &results);
    let judge = &judged(&results, "median")[0];
    assert_eq!(judge["passed"], true, "{judge:#}");
    assert_eq!(judge["judge"]["score"], 0.8);
    assert_eq!(judge["judge"]["samples"].as_array().unwrap().len(), 3);
    assert_eq!(
        judge["judge"]["reasons"],
        json!(["The status is fixed and the token line is kept."])
    );
    // Sample one said pass with 0.2: the score decides, and it is shown.
    assert_eq!(
        judge["judge"]["disagreements"],
        json!(["sample 1 said pass with score 0.2; the score decides"])
    );
    let totals = &case(&results, "median")["attempts"][0]["judge"];
    assert_eq!(totals["calls"], 3);
    assert_eq!(totals["input_tokens"], 3000);

    // The three samples are asked the same; the secret in the diff, the
    // file and the edit's arguments is masked in what the judge is sent.
    let sent = &requests[4];
    assert_eq!(&requests[5], sent);
    let text = sent.to_string();
    assert!(!text.contains(SECRET), "{text}");
    assert!(text.contains("token: ***"), "{text}");
    insta::assert_json_snapshot!("eval_judge_request", sent);
}

#[test]
fn a_bad_judge_key_is_refused_at_its_line_and_column() {
    let sandbox = sandbox(
        "version: 1\nname: bad\njob: job.yaml\ncases:\n  - name: a\n    fixture: fixture\n    assert:\n\
         \x20     - judge: {rubric: ok, pass_score: 1.5, judges: 0}\n\
         \x20     - judge: {rubric: ok, sees: [final_text, everything, {file: [a]}]}\n\
         \x20     - judge: {rubric: ok, model: nope:x, base_url: ftp://x}\n\
         \x20     - judge: {pass_score: 0.5}\n",
    );
    let out = eval(&sandbox, &["suite.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let path = regex::escape(&sandbox.path().display().to_string());
    insta::with_settings!({filters => vec![(path.as_str(), "[SANDBOX]")]}, {
        insta::assert_snapshot!("eval_judge_bad_keys", stderr(&out));
    });
    sandbox.write(
        "typo.yaml",
        "version: 1\nname: typo\njob: job.yaml\ncases:\n  - name: a\n    fixture: fixture\n    assert:\n\
         \x20     - judge:\n          rubric: ok\n          rubrik: typo\n",
    );
    let out = eval(&sandbox, &["typo.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("typo.yaml:10:11: error: unknown key `rubrik` (did you mean `rubric`?)"),
        "{err}"
    );
}
