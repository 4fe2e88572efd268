//! The Markdown summary of an evaluation: one table row per case, a line per
//! suite with its gate, and the failed assertions. Written to `summary.md`
//! and, by the CLI, to the GitHub step summary.

use std::fmt::Write;

use crate::eval::results::{CaseStatus, Outcome, Results};

pub fn summary(results: &Results) -> String {
    let mut out = String::from("## agentci eval\n\n");
    if let Some(note) = &results.interrupted {
        let _ = writeln!(out, "> ⚠️ **Interrupted**: {note}.\n");
    }
    for suite in &results.suites {
        let _ = writeln!(
            out,
            "**{}**: {}/{} cases passed ({:.0}%, gate {:.0}%: {}), {} failed, {} errored, {} flaky; \
             pass@1 {:.2}\n",
            suite.name,
            suite.cases_passed,
            suite.cases_total,
            suite.pass_rate * 100.0,
            suite.min_pass_rate * 100.0,
            if suite.gate_passed {
                "passed"
            } else {
                "FAILED"
            },
            suite.cases_failed,
            suite.cases_errored,
            suite.cases_flaky,
            suite.pass_at_1,
        );
    }
    out.push_str(
        "| suite | case | result | attempts passed | pass@1 | turns | tokens | cost | time |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for suite in &results.suites {
        for case in &suite.cases {
            let result = match (case.status, case.flaky) {
                (CaseStatus::Passed, false) => "✅ passed",
                (CaseStatus::Passed, true) => "✅ passed (flaky)",
                (CaseStatus::Failed, false) => "❌ failed",
                (CaseStatus::Failed, true) => "❌ failed (flaky)",
                (CaseStatus::Error, _) => "⚠️ error",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {}/{}{} | {:.2} | {} | {} | {} | {:.1}s |",
                suite.name,
                case.name,
                result,
                case.attempts_passed,
                case.attempts_passed + case.attempts_failed,
                if case.attempts_errored > 0 {
                    format!(" ({} errored)", case.attempts_errored)
                } else {
                    String::new()
                },
                case.pass_at_1,
                case.turns,
                case.input_tokens + case.output_tokens,
                case.cost_usd
                    .map_or_else(|| "—".to_string(), |c| format!("${c:.4}")),
                case.duration_ms as f64 / 1000.0,
            );
        }
    }
    let mut problems = String::new();
    for suite in &results.suites {
        for case in &suite.cases {
            for attempt in case
                .attempts
                .iter()
                .filter(|a| a.outcome != Outcome::Passed)
            {
                let _ = writeln!(
                    problems,
                    "- `{}/{}` attempt {}: {} — {}",
                    suite.name,
                    case.name,
                    attempt.attempt,
                    attempt.outcome.as_str(),
                    attempt.reason.replace('\n', " ")
                );
            }
        }
    }
    if !problems.is_empty() {
        out.push_str("\n### Attempts that did not pass\n\n");
        out.push_str(&problems);
    }
    out
}
