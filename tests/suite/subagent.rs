//! Sub-agents end to end: the real binary, the fake model server telling
//! the parent's conversation and each sub-agent's apart by their first user
//! message (a "lane"), real files in a temporary workspace.

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr, stdout};
use super::support::job::JobRun;

const LANE_A: &str = "[errand A]";
const LANE_B: &str = "[errand B]";

fn job(sb: &Sandbox, model: &FakeModel, tools: &str, allowed_tools: Option<&str>, extra: &str) {
    sb.skill("helper", allowed_tools);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: subagents\nskill: helper\ngoal: Find the version and record it.\n\
             model:\n  provider: openai\n  name: fake-model\n  base_url: {base}\n\
             tools: [{tools}]\nworkspace: ws\nskills_path: [skills]\n\
             permissions:\n  default: deny\n  allow: [read, find, grep, ls, write, edit, task]\n{extra}",
            base = model.base_url(),
        ),
    );
}

fn run(sb: &Sandbox) -> (std::process::Output, Vec<Value>) {
    JobRun::new(sb).progress("plain").traced()
}

fn task(id: &str, args: Value) -> (&str, &'static str, Value) {
    (id, "task", args)
}

/// The requests of the conversation whose first user message contains `marker`.
fn lane(requests: &[Value], marker: &str) -> Vec<Value> {
    requests
        .iter()
        .filter(|r| first_user(r).contains(marker))
        .cloned()
        .collect()
}

fn first_user(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The content of the tool message answering `call_id`, from the first request that has it.
fn tool_message(requests: &[Value], call_id: &str) -> String {
    requests
        .iter()
        .flat_map(|r| r["messages"].as_array().unwrap().clone())
        .find(|m| m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no tool message for {call_id}"))
}

fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn seq_of(trace: &[Value], kind: &str, agent: &str) -> u64 {
    trace
        .iter()
        .find(|e| e["type"] == kind && e["agent"]["id"] == agent)
        .and_then(|e| e["seq"].as_u64())
        .unwrap_or_else(|| panic!("no {kind} of {agent}"))
}

/// An explore task reads a file and answers; the parent gets the answer as
/// the call's result, and the sub-agent's tokens count in the run's totals.
#[test]
fn an_explore_task_reads_files_and_its_answer_is_the_tool_result() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Find the version", "the version is known")]).with_usage(100, 10),
        Reply::tool_calls(vec![task(
            "t1",
            json!({"prompt": format!("{LANE_A} Which version does src/version.txt set?"),
                   "kind": "explore"}),
        )])
        .with_usage(100, 10),
        Reply::tool_calls(vec![("r1", "read", json!({"path": "src/version.txt"}))])
            .with_usage(1000, 200)
            .in_lane(LANE_A),
        Reply::text("src/version.txt line 1 sets version 4.2.0.")
            .with_usage(2000, 300)
            .in_lane(LANE_A),
        Reply::step_done("the version is 4.2.0").with_usage(100, 10),
        Reply::text("The version is 4.2.0.").with_usage(100, 10),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/src/version.txt", "version = \"4.2.0\"\n");
    job(&sb, &model, "read, grep, task", Some("Read Grep Task"), "");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let requests = model.requests();
    let answer = tool_message(&requests, "t1");
    assert_eq!(
        answer,
        "task-1 answered after 2 turns:\nsrc/version.txt line 1 sets version 4.2.0."
    );
    // A fresh conversation: its own system prompt and the errand, nothing of the parent's.
    let sub = lane(&requests, LANE_A);
    assert_eq!(sub.len(), 2);
    let messages = sub[0]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("You are a sub-agent")
    );
    assert!(
        !sub[0]
            .to_string()
            .contains("Find the version and record it")
    );
    // explore ∩ the parent's tools: no grep-less widening, no task.
    assert_eq!(offered(&sub[0]), ["read", "grep"]);
    assert!(tool_message(&sub, "r1").contains("4.2.0"));

    // The trace: wrapped, tagged, and counted against the run.
    let started = events(&trace, "subagent.started");
    assert_eq!(started.len(), 1);
    assert_eq!(
        started[0]["agent"],
        json!({"id": "task-1", "parent_call": "t1"})
    );
    assert_eq!(started[0]["kind"], "explore");
    assert_eq!(started[0]["max_turns"], 20);
    let read_call = events(&trace, "tool.call")
        .into_iter()
        .find(|e| e["call_id"] == "r1")
        .unwrap();
    assert_eq!(read_call["agent"]["id"], "task-1");
    let parent_call = events(&trace, "tool.call")
        .into_iter()
        .find(|e| e["call_id"] == "t1")
        .unwrap();
    assert!(parent_call.get("agent").is_none());
    let completed = events(&trace, "subagent.completed");
    assert_eq!(completed[0]["ok"], true);
    assert_eq!(completed[0]["turns"], 2);
    assert_eq!(completed[0]["tool_calls"], 1);
    assert_eq!(completed[0]["usage"]["input_tokens"], 3000);
    let totals = &events(&trace, "run.completed")[0]["totals"];
    assert_eq!(totals["input_tokens"], 100 * 4 + 3000);
    assert_eq!(totals["output_tokens"], 10 * 4 + 500);
    // The run's turns are its own; the sub-agent's are in its events.
    assert_eq!(totals["turns"], 4);
    assert_eq!(totals["tool_calls"], 2);

    // `Task` in the skill's allowed-tools is agentci's task: no warning about it.
    assert!(
        !events(&trace, "warning")
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("Task")),
        "{trace:#?}"
    );
    let log = format!("{}{}", stdout(&out), stderr(&out));
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("task"))
        .map(|l| l.split_once(' ').map_or(l, |(_, rest)| rest))
        .collect();
    insta::with_settings!({filters => vec![(r"\d+\.\ds", "[SECS]")]}, {
        insta::assert_snapshot!("subagent_progress_lines", lines.join("\n"));
    });
}

/// A sub-agent that tries to start a sub-agent is refused, and so is a
/// parent that asks for `task` among a task's tools.
#[test]
fn a_sub_agent_cannot_start_a_sub_agent() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Delegate", "done")]),
        Reply::tool_calls(vec![
            task(
                "t1",
                json!({"prompt": format!("{LANE_A} Look around."), "kind": "general"}),
            ),
            task(
                "t2",
                json!({"prompt": "Nest.", "kind": "general", "tools": ["read", "task"]}),
            ),
        ]),
        Reply::tool_calls(vec![task(
            "n1",
            json!({"prompt": "Go deeper.", "kind": "explore"}),
        )])
        .in_lane(LANE_A),
        Reply::text("Nesting is refused; nothing else to report.").in_lane(LANE_A),
        Reply::step_done("delegated"),
        Reply::text("Delegated."),
    ]);
    let sb = Sandbox::new();
    job(&sb, &model, "read, write, task", None, "");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let requests = model.requests();
    let sub = lane(&requests, LANE_A);
    assert_eq!(
        offered(&sub[0]),
        ["read", "write"],
        "general: the parent's tools minus task"
    );
    let refusal = tool_message(&sub, "n1");
    assert!(
        refusal.starts_with("ERROR PERMISSION_DENIED: sub-agents cannot start sub-agents"),
        "{refusal}"
    );
    assert_eq!(
        events(&trace, "subagent.started").len(),
        1,
        "only task-1 ran"
    );
    let decision = events(&trace, "permission.decision")
        .into_iter()
        .find(|d| d["call_id"] == "n1")
        .unwrap();
    assert_eq!(decision["decision"], "deny");
    assert_eq!(decision["agent"]["id"], "task-1");

    assert!(
        tool_message(&requests, "t1").contains("Nesting is refused"),
        "the parent still gets the answer"
    );
    let widened = tool_message(&requests, "t2");
    assert!(
        widened
            .starts_with("ERROR INVALID_ARGUMENT: `task` is not among the tools of a general task")
            && widened.contains("sub-agents cannot start sub-agents"),
        "{widened}"
    );
}

/// An explore task cannot write even when the parent can: `write` is not in
/// its set, and `tools` narrows a kind, never widens it.
#[test]
fn a_task_gets_tools_narrower_than_the_parents() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Delegate", "done")]),
        Reply::tool_calls(vec![
            task(
                "t1",
                json!({"prompt": format!("{LANE_A} Look, do not touch."), "kind": "explore"}),
            ),
            task(
                "t2",
                json!({"prompt": "Write.", "kind": "explore", "tools": ["read", "write"]}),
            ),
            task(
                "t3",
                json!({"prompt": format!("{LANE_B} Only read."), "tools": ["read"]}),
            ),
        ]),
        Reply::tool_calls(vec![(
            "w1",
            "write",
            json!({"path": "hacked.txt", "content": "explore wrote this"}),
        )])
        .in_lane(LANE_A),
        Reply::text("I could not write.").in_lane(LANE_A),
        Reply::tool_calls(vec![(
            "w2",
            "write",
            json!({"path": "hacked.txt", "content": "narrowed wrote this"}),
        )])
        .in_lane(LANE_B),
        Reply::text("Writing is not among my tools.").in_lane(LANE_B),
        Reply::step_done("delegated"),
        Reply::text("Delegated."),
    ]);
    let sb = Sandbox::new();
    job(&sb, &model, "read, write, edit, task", None, "");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!sb.workspace().join("hacked.txt").exists());

    let requests = model.requests();
    for (marker, call, tools) in [(LANE_A, "w1", vec!["read"]), (LANE_B, "w2", vec!["read"])] {
        let sub = lane(&requests, marker);
        assert_eq!(offered(&sub[0]), tools, "{marker}");
        let refused = tool_message(&sub, call);
        assert!(
            refused.starts_with("ERROR UNKNOWN_TOOL: tool `write` is not available"),
            "{refused}"
        );
    }
    let widened = tool_message(&requests, "t2");
    assert!(
        widened.starts_with(
            "ERROR INVALID_ARGUMENT: `write` is not among the tools of an explore task in this run (read)"
        ),
        "{widened}"
    );
    // t2 never started a sub-agent; t1 and t3 did.
    let started: Vec<&str> = events(&trace, "subagent.started")
        .iter()
        .map(|e| e["agent"]["parent_call"].as_str().unwrap())
        .collect();
    assert_eq!(started, ["t1", "t3"]);
}

/// Two explore tasks in one turn run together: each starts before the other
/// ends (the trace's order, no timer), results come back in call order, and
/// both get the same system prompt (a stable, cacheable prefix).
#[test]
fn two_explore_tasks_in_one_turn_run_in_parallel() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Ask two questions", "both answered")]),
        Reply::tool_calls(vec![
            task(
                "ta",
                json!({"prompt": format!("{LANE_A} What is in a.txt?"), "kind": "explore"}),
            ),
            task(
                "tb",
                json!({"prompt": format!("{LANE_B} What is in b.txt?"), "kind": "explore"}),
            ),
        ]),
        Reply::tool_calls(vec![("ra", "read", json!({"path": "a.txt"}))]).in_lane(LANE_A),
        Reply::text("a.txt says alpha.").in_lane(LANE_A),
        Reply::tool_calls(vec![("rb", "read", json!({"path": "b.txt"}))]).in_lane(LANE_B),
        Reply::text("b.txt says beta.").in_lane(LANE_B),
        Reply::step_done("answered"),
        Reply::text("alpha and beta"),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/a.txt", "alpha\n");
    sb.write("ws/b.txt", "beta\n");
    job(&sb, &model, "read, write, task", None, "");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let batch = events(&trace, "tool.batch.started")
        .into_iter()
        .find(|b| b["call_ids"] == json!(["ta", "tb"]))
        .expect("one batch for both tasks");
    assert_eq!(batch["parallel"], true);
    assert!(
        seq_of(&trace, "subagent.started", "task-2")
            < seq_of(&trace, "subagent.completed", "task-1")
    );
    assert!(
        seq_of(&trace, "subagent.started", "task-1")
            < seq_of(&trace, "subagent.completed", "task-2")
    );

    let requests = model.requests();
    let parent_after = requests
        .iter()
        .find(|r| {
            r["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["tool_call_id"] == "tb")
        })
        .unwrap();
    let results: Vec<&str> = parent_after["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .filter(|id| id.starts_with('t'))
        .collect();
    assert_eq!(results, ["ta", "tb"]);
    assert!(tool_message(&requests, "ta").ends_with("a.txt says alpha."));
    assert!(tool_message(&requests, "tb").ends_with("b.txt says beta."));
    let system = |marker| lane(&requests, marker)[0]["messages"][0].clone();
    assert_eq!(system(LANE_A), system(LANE_B));
}

/// General tasks that may write run one after another.
#[test]
fn general_tasks_that_may_write_run_one_by_one() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Two errands", "done")]),
        Reply::tool_calls(vec![
            task(
                "ga",
                json!({"prompt": format!("{LANE_A} Write a."), "kind": "general"}),
            ),
            task(
                "gb",
                json!({"prompt": format!("{LANE_B} Write b."), "kind": "general"}),
            ),
        ]),
        Reply::tool_calls(vec![(
            "wa",
            "write",
            json!({"path": "a.txt", "content": "a"}),
        )])
        .in_lane(LANE_A),
        Reply::text("wrote a.txt").in_lane(LANE_A),
        Reply::tool_calls(vec![(
            "wb",
            "write",
            json!({"path": "b.txt", "content": "b"}),
        )])
        .in_lane(LANE_B),
        Reply::text("wrote b.txt").in_lane(LANE_B),
        Reply::step_done("done"),
        Reply::text("done"),
    ]);
    let sb = Sandbox::new();
    job(&sb, &model, "read, write, task", None, "");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(sb.read("ws/a.txt"), "a");
    assert_eq!(sb.read("ws/b.txt"), "b");
    let batches: Vec<&Value> = events(&trace, "tool.batch.started")
        .into_iter()
        .filter(|b| b["tools"] == json!(["task"]))
        .collect();
    assert_eq!(batches.len(), 2);
    assert!(batches.iter().all(|b| b["parallel"] == false));
    assert!(
        seq_of(&trace, "subagent.completed", "task-1")
            < seq_of(&trace, "subagent.started", "task-2")
    );
}

/// The run's budget is shared: a sub-agent stops when it is spent, and the
/// run ends as over budget with the sub-agent's tokens in its totals.
#[test]
fn a_sub_agent_stops_when_the_runs_budget_is_spent() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Delegate", "done")]),
        Reply::tool_calls(vec![task(
            "t1",
            json!({"prompt": format!("{LANE_A} Read forever."), "kind": "explore"}),
        )]),
        Reply::tool_calls(vec![("r1", "read", json!({"path": "a.txt"}))])
            .with_usage(5000, 100)
            .in_lane(LANE_A),
        Reply::text("never asked for").in_lane(LANE_A),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/a.txt", "alpha\n");
    job(
        &sb,
        &model,
        "read, task",
        None,
        "budget: {max_tokens: 1000}\n",
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        lane(&model.requests(), LANE_A).len(),
        1,
        "stopped after its first call"
    );
    let completed = &events(&trace, "subagent.completed")[0];
    assert_eq!(completed["ok"], false);
    assert!(
        completed["reason"]
            .as_str()
            .unwrap()
            .contains("the run's budget is spent"),
        "{completed}"
    );
    let done = &events(&trace, "run.completed")[0];
    assert_eq!(done["status"], "budget_exceeded");
    assert_eq!(done["totals"]["input_tokens"], 100 + 100 + 5000);
    assert!(
        !model
            .requests()
            .iter()
            .any(|r| r.to_string().contains("\"tool_call_id\":\"t1\"")),
        "the parent made no further call"
    );
}

/// `task.max_turns` bounds a sub-agent; the parent gets an error result and goes on.
#[test]
fn a_sub_agent_ends_at_its_turn_limit_and_the_run_goes_on() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Delegate", "done")]),
        Reply::tool_calls(vec![task(
            "t1",
            json!({"prompt": format!("{LANE_A} Keep reading."), "kind": "explore"}),
        )]),
        Reply::tool_calls(vec![("r1", "read", json!({"path": "a.txt"}))]).in_lane(LANE_A),
        Reply::tool_calls(vec![("r2", "ls", json!({}))]).in_lane(LANE_A),
        Reply::step_done("the errand ran out of turns"),
        Reply::text("Done."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/a.txt", "alpha\n");
    job(
        &sb,
        &model,
        "read, ls, task",
        None,
        "task: {max_turns: 2}\n",
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = tool_message(&model.requests(), "t1");
    assert_eq!(
        result,
        "ERROR SUBAGENT_FAILED: task-1 gave no answer: it used its 2 turns (task.max_turns) \
         without a final answer"
    );
    assert_eq!(events(&trace, "subagent.started")[0]["max_turns"], 2);
    assert_eq!(model.remaining(), 0);
}

/// `task` is opt-in, and `task.max_turns` is checked where it is written.
#[test]
fn task_is_opt_in_and_its_key_is_checked() {
    let model = FakeModel::start(vec![]);
    let sb = Sandbox::new();
    job(&sb, &model, "read", None, "task: {max_turns: 0}\n");
    let out = sb.agentci(&["validate", "job.yaml"]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.lines().any(|l| l.contains("job.yaml:")
            && l.contains("`task.max_turns` must be a whole number from 1 to 500")),
        "{text}"
    );

    // Without `tools:`, every builtin but the opt-in ones: no task.
    let model = FakeModel::start(vec![
        Reply::plan(&[("Nothing", "nothing")]),
        Reply::step_done("nothing"),
        Reply::text("Nothing to do."),
    ]);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: plain\nskill: helper\ngoal: Nothing.\nmodel:\n  provider: openai\n  \
             name: fake-model\n  base_url: {}\nworkspace: ws\nskills_path: [skills]\n",
            model.base_url()
        ),
    );
    let (_, trace) = run(&sb);
    let tools = &events(&trace, "run.started")[0]["tools"];
    assert!(
        !tools.as_array().unwrap().contains(&json!("task")),
        "{tools}"
    );
}

/// While planning only read-only calls run: an explore task does, a task
/// that may write is refused until the plan is in.
#[test]
fn an_explore_task_may_run_while_planning() {
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![
            task(
                "p1",
                json!({"prompt": format!("{LANE_A} Survey the files."), "kind": "explore"}),
            ),
            task("p2", json!({"prompt": "Change things.", "kind": "general"})),
        ]),
        Reply::tool_calls(vec![("l1", "ls", json!({}))]).in_lane(LANE_A),
        Reply::text("One file: notes.txt.").in_lane(LANE_A),
        Reply::plan(&[("Nothing to change", "done")]),
        Reply::step_done("nothing"),
        Reply::text("Nothing."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/notes.txt", "hello\n");
    job(&sb, &model, "ls, write, task", None, "");
    let (out, _trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = model.requests();
    assert!(tool_message(&requests, "p1").ends_with("One file: notes.txt."));
    let refused = tool_message(&requests, "p2");
    assert!(
        refused.starts_with("ERROR UNKNOWN_TOOL: tool `task` is not available while planning"),
        "{refused}"
    );
}

/// A sub-agent is under the job's rules like the parent: a denied path stays
/// denied, and the workspace boundary holds.
#[test]
fn a_sub_agent_obeys_the_jobs_permission_rules() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Delegate", "done")]),
        Reply::tool_calls(vec![task(
            "t1",
            json!({"prompt": format!("{LANE_A} Read the key."), "kind": "explore"}),
        )]),
        Reply::tool_calls(vec![
            ("k1", "read", json!({"path": "secrets/key.txt"})),
            ("k2", "read", json!({"path": "../outside.txt"})),
            ("k3", "grep", json!({"pattern": "hunter2"})),
        ])
        .in_lane(LANE_A),
        Reply::text("I could not read the key.").in_lane(LANE_A),
        Reply::step_done("done"),
        Reply::text("Done."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/secrets/key.txt", "hunter2\n");
    sb.write("outside.txt", "hunter2 outside\n");
    job(
        &sb,
        &model,
        "read, grep, task",
        None,
        "  deny: [\"read(secrets/**)\"]\n",
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sub = lane(&model.requests(), LANE_A);
    assert!(tool_message(&sub, "k1").starts_with("ERROR PERMISSION_DENIED"));
    assert!(tool_message(&sub, "k2").starts_with("ERROR OUTSIDE_WORKSPACE"));
    let grep = tool_message(&sub, "k3");
    assert!(!grep.contains("secrets/key.txt:"), "{grep}");
    let denied = events(&trace, "permission.decision")
        .into_iter()
        .find(|d| d["call_id"] == "k1")
        .unwrap();
    assert_eq!(denied["rule"], "deny: read(secrets/**)");
    assert_eq!(denied["agent"]["parent_call"], "t1");
}

/// A sub-agent whose conversation no longer fits is trimmed like the parent's and goes on.
#[test]
fn a_sub_agents_conversation_is_trimmed_when_too_long() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Delegate", "done")]),
        Reply::tool_calls(vec![task(
            "t1",
            json!({"prompt": format!("{LANE_A} Read both."), "kind": "explore"}),
        )]),
        Reply::tool_calls(vec![("r1", "read", json!({"path": "a.txt"}))]).in_lane(LANE_A),
        Reply::tool_calls(vec![("r2", "ls", json!({}))]).in_lane(LANE_A),
        Reply::context_too_long().in_lane(LANE_A),
        Reply::text("a.txt holds alpha.").in_lane(LANE_A),
        Reply::step_done("done"),
        Reply::text("Done."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/a.txt", &"alpha\n".repeat(2000));
    job(&sb, &model, "read, ls, task", None, "");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(tool_message(&model.requests(), "t1").ends_with("a.txt holds alpha."));
    let trimmed = events(&trace, "context.trimmed");
    assert_eq!(trimmed.len(), 1);
    assert_eq!(trimmed[0]["agent"]["id"], "task-1");
    assert_eq!(trimmed[0]["call_id"], "task-1/model-3");
    // Like the parent's, the trimmed request says what it sent (it was
    // `null` for a sub-agent): the sub-agent's requests are rebuilt from
    // its own deltas, the retried one included, as the server got them.
    assert!(trimmed[0]["sent"]["messages_dropped"].as_u64().unwrap() > 0);
    let rebuilt = rebuilt_requests(sb.path(), "task-1");
    let received = lane(&model.requests(), LANE_A);
    assert_eq!(rebuilt.len(), 4, "three calls and the trimmed retry");
    assert_eq!(rebuilt.len(), received.len());
    for (n, (rebuilt, received)) in rebuilt.iter().zip(&received).enumerate() {
        let got: Vec<(Value, Value)> = received["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["role"].clone(), m["content"].clone()))
            .collect();
        assert_eq!(rebuilt, &got, "request {} of task-1", n + 1);
    }
}

/// The requests of agent `agent` (role and text of each message), rebuilt
/// from the `sent` deltas of its `model.request` and `context.trimmed` events.
fn rebuilt_requests(dir: &std::path::Path, agent: &str) -> Vec<Vec<(Value, Value)>> {
    use agentci::event::EventKind;
    use agentci::provider::Message;
    use agentci::trace_view::{Rebuilt, rebuild};
    let events = agentci::sink::read_trace(&dir.join("out/trace.jsonl")).unwrap();
    let mut state = Rebuilt::default();
    let mut requests = Vec::new();
    for event in &events {
        if event.agent.as_ref().map(|a| a.id.as_str()) != Some(agent) {
            continue;
        }
        let sent = match &event.kind {
            EventKind::ModelRequest(request) if !request.call_id.contains("/summary-") => {
                request.sent.as_ref()
            }
            EventKind::ContextTrimmed(trim) => trim.sent.as_ref(),
            _ => continue,
        };
        rebuild(
            &mut state,
            sent.expect("every request records what it sent"),
        )
        .unwrap();
        let messages = state.messages.iter().map(|m| match m {
            Message::System { content } => (json!("system"), json!(content)),
            Message::User { content } => (json!("user"), json!(content)),
            Message::Assistant { content, .. } => (json!("assistant"), json!(content)),
            Message::Tool { content, .. } => (json!("tool"), json!(content)),
        });
        requests.push(messages.collect());
    }
    requests
}

/// A server that reports no usage for a sub-agent's call is warned about
/// as for the parent's: the run's cost is unknown from then on.
#[test]
fn a_sub_agents_call_without_usage_is_warned_about() {
    let answer_without_usage = json!({"choices": [{"message": {"role": "assistant",
        "content": "a.txt holds alpha."}, "finish_reason": "stop"}]});
    let model = FakeModel::start(vec![
        Reply::plan(&[("Delegate", "done")]),
        Reply::tool_calls(vec![task(
            "t1",
            json!({"prompt": format!("{LANE_A} Read a.txt."), "kind": "explore"}),
        )]),
        Reply::json(answer_without_usage).in_lane(LANE_A),
        Reply::step_done("done"),
        Reply::text("Done."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/a.txt", "alpha\n");
    job(&sb, &model, "read, task", None, "");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(tool_message(&model.requests(), "t1").ends_with("a.txt holds alpha."));
    let warnings: Vec<&Value> = events(&trace, "warning")
        .into_iter()
        .filter(|w| w["source"] == "model")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["agent"]["id"], "task-1");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(
        message.contains("reported no token usage for task-1/model-1"),
        "{message}"
    );
    let done = events(&trace, "run.completed").pop().unwrap();
    assert!(done["totals"]["cost_usd"].is_null(), "{done}");
}

/// A long sub-agent session crosses the high-water mark of the job's
/// context window and is compacted like the parent's (a summary by the
/// model, recorded as `context.compacted` tagged with the sub-agent), so
/// its requests stop growing and it goes on to its answer.
#[test]
fn a_long_sub_agent_session_is_compacted_and_answers() {
    // About 7,000 tokens a file: two of them pass the mark of a 16,000-token window.
    let big = |tag: &str| -> String {
        (0..560)
            .map(|i| format!("{tag} line {i}: the quick brown fox jumps over the lazy dog\n"))
            .collect()
    };
    let read = |id: &str, path: &str| {
        Reply::tool_calls(vec![(id, "read", json!({ "path": path }))]).in_lane(LANE_A)
    };
    let model = FakeModel::start(vec![
        Reply::plan(&[("Delegate", "the files are known")]),
        Reply::tool_calls(vec![task(
            "t1",
            json!({"prompt": format!("{LANE_A} Read f1, f2 and f3."), "kind": "explore"}),
        )]),
        read("r1", "f1.txt"),
        read("r2", "f2.txt"),
        // The summary calls carry the older turns, not the errand: they
        // match no lane and take the next reply outside the lanes, while
        // the parent waits for its task.
        Reply::text("SUB-SUMMARY-ONE: f1.txt holds 560 fox lines."),
        read("r3", "f3.txt"),
        Reply::text("SUB-SUMMARY-TWO: f1 and f2 hold fox lines."),
        Reply::text("All three files hold fox lines.").in_lane(LANE_A),
        Reply::step_done("the files hold fox lines"),
        Reply::text("Done."),
    ]);
    let sb = Sandbox::new();
    for tag in ["f1", "f2", "f3"] {
        sb.write(&format!("ws/{tag}.txt"), &big(tag));
    }
    sb.skill("helper", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: subagents\nskill: helper\ngoal: Find what the files hold.\n\
             model:\n  provider: openai\n  name: fake-model\n  base_url: {base}\n  context_window: 16000\n\
             tools: [read, task]\nworkspace: ws\nskills_path: [skills]\n\
             permissions:\n  default: deny\n  allow: [read, task]\n",
            base = model.base_url(),
        ),
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    assert!(tool_message(&requests, "t1").ends_with("All three files hold fox lines."));

    let compacted = events(&trace, "context.compacted");
    assert_eq!(compacted.len(), 2, "{compacted:#?}");
    for event in &compacted {
        assert_eq!(event["agent"]["id"], "task-1");
        assert_eq!(event["method"], "summary");
        assert!(event["tokens_after"].as_u64() < event["high_water"].as_u64());
        assert!(event["tokens_before"].as_u64() >= event["high_water"].as_u64());
    }
    assert_eq!(compacted[0]["call_id"], "task-1/model-3");
    assert_eq!(compacted[0]["replaced_tool_calls"], json!(["r1"]));

    // The sub-agent's requests: the errand and its system prompt are kept,
    // the older reads are replaced by the summary, so they stop growing.
    let sub = lane(&requests, LANE_A);
    assert_eq!(sub.len(), 4);
    let size = |r: &Value| r["messages"].to_string().len();
    assert!(sub[1].to_string().contains("f1 line 7:"));
    assert!(!sub[2].to_string().contains("f1 line 7:"));
    assert!(sub[2].to_string().contains("SUB-SUMMARY-ONE"));
    assert!(!sub[3].to_string().contains("f2 line 7:"));
    assert!(size(&sub[3]) < size(&sub[1]) + 5_000);
    for request in &sub {
        let messages = request["messages"].as_array().unwrap();
        assert!(
            messages[0]["content"]
                .as_str()
                .unwrap()
                .contains("You are a sub-agent")
        );
        assert!(first_user(request).contains("Read f1, f2 and f3."));
    }
    // The summary calls are tagged with the sub-agent and count against the run.
    let summary_calls: Vec<&Value> = events(&trace, "model.request")
        .into_iter()
        .filter(|e| e["agent"]["id"] == "task-1" && e["tools"] == json!([]))
        .collect();
    assert_eq!(summary_calls.len(), 2, "{summary_calls:#?}");
    assert_eq!(compacted[0]["summary_call_id"], summary_calls[0]["call_id"]);
}

/// A `general` task gets the parent's tools, a job's MCP tools too: the
/// sub-agent is offered the server's tool and its call reaches the server
/// under the job's permission rules, which still deny what they deny.
#[test]
fn a_general_task_gets_the_jobs_mcp_tools_under_the_same_rules() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Add", "sum known")]),
        Reply::tool_calls(vec![task(
            "g1",
            json!({"prompt": format!("{LANE_A} Add 2 and 3."), "kind": "general"}),
        )]),
        Reply::tool_calls(vec![
            ("add1", "mcp__calc__add", json!({"a": 2, "b": 3})),
            ("fail1", "mcp__calc__fail", json!({})),
        ])
        .in_lane(LANE_A),
        Reply::text("the sum is 5").in_lane(LANE_A),
        Reply::step_done("sum known"),
        Reply::text("done"),
    ]);
    let sb = Sandbox::new();
    let server = super::mcp::test_server(&[]);
    job(
        &sb,
        &model,
        "read, task",
        None,
        &format!(
            "  deny: [mcp__calc__fail]\nmcp:\n  servers:\n    calc:\n      command: {:?}\n      \
             args: [{:?}]\n",
            server[0], server[1]
        ),
    );
    // The parent's allow list must let the sub-agent call the server's `add`.
    let yaml = sb.read("job.yaml").replace(
        "allow: [read, find, grep, ls, write, edit, task]",
        "allow: [read, task, mcp__calc__add]",
    );
    sb.write("job.yaml", &yaml);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = model.requests();
    let sub = lane(&requests, LANE_A);
    let sub_tools = offered(&sub[0]);
    assert!(
        sub_tools.contains(&"mcp__calc__add".to_string()),
        "{sub_tools:?}"
    );
    assert!(!sub_tools.contains(&"task".to_string()), "{sub_tools:?}");
    assert_eq!(
        tool_message(&requests, "add1"),
        "`mcp__calc__add` answered\n5"
    );
    assert!(
        tool_message(&requests, "fail1").contains("PERMISSION_DENIED"),
        "{}",
        tool_message(&requests, "fail1")
    );
    let added = events(&trace, "tool.call")
        .into_iter()
        .find(|e| e["call_id"] == "add1")
        .expect("the sub-agent's call is in the trace");
    assert_eq!(added["agent"]["id"], "task-1");
}
