//! A run rebuilt from its trace alone: applying the `sent` deltas of
//! `model.request` (and of `context.trimmed`, for the retried request)
//! gives exactly the messages and tools the fake model server received, on
//! every request, retries and a trimmed conversation included. And the
//! delta stays a delta: no request repeats the system prompt.

use serde_json::{Value, json};

use agentci::event::{Event, EventKind};
use agentci::provider::{Message, ToolDefinition};
use agentci::trace_view::{Rebuilt, rebuild};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, stderr};
use super::support::trace_schema::assert_valid_trace;

/// `messages` as the OpenAI chat API carries them. Consecutive system
/// messages go out joined by a blank line, as the provider sends them
/// (src/provider/openai.rs `merged_system`); this test's conversation has
/// no empty assistant answer, the one other place the wire form differs.
fn on_the_wire(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for message in messages {
        let wire = match message {
            Message::System { content } => {
                if let Some(last) = out.last_mut().filter(|m| m["role"] == "system") {
                    let joined = format!("{}\n\n{content}", last["content"].as_str().unwrap());
                    last["content"] = json!(joined);
                    continue;
                }
                json!({"role": "system", "content": content})
            }
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let mut wire = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    wire["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function",
                                   "function": {"name": c.name, "arguments": c.arguments}})
                        })
                        .collect();
                }
                wire
            }
            Message::Tool {
                tool_call_id,
                content,
            } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
        };
        out.push(wire);
    }
    out
}

/// The parts of a received message the conversation is made of.
fn received(message: &Value) -> Value {
    let mut kept = json!({"role": message["role"], "content": message["content"]});
    for key in ["tool_calls", "tool_call_id"] {
        if let Some(value) = message.get(key) {
            kept[key] = value.clone();
        }
    }
    kept
}

fn tool_names_and_schemas(tools: &[ToolDefinition]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect()
}

#[test]
fn the_messages_the_model_received_are_rebuilt_from_the_trace_alone() {
    let long_output = "x".repeat(9_000);
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![("call_ls", "ls", json!({}))]),
        Reply::plan(&[("Read", "read"), ("Fix", "fixed")]),
        Reply::rate_limited("0"),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "big.txt"}))]),
        Reply::tool_calls(vec![(
            "call_read2",
            "read",
            json!({"path": "greeting.txt"}),
        )]),
        // The conversation no longer fits: it is trimmed and sent again.
        Reply::context_too_long(),
        Reply::step_done("read both"),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        )]),
        Reply::step_done("fixed"),
        Reply::text("Fixed the typo."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/greeting.txt", "hello wrold\n");
    sb.write("ws/big.txt", &format!("{long_output}\n"));
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: rebuild
skill: fixer
goal: Fix the typo in greeting.txt.
model:
  provider: openai
  name: fake-model
  base_url: {}
tools: [read, edit, ls]
workspace: ws
skills_path: [skills]
permissions:
  default: allow
checks:
  - name: fixed
    run: grep -q "hello world" greeting.txt
"#,
            model.base_url()
        ),
    );
    let out = agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "trace.jsonl",
            "--progress",
            "none",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace_path = sb.path().join("trace.jsonl");
    assert_valid_trace(&trace_path);

    // Every request the server received, in order, rebuilt from the trace.
    let events: Vec<Event> = agentci::sink::read_trace(&trace_path).unwrap();
    let mut state = Rebuilt::default();
    let mut requests: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    let mut trimmed = 0;
    for event in &events {
        let sent = match &event.kind {
            EventKind::ModelRequest(request) => request.sent.as_ref(),
            // A retry sends the same request again.
            EventKind::ModelRetry(_) => {
                let again = requests.last().unwrap().clone();
                requests.push(again);
                continue;
            }
            EventKind::ContextTrimmed(trim) => {
                trimmed += 1;
                let sent = trim.sent.as_ref().unwrap();
                assert!(sent.messages_dropped > 0, "trimming rewrote the history");
                Some(sent)
            }
            _ => continue,
        };
        let sent = sent.expect("every request records what it sent");
        rebuild(&mut state, sent).unwrap();
        requests.push((
            on_the_wire(&state.messages),
            tool_names_and_schemas(&state.offered),
        ));
    }
    assert_eq!(trimmed, 1);

    let bodies = model.requests();
    assert_eq!(
        requests.len(),
        bodies.len(),
        "one rebuilt request per request received"
    );
    for (n, ((messages, tools), body)) in requests.iter().zip(&bodies).enumerate() {
        let got: Vec<Value> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(received)
            .collect();
        assert_eq!(&got, messages, "request {} messages", n + 1);
        let got_tools: Vec<Value> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"].clone())
            .map(|f| json!({"name": f["name"], "description": f["description"], "parameters": f["parameters"]}))
            .collect();
        assert_eq!(&got_tools, tools, "request {} tools", n + 1);
    }

    // A delta, not the conversation again: the system prompt is in the
    // trace once, and the tool definitions once.
    let text = std::fs::read_to_string(&trace_path).unwrap();
    let system_prompt = bodies[0]["messages"][0]["content"].as_str().unwrap();
    let first_line = system_prompt.lines().next().unwrap();
    let escaped = serde_json::to_string(first_line).unwrap();
    assert_eq!(text.matches(escaped.trim_matches('"')).count(), 1);
    assert_eq!(text.matches("\"tools_offered\"").count(), 1);
    // run.started says what the run was given.
    let started: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(started["permissions"]["default"], "allow");
    assert_eq!(started["budget"]["max_turns"], 50);
}

#[test]
fn secrets_in_what_the_model_was_sent_are_masked_in_the_trace() {
    const SECRET: &str = "tr4ce-s3cret-91c2";
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "env.txt"}))]),
        Reply::plan(&[("Look", "looked")]),
        Reply::step_done("looked"),
        Reply::text("Done."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/env.txt", &format!("TOKEN={SECRET}\n"));
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: masked
skill: fixer
goal: Look at env.txt.
model:
  provider: openai
  name: fake-model
  base_url: {}
tools: [read]
workspace: ws
skills_path: [skills]
secrets: [MY_TOKEN]
env:
  MY_TOKEN: "${{{{ secrets.MY_TOKEN }}}}"
permissions:
  default: allow
"#,
            model.base_url()
        ),
    );
    let out = agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "trace.jsonl",
            "--progress",
            "none",
        ],
        &[("MY_TOKEN", SECRET)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = sb.read("trace.jsonl");
    assert!(!text.contains(SECRET), "the secret leaked into the trace");
    assert!(text.contains("\"messages_added\""));
    // The tool result the model received was masked before it was sent.
    let bodies = model.requests();
    assert!(!bodies[1].to_string().contains(SECRET));
}
