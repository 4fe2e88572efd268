//! Reasoning models behind Chat Completions servers (vLLM, SGLang,
//! llama.cpp, DeepSeek), end to end with the real binary: the server's
//! `reasoning_content` is kept with the turn it came with and sent back in
//! later requests for the model families whose chat templates read it (or
//! when the job says so), `reasoning_effort` goes out as the job set it, and
//! the reasoning shows in the trace, `trace show --full`, JUnit and the
//! step summary. Also: `model.reasoning` is checked against the provider.

use std::process::Output;

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, read_jsonl, stderr, stdout};
use super::support::job::JobBuilder;
use super::support::job::JobRun;
use super::support::trace_schema::assert_valid_trace;

const THOUGHT_PLAN: &str = "The goal is to read one file; one step will do.";
const THOUGHT_READ: &str = "I should read greeting.txt before I answer.";

fn sandbox(name: &str, base_url: &str, model_extra: &str) -> Sandbox {
    JobBuilder::reader("reasoning-check", base_url)
        .model("openai", name, base_url)
        .model_extra("  request_timeout: 5s\n")
        .model_extra(model_extra)
        .write()
}

/// Plan, read, step done, summary; the first two answers come with reasoning.
fn session() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Read the greeting", "its text is known")])
            .with_reasoning_content(THOUGHT_PLAN, 12),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))])
            .with_reasoning_content(THOUGHT_READ, 9),
        Reply::step_done("read it"),
        Reply::text("The greeting says hello world."),
    ]
}

fn run(sb: &Sandbox, extra: &[&str]) -> Output {
    let summary = sb.path().join("summary.md");
    JobRun::new(sb)
        .junit()
        .progress("plain")
        .args(extra)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())
        .output()
}

/// The `reasoning_content` of each assistant message of a request, in order.
fn sent_back(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m.get("reasoning_content").cloned().unwrap_or(Value::Null))
        .collect()
}

#[test]
fn an_open_reasoning_model_gets_its_reasoning_back_streamed_or_not() {
    for stream in [true, false] {
        let model = FakeModel::start(session());
        let sb = sandbox(
            "Qwen/Qwen3-32B",
            &model.base_url(),
            &format!("  stream: {stream}\n  reasoning: {{effort: high}}"),
        );
        let out = run(&sb, &[]);
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        let requests = model.requests();
        assert_eq!(requests.len(), 4);
        for request in &requests {
            assert_eq!(request["reasoning_effort"], "high", "{request}");
        }
        // Each later request carries the reasoning of every earlier answer
        // that had some, with the turn it came with.
        assert_eq!(sent_back(&requests[1]), vec![json!(THOUGHT_PLAN)]);
        assert_eq!(
            sent_back(&requests[3]),
            vec![json!(THOUGHT_PLAN), json!(THOUGHT_READ), Value::Null]
        );
        // The reasoning is not the answer: the final text is the model's text.
        assert!(stdout(&out).contains("hello world"), "{}", stdout(&out));

        let trace_path = sb.path().join("out/trace.jsonl");
        assert_valid_trace(&trace_path);
        let trace = read_jsonl(&trace_path);
        let responses = events(&trace, "model.response");
        assert_eq!(responses[0]["reasoning"], THOUGHT_PLAN);
        assert_eq!(responses[0]["usage"]["reasoning_tokens"], 12);
        assert_eq!(responses[1]["reasoning"], THOUGHT_READ);
        assert!(responses[2].get("reasoning").is_none());
        let done = trace.last().unwrap();
        assert_eq!(done["totals"]["reasoning_tokens"], 21);

        let junit = sb.read("out/junit.xml");
        assert!(
            junit.contains(r#"<property name="reasoning_tokens" value="21"/>"#),
            "{junit}"
        );
        let summary = sb.read("summary.md");
        assert!(summary.contains("of which 21 reasoning"), "{summary}");

        let shown = agentci_in(
            sb.path(),
            &["trace", "show", "out/trace.jsonl", "--full"],
            &[],
        );
        let text = stdout(&shown);
        assert!(text.contains(&format!("┆ {THOUGHT_READ}")), "{text}");
        assert!(text.contains("(9 reasoning)"), "{text}");
        let brief = stdout(&agentci_in(
            sb.path(),
            &["trace", "show", "out/trace.jsonl"],
            &[],
        ));
        assert!(!brief.contains(THOUGHT_READ), "{brief}");
    }
}

#[test]
fn what_is_sent_back_is_a_reviewed_contract() {
    let model = FakeModel::start(session());
    let sb = sandbox(
        "deepseek-reasoner",
        &model.base_url(),
        "  reasoning: {effort: low}",
    );
    let out = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let requests = model.requests();
    // The last request: the whole conversation as sent, system prompt aside.
    let mut last = requests[3].clone();
    last["messages"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["role"] != "system");
    last.as_object_mut().unwrap().remove("tools");
    insta::assert_json_snapshot!("reasoning_content_sent_back", last);
}

#[test]
fn other_models_get_no_reasoning_back_unless_the_job_says_so() {
    for (extra, expected) in [
        ("", Value::Null),
        ("  reasoning: {send_back: true}", json!(THOUGHT_PLAN)),
    ] {
        let model = FakeModel::start(session());
        let sb = sandbox("local-model", &model.base_url(), extra);
        let out = run(&sb, &[]);
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        let requests = model.requests();
        assert_eq!(sent_back(&requests[1]), vec![expected.clone()], "{extra}");
        // No effort asked for: none sent.
        assert!(requests[0].get("reasoning_effort").is_none());
    }
    // And the job can turn it off for a family that gets it by default.
    let model = FakeModel::start(session());
    let sb = sandbox(
        "Qwen/Qwen3-32B",
        &model.base_url(),
        "  reasoning: {send_back: false}",
    );
    assert_eq!(run(&sb, &[]).status.code(), Some(0));
    assert_eq!(sent_back(&model.requests()[1]), vec![Value::Null]);
}

#[test]
fn the_effort_flag_beats_the_job_and_a_model_without_reasoning_says_so() {
    let model = FakeModel::start(session());
    let sb = sandbox("o4-mini", &model.base_url(), "  reasoning: {effort: low}");
    let out = run(&sb, &["--reasoning-effort", "minimal"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(model.requests()[0]["reasoning_effort"], "minimal");

    // OpenAI refuses the parameter for a model that does not reason; the
    // run fails with the server's words, which name the parameter.
    let model = FakeModel::start(session());
    let sb = sandbox("gpt-4o-mini", &model.base_url(), "");
    let out = run(&sb, &["--reasoning-effort", "high"]);
    assert_ne!(out.status.code(), Some(0));
    let trace = read_jsonl(&sb.path().join("out/trace.jsonl"));
    let done = trace.last().unwrap();
    assert!(
        done["reason"]
            .as_str()
            .unwrap()
            .contains("'reasoning_effort' is not supported with this model"),
        "{done}"
    );
}

#[test]
fn a_recorded_reasoning_run_replays_offline() {
    let model = FakeModel::start(session());
    let sb = sandbox("Qwen/Qwen3-32B", &model.base_url(), "");
    let out = run(&sb, &["--record", "cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    drop(model);
    let out = run(&sb, &["--replay", "cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let trace = read_jsonl(&sb.path().join("out/trace.jsonl"));
    let responses = events(&trace, "model.response");
    assert_eq!(responses[1]["reasoning"], THOUGHT_READ);
    assert_eq!(responses[1]["usage"]["reasoning_tokens"], 9);
}

fn validate(job: &str, extra: &[&str]) -> (Option<i32>, String) {
    let sb = Sandbox::new();
    sb.skill("reader", Some("Read"));
    sb.write("ws/a.txt", "a\n");
    sb.write("job.yaml", job);
    // `validate` takes no flags; a run with `--print-job` checks the job
    // the file and flags make and runs nothing.
    let mut args = match extra.is_empty() {
        true => vec!["validate", "job.yaml"],
        false => vec!["run", "job.yaml", "--print-job"],
    };
    args.extend_from_slice(extra);
    let out = agentci_in(sb.path(), &args, &[]);
    (
        out.status.code(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

fn job(provider: &str, reasoning: &str) -> String {
    format!(
        r#"version: 1
name: r
skill: reader
skills_path: [skills]
goal: Read a.txt.
workspace: ws
model:
  provider: {provider}
  name: some-model
  reasoning:
{reasoning}
checks: [{{name: ok, run: "true"}}]
"#
    )
}

#[test]
fn reasoning_settings_are_checked_against_the_provider() {
    let (code, text) = validate(&job("openai", "    budget_tokens: 4000"), &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("job.yaml:11:20: error: provider openai does not take `reasoning.budget_tokens`; it is for anthropic, bedrock and vertex"),
        "{text}"
    );
    let (code, text) = validate(
        &job("anthropic", "    budget_tokens: 500\n    summary: auto"),
        &[],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("job.yaml:11:20: error: `budget_tokens` must be at least 1024"),
        "{text}"
    );
    assert!(
        text.contains("job.yaml:12:14: error: provider anthropic does not take `reasoning.summary`; it is for openai-responses"),
        "{text}"
    );
    let (code, text) = validate(
        &job("anthropic", "    mode: adaptive\n    budget_tokens: 2000"),
        &[],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("takes no `budget_tokens`"), "{text}");
    let (code, text) = validate(
        &job("anthropic", "    mode: adaptive"),
        &["--reasoning-effort", "minimal"],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("--reasoning-effort: error: provider anthropic takes effort `low`, `medium` or `high`, not `minimal`"),
        "{text}"
    );
    // A budget the model's output limit cannot hold, said before any request.
    let (code, text) = validate(
        &job("anthropic", "    budget_tokens: 70000").replace("some-model", "claude-sonnet-4-5"),
        &[],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("job.yaml:11:20: error: model.reasoning.budget_tokens 70000 leaves no room for the answer"),
        "{text}"
    );
    let (code, text) = validate(&job("anthropic", "    interleaved: true"), &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("`interleaved: true` needs thinking on"),
        "{text}"
    );
    let (code, text) = validate(&job("openai", "    effort: extreme"), &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains(
            "unknown `reasoning.effort` `extreme`; expected `minimal`, `low`, `medium` or `high`"
        ),
        "{text}"
    );
    // Flags are checked too, and named.
    let (code, text) = validate(
        &job("openai", "    effort: low"),
        &["--thinking-budget", "2000"],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("--thinking-budget: error: provider openai does not take --thinking-budget"),
        "{text}"
    );
    let (code, text) = validate(
        &job("anthropic", "    effort: low\n    mode: adaptive"),
        &["--thinking-budget", "100"],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("--thinking-budget: error: `100` is not a thinking budget"),
        "{text}"
    );
    // A job for one provider run with another drops what the other does not take.
    let (code, text) = validate(
        &job("anthropic", "    budget_tokens: 4000"),
        &["--model", "openai:gpt-5-mini"],
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(
            "warning: `reasoning.budget_tokens` is left out: --model chose provider openai"
        ),
        "{text}"
    );
    let (code, text) = validate(
        &job(
            "anthropic",
            "    budget_tokens: 4000\n    interleaved: true",
        ),
        &[],
    );
    assert_eq!(code, Some(0), "{text}");
}

#[test]
fn print_job_shows_the_reasoning_settings_in_the_files_words() {
    let sb = Sandbox::new();
    sb.skill("reader", Some("Read"));
    sb.write("ws/a.txt", "a\n");
    sb.write(
        "job.yaml",
        &job("anthropic", "    mode: adaptive\n    effort: high"),
    );
    let out = agentci_in(sb.path(), &["run", "job.yaml", "--print-job"], &[]);
    let text = stdout(&out);
    assert!(
        text.contains("  reasoning:\n    effort: high\n    mode: adaptive\n"),
        "{text}"
    );
}
