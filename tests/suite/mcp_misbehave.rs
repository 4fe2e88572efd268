//! `agentci mcp list/call` against tests/mcp-servers/test_server.py, a
//! strict stdio server that misbehaves on request: paginated and changing
//! tool lists, calls that hang, crash or print stray lines, requests sent
//! back to the client. Each failure must affect only that server, exit 4,
//! and say why with the server's stderr.

use std::time::{Duration, Instant};

use super::mcp::{json, mcp, test_server};
use super::support::harness::{Sandbox, stderr, stdout};

#[test]
fn tool_pages_are_followed_and_a_changed_list_is_listed_again() {
    let sandbox = Sandbox::new();
    let server = test_server(&["--page-size", "3", "--extra-tools", "4", "--list-changed"]);
    let out = mcp(sandbox.path(), &["list", "--json"], &server);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = json(&out);
    let up = &listed["servers"][0];
    let names: Vec<&str> = up["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // 8 tools + 4 extra over pages of 3, then `late` after list_changed.
    assert_eq!(names.len(), 13, "{names:?}");
    assert_eq!(names.last(), Some(&"late"));
    assert_eq!(up["tools_refreshed"], true);
}

#[test]
fn the_listing_people_read() {
    let sandbox = Sandbox::new();
    let out = mcp(sandbox.path(), &["list"], &test_server(&["--list-changed"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    insta::assert_snapshot!(stdout(&out));
}

#[test]
fn a_call_past_its_timeout_marks_the_server_down_quickly() {
    let sandbox = Sandbox::new();
    let started = Instant::now();
    let out = mcp(
        sandbox.path(),
        &["call", "--timeout", "1s", "sleep", r#"{"seconds": 30}"#],
        &test_server(&[]),
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the hang was not cut off"
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("did not answer a call of `sleep` within its timeout of 1s"),
        "{err}"
    );
    assert!(err.contains("| test server: ready"), "{err}");
}

#[test]
fn a_server_that_exits_mid_call_is_down_with_its_exit_code_and_stderr() {
    let sandbox = Sandbox::new();
    let out = mcp(
        sandbox.path(),
        &["call", "--json", "crash"],
        &test_server(&[]),
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let result = json(&out);
    assert_eq!(result["status"], "server_down");
    assert!(
        result["down"]["reason"]
            .as_str()
            .unwrap()
            .contains("exited with code 7")
    );
    assert_eq!(
        result["down"]["stderr"][1],
        "test server: crashing on purpose"
    );
    assert!(
        stderr(&out).is_empty(),
        "server stderr never reaches ours with --json"
    );
}

#[test]
fn a_stray_stdout_line_cuts_the_server_off() {
    let sandbox = Sandbox::new();
    let out = mcp(sandbox.path(), &["call", "stray"], &test_server(&[]));
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("wrote a line that is not JSON-RPC to stdout"),
        "{err}"
    );
    assert!(err.contains("`this is not JSON-RPC`"), "{err}");

    // Before `initialize` is answered, too.
    let early = mcp(
        sandbox.path(),
        &["list"],
        &test_server(&["--stray-at-start"]),
    );
    assert_eq!(early.status.code(), Some(4), "{}", stderr(&early));
    assert!(stderr(&early).contains("`starting up...`"));
}

#[test]
fn a_server_that_exits_before_initializing_is_unreachable() {
    let sandbox = Sandbox::new();
    let out = mcp(
        sandbox.path(),
        &["list"],
        &test_server(&["--exit-before-init"]),
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("exited with code 3 before it was initialized"),
        "{err}"
    );
    assert!(err.contains("| test server: refusing to start"), "{err}");
}

#[test]
fn a_missing_command_is_unreachable_not_a_panic() {
    let sandbox = Sandbox::new();
    let out = mcp(
        sandbox.path(),
        &["list"],
        &["no-such-mcp-server-xyz".to_string()],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("command not found"));
}

#[test]
fn error_results_and_rpc_errors_are_tool_errors() {
    let sandbox = Sandbox::new();
    let failed = mcp(
        sandbox.path(),
        &["call", "--json", "fail"],
        &test_server(&[]),
    );
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    assert_eq!(json(&failed)["text"], "the tool failed on purpose");

    let unknown = mcp(
        sandbox.path(),
        &["call", "--json", "nope"],
        &test_server(&[]),
    );
    assert_eq!(unknown.status.code(), Some(1), "{}", stderr(&unknown));
    assert_eq!(
        json(&unknown)["text"],
        "MCP error -32602: Unknown tool: nope"
    );

    let added = mcp(
        sandbox.path(),
        &["call", "--json", "add", r#"{"a": 1, "b": 2}"#],
        &test_server(&[]),
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    assert_eq!(json(&added)["structured_content"]["sum"], 3);
}

#[test]
fn bad_json_arguments_are_bad_input() {
    let sandbox = Sandbox::new();
    for bad in ["{not json", "[1, 2]"] {
        let out = mcp(sandbox.path(), &["call", "add", bad], &test_server(&[]));
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
    }
}

#[test]
fn requests_from_the_server_are_answered_or_declined_and_recorded() {
    let sandbox = Sandbox::new();
    let cases = [
        ("ping", "answered"),
        ("roots/list", "declined"),
        ("sampling/createMessage", "declined"),
        ("elicitation/create", "declined"),
        // Not a method agentci knows: refused, and still recorded.
        ("tasks/list", "declined"),
    ];
    for (method, outcome) in cases {
        let args = format!(r#"{{"method": "{method}"}}"#);
        let out = mcp(
            sandbox.path(),
            &["call", "--json", "ask", &args],
            &test_server(&[]),
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let result = json(&out);
        assert_eq!(result["requests"][0]["method"], method);
        assert_eq!(result["requests"][0]["outcome"], outcome);
        if outcome == "declined" {
            assert!(
                result["text"]
                    .as_str()
                    .unwrap()
                    .contains("agentci declines"),
                "{result}"
            );
        }
    }
}

#[test]
fn a_job_server_gets_roots_env_and_a_scrubbed_environment() {
    let sandbox = Sandbox::new();
    sandbox.skill("s", None);
    let server = test_server(&[]);
    let job = sandbox.write(
        "job.yaml",
        &format!(
            "name: j\nskill: s\nskills_path: [skills]\ngoal: g\nworkspace: ws\nmodel: {{name: m}}\n\
             mcp:\n  servers:\n    test:\n      command: {}\n      args: [\"{}\"]\n      roots: true\n      \
             env:\n        GREETING: \"hello ${{{{ env.MCP_TEST_NAME }}}}\"\n",
            server[0], server[1]
        ),
    );
    let job = job.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["mcp", "call", "--json", job, "test"];
        all.extend_from_slice(args);
        super::support::harness::agentci_in(
            sandbox.path(),
            &all,
            &[
                ("MCP_TEST_NAME", "world"),
                ("AGENTCI_TEST_SECRET", "s3cret"),
            ],
        )
    };
    // The reference was resolved (the template's text is not masked) and
    // its value is one of the run's secrets, masked as a run masks it.
    let greeting = run(&["env", r#"{"name": "GREETING"}"#]);
    assert_eq!(
        json(&greeting)["text"],
        "hello ***",
        "{}",
        stderr(&greeting)
    );
    let secret = run(&["env", r#"{"name": "AGENTCI_TEST_SECRET"}"#]);
    assert_eq!(
        json(&secret)["text"],
        "<unset>",
        "agentci's environment stays out"
    );

    let roots = run(&["ask", r#"{"method": "roots/list"}"#]);
    let result = json(&roots);
    assert_eq!(result["requests"][0]["outcome"], "answered");
    let workspace = sandbox.workspace().canonicalize().unwrap();
    let uri = format!("file://{}/", workspace.display());
    assert!(result["text"].as_str().unwrap().contains(&uri), "{result}");
}

#[test]
fn a_call_result_as_scripts_read_it() {
    let sandbox = Sandbox::new();
    let out = mcp(
        sandbox.path(),
        &["call", "--json", "image"],
        &test_server(&[]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    insta::assert_json_snapshot!(json(&out));
}
