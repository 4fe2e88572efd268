//! The MCP servers' start-up is part of the run: it counts against
//! `budget.timeout` and in the run's duration, and the trace, `trace show`
//! and the progress log give it its own phase.
//!
//! Regression: with `budget.timeout: 4s` a run whose server took seven
//! seconds to start ran for 8.8 s, reported "run passed in 1.2s", and
//! `trace show` said "setup 0.0s": the start-up was before the run's clock.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::mcp::test_server;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, stderr, stdout};
use super::support::job::{JobRun, TRACE};
use super::support::redact::redacted;
use super::support::trace_schema::assert_valid_trace;
use super::support::wait::assert_took_less;
use super::trace_view::redact;

/// A job with one stdio server `slow` that takes `init` seconds to answer
/// `initialize`, and `budget.timeout` of `timeout`.
fn job(sb: &Sandbox, base_url: &str, init: &str, timeout: &str) {
    sb.skill("user", None);
    let command = test_server(&["--slow-init", init]);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: mcp-startup\nskill: user\ngoal: Use the tools.\nmodel:\n  \
             provider: openai\n  name: fake-model\n  base_url: {base_url}\ntools: [read]\n\
             workspace: ws\nskills_path: [skills]\nallow_dirty: true\npermissions:\n  default: \
             allow\nbudget: {{timeout: {timeout}}}\nchecks:\n  - {{name: ok, run: \"true\"}}\n\
             mcp:\n  servers:\n    slow:\n      command: {:?}\n      args: [{:?}, {:?}, {:?}]\n",
            command[0], command[1], command[2], command[3]
        ),
    );
}

fn replies() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Look", "looked")]),
        Reply::step_done("looked"),
        Reply::text("done"),
    ]
}

/// `agentci run` with the plain progress log; its output, wall time and trace.
fn run(sb: &Sandbox) -> (std::process::Output, Duration, Vec<Value>) {
    let began = Instant::now();
    let out = JobRun::new(sb).progress("plain").output();
    let took = began.elapsed();
    assert_valid_trace(&sb.path().join(TRACE));
    (out, took, sb.trace(TRACE))
}

fn trace_show(sb: &Sandbox) -> String {
    let out = agentci_in(sb.path(), &["trace", "show", "out/trace.jsonl"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

/// The lines of `text` holding `needle`.
fn lines_with(text: &str, needle: &str) -> String {
    text.lines()
        .filter(|l| l.contains(needle))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The seconds written as `1.5s` right after the first `prefix` in `text`.
fn seconds_after(text: &str, prefix: &str) -> f64 {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix:?} in {text}"));
    let rest = &text[at + prefix.len()..];
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    number
        .parse()
        .unwrap_or_else(|_| panic!("no seconds after {prefix:?} in {text}"))
}

fn ms(value: &Value) -> u64 {
    value.as_u64().unwrap()
}

#[test]
fn a_timeout_shorter_than_a_servers_start_up_ends_the_run_at_its_timeout() {
    let sb = Sandbox::new();
    let model = FakeModel::start(replies());
    job(&sb, &model.base_url(), "20", "2s");
    let (out, took, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // The run ended at its timeout, not when the server was ready.
    assert_took_less(
        took,
        Duration::from_secs(12),
        "the run with a 2s start-up timeout",
    );
    assert!(events(&trace, "model.request").is_empty());

    let startup = events(&trace, "mcp.startup");
    assert_eq!(startup.len(), 1);
    assert_eq!(startup[0]["servers"][0]["outcome"], "timed_out");
    assert!(ms(&startup[0]["duration_ms"]) >= 2000, "{}", startup[0]);
    insta::assert_json_snapshot!(
        "mcp_startup_timed_out",
        redacted(
            startup[0],
            &[
                (".seq", "[seq]"),
                (".ts", "[ts]"),
                (".run_id", "[run_id]"),
                (".duration_ms", "[ms]"),
                (".servers[].duration_ms", "[ms]"),
            ],
        )
    );
    let down = &events(&trace, "mcp.server.down")[0];
    assert!(
        down["reason"]
            .as_str()
            .unwrap()
            .contains("before the run's budget.timeout of 2s ran out"),
        "{down}"
    );
    let exceeded = &events(&trace, "budget.exceeded")[0];
    assert_eq!(exceeded["limit"], "timeout");
    let done = &events(&trace, "run.completed")[0];
    assert_eq!(done["status"], "budget_exceeded");
    assert!(ms(&done["totals"]["duration_ms"]) >= 2000, "{done}");
    assert_eq!(events(&trace, "check.completed")[0]["outcome"], "skipped");

    insta::assert_snapshot!("mcp_startup_timed_out_log", redact(&stderr(&out), &sb));
    let shown = trace_show(&sb);
    insta::assert_snapshot!("mcp_startup_timed_out_trace_show", redact(&shown, &sb));
}

#[test]
fn a_servers_start_up_is_in_the_runs_time_and_its_own_phase() {
    let sb = Sandbox::new();
    let model = FakeModel::start(replies());
    job(&sb, &model.base_url(), "1.5", "60s");
    let (out, _, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let startup = &events(&trace, "mcp.startup")[0];
    assert_eq!(startup["servers"][0]["outcome"], "started");
    let servers_ms = ms(&startup["duration_ms"]);
    assert!(servers_ms >= 1500, "{startup}");
    // Right after the run's start, before anything the agent does.
    let kinds: Vec<&str> = trace.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let at = kinds.iter().position(|k| *k == "mcp.startup").unwrap();
    assert!(at < kinds.iter().position(|k| *k == "model.request").unwrap());
    assert_eq!(kinds[0], "run.started");
    let done = &events(&trace, "run.completed")[0];
    assert!(ms(&done["totals"]["duration_ms"]) >= servers_ms, "{done}");

    let log = stderr(&out);
    assert!(seconds_after(&log, "MCP start-up took ") >= 1.5, "{log}");
    assert!(seconds_after(&log, "`slow` started in ") >= 1.5, "{log}");
    // The run's time holds the start-up, not only what came after it.
    assert!(seconds_after(&log, "run passed in ") >= 1.5, "{log}");

    let shown = trace_show(&sb);
    assert!(
        seconds_after(&shown, "MCP start-up took ") >= 1.5,
        "{shown}"
    );
    let phases = lines_with(&shown, "Time per phase");
    assert!(
        phases.starts_with("Time per phase: MCP start-up "),
        "{phases}"
    );
    assert!(seconds_after(&phases, "MCP start-up ") >= 1.5, "{phases}");
}

#[test]
fn the_start_up_counts_against_the_timeout_of_the_agents_turns() {
    let sb = Sandbox::new();
    // 2 s of start-up and a 3.5 s answer do not fit in 5 s; the answer
    // alone would.
    let model = FakeModel::start(vec![Reply::delay(
        Duration::from_millis(3500),
        Reply::plan(&[("Look", "looked")]),
    )]);
    job(&sb, &model.base_url(), "2", "5s");
    let (out, _, trace) = run(&sb);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        events(&trace, "mcp.startup")[0]["servers"][0]["outcome"],
        "started"
    );
    assert_eq!(events(&trace, "budget.exceeded")[0]["limit"], "timeout");
}
