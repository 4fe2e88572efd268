//! Round trips (issue 26): a model that batches plans and acts in one
//! response, ends a step with its last calls and reports with the last
//! `step_done`, so the three-turn task (list the files, read `notes.txt`,
//! answer) takes three model calls; a model that does not batch is served
//! as before. The real binary against the fake model server.

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr};
use super::support::job::JobBuilder;
use super::support::job::JobRun;
use super::support::notes_script::{REPORT, batching_script};

/// A workspace with two files and a job that may list and read them.
fn sandbox(base_url: &str, job_extra: &str) -> Sandbox {
    sandbox_with_tools(base_url, "read, write, exec", job_extra)
}

/// [`sandbox`] with the job's `tools:` list.
fn sandbox_with_tools(base_url: &str, tools: &str, job_extra: &str) -> Sandbox {
    JobBuilder::new("notes", "reader", base_url)
        .goal("List the files, read notes.txt and say what it says.")
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: {base_url}}}"
        ))
        .file("ws/notes.txt", "ship on Friday\n")
        .file("ws/todo.txt", "nothing\n")
        .tools(&format!("[{tools}]"))
        .body(&format!(
            r#"permissions:
  default: deny
  allow: [read, write, task, "exec(ls *)", "exec(ls)", "exec(false)"]
checks:
  - name: notes kept
    run: test -f notes.txt
{job_extra}"#
        ))
        .write()
}

fn run(sb: &Sandbox) -> (Option<i32>, Vec<Value>) {
    let (out, trace) = JobRun::new(sb).progress("plain").traced_if_any();
    let code = out.status.code();
    assert!(!trace.is_empty(), "no trace: {}", stderr(&out));
    if code != Some(0) {
        eprintln!("{}", stderr(&out));
    }
    (code, trace)
}

fn plan_args(titles: &[&str]) -> Value {
    let steps: Vec<Value> = titles
        .iter()
        .map(|t| json!({"title": t, "expected_outcome": "it is done"}))
        .collect();
    json!({ "steps": steps })
}

/// The content of the tool message answering `call_id` in the last request.
fn answer(requests: &[Value], call_id: &str) -> String {
    super::support::fake_model::tool_result_in(requests, call_id)
}

/// The user messages of a request, in order.
fn user_messages(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A request in the order a prompt cache reads it, as one text.
fn cache_order(body: &Value) -> String {
    let mut text = body["tools"].to_string();
    for message in body["messages"].as_array().unwrap() {
        text.push_str(&message.to_string());
    }
    text
}

/// Every request starts with the whole of the one before it.
fn assert_prefixes_kept(requests: &[Value]) {
    for (i, pair) in requests.windows(2).enumerate() {
        let (a, b) = (cache_order(&pair[0]), cache_order(&pair[1]));
        assert!(
            b.starts_with(&a),
            "request {} does not start with request {}",
            i + 2,
            i + 1
        );
    }
}

/// What the model server was sent, in bytes.
fn bytes_sent(model: &FakeModel) -> usize {
    model.captured().iter().map(|r| r.body_bytes).sum()
}

#[test]
fn the_three_turn_task_takes_three_model_calls_with_a_batching_model() {
    // A model that takes a while per call, as real ones do.
    let latency = std::time::Duration::from_millis(150);
    let model = FakeModel::start_with_latency(batching_script(), latency);
    let sb = sandbox(&model.base_url(), "");
    let (code, trace) = run(&sb);
    assert_eq!(code, Some(0));
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        3,
        "plan+ls, read, step_done with the report"
    );
    assert_eq!(model.remaining(), 0);

    // The plan was accepted and ls ran as the first step's call.
    assert_eq!(answer(&requests, "plan"), "Plan accepted.");
    let listed = answer(&requests, "list");
    assert!(listed.contains("notes.txt"), "{listed}");
    // The step's instructions came with the results, not as a message of their own.
    assert!(listed.contains("Step 1 of 1: Read the notes"), "{listed}");
    assert!(listed.contains("give the run's report in step_done's `report`"));
    for request in &requests {
        assert!(
            user_messages(request)
                .iter()
                .all(|m| !m.contains("Step 1 of 1")),
            "{:?}",
            user_messages(request)
        );
    }
    assert_prefixes_kept(&requests);

    // The trace: the plan, then the step, then its call; no summary turn.
    let kinds: Vec<&str> = trace
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| {
            [
                "plan.created",
                "step.started",
                "tool.call",
                "step.completed",
            ]
            .contains(t)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "plan.created",
            "step.started",
            "tool.call",
            "tool.call",
            "step.completed"
        ]
    );
    let phases: Vec<&str> = events(&trace, "model.request")
        .iter()
        .map(|e| e["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["plan", "execute", "execute"]);
    let completed = trace.last().unwrap();
    assert_eq!(completed["summary"], REPORT);
    assert_eq!(completed["totals"]["turns"], 3);
    for response in events(&trace, "model.response") {
        assert!(
            response["latency_ms"].as_u64().unwrap() >= 150,
            "{response}"
        );
    }

    // The same task one call per turn sends more: five requests, each
    // re-sending the conversation.
    let one_per_turn = FakeModel::start(one_call_per_turn_script());
    let sb = sandbox(&one_per_turn.base_url(), "");
    assert_eq!(run(&sb).0, Some(0));
    let (batched, unbatched) = (bytes_sent(&model), bytes_sent(&one_per_turn));
    eprintln!("bytes sent: {batched} batched, {unbatched} one call per turn");
    assert!(batched < unbatched, "{batched} vs {unbatched}");
}

fn one_call_per_turn_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Read the notes", "it is done")]),
        Reply::tool_calls(vec![("list", "exec", json!({"command": "ls"}))]),
        Reply::tool_calls(vec![("read", "read", json!({"path": "notes.txt"}))]),
        Reply::step_done("read notes.txt"),
        Reply::text(REPORT),
    ]
}

/// The same task with a model that makes one call per turn, as older and
/// smaller models do: it completes as before, with the step's message and
/// the separate report turn.
#[test]
fn the_three_turn_task_still_completes_with_a_model_that_does_not_batch() {
    let model = FakeModel::start(one_call_per_turn_script());
    let sb = sandbox(&model.base_url(), "");
    let (code, trace) = run(&sb);
    assert_eq!(code, Some(0));
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    assert!(user_messages(&requests[1])[1].starts_with("Step 1 of 1: Read the notes"));
    let ask = user_messages(&requests[4]).pop().unwrap();
    assert!(ask.starts_with("All steps are finished."), "{ask}");
    assert_eq!(events(&trace, "model.request")[4]["phase"], "summary");
    assert_eq!(trace.last().unwrap()["summary"], REPORT);
    assert_prefixes_kept(&requests);
}

/// `step_done` with other calls: they run first; when one fails the
/// `step_done` is answered "not applied" and the step goes on; when all
/// succeed the step ends as the model said, in that same turn.
#[test]
fn step_done_applies_only_when_the_calls_of_its_response_succeed() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Break", "x"), ("Write", "y")]),
        Reply::tool_calls(vec![
            ("fails", "exec", json!({"command": "false"})),
            ("early", "step_done", json!({"summary": "broke it"})),
        ]),
        Reply::tool_calls(vec![(
            "again",
            "step_done",
            json!({"summary": "false failed as it should", "report": "too early"}),
        )]),
        Reply::tool_calls(vec![
            (
                "write",
                "write",
                json!({"path": "out.txt", "content": "written\n"}),
            ),
            (
                "last",
                "step_done",
                json!({"summary": "wrote out.txt", "report": REPORT}),
            ),
        ]),
    ]);
    let sb = sandbox(&model.base_url(), "");
    let (code, trace) = run(&sb);
    assert_eq!(code, Some(0));
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "no turn after the last step_done");
    let declined = answer(&requests, "early");
    assert!(
        declined.starts_with("not applied: call 1 (`exec`) failed; look at its result"),
        "{declined}"
    );
    // A report on a step that is not the last is not the run's.
    let not_last = answer(&requests, "again");
    assert!(
        not_last.contains("taken only on the last step"),
        "{not_last}"
    );
    assert_eq!(sb.read("ws/out.txt"), "written\n");

    let declined = events(&trace, "step.done_declined");
    assert_eq!(declined.len(), 1);
    assert_eq!(declined[0]["index"], 0);
    assert_eq!(declined[0]["call_id"], "early");
    assert_eq!(declined[0]["failed_call_id"], "fails");
    assert_eq!(declined[0]["failed_tool"], "exec");
    let summaries: Vec<&str> = events(&trace, "step.completed")
        .iter()
        .map(|e| e["summary"].as_str().unwrap())
        .collect();
    assert_eq!(summaries, ["false failed as it should", "wrote out.txt"]);
    assert_eq!(trace.last().unwrap()["summary"], REPORT);
}

/// A plan with calls the first step may not make: those calls alone are
/// refused; the others run as the step's. A plan that is not valid leaves
/// the calls in the planning phase, where writing is refused.
#[test]
fn a_plan_with_calls_refuses_only_the_calls_the_first_step_does_not_allow() {
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![
            ("bad_plan", "submit_plan", json!({"steps": []})),
            (
                "planning_write",
                "write",
                json!({"path": "early.txt", "content": "x"}),
            ),
        ]),
        Reply::tool_calls(vec![
            ("plan", "submit_plan", plan_args(&["Write", "Check"])),
            (
                "write",
                "write",
                json!({"path": "out.txt", "content": "x\n"}),
            ),
            ("second_plan", "submit_plan", plan_args(&["Other"])),
            ("denied", "exec", json!({"command": "rm notes.txt"})),
            ("unknown", "fly", json!({})),
        ]),
        Reply::step_done("wrote out.txt"),
        Reply::tool_calls(vec![
            ("check", "read", json!({"path": "out.txt"})),
            (
                "done",
                "step_done",
                json!({"summary": "checked", "report": REPORT}),
            ),
        ]),
    ]);
    let sb = sandbox(&model.base_url(), "");
    let (code, trace) = run(&sb);
    assert_eq!(code, Some(0));
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert!(answer(&requests, "planning_write").contains("not available while planning"));
    assert!(!sb.workspace().join("early.txt").exists());
    assert_eq!(sb.read("ws/out.txt"), "x\n");
    assert!(answer(&requests, "second_plan").contains("already accepted"));
    assert!(answer(&requests, "denied").contains("PERMISSION_DENIED"));
    assert!(answer(&requests, "unknown").contains("UNKNOWN_TOOL"));
    // A plan of two steps: the first one's instructions came with the
    // results, the second's as its own message.
    assert!(answer(&requests, "unknown").contains("Step 1 of 2: Write"));
    assert!(
        user_messages(&requests[3])
            .last()
            .unwrap()
            .starts_with("Step 2 of 2: Check")
    );
    assert_eq!(events(&trace, "plan.created").len(), 1);
    assert_eq!(trace.last().unwrap()["summary"], REPORT);
    assert_prefixes_kept(&requests);
}

const SCHEMA: &str = r#"result_schema: {type: object, properties: {lines: {type: integer}}, required: [lines], additionalProperties: false}"#;

/// With a result schema, `submit_result` may come with the last
/// `step_done`: valid, it is the run's result and no result turn follows;
/// invalid, it counts as the first try and the retries follow as before.
#[test]
fn the_result_may_come_with_the_last_step_done() {
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![
            ("plan", "submit_plan", plan_args(&["Count"])),
            ("read", "read", json!({"path": "notes.txt"})),
        ]),
        Reply::tool_calls(vec![
            (
                "done",
                "step_done",
                json!({"summary": "counted", "report": REPORT}),
            ),
            ("result", "submit_result", json!({"lines": 1})),
        ]),
    ]);
    let sb = sandbox(&model.base_url(), SCHEMA);
    let (code, trace) = run(&sb);
    assert_eq!(code, Some(0));
    assert_eq!(model.requests().len(), 2);
    let completed = trace.last().unwrap();
    assert_eq!(completed["result"], json!({"lines": 1}));
    assert_eq!(completed["summary"], REPORT);
    let listed = answer(&model.requests(), "read");
    assert!(listed.contains("call submit_result with the run's result in the same response"));

    let model = FakeModel::start(vec![
        Reply::plan(&[("Count", "known")]),
        Reply::tool_calls(vec![
            (
                "done",
                "step_done",
                json!({"summary": "counted", "report": REPORT}),
            ),
            ("wrong", "submit_result", json!({"lines": "one"})),
        ]),
        Reply::tool_calls(vec![("right", "submit_result", json!({"lines": 1}))]),
    ]);
    let sb = sandbox(&model.base_url(), SCHEMA);
    let (code, trace) = run(&sb);
    assert_eq!(code, Some(0));
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let wrong = answer(&requests, "wrong");
    assert!(wrong.contains("does not match the schema"), "{wrong}");
    // The retry goes on from the errors: no new request for the result.
    assert!(
        user_messages(&requests[2])
            .iter()
            .all(|m| !m.contains("All steps are finished"))
    );
    assert_eq!(trace.last().unwrap()["result"], json!({"lines": 1}));
    assert_eq!(trace.last().unwrap()["summary"], REPORT);
}

/// Rounds follow the same protocol: the new round's step is the last one,
/// its message asks for the report, and its step_done gives it; one model
/// call a round for a one-step task whose first answer the checks refuse.
#[test]
fn a_round_ends_with_its_last_step_done_and_its_report() {
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![
            ("plan", "submit_plan", plan_args(&["Write the file"])),
            (
                "wrong",
                "write",
                json!({"path": "out.txt", "content": "wrong\n"}),
            ),
            (
                "done1",
                "step_done",
                json!({"summary": "wrote it", "report": "Wrote out.txt."}),
            ),
        ]),
        Reply::tool_calls(vec![
            (
                "right",
                "write",
                json!({"path": "out.txt", "content": "right\n"}),
            ),
            (
                "done2",
                "step_done",
                json!({"summary": "fixed it", "report": REPORT}),
            ),
        ]),
    ]);
    let sb = sandbox(
        &model.base_url(),
        "  - name: right\n    run: grep -q right out.txt\nchecks_rounds: 2\n",
    );
    let (code, trace) = run(&sb);
    assert_eq!(code, Some(0));
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "one model call a round");
    let step = user_messages(&requests[1]).pop().unwrap();
    assert!(step.starts_with("Step 2 of 2"), "{step}");
    assert!(step.contains("This is the last step"), "{step}");
    assert_eq!(events(&trace, "round.started").len(), 2);
    assert_eq!(trace.last().unwrap()["summary"], REPORT);
    assert_eq!(sb.read("ws/out.txt"), "right\n");
}

/// A `task` that may write, called with the plan: it runs as the first
/// step's call (while planning it would be refused), and the sub-agent
/// works as before.
#[test]
fn a_task_that_came_with_the_plan_runs_as_the_first_steps() {
    const LANE: &str = "Write done.txt";
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![
            ("plan", "submit_plan", plan_args(&["Delegate"])),
            (
                "t1",
                "task",
                json!({"prompt": format!("{LANE} with the word done."), "kind": "general"}),
            ),
        ]),
        Reply::tool_calls(vec![(
            "w",
            "write",
            json!({"path": "done.txt", "content": "done\n"}),
        )])
        .in_lane(LANE),
        Reply::text("Wrote done.txt.").in_lane(LANE),
        Reply::tool_calls(vec![(
            "done",
            "step_done",
            json!({"summary": "delegated", "report": REPORT}),
        )]),
    ]);
    let sb = sandbox_with_tools(&model.base_url(), "read, write, task", "");
    let (code, trace) = run(&sb);
    assert_eq!(code, Some(0));
    let results: Vec<&Value> = events(&trace, "tool.result");
    assert!(sb.workspace().join("done.txt").exists(), "{results:?}");
    assert_eq!(sb.read("ws/done.txt"), "done\n");
    let answer = answer(&model.requests(), "t1");
    assert!(answer.contains("Wrote done.txt."), "{answer}");
    assert!(answer.contains("Step 1 of 1: Delegate"), "{answer}");
    let started = events(&trace, "subagent.started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["agent"]["parent_call"], "t1");
    assert_eq!(trace.last().unwrap()["totals"]["turns"], 2);
}
