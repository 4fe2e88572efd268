//! The plan as it stood at the end of the run, each step with how it ended
//! (done, failed, blocked, not finished, not reached), read from the plan
//! and step events of the trace.

use std::collections::HashMap;
use std::fmt::Write;

use html_escape::encode_text as text;
use serde_json::Value;

/// The last plan of `events` with each step's status; empty when no plan
/// was made.
pub fn html(events: &[Value]) -> String {
    let mut steps: Option<&Vec<Value>> = None;
    let mut updated = false;
    let mut status: HashMap<u64, &str> = HashMap::new();
    for event in events {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            kind @ ("plan.created" | "plan.updated") => {
                steps = event.get("steps").and_then(Value::as_array).or(steps);
                updated |= kind == "plan.updated";
            }
            "step.started" => {
                status.entry(index).or_insert("not finished");
            }
            "step.completed" => {
                let ended = event
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("done");
                status.insert(index, ended);
            }
            _ => {}
        }
    }
    let Some(steps) = steps else {
        return String::new();
    };
    let mut out = format!(
        r#"<div class="ev plan"><b>Plan</b>{}<ol>"#,
        if updated {
            r#" <span class="dim">(as last updated)</span>"#
        } else {
            ""
        }
    );
    for (i, step) in steps.iter().enumerate() {
        let f = |k: &str| step.get(k).and_then(Value::as_str).unwrap_or("");
        let word = status.get(&(i as u64)).copied().unwrap_or("not reached");
        let class = match word {
            "done" => "ok",
            "failed" | "blocked" => "bad",
            _ => "none",
        };
        let _ = write!(
            out,
            r#"<li><span class="badge {class}">{}</span> {} <span class="dim">— expect: {}</span></li>"#,
            text(word),
            text(f("title")),
            text(f("expected_outcome"))
        );
    }
    out.push_str("</ol></div>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_step_shows_how_it_ended() {
        let step = |t: &str| json!({"title": t, "expected_outcome": "e"});
        let events = vec![
            json!({"type": "plan.created", "steps": [step("a"), step("b")]}),
            json!({"type": "step.started", "index": 0}),
            json!({"type": "step.completed", "index": 0, "status": "done"}),
            json!({"type": "plan.updated", "steps": [step("a"), step("c"), step("d")], "from_index": 1}),
            json!({"type": "step.started", "index": 1}),
            json!({"type": "step.completed", "index": 1, "status": "failed"}),
            json!({"type": "step.started", "index": 2}),
        ];
        let html = html(&events);
        assert!(
            html.contains(r#"<span class="badge ok">done</span> a"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<span class="badge bad">failed</span> c"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<span class="badge none">not finished</span> d"#),
            "{html}"
        );
        assert!(html.contains("(as last updated)"));
        assert!(super::html(&[]).is_empty());
    }
}
