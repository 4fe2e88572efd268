//! Every documented exit code (docs/commands.md, "Exit codes"), reached by driving the
//! real binary: `run` 0 to 4, `mcp call` 0, 1, 2 and 4, `validate`,
//! `trace show` and `eval` 0 and 2, clap's usage errors. The codes all come
//! from one mapping in src/cli/exit.rs; these tests hold it to the documentation.
//! SIGINT and SIGTERM (130, 143) are driven in signals.rs and
//! eval_signals.rs, which need a run to interrupt.

use std::process::Output;

use serde_json::json;

use super::mcp::{mcp, test_server};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, stderr};

/// A workspace with a typo, a skill and a job made from flags, then `extra`.
fn run(base_url: &str, extra: &[&str]) -> (Sandbox, Output) {
    run_with(base_url, "fixer", "ws", extra)
}

/// [`run`] with the skill and the workspace named.
fn run_with(base_url: &str, skill: &str, workspace: &str, extra: &[&str]) -> (Sandbox, Output) {
    let sb = Sandbox::new();
    sb.write("ws/greeting.txt", "hello wrold\n");
    sb.skill("fixer", None);
    let mut args = vec![
        "run",
        "--goal",
        "Fix the typo in greeting.txt.",
        "--skill",
        skill,
        "--skills-path",
        "skills",
        "--model",
        "openai:fake-model",
        "--base-url",
        base_url,
        "--workspace",
        workspace,
        "--tools",
        "read,edit",
        "--allow",
        "read",
        "--allow",
        "edit(*.txt)",
        "--progress",
        "plain",
    ];
    args.extend_from_slice(extra);
    let out = sb.agentci(&args);
    (sb, out)
}

/// A model that fixes the typo in one step.
fn fixing_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Fix the typo", "greeting.txt says hello world")]),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        )]),
        Reply::step_done("fixed the typo"),
        Reply::text("Fixed the typo."),
    ]
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn run_exits_0_when_the_checks_pass() {
    let model = FakeModel::start(fixing_script());
    let check = "grep -q 'hello world' greeting.txt";
    let (_sb, out) = run(&model.base_url(), &["--check", check]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
}

#[test]
fn run_exits_1_when_a_check_fails() {
    let model = FakeModel::start(fixing_script());
    let (_sb, out) = run(&model.base_url(), &["--check", "false"]);
    assert_eq!(code(&out), Some(1), "{}", stderr(&out));
}

#[test]
fn run_exits_2_for_a_skill_that_does_not_exist_and_says_where_it_looked() {
    let (_sb, out) = run_with("http://127.0.0.1:9/v1", "no-such-skill", "ws", &[]);
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("--skill: error: skill `no-such-skill` not found; looked for "),
        "{err}"
    );
}

#[test]
fn run_exits_2_for_a_job_file_with_an_unknown_key_placed_at_its_line() {
    let sb = Sandbox::new();
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        "name: j\nskill: fixer\nskills_path: [skills]\ngoal: g\nworkspace: ws\nbogus: 1\n",
    );
    let out = sb.agentci(&["run", "job.yaml", "--progress", "none"]);
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("job.yaml:6:1: error: unknown key `bogus`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn run_exits_2_for_a_workspace_that_does_not_exist() {
    let (_sb, out) = run_with("http://127.0.0.1:9/v1", "fixer", "missing", &[]);
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.starts_with("--workspace: error: "), "{err}");
    assert!(err.contains("missing is not a directory"), "{err}");
}

#[test]
fn run_exits_3_when_the_budget_runs_out() {
    let model = FakeModel::start(fixing_script());
    let (_sb, out) = run(&model.base_url(), &["--max-turns", "1", "--check", "true"]);
    assert_eq!(code(&out), Some(3), "{}", stderr(&out));
}

#[test]
fn run_exits_4_when_the_provider_refuses_the_key() {
    // A 401 is not retried: the key will not get better.
    let model = FakeModel::start(vec![Reply::status(401, "Incorrect API key provided")]);
    let (_sb, out) = run(&model.base_url(), &["--check", "true"]);
    assert_eq!(code(&out), Some(4), "{}", stderr(&out));
}

#[test]
fn mcp_call_exits_0_1_2_and_4() {
    let sb = Sandbox::new();
    let server = test_server(&[]);
    let ok = mcp(sb.path(), &["call", "add", r#"{"a": 1, "b": 2}"#], &server);
    assert_eq!(code(&ok), Some(0), "{}", stderr(&ok));
    let tool_error = mcp(sb.path(), &["call", "fail"], &server);
    assert_eq!(code(&tool_error), Some(1), "{}", stderr(&tool_error));
    let bad_json = mcp(sb.path(), &["call", "add", "{nope"], &server);
    assert_eq!(code(&bad_json), Some(2), "{}", stderr(&bad_json));
    assert!(
        stderr(&bad_json).starts_with("error: the arguments are not valid JSON: "),
        "{}",
        stderr(&bad_json)
    );
    let missing = ["/nonexistent/agentci-no-such-server".to_string()];
    let down = mcp(sb.path(), &["call", "add"], &missing);
    assert_eq!(code(&down), Some(4), "{}", stderr(&down));
}

#[test]
fn validate_exits_0_for_a_valid_job_and_2_for_a_broken_one() {
    let sb = Sandbox::new();
    sb.skill("fixer", None);
    sb.write(
        "good.yaml",
        "name: j\nskill: fixer\nskills_path: [skills]\ngoal: g\nworkspace: ws\n\
         model: {provider: openai, name: m}\n",
    );
    sb.write("bad.yaml", "name: j\nskill: fixer\nbogus: 1\n");
    let good = sb.agentci(&["validate", "good.yaml"]);
    assert_eq!(code(&good), Some(0), "{}", stderr(&good));
    let bad = sb.agentci(&["validate", "bad.yaml"]);
    assert_eq!(code(&bad), Some(2), "{}", stderr(&bad));
}

#[test]
fn trace_show_exits_0_for_a_trace_and_2_for_a_missing_or_damaged_one() {
    let model = FakeModel::start(fixing_script());
    let (sb, out) = run(
        &model.base_url(),
        &["--check", "true", "--trace", "out/trace.jsonl"],
    );
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    let shown = sb.agentci(&["trace", "show", "out/trace.jsonl"]);
    assert_eq!(code(&shown), Some(0), "{}", stderr(&shown));

    let missing = sb.agentci(&["trace", "show", "out/none.jsonl"]);
    assert_eq!(code(&missing), Some(2), "{}", stderr(&missing));
    assert!(
        stderr(&missing).starts_with("error: "),
        "{}",
        stderr(&missing)
    );

    let mut lines: Vec<String> = sb
        .read("out/trace.jsonl")
        .lines()
        .map(String::from)
        .collect();
    lines.insert(1, "{not json".to_string());
    sb.write("out/damaged.jsonl", &(lines.join("\n") + "\n"));
    let damaged = sb.agentci(&["trace", "show", "out/damaged.jsonl"]);
    assert_eq!(code(&damaged), Some(2), "{}", stderr(&damaged));
    assert!(
        stderr(&damaged).contains("error: trace line 2: "),
        "{}",
        stderr(&damaged)
    );
}

#[test]
fn eval_exits_2_for_bad_flags() {
    let sb = Sandbox::new();
    let out = sb.agentci(&["eval", "suite.yaml", "--repeat", "0"]);
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("error: --repeat: must be at least 1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let sb = Sandbox::new();
    let unknown = sb.agentci(&["run", "--no-such-flag"]);
    assert_eq!(code(&unknown), Some(2), "{}", stderr(&unknown));
    let help = sb.agentci(&["--help"]);
    assert_eq!(code(&help), Some(0), "{}", stderr(&help));
}
