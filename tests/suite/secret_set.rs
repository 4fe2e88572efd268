//! One secret set for every process runner of a job: a value an MCP
//! server's `env:` takes from agentci's environment is masked in a run's
//! trace, and so in what `agentci mcp` prints and in what an eval case's
//! `run:` assertion prints (before, `agentci mcp` masked nothing and the
//! assertions knew only the job's own secrets).

use serde_json::{Value, json};

use super::mcp::test_server;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, stderr, stdout};
use super::support::trace_schema::assert_valid_trace;

/// The variable the server's token comes from, and its value.
const TOKEN_VAR: &str = "AGENTCI_TEST_MCP_TOKEN";
const TOKEN: &str = "tok-mcp-5f3a9c1e7d";

/// `probe:`, our test server, with `TOKEN` taken from [`TOKEN_VAR`].
fn probe_server() -> String {
    let words = test_server(&[]);
    let args: Vec<String> = words[1..].iter().map(|a| format!("{a:?}")).collect();
    format!(
        "    probe:\n      command: {:?}\n      args: [{}]\n      env: {{TOKEN: \"${{{{ env.{TOKEN_VAR} }}}}\"}}\n",
        words[0],
        args.join(", ")
    )
}

/// A job with the probe server, against the model at `base_url`.
fn job(sb: &Sandbox, base_url: &str) {
    sb.skill("user", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: secret-set\nskill: user\ngoal: Use the tools.\nmodel:\n  \
             provider: openai\n  name: fake-model\n  base_url: {base_url}\ntools: [read]\n\
             workspace: ws\nskills_path: [skills]\nallow_dirty: true\npermissions:\n  \
             default: allow\nmcp:\n  servers:\n{}",
            probe_server()
        ),
    );
    std::fs::create_dir_all(sb.path().join("ws")).unwrap();
}

#[test]
fn a_run_masks_the_servers_token_in_its_trace() {
    let sb = Sandbox::new();
    let model = FakeModel::start(vec![
        Reply::plan(&[("Read the token", "read")]),
        Reply::tool_call("mcp__probe__env", json!({"name": "TOKEN"})),
        Reply::step_done("read"),
        Reply::text("done"),
    ]);
    job(&sb, &model.base_url());
    let out = agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--progress",
            "none",
        ],
        &[(TOKEN_VAR, TOKEN)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_valid_trace(&sb.path().join("out/trace.jsonl"));
    let trace = sb.trace("out/trace.jsonl");
    let result = events(&trace, "tool.result")
        .into_iter()
        .find(|e| e["tool"] == "mcp__probe__env")
        .expect("the env tool's result");
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["data"]["content"][0]["text"], "***", "{result}");
    let text = std::fs::read_to_string(sb.path().join("out/trace.jsonl")).unwrap();
    assert!(!text.contains(TOKEN), "the token is in the trace");
}

#[test]
fn agentci_mcp_masks_the_servers_token_as_a_run_does() {
    let sb = Sandbox::new();
    job(&sb, "http://127.0.0.1:9/v1");
    let call = |json: bool| {
        let mut args = vec!["mcp", "call"];
        if json {
            args.push("--json");
        }
        args.extend(["job.yaml", "probe", "env", r#"{"name": "TOKEN"}"#]);
        agentci_in(sb.path(), &args, &[(TOKEN_VAR, TOKEN)])
    };

    let text = call(false);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    assert_eq!(stdout(&text).trim(), "***");
    assert!(!stderr(&text).contains(TOKEN), "{}", stderr(&text));

    let json = call(true);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let printed: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(printed["text"], "***", "{printed}");
    assert!(!stdout(&json).contains(TOKEN), "{}", stdout(&json));
}

#[test]
fn an_eval_assertion_masks_the_servers_token_as_a_run_does() {
    let sb = Sandbox::new();
    let model = FakeModel::start(vec![
        Reply::plan(&[("Nothing", "nothing to do")]),
        Reply::step_done("nothing to do"),
        Reply::text("Done."),
    ]);
    job(&sb, &model.base_url());
    sb.write("fixture/notes.txt", "nothing here\n");
    // The assertion prints the token (as a test script that logs its
    // configuration would) and fails, so its output is kept in the results.
    // The command puts the token together, so only its output holds it whole.
    let (head, tail) = TOKEN.split_at(8);
    sb.write(
        "suite.yaml",
        &format!(
            "version: 1\nname: secrets\njob: job.yaml\ncases:\n  - name: leaks\n    fixture: \
             fixture\n    assert:\n      - run: \"echo token is {head}$(echo {tail}); false\"\n"
        ),
    );
    let out = agentci_in(
        sb.path(),
        &[
            "eval",
            "suite.yaml",
            "--model",
            "openai:fake-model",
            "--base-url",
            &model.base_url(),
            "--out",
            "out",
            "--progress",
            "none",
        ],
        &[(TOKEN_VAR, TOKEN)],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let results = std::fs::read_to_string(sb.path().join("out/results.json")).unwrap();
    assert!(results.contains("token is ***"), "{results}");
    for entry in walk(&sb.path().join("out")) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(TOKEN),
            "the token is in {}",
            entry.display()
        );
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
