//! One attempt's transcript as HTML, built from its JSONL trace: the goal,
//! the plan with how each step ended, each step with the model's text, its
//! tool calls (arguments, decision, masked output; see [`super::tool_call`]),
//! the checks with their output, and the final answer. Every piece of trace
//! text is escaped here: it comes from the model and the tools, and may well
//! be hostile. A trace that is missing or cut short shows what could be read
//! and says so.

use std::fmt::Write;
use std::path::Path;

use html_escape::encode_text as text;
use serde_json::Value;

use super::shown;
use super::tool_call::Calls;

pub fn render(trace: &Path) -> String {
    let content = match std::fs::read_to_string(trace) {
        Ok(content) => content,
        Err(e) => {
            return format!(
                r#"<p class="missing">No transcript: cannot read the trace {}: {}</p>"#,
                text(&trace.display().to_string()),
                text(&e.to_string())
            );
        }
    };
    let mut events = Vec::new();
    let mut unreadable = 0;
    for line in content.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(event) => events.push(event),
            Err(_) => unreadable += 1,
        }
    }
    let calls = Calls::new(&events);
    let mut out = super::plan::html(&events);
    for event in &events {
        event_html(event, &calls, &mut out);
    }
    if unreadable > 0 {
        let _ = write!(
            out,
            r#"<p class="missing">{unreadable} line(s) of the trace could not be read (cut short?).</p>"#
        );
    }
    out
}

fn event_html(event: &Value, calls: &Calls<'_>, out: &mut String) {
    let s = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("");
    match s("type") {
        "run.started" => {
            let _ = write!(
                out,
                r#"<div class="ev goal"><b>Goal</b>{}</div>"#,
                shown::pre(s("goal"), "")
            );
        }
        "plan.updated" | "step.started" | "step.completed" => step_html(event, out),
        "model.response" => {
            // Thinking is long and secondary to what the model did: folded.
            if let Some(thought) = event.get("reasoning").and_then(Value::as_str) {
                let tokens = event
                    .pointer("/usage/reasoning_tokens")
                    .and_then(Value::as_u64)
                    .map_or_else(String::new, |n| format!(" ({n} tokens)"));
                let _ = write!(
                    out,
                    r#"<details class="ev thought"><summary>Thinking{tokens}</summary>{}</details>"#,
                    shown::pre(thought, "")
                );
            }
            if let Some(said) = event.get("text").and_then(Value::as_str)
                && !said.trim().is_empty()
            {
                let _ = write!(
                    out,
                    r#"<div class="ev model"><b>Model</b>{}</div>"#,
                    shown::pre(said, "")
                );
            }
        }
        "tool.call" => calls.html(event, out),
        "check.completed" => {
            let outcome = s("outcome");
            let _ = write!(
                out,
                r#"<div class="ev check {}"><b>Check {}</b> {} <code>{}</code>{}</div>"#,
                if outcome == "passed" { "ok" } else { "bad" },
                text(s("name")),
                text(outcome),
                text(s("command")),
                shown::pre(s("output"), "output")
            );
        }
        "budget.exceeded" => {
            let _ = write!(
                out,
                r#"<div class="ev bad"><b>Budget exceeded</b> {}</div>"#,
                text(&event.get("limit").map(Value::to_string).unwrap_or_default())
            );
        }
        "warning" => {
            let _ = write!(
                out,
                r#"<div class="ev warn"><b>Warning</b> {}</div>"#,
                text(s("message"))
            );
        }
        "run.completed" => {
            let _ = write!(
                out,
                r#"<div class="ev final"><b>Run {}</b> {}"#,
                text(s("status")),
                text(s("reason"))
            );
            if let Some(summary) = event.get("summary").and_then(Value::as_str) {
                let _ = write!(
                    out,
                    r#"<div class="answer"><b>Final answer</b>{}</div>"#,
                    shown::pre(summary, "")
                );
            }
            out.push_str("</div>");
        }
        _ => {}
    }
}

/// A plan update (the whole plan after it), and each step's start and end.
fn step_html(event: &Value, out: &mut String) {
    let s = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("");
    let number = event.get("index").and_then(Value::as_u64).unwrap_or(0) + 1;
    match s("type") {
        "plan.updated" => {
            out.push_str(r#"<div class="ev plan"><b>Plan updated</b><ol>"#);
            for step in event
                .get("steps")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let f = |k: &str| step.get(k).and_then(Value::as_str).unwrap_or("");
                let _ = write!(
                    out,
                    "<li>{} <span class=\"dim\">— expect: {}</span></li>",
                    text(f("title")),
                    text(f("expected_outcome"))
                );
            }
            out.push_str("</ol></div>");
        }
        "step.started" => {
            let _ = write!(
                out,
                r#"<div class="ev step"><b>Step {number}</b> {}</div>"#,
                text(s("title"))
            );
        }
        "step.completed" => {
            let status = event
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("done");
            let _ = write!(
                out,
                r#"<div class="ev step-done {}"><b>Step {number} {}</b> {}</div>"#,
                if status == "done" { "ok" } else { "bad" },
                text(status),
                text(s("summary"))
            );
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Hostile text from the run (a tool's output, the model's answer) must
    // stay text: it may close the block it sits in or carry a script.
    #[test]
    fn hostile_tool_output_and_answers_are_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace.jsonl");
        let hostile = "</pre></details><script>alert(1)</script>";
        let lines = [
            serde_json::json!({"type": "tool.call", "call_id": "c1", "tool": "exec", "arguments": {"command": hostile}}),
            serde_json::json!({"type": "tool.result", "call_id": "c1", "tool": "exec", "ok": true, "summary": hostile, "data": {"exit_code": 0}}),
            serde_json::json!({"type": "model.request", "sent": {"kept": 0, "messages_dropped": 0, "messages_added": [{"role": "tool", "tool_call_id": "c1", "content": hostile}]}}),
            serde_json::json!({"type": "model.response", "reasoning": hostile, "usage": {"reasoning_tokens": 12}}),
            serde_json::json!({"type": "run.completed", "status": "passed", "reason": hostile, "summary": hostile}),
        ];
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(&trace, text.join("\n")).unwrap();
        let html = render(&trace);
        assert!(!html.contains("<script>"), "{html}");
        assert!(!html.contains("</pre></details><script"), "{html}");
        assert_eq!(
            html.matches("<details").count(),
            html.matches("</details>").count()
        );
        assert!(
            html.contains("&lt;/pre&gt;&lt;/details&gt;&lt;script&gt;"),
            "{html}"
        );
        assert!(
            html.contains(r#"<p class="label">Output</p><pre class="output">&lt;/pre&gt;"#),
            "{html}"
        );
        // The model's thinking shows folded, with its token count.
        assert!(
            html.contains(r#"<details class="ev thought"><summary>Thinking (12 tokens)</summary><pre>&lt;/pre&gt;"#),
            "{html}"
        );
    }
}
