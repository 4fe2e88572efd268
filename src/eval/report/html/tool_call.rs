//! A tool call in the transcript: one collapsible block with the call's
//! arguments, how it was decided, its result and its output. The output is
//! what the model was sent back (a `tool` message of the next
//! `model.request`), which the event bus masked like every event: the
//! `tool.result` event itself only carries a summary and metadata. A call
//! whose output the model never saw (the run stopped first) shows the
//! metadata instead.

use std::collections::HashMap;
use std::fmt::Write;

use html_escape::encode_text as text;
use serde_json::Value;

use super::shown;

/// What the trace says about the calls, by call id.
#[derive(Default)]
pub struct Calls<'a> {
    results: HashMap<&'a str, &'a Value>,
    denials: HashMap<&'a str, &'a Value>,
    outputs: HashMap<&'a str, &'a str>,
}

impl<'a> Calls<'a> {
    pub fn new(events: &'a [Value]) -> Calls<'a> {
        let mut calls = Calls::default();
        for event in events {
            let id = event.get("call_id").and_then(Value::as_str).unwrap_or("");
            match event.get("type").and_then(Value::as_str).unwrap_or("") {
                "tool.result" => {
                    calls.results.insert(id, event);
                }
                "permission.decision"
                    if event.get("decision").and_then(Value::as_str) == Some("deny") =>
                {
                    calls.denials.insert(id, event);
                }
                "model.request" => calls.outputs_of(event),
                _ => {}
            }
        }
        calls
    }

    /// The `tool` messages a request added: what each call gave the model.
    fn outputs_of(&mut self, request: &'a Value) {
        let added = request
            .pointer("/sent/messages_added")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for message in added {
            if message.get("role").and_then(Value::as_str) != Some("tool") {
                continue;
            }
            if let (Some(id), Some(content)) = (
                message.get("tool_call_id").and_then(Value::as_str),
                message.get("content").and_then(Value::as_str),
            ) {
                self.outputs.entry(id).or_insert(content);
            }
        }
    }

    /// The block for the `tool.call` event `call`.
    pub fn html(&self, call: &Value, out: &mut String) {
        let s = |key: &str| call.get(key).and_then(Value::as_str).unwrap_or("");
        let id = s("call_id");
        let tool = s("tool");
        let arguments = call.get("arguments").cloned().unwrap_or(Value::Null);
        let result = self.results.get(id);
        let ok = result.and_then(|r| r.get("ok")).and_then(Value::as_bool);
        let (class, word) = match (self.denials.contains_key(id), ok) {
            (true, _) => ("bad", "denied"),
            (false, Some(true)) => ("ok", "ok"),
            (false, Some(false)) => ("bad", "error"),
            (false, None) => ("err", "no result"),
        };
        let summary = result
            .and_then(|r| r.get("summary"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let _ = write!(
            out,
            r#"<details class="ev tool {class}"><summary><span class="badge {class}">{word}</span> <b>Tool call</b> <code>{}</code> <span class="args">{}</span> <span class="dim">{}</span></summary>"#,
            text(tool),
            text(&shown::line(&headline(tool, &arguments), 120)),
            text(&shown::line(summary, 160)),
        );
        let pretty = serde_json::to_string_pretty(&arguments).unwrap_or_default();
        let _ = write!(
            out,
            "<p class=\"label\">Arguments</p>{}",
            shown::pre(&pretty, "args")
        );
        if let Some(denial) = self.denials.get(id) {
            let _ = write!(
                out,
                r#"<p class="label bad-text">Denied by {}</p>"#,
                text(
                    denial
                        .get("rule")
                        .and_then(Value::as_str)
                        .unwrap_or("a rule")
                )
            );
        }
        match (self.outputs.get(id), result) {
            (Some(output), _) => {
                let _ = write!(
                    out,
                    "<p class=\"label\">Output</p>{}",
                    shown::pre(output, "output")
                );
            }
            (None, Some(result)) => {
                let data = match result.get("data") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(d)) => d.clone(),
                    Some(d) => serde_json::to_string_pretty(d).unwrap_or_default(),
                };
                let _ = write!(
                    out,
                    "<p class=\"label\">Result (the model never saw its output)</p>{}",
                    shown::pre(&data, "output")
                );
            }
            (None, None) => out.push_str(r#"<p class="missing">No result in the trace.</p>"#),
        }
        out.push_str("</details>");
    }
}

/// What a call is about, on one line: the command, the path or pattern, or
/// the arguments as JSON.
fn headline(tool: &str, arguments: &Value) -> String {
    let key = match tool {
        "exec" => "command",
        "grep" | "find" => "pattern",
        "web_fetch" => "url",
        "task" => "prompt",
        _ => "path",
    };
    match arguments.get(key).and_then(Value::as_str) {
        Some(value) => value.to_string(),
        None if arguments.as_object().is_some_and(serde_json::Map::is_empty) => String::new(),
        None => arguments.to_string(),
    }
}
