//! The pull request comment of the eval workflow: per suite, the pass rate
//! before → after with its Wilson interval, the regressions, and the change
//! in cost and tokens, then the regressions by name and a link to the HTML
//! report. It starts with a hidden marker so the next push edits this
//! comment instead of adding one. Formatting only: the regressions are the
//! ones the comparison found; names from suite files are escaped, since a
//! pull request's author writes them.

use std::fmt::Write;

use crate::eval::results::{Results, SuiteResult};
use crate::eval::significance::wilson;
use crate::inert::markdown::inline;

/// The hidden first line the comment is found by.
pub const MARKER: &str = "<!-- agentci-eval-comment -->";

/// What the comment links to and says it compared with.
#[derive(Debug, Default)]
pub struct CommentLinks {
    /// The HTML report (the workflow run's artifact).
    pub report: Option<String>,
    /// The base branch compared with, if a baseline was found.
    pub base: Option<String>,
}

/// The comment's Markdown; `confidence` is the interval level (0.95).
pub fn render(
    results: &Results,
    baseline: Option<&Results>,
    confidence: f64,
    links: &CommentLinks,
) -> String {
    let mut out = format!("{MARKER}\n### agentci eval\n\n");
    let verdict = if !results.regressions.is_empty() {
        "❌ regressed"
    } else if !results.gate_passed() {
        "❌ below the gate"
    } else {
        "✅ passed"
    };
    let against = match (baseline, &links.base) {
        (Some(_), Some(base)) => format!(" against `{}`", inline(base).replace('`', "")),
        (Some(_), None) => " against the baseline".to_string(),
        (None, _) => " (no baseline yet: nothing compared)".to_string(),
    };
    let _ = writeln!(out, "**{verdict}**{against}\n");
    out.push_str(
        "| suite | pass rate before → after | regressions | cost | tokens |\n\
         |---|---|---|---|---|\n",
    );
    for suite in &results.suites {
        let before = baseline.and_then(|b| b.suites.iter().find(|s| s.name == suite.name));
        let regressions = results
            .regressions
            .iter()
            .filter(|r| r.suite == suite.name)
            .count();
        let possible = results
            .possible_regressions
            .iter()
            .filter(|r| r.suite == suite.name)
            .count();
        let _ = writeln!(
            out,
            "| {} | {} → {} | {}{} | {} | {} |",
            inline(&suite.name),
            before.map_or_else(|| "–".to_string(), |b| pass_rate(b, confidence)),
            pass_rate(suite, confidence),
            regressions,
            if possible > 0 {
                format!(" (+{possible} possible)")
            } else {
                String::new()
            },
            change(before.and_then(|b| b.cost_usd), suite.cost_usd, usd),
            change(
                before.map(|b| tokens_of(b) as f64),
                Some(tokens_of(suite) as f64),
                |t| tokens(t as u64)
            ),
        );
    }
    if !results.regressions.is_empty() {
        out.push_str("\n**Regressions**\n\n");
        for r in &results.regressions {
            let _ = writeln!(out, "- {}", inline(&r.message));
        }
    }
    if !results.possible_regressions.is_empty() {
        out.push_str("\nPossible regressions (not significant, they do not fail the check):\n\n");
        for r in &results.possible_regressions {
            let _ = writeln!(out, "- {}", inline(&r.message));
        }
    }
    let _ = write!(
        out,
        "\nPass rate: passed cases over all, with its {:.0}% Wilson interval; cost and tokens are the suite's totals.",
        confidence * 100.0
    );
    if let Some(url) = links.report.as_deref().filter(|u| is_link(u)) {
        let _ = write!(out, " [HTML report]({url})");
    }
    out.push('\n');
    out
}

/// `80% [49–94%]`.
fn pass_rate(suite: &SuiteResult, confidence: f64) -> String {
    let rate = format!("{:.0}%", suite.pass_rate * 100.0);
    match wilson(suite.cases_passed, suite.cases_total, confidence) {
        Some(ci) => format!("{rate} [{:.0}–{:.0}%]", ci.low * 100.0, ci.high * 100.0),
        None => rate,
    }
}

fn tokens_of(suite: &SuiteResult) -> u64 {
    suite.input_tokens + suite.output_tokens
}

/// `before → after (+12%)`, or the one figure there is.
fn change(before: Option<f64>, after: Option<f64>, show: impl Fn(f64) -> String) -> String {
    match (before, after) {
        (Some(b), Some(a)) => {
            let delta = if b > 0.0 {
                format!(" ({:+.0}%)", (a - b) / b * 100.0)
            } else {
                String::new()
            };
            format!("{} → {}{delta}", show(b), show(a))
        }
        (None, Some(a)) => show(a),
        (Some(b), None) => format!("{} → ?", show(b)),
        (None, None) => "–".to_string(),
    }
}

fn usd(value: f64) -> String {
    format!("${value:.4}")
}

fn tokens(value: u64) -> String {
    match value {
        0..1_000 => value.to_string(),
        1_000..1_000_000 => format!("{:.1}k", value as f64 / 1_000.0),
        _ => format!("{:.1}M", value as f64 / 1_000_000.0),
    }
}

/// Only a plain https (or, for tests and Enterprise servers, http) link is
/// put in the comment's Markdown.
fn is_link(url: &str) -> bool {
    (url.starts_with("https://") || url.starts_with("http://"))
        && !url
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '(' | ')' | '<' | '>'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_show_both_figures_and_the_share() {
        assert_eq!(
            change(Some(2.0), Some(3.0), usd),
            "$2.0000 → $3.0000 (+50%)"
        );
        assert_eq!(change(None, Some(3.0), usd), "$3.0000");
        assert_eq!(change(None, None, usd), "–");
        assert_eq!(tokens(1_500), "1.5k");
        assert!(!is_link("javascript:alert(1)"));
        assert!(!is_link("https://x/y) [evil](https://z"));
        assert!(is_link("https://github.com/o/r/actions/runs/1"));
    }
}
