//! One attempt's transcript as HTML, built from its JSONL trace: the goal,
//! the plan, each step with the model's text, tool calls and their results
//! (and permission denials), the checks, and the final answer. Every piece
//! of trace text is escaped here: it comes from the model and the tools,
//! and may well be hostile. A trace that is missing or cut short shows what
//! could be read and says so.

use std::fmt::Write;
use std::path::Path;

use html_escape::encode_text as text;
use serde_json::Value;

/// Longest piece of output (a tool result, a check's output) shown whole;
/// the trace file keeps everything.
const MAX_SHOWN: usize = 8_000;

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
    let mut out = String::new();
    let mut unreadable = 0;
    for line in content.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(event) => event_html(&event, &mut out),
            Err(_) => unreadable += 1,
        }
    }
    if unreadable > 0 {
        let _ = write!(
            out,
            r#"<p class="missing">{unreadable} line(s) of the trace could not be read (cut short?).</p>"#
        );
    }
    out
}

fn event_html(event: &Value, out: &mut String) {
    let s = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("");
    match s("type") {
        "run.started" => {
            let _ = write!(
                out,
                r#"<div class="ev goal"><b>Goal</b><pre>{}</pre></div>"#,
                text(s("goal"))
            );
        }
        "plan.created" | "plan.updated" | "step.started" | "step.completed" => {
            plan_html(event, out);
        }
        "model.response" => {
            if let Some(said) = event.get("text").and_then(Value::as_str)
                && !said.trim().is_empty()
            {
                let _ = write!(
                    out,
                    r#"<div class="ev model"><b>Model</b><pre>{}</pre></div>"#,
                    text(&cut(said))
                );
            }
        }
        "tool.call" | "permission.decision" | "tool.result" => tool_html(event, out),
        "check.completed" => {
            let outcome = s("outcome");
            let _ = write!(
                out,
                r#"<div class="ev check {}"><b>Check {}</b> {} <code>{}</code><pre>{}</pre></div>"#,
                if outcome == "passed" { "ok" } else { "bad" },
                text(s("name")),
                text(outcome),
                text(s("command")),
                text(&cut(s("output")))
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
                    r#"<div class="answer"><b>Final answer</b><pre>{}</pre></div>"#,
                    text(&cut(summary))
                );
            }
            out.push_str("</div>");
        }
        _ => {}
    }
}

/// The plan as made or updated (each step with its expected outcome), and
/// each step's start and end.
fn plan_html(event: &Value, out: &mut String) {
    let s = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("");
    match s("type") {
        "plan.created" | "plan.updated" => {
            let title = if s("type") == "plan.created" {
                "Plan"
            } else {
                "Plan updated"
            };
            let _ = write!(out, r#"<div class="ev plan"><b>{title}</b><ol>"#);
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
                r#"<div class="ev step"><b>Step {}</b> {}</div>"#,
                event.get("index").and_then(Value::as_u64).unwrap_or(0) + 1,
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
                r#"<div class="ev step-done {}"><b>Step {} {}</b> {}</div>"#,
                if status == "done" { "ok" } else { "bad" },
                event.get("index").and_then(Value::as_u64).unwrap_or(0) + 1,
                text(status),
                text(s("summary"))
            );
        }
        _ => {}
    }
}

/// A tool call with its arguments, a denial, and the call's result.
fn tool_html(event: &Value, out: &mut String) {
    let s = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("");
    match s("type") {
        "tool.call" => {
            let args = event
                .get("arguments")
                .map(|a| serde_json::to_string_pretty(a).unwrap_or_default())
                .unwrap_or_default();
            let _ = write!(
                out,
                r#"<div class="ev call"><b>Tool call</b> <code>{}</code><pre>{}</pre></div>"#,
                text(s("tool")),
                text(&cut(&args))
            );
        }
        "permission.decision" if s("decision") == "deny" => {
            let _ = write!(
                out,
                r#"<div class="ev denied bad"><b>Denied</b> <code>{}</code> by {}</div>"#,
                text(s("tool")),
                text(s("rule"))
            );
        }
        "tool.result" => {
            let ok = event.get("ok").and_then(Value::as_bool).unwrap_or(false);
            let data = match event.get("data") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(d)) => d.clone(),
                Some(d) => serde_json::to_string_pretty(d).unwrap_or_default(),
            };
            let _ = write!(
                out,
                r#"<div class="ev result {}"><b>Result</b> <code>{}</code> {}<pre>{}</pre></div>"#,
                if ok { "ok" } else { "bad" },
                text(s("tool")),
                text(s("summary")),
                text(&cut(&data))
            );
        }
        _ => {}
    }
}

/// `value`, cut at [`MAX_SHOWN`] characters with a note saying so.
fn cut(value: &str) -> String {
    if value.chars().count() <= MAX_SHOWN {
        value.to_string()
    } else {
        let head: String = value.chars().take(MAX_SHOWN).collect();
        format!("{head}\n… (cut here; the trace has all of it)")
    }
}
