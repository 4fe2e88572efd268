//! MCP tools in runs, end to end: the real `agentci run`, the fake model
//! calling `mcp__<server>__<tool>` tools of our test server and of the
//! public reference servers, through the job's permission policy, with
//! servers that crash, hang, break the protocol or never start.
//!
//! The reference-server tests skip only on a machine without `npm` (see
//! `suite::mcp`).

use serde_json::{Value, json};

use super::mcp::{npm_server, test_server};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr, types};
use super::support::job::{JobRun, TRACE};

/// `name: {command, args, extra...}` lines for `mcp.servers`.
fn server(name: &str, command: &[String], extra: &str) -> String {
    let args: Vec<String> = command[1..].iter().map(|a| format!("{a:?}")).collect();
    format!(
        "    {name}:\n      command: {:?}\n      args: [{}]\n{extra}",
        command[0],
        args.join(", ")
    )
}

/// A job with builtin `read` and `ls`, the servers and `permissions`.
fn job(sb: &Sandbox, base_url: &str, servers: &str, permissions: &str) {
    sb.skill("user", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: mcp-run\nskill: user\ngoal: Use the tools.\nmodel:\n  provider: \
             openai\n  name: fake-model\n  base_url: {base_url}\ntools: [read, ls]\nworkspace: \
             ws\nskills_path: [skills]\nallow_dirty: true\npermissions:\n{permissions}\nmcp:\n  \
             servers:\n{servers}"
        ),
    );
}

const ALLOW_ALL: &str = "  default: allow";

/// A plan, then one turn per entry of `turns`, then done.
fn script(turns: Vec<Vec<(&str, Value)>>) -> Vec<Reply> {
    let mut replies = vec![Reply::plan(&[("Use the tools", "they were used")])];
    for (i, turn) in turns.into_iter().enumerate() {
        let calls: Vec<(String, &str, Value)> = turn
            .into_iter()
            .enumerate()
            .map(|(j, (name, args))| (format!("call_{i}_{j}"), name, args))
            .collect();
        replies.push(Reply::tool_calls(
            calls
                .iter()
                .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
                .collect(),
        ));
    }
    replies.push(Reply::step_done("used"));
    replies.push(Reply::text("done"));
    replies
}

fn run(sb: &Sandbox) -> (std::process::Output, Vec<Value>) {
    let out = JobRun::new(sb).progress("none").output();
    (out, sb.trace(TRACE))
}

/// The `tool.result` of the call the model made as `tool` (the n-th such call).
fn result<'a>(trace: &'a [Value], tool: &str, nth: usize) -> &'a Value {
    events(trace, "tool.result")
        .into_iter()
        .filter(|e| e["tool"] == tool)
        .nth(nth)
        .unwrap_or_else(|| panic!("no result {nth} of {tool}"))
}

/// The `tool.result` of the call with id `call_id`.
fn result_of<'a>(trace: &'a [Value], call_id: &str) -> &'a Value {
    events(trace, "tool.result")
        .into_iter()
        .find(|e| e["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no result of {call_id}"))
}

fn offered(model: &FakeModel, request: usize) -> Vec<String> {
    model.requests()[request]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_run_calls_a_servers_tools_and_resources_through_the_policy() {
    let sb = Sandbox::new();
    let model = FakeModel::start(script(vec![
        vec![
            ("mcp__t__add", json!({"a": 2, "b": 3})),
            ("mcp__t__late", json!({})),
            ("mcp_list_resources", json!({})),
            (
                "mcp_read_resource",
                json!({"server": "t", "uri": "test://notes/1"}),
            ),
        ],
        vec![
            ("mcp__t__fail", json!({})),
            ("mcp__t__env", json!({"name": "HOME"})),
            ("mcp__t__add", json!({"a": "two", "b": 3})),
            ("mcp__t__nope", json!({})),
        ],
    ]));
    let servers = server("t", &test_server(&["--list-changed", "--resources"]), "");
    job(
        &sb,
        &model.base_url(),
        &servers,
        "  default: deny\n  allow: [\"mcp__t__*\", mcp_list_resources, mcp_read_resource]\n  \
         deny: [mcp__t__env]",
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // The server's list_changed (sent right after the first listing) is
    // followed before the first model turn.
    let kinds = types(&trace);
    let refreshed = kinds
        .iter()
        .position(|t| t == "mcp.tools.refreshed")
        .unwrap();
    let first_request = kinds.iter().position(|t| t == "model.request").unwrap();
    assert!(refreshed < first_request, "{kinds:?}");
    let tools = offered(&model, 0);
    for name in [
        "read",
        "ls",
        "mcp__t__add",
        "mcp__t__late",
        "mcp_list_resources",
    ] {
        assert!(tools.contains(&name.to_string()), "{name} in {tools:?}");
    }
    let started = &events(&trace, "run.started")[0];
    assert!(
        started["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__t__add"))
    );

    let add = result_of(&trace, "call_0_0");
    assert_eq!(add["ok"], true, "{add}");
    assert_eq!(add["data"]["structured_content"], json!({"sum": 5}));
    assert_eq!(add["data"]["content"][0]["text"], "5");
    assert_eq!(result(&trace, "mcp__t__late", 0)["ok"], true);
    let listing = result(&trace, "mcp_list_resources", 0);
    assert_eq!(listing["ok"], true, "{listing}");
    let read = result(&trace, "mcp_read_resource", 0);
    assert_eq!(read["ok"], true, "{read}");

    let fail = result(&trace, "mcp__t__fail", 0);
    assert_eq!(fail["error_code"], "TOOL_ERROR", "{fail}");
    let env = result(&trace, "mcp__t__env", 0);
    assert_eq!(env["error_code"], "PERMISSION_DENIED", "{env}");
    let denied = events(&trace, "permission.decision")
        .into_iter()
        .find(|e| e["tool"] == "mcp__t__env")
        .unwrap();
    assert_eq!(denied["rule"], "deny: mcp__t__env");
    // The server's own schema is checked before the call.
    assert_eq!(
        result_of(&trace, "call_1_2")["error_code"],
        "INVALID_ARGUMENT"
    );
    // A tool the server does not have is not in the run.
    assert_eq!(
        result(&trace, "mcp__t__nope", 0)["error_code"],
        "UNKNOWN_TOOL"
    );

    // What the model read back.
    let requests = model.requests();
    let tool_text = |id: &str| -> String {
        requests
            .iter()
            .flat_map(|r| r["messages"].as_array().unwrap().clone())
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .map(|m| m["content"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no tool message {id}"))
    };
    assert!(
        tool_text("call_0_0").ends_with("\n5"),
        "{}",
        tool_text("call_0_0")
    );
    let resources = tool_text("call_0_2");
    assert!(resources.contains("uri=test://notes/1"), "{resources}");
    assert!(
        resources.contains("template server=t uri=test://notes/{id}"),
        "{resources}"
    );
    assert!(tool_text("call_1_0").contains("the tool failed on purpose"));
    assert!(events(&trace, "mcp.server.down").is_empty());
}

#[test]
fn one_server_dies_and_the_other_and_the_builtins_go_on() {
    let sb = Sandbox::new();
    let model = FakeModel::start(script(vec![
        vec![("mcp__a__crash", json!({}))],
        vec![
            ("mcp__a__add", json!({"a": 1, "b": 2})),
            ("mcp__b__add", json!({"a": 1, "b": 2})),
            ("ls", json!({})),
        ],
    ]));
    let servers = [
        server("a", &test_server(&[]), ""),
        server("b", &test_server(&[]), ""),
    ]
    .concat();
    job(&sb, &model.base_url(), &servers, ALLOW_ALL);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let crash = result(&trace, "mcp__a__crash", 0);
    assert_eq!(crash["error_code"], "SERVER_DOWN", "{crash}");
    let down = events(&trace, "mcp.server.down");
    assert_eq!(down.len(), 1, "{down:?}");
    assert_eq!(down[0]["server"], "a");
    assert_eq!(down[0]["required"], false);
    assert!(
        down[0]["stderr"]
            .as_array()
            .unwrap()
            .contains(&json!("test server: crashing on purpose")),
        "{}",
        down[0]
    );
    assert_eq!(
        result(&trace, "mcp__a__add", 0)["error_code"],
        "SERVER_DOWN"
    );
    assert_eq!(result(&trace, "mcp__b__add", 0)["ok"], true);
    assert_eq!(result(&trace, "ls", 0)["ok"], true);
    // The server's stderr is in the trace, never in agentci's own output.
    assert!(!stderr(&out).contains("crashing on purpose"));
}

#[test]
fn a_hung_server_and_one_that_writes_junk_are_down_and_the_run_goes_on() {
    let sb = Sandbox::new();
    let model = FakeModel::start(script(vec![vec![
        ("mcp__slow__sleep", json!({"seconds": 30})),
        ("mcp__junk__stray", json!({})),
    ]]));
    let servers = [
        server("slow", &test_server(&[]), "      timeout: 1s\n"),
        server("junk", &test_server(&[]), ""),
    ]
    .concat();
    job(&sb, &model.base_url(), &servers, ALLOW_ALL);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let slow = result(&trace, "mcp__slow__sleep", 0);
    assert_eq!(slow["error_code"], "SERVER_DOWN", "{slow}");
    assert!(
        slow["summary"]
            .as_str()
            .unwrap()
            .contains("within its timeout of 1s"),
        "{slow}"
    );
    let junk = result(&trace, "mcp__junk__stray", 0);
    assert_eq!(junk["error_code"], "SERVER_DOWN", "{junk}");
    let down: Vec<&str> = events(&trace, "mcp.server.down")
        .iter()
        .map(|e| e["server"].as_str().unwrap())
        .collect();
    assert_eq!(down.len(), 2, "{down:?}");
    assert_eq!(model.remaining(), 0);
}

#[test]
fn a_required_server_that_does_not_start_stops_the_run_with_exit_4() {
    let sb = Sandbox::new();
    let model = FakeModel::start(script(vec![]));
    let servers = [
        server("ok", &test_server(&[]), ""),
        server(
            "gone",
            &test_server(&["--exit-before-init"]),
            "      required: true\n",
        ),
    ]
    .concat();
    job(&sb, &model.base_url(), &servers, ALLOW_ALL);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let down = &events(&trace, "mcp.server.down")[0];
    assert_eq!(down["server"], "gone");
    assert_eq!(down["required"], true);
    assert!(events(&trace, "model.request").is_empty());
    let done = &events(&trace, "run.completed")[0];
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.contains("required MCP server `gone` is down"),
        "{reason}"
    );
    assert!(
        stderr(&out).contains("required MCP server `gone` is down"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_required_server_that_dies_mid_run_stops_it_before_the_next_turn() {
    let sb = Sandbox::new();
    let model = FakeModel::start(script(vec![vec![("mcp__r__crash", json!({}))]]));
    let servers = server("r", &test_server(&[]), "      required: true\n");
    job(&sb, &model.base_url(), &servers, ALLOW_ALL);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(events(&trace, "mcp.server.down")[0]["required"], true);
    // The plan turn and the crashing turn; no turn after the server died.
    assert_eq!(events(&trace, "model.request").len(), 2);
}

#[test]
fn everything_server_tools_in_a_run() {
    let Some(bin) = npm_server("everything") else {
        return;
    };
    let sb = Sandbox::new();
    let model = FakeModel::start(script(vec![vec![
        ("mcp__everything__get-sum", json!({"a": 2, "b": 3})),
        ("mcp__everything__get-sum", json!({"a": 2, "b": "three"})),
        ("mcp_list_resources", json!({"server": "everything"})),
    ]]));
    let servers = server("everything", &[bin.display().to_string()], "");
    job(
        &sb,
        &model.base_url(),
        &servers,
        "  default: deny\n  allow: [\"mcp__everything__get-*\", mcp_list_resources]",
    );
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sum = result_of(&trace, "call_0_0");
    assert_eq!(sum["ok"], true, "{sum}");
    assert!(
        sum["data"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains('5'),
        "{sum}"
    );
    let wrong = result_of(&trace, "call_0_1");
    assert_eq!(wrong["ok"], false, "{wrong}");
    let listing = result(&trace, "mcp_list_resources", 0);
    assert_eq!(listing["ok"], true, "{listing}");
    assert!(
        !listing["data"]["templates"].as_array().unwrap().is_empty(),
        "{listing}"
    );
}

#[test]
fn filesystem_server_in_a_run_and_on_a_missing_folder() {
    let Some(bin) = npm_server("filesystem") else {
        return;
    };
    let sb = Sandbox::new();
    let dir = tempfile::tempdir().unwrap();
    let dir_path = dir.path().canonicalize().unwrap();
    std::fs::write(dir_path.join("note.txt"), "a note from the folder\n").unwrap();
    let path = dir_path.join("note.txt").display().to_string();
    let model = FakeModel::start(script(vec![vec![
        ("mcp__fs__read_text_file", json!({"path": path})),
        ("mcp__gone__read_text_file", json!({"path": path})),
    ]]));
    let missing = dir_path.join("does-not-exist").display().to_string();
    let servers = [
        server(
            "fs",
            &[bin.display().to_string(), dir_path.display().to_string()],
            "",
        ),
        server("gone", &[bin.display().to_string(), missing.clone()], ""),
    ]
    .concat();
    job(&sb, &model.base_url(), &servers, ALLOW_ALL);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let read = result(&trace, "mcp__fs__read_text_file", 0);
    assert_eq!(read["ok"], true, "{read}");
    assert!(
        read["data"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("a note from the folder")
    );
    let down = &events(&trace, "mcp.server.down")[0];
    assert_eq!(down["server"], "gone");
    assert!(!down["stderr"].as_array().unwrap().is_empty(), "{down}");
    // The server that never started has no tools in the run.
    let gone = result(&trace, "mcp__gone__read_text_file", 0);
    assert_eq!(gone["error_code"], "UNKNOWN_TOOL", "{gone}");

    // The same missing folder, required: the run stops with exit 4.
    let sb = Sandbox::new();
    let model = FakeModel::start(script(vec![]));
    let servers = server(
        "gone",
        &[bin.display().to_string(), missing],
        "      required: true\n",
    );
    job(&sb, &model.base_url(), &servers, ALLOW_ALL);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(events(&trace, "mcp.server.down")[0]["required"], true);
}

/// A server lives as long as the run, not as long as the thread that
/// started it: a call made well after start-up (the model thinks for 12 s,
/// longer than an idle worker thread lives) still reaches it.
#[test]
fn a_server_still_answers_after_the_run_has_gone_quiet_for_a_while() {
    let sb = Sandbox::new();
    let mut replies = vec![Reply::plan(&[("Add later", "added")])];
    replies.push(Reply::delay(
        std::time::Duration::from_secs(12),
        Reply::tool_calls(vec![("call_0", "mcp__t__add", json!({"a": 2, "b": 3}))]),
    ));
    replies.push(Reply::step_done("added"));
    replies.push(Reply::text("done"));
    let model = FakeModel::start(replies);
    let servers = server("t", &test_server(&[]), "");
    job(&sb, &model.base_url(), &servers, ALLOW_ALL);
    let (out, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let added = result_of(&trace, "call_0");
    assert_eq!(added["ok"], true, "{added}");
    assert!(
        !types(&trace).iter().any(|t| t == "mcp.server.down"),
        "{:?}",
        types(&trace)
    );
}
