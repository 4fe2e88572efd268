//! The step outputs appended to `$GITHUB_OUTPUT`: `status`, `exit-code`,
//! `trace`, `junit`, `patch`, `cost-usd` and, with a result schema,
//! `result`, each as a `name=value` line or a delimited block.
//!
//! Only the text; appending it to the file is the sink's.

use serde_json::Value;

use super::SummaryFacts;
use crate::event::{Exit, RunCompleted, RunStatus};

/// The step outputs: `name=value` lines, or `name<<DELIM` blocks for values
/// with a line break.
pub(super) fn outputs_text(report: &SummaryFacts, delimiter: &str) -> String {
    let status = report
        .completed
        .as_ref()
        .map_or(RunStatus::Error, |done| done.status);
    let outputs = report.started.as_ref().map(|s| &s.outputs);
    let path = |key: &str| {
        outputs
            .and_then(|o| serde_json::to_value(o).ok())
            .and_then(|o| o.get(key).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default()
    };
    let cost = report
        .completed
        .as_ref()
        .and_then(|done| done.totals.cost_usd)
        .map(|c| format!("{c:.6}"))
        .unwrap_or_default();
    let mut pairs = vec![
        ("status", status.as_str().to_string()),
        (
            "exit-code",
            report
                .completed
                .as_ref()
                .map_or(Exit::of_run(status, None).code(), RunCompleted::exit_code)
                .to_string(),
        ),
        ("trace", path("trace")),
        ("junit", path("junit")),
        // The patch path, once the run writes one (`outputs.patch`).
        ("patch", path("patch")),
        ("cost-usd", cost),
    ];
    // Only a run with a result schema has this output.
    if let Some(result) = result_output(report) {
        pairs.push(("result", result));
    }
    pairs
        .iter()
        .map(|(name, value)| output_line(name, value, delimiter))
        .collect()
}

/// The structured result as compact JSON (one line: JSON escapes line
/// breaks in strings).
fn result_output(report: &SummaryFacts) -> Option<String> {
    report
        .completed
        .as_ref()
        .and_then(|done| done.result.as_ref())
        .map(|result| result.to_string())
}

/// `name=value`, or a `name<<DELIM` block when the value has a line break.
pub fn output_line(name: &str, value: &str, delimiter: &str) -> String {
    if value.contains('\n') || value.contains('\r') {
        format!("{name}<<{delimiter}\n{value}\n{delimiter}\n")
    } else {
        format!("{name}={value}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiline_outputs_use_a_delimiter() {
        let report = SummaryFacts {
            completed: Some(RunCompleted {
                status: RunStatus::Failed,
                reason: String::new(),
                summary: None,
                totals: Default::default(),
                checks_passed: 0,
                checks_failed: 1,
                result: None,
                signal: None,
            }),
            ..SummaryFacts::default()
        };
        let text = outputs_text(&report, "EOF_X");
        assert!(text.starts_with("status=failed\nexit-code=1\n"), "{text}");
        assert!(text.contains("cost-usd=\n"), "{text}");
        assert_eq!(output_line("a", "x\ny", "EOF_X"), "a<<EOF_X\nx\ny\nEOF_X\n");
    }
}
