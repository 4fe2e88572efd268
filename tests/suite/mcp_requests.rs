//! Requests a job's MCP servers send to agentci during a run, end to end:
//! the real `agentci run`, the fake model calling tools of our test server,
//! which sends `roots/list`, `sampling/createMessage` and
//! `elicitation/create` mid-call. Each becomes an `mcp.server.request`
//! event; sampling is answered by the run's model only for a server with
//! `sampling: true`, elicitation never.

use serde_json::{Value, json};

use super::mcp::test_server;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr, stdout, types};
use super::support::job::{JobRun, TRACE};

/// A job whose one server `t` is the test server with `args`, and `extra`
/// lines under it (`roots: true`, `sampling: true`).
fn job(sb: &Sandbox, base_url: &str, args: &[&str], extra: &str) {
    let command = test_server(args);
    let quoted: Vec<String> = command[1..].iter().map(|a| format!("{a:?}")).collect();
    sb.skill("user", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: mcp-requests\nskill: user\ngoal: Use the tools.\nmodel:\n  \
             provider: openai\n  name: fake-model\n  base_url: {base_url}\ntools: [read]\n\
             workspace: ws\nskills_path: [skills]\nallow_dirty: true\npermissions:\n  default: \
             allow\nmcp:\n  servers:\n    t:\n      command: {:?}\n      args: [{}]\n{extra}",
            command[0],
            quoted.join(", ")
        ),
    );
}

fn run(sb: &Sandbox) -> (std::process::Output, Vec<Value>) {
    let out = JobRun::new(sb).progress("none").output();
    (out, sb.trace(TRACE))
}

/// `(method, outcome, detail)` of every `mcp.server.request` of server `t`.
fn requests(trace: &[Value]) -> Vec<(String, String, String)> {
    events(trace, "mcp.server.request")
        .into_iter()
        .inspect(|e| assert_eq!(e["server"], "t", "{e}"))
        .map(|e| {
            (
                e["method"].as_str().unwrap().to_string(),
                e["outcome"].as_str().unwrap().to_string(),
                e["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn requests_sent_during_a_tool_call_are_in_the_trace_and_sampling_is_off_by_default() {
    let sb = Sandbox::new();
    let model = FakeModel::start(vec![
        Reply::plan(&[("Add", "added")]),
        Reply::tool_call("mcp__t__add", json!({"a": 2, "b": 3})),
        Reply::step_done("added"),
        Reply::text("done"),
    ]);
    job(
        &sb,
        &model.base_url(),
        &["--ask-during-add"],
        "      roots: true\n",
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let seen = requests(&trace);
    let methods: Vec<&str> = seen.iter().map(|(m, _, _)| m.as_str()).collect();
    assert_eq!(
        methods,
        ["roots/list", "sampling/createMessage", "elicitation/create"]
    );
    assert_eq!(seen[0].1, "answered");
    assert!(seen[0].2.starts_with("file://"), "{seen:?}");
    assert_eq!(seen[1].1, "declined");
    assert!(
        seen[1]
            .2
            .contains("sampling is off for server t; set mcp.servers.t.sampling: true"),
        "{seen:?}"
    );
    assert_eq!(seen[2].1, "declined");
    assert!(seen[2].2.contains("nobody to answer"), "{seen:?}");
    // The params are kept, summarised, for the reader of the trace.
    let sampling = &events(&trace, "mcp.server.request")[1];
    assert!(
        sampling["params"].as_str().unwrap().contains("Say hello"),
        "{sampling}"
    );

    // Recorded before the model's next turn, and no model call was made
    // for the declined sampling: plan, the add turn, step_done, the end.
    let kinds = types(&trace);
    let first = kinds
        .iter()
        .position(|t| t == "mcp.server.request")
        .unwrap();
    let result = kinds.iter().position(|t| t == "tool.result").unwrap();
    let next_turn = kinds
        .iter()
        .enumerate()
        .position(|(i, t)| i > result && t == "model.request")
        .unwrap();
    assert!(result < first && first < next_turn, "{kinds:?}");
    assert_eq!(model.requests().len(), 4);
    // The add call itself still worked.
    let add = events(&trace, "tool.result")
        .into_iter()
        .find(|e| e["tool"] == "mcp__t__add")
        .unwrap();
    assert_eq!(add["ok"], true, "{add}");

    // `trace show` lists the declined ones as warnings, answered ones as
    // other events.
    let shown = sb.agentci(&["trace", "show", "out/trace.jsonl"]);
    let text = stdout(&shown);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("mcp server t") || l.contains("mcp.server.request"))
        .collect();
    let root = sb.path().display().to_string();
    insta::assert_snapshot!(
        "trace_show_server_requests",
        lines.join("\n").replace(&root, "[SANDBOX]")
    );
}

#[test]
fn a_server_with_sampling_on_gets_one_completion_of_the_runs_model() {
    let sb = Sandbox::new();
    let params = json!({
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Summarise: the build is green"}},
            {"role": "assistant", "content": {"type": "text", "text": "Shall I be brief?"}},
            {"role": "user", "content": [{"type": "text", "text": "Yes."}]}
        ],
        "systemPrompt": "You summarise CI logs.",
        "maxTokens": 50
    });
    let model = FakeModel::start(vec![
        Reply::plan(&[("Ask", "asked")]),
        Reply::tool_call(
            "mcp__t__ask",
            json!({"method": "sampling/createMessage", "params": params}),
        ),
        // Served to the sampling request, made during the tool call.
        Reply::text("Green build."),
        Reply::step_done("asked"),
        Reply::text("done"),
    ]);
    job(&sb, &model.base_url(), &[], "      sampling: true\n");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let sent = &model.requests()[2];
    assert_eq!(sent["max_completion_tokens"], 50, "{sent}");
    assert!(sent.get("tools").is_none(), "{sent}");
    let roles: Vec<(&str, &str)> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        roles,
        [
            ("system", "You summarise CI logs."),
            ("user", "Summarise: the build is green"),
            ("assistant", "Shall I be brief?"),
            ("user", "Yes."),
        ]
    );

    let seen = requests(&trace);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].0, "sampling/createMessage");
    assert_eq!(seen[0].1, "answered", "{seen:?}");
    assert!(seen[0].2.contains("output tokens"), "{seen:?}");
    // The server got the model's text as an assistant message.
    let asked = events(&trace, "tool.result")
        .into_iter()
        .find(|e| e["tool"] == "mcp__t__ask")
        .unwrap();
    let answer: Value =
        serde_json::from_str(asked["data"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        answer["result"]["content"]["text"], "Green build.",
        "{answer}"
    );
    assert_eq!(answer["result"]["role"], "assistant");
    assert_eq!(answer["result"]["model"], "fake-model");
}

// A server may ask for far more than a turn's worth of tokens, or send
// what a text completion cannot answer: capped, and declined.
#[test]
fn sampling_is_capped_and_non_text_requests_are_declined() {
    let sb = Sandbox::new();
    let image = json!({
        "messages": [{"role": "user",
                      "content": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}}],
        "maxTokens": 10
    });
    let huge = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "Write a novel"}}],
        "maxTokens": 4_000_000
    });
    // Only a system prompt: both model APIs refuse a request without a message.
    let empty = json!({"messages": [], "systemPrompt": "Be brief.", "maxTokens": 10});
    let model = FakeModel::start(vec![
        Reply::plan(&[("Ask", "asked")]),
        Reply::tool_call(
            "mcp__t__ask",
            json!({"method": "sampling/createMessage", "params": image}),
        ),
        Reply::tool_call(
            "mcp__t__ask",
            json!({"method": "sampling/createMessage", "params": huge}),
        ),
        Reply::text("A short novel."),
        Reply::tool_call(
            "mcp__t__ask",
            json!({"method": "sampling/createMessage", "params": empty}),
        ),
        Reply::step_done("asked"),
        Reply::text("done"),
    ]);
    job(&sb, &model.base_url(), &[], "      sampling: true\n");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = requests(&trace);
    assert_eq!(seen[0].1, "declined", "{seen:?}");
    assert!(seen[0].2.contains("text only"), "{seen:?}");
    assert_eq!(seen[1].1, "answered", "{seen:?}");
    assert_eq!(model.requests()[3]["max_completion_tokens"], 8192);
    assert_eq!(seen[2].1, "declined", "{seen:?}");
    assert!(seen[2].2.contains("no messages"), "{seen:?}");
    // The declined requests reached no model: the plan, three tool turns,
    // the one sampling answer, step_done and the summary.
    assert_eq!(model.requests().len(), 7);
}

#[test]
fn sampling_must_be_a_boolean_with_its_place() {
    let sb = Sandbox::new();
    job(
        &sb,
        "http://127.0.0.1:9",
        &[],
        "      sampling: sometimes\n",
    );
    let out = sb.agentci(&["validate", "job.yaml"]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("`mcp.servers.t.sampling` must be `true` or `false`"),
        "{text}"
    );
    assert!(text.contains("job.yaml:20:"), "{text}");
}

// Requests sent during the last tool calls of a run that stops there (its
// turns ran out) have no next model turn: they are still in the trace,
// before `run.completed`, which stays the last line.
#[test]
fn requests_of_the_last_tool_calls_are_recorded_before_run_completed() {
    let sb = Sandbox::new();
    let model = FakeModel::start(vec![
        Reply::plan(&[("Add", "added")]),
        Reply::tool_call("mcp__t__add", json!({"a": 2, "b": 3})),
        Reply::step_done("added"),
        Reply::text("done"),
    ]);
    job(
        &sb,
        &model.base_url(),
        &["--ask-during-add"],
        "budget:\n  max_turns: 2\n",
    );
    let (_, trace) = run(&sb);
    let kinds = types(&trace);
    assert_eq!(kinds.last().map(String::as_str), Some("run.completed"));
    let seen = requests(&trace);
    assert_eq!(seen.len(), 3, "{kinds:?}");
    let completed = trace.last().unwrap();
    assert_eq!(completed["status"], "budget_exceeded", "{completed}");
    // No model turn came after the add call.
    let last_request = kinds.iter().rposition(|t| t == "model.request").unwrap();
    let first = kinds
        .iter()
        .position(|t| t == "mcp.server.request")
        .unwrap();
    assert!(last_request < first, "{kinds:?}");
}

// A hostile server asks for completions in a loop: they are not counted
// in the run's budget, so the run stops answering after 20.
#[test]
fn a_run_answers_at_most_twenty_sampling_requests() {
    let sb = Sandbox::new();
    // Each call differs: the loop guard stops identical ones.
    let ask = |i: usize| {
        json!({"method": "sampling/createMessage", "params": {"maxTokens": 10, "messages": [
            {"role": "user", "content": {"type": "text", "text": format!("Say hello {i}")}}]}})
    };
    let calls: Vec<(String, Value)> = (0..21).map(|i| (format!("c{i}"), ask(i))).collect();
    let mut replies = vec![
        Reply::plan(&[("Ask", "asked")]),
        Reply::tool_calls(
            calls
                .iter()
                .map(|(id, args)| (id.as_str(), "mcp__t__ask", args.clone()))
                .collect(),
        ),
    ];
    replies.extend((0..20).map(|i| Reply::text(&format!("hello {i}"))));
    replies.push(Reply::step_done("asked"));
    replies.push(Reply::text("done"));
    let model = FakeModel::start(replies);
    job(&sb, &model.base_url(), &[], "      sampling: true\n");
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = requests(&trace);
    assert_eq!(seen.len(), 21, "{:?} {seen:?}", types(&trace));
    assert!(
        seen[..20]
            .iter()
            .all(|(_, outcome, _)| outcome == "answered"),
        "{seen:?}"
    );
    assert_eq!(seen[20].1, "failed", "{seen:?}");
    assert!(seen[20].2.contains("already answered 20"), "{seen:?}");
    // Plan, the asking turn, 20 answers, step_done, the end.
    assert_eq!(model.requests().len(), 24);
}

// The Messages API requires `max_tokens`: the request's `maxTokens` goes
// there, and the system prompt into `system`.
#[test]
fn sampling_through_the_messages_api_keeps_max_tokens_and_the_system_prompt() {
    let sb = Sandbox::new();
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "Summarise"}}],
        "systemPrompt": "You summarise CI logs.",
        "maxTokens": 42
    });
    let model = FakeModel::start(vec![
        Reply::plan(&[("Ask", "asked")]),
        Reply::tool_call(
            "mcp__t__ask",
            json!({"method": "sampling/createMessage", "params": params}),
        ),
        Reply::text("Green build."),
        Reply::step_done("asked"),
        Reply::text("done"),
    ]);
    job(&sb, &model.base_url(), &[], "      sampling: true\n");
    let yaml = sb.read("job.yaml").replace(
        "provider: openai\n  name: fake-model",
        "provider: anthropic\n  name: claude-x",
    );
    sb.write("job.yaml", &yaml);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let captured = model.captured();
    assert_eq!(captured[2].path, "/v1/messages");
    let sent = &captured[2].body;
    assert_eq!(sent["max_tokens"], 42, "{sent}");
    assert!(sent.get("tools").is_none(), "{sent}");
    assert_eq!(
        sent["system"][0]["text"], "You summarise CI logs.",
        "{sent}"
    );
    assert_eq!(requests(&trace)[0].1, "answered");
}
