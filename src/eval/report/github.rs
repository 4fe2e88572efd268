//! What `agentci eval` leaves for GitHub Actions: an `::error` annotation
//! per failed, errored or regressed case (and per suite below its gate or
//! regressed), a `::warning` per possible regression (a drop that is not
//! significant), and the step outputs `pass-rate`, `regressions` and
//! `results`. The step summary is the eval's Markdown, written by the CLI.
//! Formatting only: the verdicts are the results'.

use std::path::Path;

use crate::eval::results::{CaseStatus, Results};
use crate::sink::{annotation, output_line};

/// The workflow commands to print on stdout, one a line.
pub fn eval_annotations(results: &Results) -> Vec<String> {
    let mut lines = Vec::new();
    for suite in &results.suites {
        for case in &suite.cases {
            if case.status == CaseStatus::Passed {
                continue;
            }
            let subject = match &case.model {
                Some(model) => format!("{}/{} [{model}]", suite.name, case.name),
                None => format!("{}/{}", suite.name, case.name),
            };
            let reason = case
                .attempts
                .iter()
                .find(|a| a.outcome.as_str() == case.status.as_str())
                .map_or_else(String::new, |a| {
                    format!(": attempt {}: {}", a.attempt, a.reason)
                });
            let message = format!(
                "{subject} {}: {}/{} attempts passed, {} errored{reason}",
                case.status.as_str(),
                case.attempts_passed,
                case.attempts_passed + case.attempts_failed,
                case.attempts_errored,
            );
            let title = format!("agentci eval: {subject} {}", case.status.as_str());
            lines.push(annotation("error", "", 0, Some(&title), &message));
        }
        if !suite.gate_passed {
            let message = format!(
                "{}: {}/{} cases passed ({:.0}%), below the gate of {:.0}%",
                suite.name,
                suite.cases_passed,
                suite.cases_total,
                suite.pass_rate * 100.0,
                suite.min_pass_rate * 100.0
            );
            let title = format!("agentci eval: {} below its gate", suite.name);
            lines.push(annotation("error", "", 0, Some(&title), &message));
        }
    }
    for r in &results.regressions {
        let title = format!("agentci eval: regression in {}", r.subject());
        let message = format!("{} (before {}, after {})", r.message, r.before, r.after);
        lines.push(annotation("error", "", 0, Some(&title), &message));
    }
    // A drop that is not significant is worth a look, not a red build.
    for r in &results.possible_regressions {
        let title = format!("agentci eval: possible regression in {}", r.subject());
        let message = format!(
            "{} (before {}, after {}); the job does not fail on it",
            r.message, r.before, r.after
        );
        lines.push(annotation("warning", "", 0, Some(&title), &message));
    }
    lines
}

/// `pass-rate` (passed cases over all, 0 to 1), `regressions` (how many)
/// and `results` (the path of `results.json`), as `$GITHUB_OUTPUT` lines.
pub fn eval_outputs(results: &Results, results_json: &Path, delimiter: &str) -> String {
    [
        ("pass-rate", format!("{:.4}", results.pass_rate())),
        ("regressions", results.regressions.len().to_string()),
        ("results", results_json.display().to_string()),
    ]
    .iter()
    .map(|(name, value)| output_line(name, value, delimiter))
    .collect()
}
