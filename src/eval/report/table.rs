//! The evaluation's results for a person at a terminal: the cases as a
//! table with aligned columns, then the attempts that did not pass, one
//! line each. The same figures as the Markdown summary ([`super::markdown`])
//! without its markup, which a terminal shows as raw pipes and dashes; the
//! Markdown stays for `summary.md` and the GitHub step summary. The suite
//! lines, the gate and the regressions are the CLI's own lines after it.

use std::fmt::Write;

use crate::eval::results::{CaseResult, CaseStatus, Outcome, Results};

/// The table and the attempts that did not pass, every cell one inert line.
pub fn render(results: &Results) -> String {
    let mut out = String::new();
    if let Some(note) = &results.interrupted {
        let _ = writeln!(out, "interrupted: {}\n", crate::inert::line(note));
    }
    let compared = !results.compared_models().is_empty();
    let mut rows = vec![header(compared)];
    for suite in &results.suites {
        for case in &suite.cases {
            rows.push(row(&suite.name, case, compared));
        }
    }
    out.push_str(&aligned(&rows));
    let mut problems = String::new();
    for suite in &results.suites {
        for case in &suite.cases {
            let model = case
                .model
                .as_deref()
                .map_or_else(String::new, |m| format!(" [{m}]"));
            for attempt in case
                .attempts
                .iter()
                .filter(|a| a.outcome != Outcome::Passed)
            {
                let _ = writeln!(
                    problems,
                    "  {}/{}{model} #{}: {} — {}",
                    suite.name,
                    case.name,
                    attempt.attempt,
                    attempt.outcome.as_str(),
                    attempt.reason
                );
            }
        }
    }
    if !problems.is_empty() {
        out.push_str("\nattempts that did not pass:\n");
        for line in problems.lines() {
            let _ = writeln!(out, "{}", crate::inert::line(line));
        }
    }
    out
}

fn header(compared: bool) -> Vec<String> {
    let mut cells = vec!["suite", "case"];
    if compared {
        cells.push("model");
    }
    cells.extend([
        "result", "passed", "pass@1", "pass@k", "pass^k", "turns", "tokens", "cost", "time",
    ]);
    cells.into_iter().map(String::from).collect()
}

fn row(suite: &str, case: &CaseResult, compared: bool) -> Vec<String> {
    let mut cells = vec![suite.to_string(), case.name.clone()];
    if compared {
        cells.push(case.model.clone().unwrap_or_else(|| "-".to_string()));
    }
    let verdict = match case.status {
        CaseStatus::Passed => "passed",
        CaseStatus::Failed => "failed",
        CaseStatus::Error => "error",
    };
    let tokens = (case.input_tokens + case.output_tokens) as f64;
    cells.extend([
        if case.flaky {
            format!("{verdict} (flaky)")
        } else {
            verdict.to_string()
        },
        super::markdown::passed(case),
        format!("{:.2}", case.pass_at_1),
        format!("{:.2}", case.pass_at_k),
        format!("{:.2}", case.pass_pow_k),
        format!("{:.1}", case.per_attempt(f64::from(case.turns))),
        format!("{:.0}", case.per_attempt(tokens)),
        case.cost_usd.map_or_else(
            || "-".to_string(),
            |c| format!("${:.4}", case.per_attempt(c)),
        ),
        format!("{:.1}s", case.per_attempt(case.duration_ms as f64) / 1000.0),
    ]);
    cells.iter().map(|c| crate::inert::line(c)).collect()
}

/// Rows as lines, each column as wide as its widest cell, two spaces apart.
fn aligned(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(&widths) {
            let _ = write!(line, "{cell}{}  ", " ".repeat(width - cell.chars().count()));
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_whatever_the_cells_widths() {
        let rows = vec![
            vec![
                "suite".to_string(),
                "case".to_string(),
                "result".to_string(),
            ],
            vec![
                "notes".to_string(),
                "a-long-case-name".to_string(),
                "—".to_string(),
            ],
        ];
        assert_eq!(
            aligned(&rows),
            "suite  case              result\nnotes  a-long-case-name  —\n"
        );
    }
}
