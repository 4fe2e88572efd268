//! `result_schema` and `--result-schema`: the final turn offers
//! `submit_result`, an invalid result goes back to the model with the
//! errors (up to 3 tries), and the valid one lands in `outputs.result`,
//! `run.completed`, the JUnit properties, the step summary and the step
//! outputs. The real binary against the fake model server, which refuses
//! tool schemas the real APIs refuse.

use quick_junit::Report;
use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, read_jsonl, stderr, stdout};
use super::support::job::JobBuilder;
use super::support::job::{JUNIT, JobRun, TRACE};
use super::support::junit_schema::assert_readable;
use super::support::trace_schema::assert_valid_trace;

/// A secret the model puts in its result: masked in every copy of it.
const TOKEN: &str = "s3cr3t-result-token-77";

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "fixed": {"type": "boolean"},
    "files": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["fixed", "files"],
  "additionalProperties": false
}"#;

/// A job whose one check passes; `extra` adds keys (the schema).
fn sandbox(base_url: &str, provider: &str, extra: &str) -> Sandbox {
    JobBuilder::new("report-result", "fixer", base_url)
        .goal("Look at the notes and report.")
        .model_inline(&format!(
            "{{provider: {provider}, name: fake-model, base_url: {base_url}}}"
        ))
        .file("ws/notes.txt", "notes\n")
        .tools("[read]")
        .body(&format!(
            r#"secrets: [RESULT_TOKEN]
permissions: {{default: allow}}
checks:
  - name: notes kept
    run: test -f notes.txt
{extra}"#
        ))
        .write()
}

/// Plan one step and finish it: the final turn comes next.
fn work() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Read the notes", "the notes are known")]),
        Reply::step_done("read them"),
    ]
}

struct Ran {
    code: Option<i32>,
    trace: Vec<Value>,
    stderr: String,
}

fn run(sb: &Sandbox, flags: &[&str], env: &[(&str, &str)]) -> Ran {
    let out = JobRun::bare(sb)
        .args(&["--out", "out", "--progress", "none"])
        .args(flags)
        .env("OPENAI_API_KEY", "sk-test")
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("RESULT_TOKEN", TOKEN)
        .envs(env)
        .output();
    let trace_path = sb.path().join(TRACE);
    assert_valid_trace(&trace_path);
    assert_readable(&sb.path().join(JUNIT));
    Ran {
        code: out.status.code(),
        trace: read_jsonl(&trace_path),
        stderr: stderr(&out),
    }
}

fn completed(trace: &[Value]) -> &Value {
    events(trace, "run.completed")[0]
}

/// The text of the tool message answering `call_id` in a request body (OpenAI format).
fn tool_answer(body: &Value, call_id: &str) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no answer to {call_id} in {body}"))
        .to_string()
}

fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["function"]["name"]
                .as_str()
                .or(t["name"].as_str())
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn a_result_invalid_once_then_valid_is_the_runs_result_everywhere() {
    let mut replies = work();
    replies.extend([
        // Try 1: a required field is missing and one has the wrong type.
        Reply::tool_calls(vec![("r1", "submit_result", json!({"fixed": "yes"}))])
            .with_text("I read the notes; nothing needed fixing."),
        // Try 2: valid, and then a second submission, which does not count.
        Reply::tool_calls(vec![
            (
                "r2",
                "submit_result",
                json!({"fixed": true, "files": ["notes.txt", TOKEN]}),
            ),
            ("r3", "submit_result", json!({"fixed": false, "files": []})),
        ]),
    ]);
    let fake = FakeModel::start(replies);
    let sb = sandbox(
        &fake.base_url(),
        "openai",
        &format!("result_schema: {}", SCHEMA.replace('\n', " ")),
    );
    std::fs::create_dir_all(sb.path().join("gh")).unwrap();
    let summary_path = sb.path().join("gh/summary.md");
    let output_path = sb.path().join("gh/output.txt");
    let (summary_arg, output_arg) = (
        summary_path.display().to_string(),
        output_path.display().to_string(),
    );
    let ran = run(
        &sb,
        &[],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", &summary_arg),
            ("GITHUB_OUTPUT", &output_arg),
        ],
    );
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    let expected = json!({"fixed": true, "files": ["notes.txt", "***"]});

    // The file, run.completed and the JUnit property hold the same masked result.
    let file: Value = serde_json::from_str(&sb.read("out/result.json")).unwrap();
    assert_eq!(file, expected);
    let done = completed(&ran.trace);
    assert_eq!(done["status"], "passed");
    assert_eq!(done["result"], expected);
    assert_eq!(done["summary"], "I read the notes; nothing needed fixing.");
    let xml = sb.read("out/junit.xml");
    let report = Report::deserialize_from_str(&xml).unwrap();
    let property = report.test_suites[0]
        .properties
        .iter()
        .find(|p| p.name.as_str() == "agentci.result")
        .expect("an agentci.result property");
    let property: Value = serde_json::from_str(property.value.as_str()).unwrap();
    assert_eq!(property, expected);
    assert!(!xml.contains(TOKEN) && !sb.read("out/trace.jsonl").contains(TOKEN));

    // The step summary shows it, and the step outputs carry it as one line.
    let summary = std::fs::read_to_string(&summary_path).unwrap();
    assert!(summary.contains("### Result"), "{summary}");
    assert!(summary.contains("\"notes.txt\""), "{summary}");
    let output_text = std::fs::read_to_string(&output_path).unwrap();
    let result_line = output_text
        .lines()
        .find_map(|l| l.strip_prefix("result="))
        .unwrap_or_else(|| panic!("no result output in {output_text}"));
    let result_output: Value = serde_json::from_str(result_line).unwrap();
    assert_eq!(result_output, expected);

    // What the model was told: the errors of try 1, then that the second
    // submission of the turn did not count.
    let requests = fake.requests();
    assert_eq!(requests.len(), 4, "plan, step, two result turns");
    let errors = tool_answer(&requests[3], "r1");
    assert!(
        errors.contains("(root): \"files\" is a required property")
            && errors.contains("/fixed: \"yes\" is not of type \"boolean\""),
        "{errors}"
    );
    // Every turn offers submit_result, last (the last step's step_done may
    // bring it), so the tools stay one cached prefix.
    for request in &requests {
        assert_eq!(offered(request).last().unwrap(), "submit_result");
    }

    // The request that offers submit_result, as the model sees it.
    let request = &requests[2];
    let tool = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "submit_result")
        .unwrap();
    let last = request["messages"].as_array().unwrap().last().unwrap();
    insta::assert_json_snapshot!(
        "result_request",
        json!({
            "tools": offered(request),
            "tool_choice": request.get("tool_choice"),
            "submit_result": tool,
            "last_message": last,
        })
    );
}

#[test]
fn a_result_invalid_three_times_fails_the_run_with_the_reason() {
    let huge = json!({"fixed": true, "files": ["x".repeat(70 * 1024)]});
    let mut replies = work();
    replies.extend([
        // Not JSON at all.
        Reply::raw_tool_call("r1", "submit_result", "{\"fixed\": tru"),
        // Larger than a result may be.
        Reply::tool_calls(vec![("r2", "submit_result", huge)]),
        // Another tool, and a result of the wrong shape.
        Reply::tool_calls(vec![
            ("r3", "read", json!({"path": "notes.txt"})),
            ("r4", "submit_result", json!({"fixed": true, "files": [1]})),
        ]),
    ]);
    let fake = FakeModel::start(replies);
    let sb = sandbox(
        &fake.base_url(),
        "openai",
        &format!("result_schema: {}", SCHEMA.replace('\n', " ")),
    );
    let ran = run(&sb, &[], &[]);
    assert_eq!(ran.code, Some(1), "stderr: {}", ran.stderr);
    let done = completed(&ran.trace);
    assert_eq!(done["status"], "failed");
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the result did not match result_schema after 3 tries: ")
            && reason.contains("/files/0: 1 is not of type \"string\""),
        "{reason}"
    );
    assert!(done.get("result").is_none());
    assert!(!sb.path().join("out/result.json").exists());
    // The checks still judged the work.
    assert_eq!(done["checks_passed"], 1);

    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    assert!(tool_answer(&requests[3], "r1").contains("not valid JSON"));
    assert!(tool_answer(&requests[4], "r2").contains("a result may be at most 65536 bytes"));
    assert_eq!(fake.remaining(), 0);
    let answers: Vec<&Value> = events(&ran.trace, "model.response");
    assert_eq!(answers.len(), 5);
}

#[test]
fn a_model_that_answers_in_text_is_reminded_once_then_the_run_fails() {
    let mut replies = work();
    replies.extend([
        Reply::text("Everything is fine."),
        Reply::text("Really, everything is fine."),
        // Never asked for: the run stops after the reminder was ignored.
        Reply::tool_call("submit_result", json!({"fixed": true, "files": []})),
    ]);
    let fake = FakeModel::start(replies);
    let sb = sandbox(
        &fake.base_url(),
        "openai",
        &format!("result_schema: {}", SCHEMA.replace('\n', " ")),
    );
    let ran = run(&sb, &[], &[]);
    assert_eq!(ran.code, Some(1), "stderr: {}", ran.stderr);
    let done = completed(&ran.trace);
    assert_eq!(
        done["reason"],
        "the result did not match result_schema after 2 tries: the model answered in text and \
         did not call submit_result"
    );
    // The model's text stays in the trace.
    assert!(
        events(&ran.trace, "model.response")
            .iter()
            .any(|r| r["text"] == "Really, everything is fine.")
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    let last = requests[3]["messages"].as_array().unwrap().last().unwrap();
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("call `submit_result` now"),
        "{last}"
    );
    assert_eq!(fake.remaining(), 1);
}

#[test]
fn submit_result_in_a_step_is_refused_with_when_it_is_taken() {
    let fake = FakeModel::start(vec![
        Reply::plan(&[("Read the notes", "the notes are known")]),
        Reply::tool_calls(vec![(
            "early",
            "submit_result",
            json!({"fixed": true, "files": []}),
        )]),
        Reply::step_done("read them"),
        Reply::tool_call("submit_result", json!({"fixed": false, "files": ["a"]})),
    ]);
    let sb = sandbox(
        &fake.base_url(),
        "openai",
        &format!("result_schema: {}", SCHEMA.replace('\n', " ")),
    );
    let ran = run(&sb, &[], &[]);
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    let answer = tool_answer(&fake.requests()[2], "early");
    assert!(answer.starts_with("ERROR INVALID_ARGUMENT"), "{answer}");
    // Not "not available in this run": it is taken, later.
    assert!(
        answer.contains("taken only with the last step's step_done"),
        "{answer}"
    );
    // Only the final turn's result counts.
    assert_eq!(
        completed(&ran.trace)["result"],
        json!({"fixed": false, "files": ["a"]})
    );
}

#[test]
fn the_result_schema_flag_wraps_a_non_object_schema_for_anthropic() {
    let fake = FakeModel::start({
        let mut replies = work();
        replies.push(Reply::tool_call(
            "submit_result",
            json!({"value": ["notes.txt"]}),
        ));
        replies
    });
    // The job has a schema of its own; the flag's wins.
    let sb = sandbox(
        &fake.base_url(),
        "anthropic",
        "result_schema: {type: object, required: [never]}\noutputs: {result: answers/files.json}",
    );
    sb.write(
        "schemas/files.json",
        r#"{"type": "array", "items": {"type": "string"}, "minItems": 1}"#,
    );
    let ran = run(&sb, &["--result-schema", "schemas/files.json"], &[]);
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    assert_eq!(completed(&ran.trace)["result"], json!(["notes.txt"]));
    // `outputs.result` is relative to the workspace, like the other outputs.
    let file: Value = serde_json::from_str(&sb.read("ws/answers/files.json")).unwrap();
    assert_eq!(file, json!(["notes.txt"]));
    let request = &fake.requests()[2];
    let tool = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "submit_result")
        .unwrap();
    assert_eq!(tool["input_schema"]["type"], "object");
    assert_eq!(
        tool["input_schema"]["properties"]["value"]["items"],
        json!({"type": "string"})
    );
}

#[test]
fn bad_schemas_are_validation_errors_that_name_the_place() {
    let sb = sandbox(
        "http://127.0.0.1:9",
        "openai",
        "result_schema: schemas/result.json",
    );
    let validate = |sb: &Sandbox| {
        let out = agentci_in(sb.path(), &["validate", "job.yaml"], &[]);
        let root = sb.path().display().to_string();
        let text = format!("{}{}", stdout(&out), stderr(&out)).replace(&root, "[SANDBOX]");
        (out.status.code(), text)
    };
    // A file path relative to the job file: fine when it holds a schema.
    sb.write("schemas/result.json", SCHEMA);
    let (code, text) = validate(&sb);
    assert_eq!(code, Some(0), "{text}");

    let mut seen = Vec::new();
    std::fs::remove_file(sb.path().join("schemas/result.json")).unwrap();
    seen.push(validate(&sb));
    sb.write(
        "schemas/result.json",
        "{\n  \"type\": \"object\",\n  \"properties\": {,\n}",
    );
    seen.push(validate(&sb));
    sb.write("schemas/result.json", r#"{"type": "objekt"}"#);
    seen.push(validate(&sb));
    let inline = sandbox(
        "http://127.0.0.1:9",
        "openai",
        "result_schema: [not, a, schema]",
    );
    seen.push(validate(&inline));
    for (code, text) in &seen {
        assert_eq!(*code, Some(2), "{text}");
    }
    let shown: Vec<String> = seen.into_iter().map(|(_, text)| text).collect();
    insta::assert_snapshot!("result_schema_errors", shown.join("\n---\n"));

    // The flag's file is named as the flag when it cannot be read.
    let out = agentci_in(
        sb.path(),
        &["run", "job.yaml", "--result-schema", "missing.json"],
        &[("OPENAI_API_KEY", "sk-test")],
    );
    let text = stderr(&out) + &stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--result-schema: error: cannot read the `result_schema` file")
            && text.contains("missing.json"),
        "{text}"
    );
}

#[test]
fn the_action_forwards_the_result_output() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/actions/agentci/action.yml");
    let action: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(
        action["outputs"]["result"]["value"],
        "${{ steps.run.outputs.result }}"
    );
}

#[test]
fn print_job_writes_the_schema_inline_and_it_loads_back() {
    let sb = sandbox(
        "http://127.0.0.1:9",
        "openai",
        "outputs: {result: answers/result.json}",
    );
    sb.write("schemas/result.json", SCHEMA);
    let out = agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--print-job",
            "--result-schema",
            "schemas/result.json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let yaml = stdout(&out);
    let printed: Value = serde_saphyr::from_str(&yaml).unwrap();
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    assert_eq!(printed["result_schema"], schema);
    assert!(
        printed["outputs"]["result"]
            .as_str()
            .unwrap()
            .ends_with("ws/answers/result.json")
    );
    sb.write("saved.yaml", &yaml);
    let check = agentci_in(sb.path(), &["validate", "saved.yaml"], &[]);
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
}

#[test]
fn with_rounds_the_last_rounds_result_is_the_result() {
    let fake = FakeModel::start(vec![
        Reply::plan(&[("Read the notes", "the notes are known")]),
        Reply::step_done("read them"),
        Reply::tool_call("submit_result", json!({"fixed": false, "files": []})),
        // Round 2: the check failed; fix it and report again.
        Reply::tool_call("write", json!({"path": "notes.txt", "content": "done\n"})),
        Reply::step_done("wrote it"),
        Reply::tool_call(
            "submit_result",
            json!({"fixed": true, "files": ["notes.txt"]}),
        ),
    ]);
    let sb = sandbox(
        &fake.base_url(),
        "openai",
        &format!(
            "checks_rounds: 2\nresult_schema: {}",
            SCHEMA.replace('\n', " ")
        ),
    );
    // The job's check passes only once the notes say done.
    let job = sb
        .read("job.yaml")
        .replace("run: test -f notes.txt", "run: grep -q done notes.txt")
        .replace("tools: [read]", "tools: [read, write]");
    sb.write("job.yaml", &job);
    let ran = run(&sb, &[], &[]);
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    let expected = json!({"fixed": true, "files": ["notes.txt"]});
    assert_eq!(completed(&ran.trace)["result"], expected);
    let file: Value = serde_json::from_str(&sb.read("out/result.json")).unwrap();
    assert_eq!(file, expected);
    assert_eq!(fake.remaining(), 0);
}
