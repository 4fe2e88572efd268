//! The transcripts section: every attempt in a collapsible block with its
//! figures, its assertions (a failed one with its whole output, line
//! breaks kept), the diff of what it changed, and what its trace shows;
//! above them, filters (failed only, by case, by model) that the page's
//! script applies to the blocks' `data-` attributes.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;

use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};

use super::{attempt_id, outcome_class};
use crate::eval::results::{
    AssertionResult, AttemptResult, CaseResult, JudgeOutcome, Results, SuiteResult,
};

pub fn section(results: &Results, results_dir: &Path, out: &mut String) {
    out.push_str(r#"<section id="transcripts"><h2>Transcripts</h2>"#);
    filters(results, out);
    for (s, suite) in results.suites.iter().enumerate() {
        for (c, case) in suite.cases.iter().enumerate() {
            for attempt in &case.attempts {
                one(
                    suite,
                    case,
                    attempt,
                    &attempt_id(s, c, attempt.attempt),
                    results_dir,
                    out,
                );
            }
        }
    }
    out.push_str(r#"<p id="f-none" class="dim" hidden>Nothing matches the filters.</p></section>"#);
}

/// The filter controls: real form controls, so a keyboard reaches them.
fn filters(results: &Results, out: &mut String) {
    let cases: BTreeSet<String> = results
        .suites
        .iter()
        .flat_map(|s| s.cases.iter().map(move |c| case_key(s, c)))
        .collect();
    let models: BTreeSet<String> = results
        .suites
        .iter()
        .flat_map(|s| &s.cases)
        .flat_map(|c| c.attempts.iter().map(move |a| model_of(c, a).to_string()))
        .collect();
    out.push_str(
        r#"<form class="filters" id="transcript-filters" role="search" aria-label="Filter the transcripts"><label><input type="checkbox" id="f-failed" name="failed" value="1"> not passed only</label> <label>case <select id="f-case" name="case"><option value="">all</option>"#,
    );
    for case in &cases {
        let _ = write!(
            out,
            r#"<option value="{}">{}</option>"#,
            attr(case),
            text(case)
        );
    }
    out.push_str(r#"</select></label> <label>model <select id="f-model" name="model"><option value="">all</option>"#);
    for model in &models {
        let _ = write!(
            out,
            r#"<option value="{}">{}</option>"#,
            attr(model),
            text(model)
        );
    }
    out.push_str(r#"</select></label> <button type="reset">Show all</button></form>"#);
}

fn case_key(suite: &SuiteResult, case: &CaseResult) -> String {
    format!("{}/{}", suite.name, case.name)
}

fn model_of<'a>(case: &'a CaseResult, attempt: &'a AttemptResult) -> &'a str {
    case.model
        .as_deref()
        .or(attempt.model.as_deref())
        .unwrap_or("-")
}

/// One attempt's block.
fn one(
    suite: &SuiteResult,
    case: &CaseResult,
    attempt: &AttemptResult,
    id: &str,
    results_dir: &Path,
    out: &mut String,
) {
    let model = model_of(case, attempt);
    let class = outcome_class(attempt.outcome);
    let key = case_key(suite, case);
    let _ = write!(
        out,
        r#"<details class="transcript" id="{id}" data-outcome="{}" data-case="{}" data-model="{}"><summary><span class="badge {class}">{}</span> {} attempt {} <span class="dim">({}) — {}</span></summary><div class="body"><p class="dim">{} turns, {} tool calls, {} tokens, {:.1}s</p>"#,
        attempt.outcome.as_str(),
        attr(&key),
        attr(model),
        attempt.outcome.as_str(),
        text(&key),
        attempt.attempt,
        text(model),
        text(&attempt.reason),
        attempt.turns,
        attempt.tool_calls,
        attempt.input_tokens + attempt.output_tokens,
        attempt.duration_ms as f64 / 1000.0,
    );
    assertions(attempt, out);
    if let Some(patch) = &attempt.patch {
        out.push_str(&super::diff::html(&results_dir.join(patch)));
    }
    match &attempt.trace {
        Some(trace) => out.push_str(&super::transcript::render(&results_dir.join(trace))),
        None => out.push_str(r#"<p class="missing">No trace: the run never started.</p>"#),
    }
    out.push_str("</div></details>");
}

/// The assertions, a failed one with its message whole (a `run:`
/// assertion's output keeps its lines).
fn assertions(attempt: &AttemptResult, out: &mut String) {
    if attempt.assertions.is_empty() {
        return;
    }
    out.push_str(r#"<div class="ev assertions"><b>Assertions</b><ul>"#);
    for a in &attempt.assertions {
        let _ = write!(
            out,
            r#"<li class="{}">{} <code>{}</code>"#,
            if a.passed { "ok" } else { "bad" },
            match (a.passed, a.error) {
                (true, _) => "✔ passed",
                (false, true) => "⚠ error",
                (false, false) => "✘ failed",
            },
            text(&a.name),
        );
        match &a.judge {
            Some(judge) => judged(a, judge, out),
            None => {
                if let Some(message) = &a.message {
                    out.push_str(&super::shown::pre(message, "output"));
                }
            }
        }
        out.push_str("</li>");
    }
    out.push_str("</ul></div>");
}

/// A graded assertion: the median score against pass_score, the reasons,
/// and each sample with its own score, verdict and reasons.
fn judged(a: &AssertionResult, judge: &JudgeOutcome, out: &mut String) {
    let score = judge
        .score
        .map_or_else(|| "—".to_string(), |s| format!("{s:.2}"));
    let cost = judge
        .cost_usd
        .map_or_else(String::new, |c| format!(", ${c:.4}"));
    let _ = write!(
        out,
        r#"<div class="judge"><p>verdict <b>{}</b>, median score <b>{}</b>, pass_score {} — {} sample(s) by <code>{}</code> <span class="dim">({} judge tokens{})</span></p>"#,
        text(&judge.verdict),
        text(&score),
        judge.pass_score,
        judge.samples.len(),
        text(&judge.model),
        judge.input_tokens + judge.output_tokens,
        text(&cost),
    );
    if a.error
        && let Some(message) = &a.message
    {
        out.push_str(&super::shown::pre(message, "output"));
    }
    if !judge.reasons.is_empty() {
        out.push_str("<ul class=\"reasons\">");
        for reason in &judge.reasons {
            let _ = write!(out, "<li>{}</li>", text(reason));
        }
        out.push_str("</ul>");
    }
    if judge.samples.len() > 1 {
        out.push_str("<ol class=\"samples\">");
        for sample in &judge.samples {
            let _ = write!(
                out,
                "<li>score {:.2}, said {}: {}</li>",
                sample.score,
                text(&sample.verdict),
                text(&sample.reasons.join("; "))
            );
        }
        out.push_str("</ol>");
    }
    for disagreement in &judge.disagreements {
        let _ = write!(out, r#"<p class="dim">{}</p>"#, text(disagreement));
    }
    out.push_str("</div>");
}
