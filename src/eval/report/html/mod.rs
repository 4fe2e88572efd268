//! The HTML report of an evaluation: one self-contained `index.html`
//! (inline CSS, a few lines of inline JS, SVG charts drawn here; no network,
//! no CDN), readable from disk and as a CI artifact. It shows the pass rate
//! per suite and per case (beside the baseline's when given), cost, tokens
//! and time per case, flaky cases marked, models side by side, and every
//! attempt's transcript one click away, read from the attempts' traces and
//! patches; every case that did not pass links to its transcript.
//!
//! Everything the model or a user wrote is escaped where it is written into
//! the page; the script never builds HTML from text (no `innerHTML`), it
//! only opens and filters what is already there.

mod chart;
#[cfg(test)]
mod contrast;
mod diff;
mod plan;
mod shown;
mod tool_call;
mod transcript;
mod transcripts;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use html_escape::encode_text as text;

use crate::eval::baseline::Regression;
use crate::eval::results::{CaseResult, CaseStatus, Outcome, Results, SuiteResult};
use chart::{Chart, Row};

const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// Write `out_dir/index.html` for `results`, whose attempts' trace paths
/// are relative to `results_dir` (or absolute). Returns the page's path.
pub fn write(
    results: &Results,
    baseline: Option<&Results>,
    results_dir: &Path,
    out_dir: &crate::safe_file::OutputFolder,
) -> Result<PathBuf, String> {
    // Through the folder opened before: a link planted at the name is
    // replaced, and a folder swapped since redirects nothing.
    let index = out_dir.file(std::ffi::OsStr::new("index.html"));
    // Rendered from results and traces that their runs wrote masked.
    let html =
        crate::redact::Masked::from_masked_parts(page(results, baseline, results_dir).into_bytes());
    index
        .replace(&html, None)
        .map_err(|e| format!("cannot write {}: {e}", index.path().display()))?;
    Ok(index.path())
}

/// The whole page.
pub fn page(results: &Results, baseline: Option<&Results>, results_dir: &Path) -> String {
    let models = results.compared_models();
    let runs: Vec<Option<String>> = if models.is_empty() {
        vec![None]
    } else {
        models.iter().cloned().map(Some).collect()
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>agentci eval report</title><style>{STYLE}</style></head><body>\
         <header><h1>agentci eval</h1><p class=\"dim\">agentci {}{}; {} attempt(s) per case</p></header><main>",
        text(&results.agentci_version),
        results
            .shard
            .as_deref()
            .map_or_else(String::new, |s| format!(", shard {}", text(s))),
        results.repeat,
    );
    if let Some(note) = &results.interrupted {
        let _ = write!(
            out,
            r#"<p class="banner warn">Interrupted: {}</p>"#,
            text(note)
        );
    }
    overview(results, &mut out);
    regressions(results, &mut out);
    charts(results, baseline, &runs, &mut out);
    cases_table(results, &mut out);
    transcripts::section(results, results_dir, &mut out);
    let _ = writeln!(
        out,
        "</main><footer class=\"dim\">Written by agentci; self-contained, works offline.</footer>\
         <script>{SCRIPT}</script></body></html>"
    );
    out
}

fn overview(results: &Results, out: &mut String) {
    out.push_str(r#"<section id="suites"><h2>Suites</h2><div class="cards">"#);
    for (s, suite) in results.suites.iter().enumerate() {
        let _ = write!(
            out,
            r#"<div class="card {}"><h3>{}</h3><p class="big">{:.0}%</p><p>{}/{} cases passed, gate {:.0}%: <b>{}</b></p><p class="dim">{} failed, {} errored, {} flaky; pass@1 {:.2}, pass@k {:.2}, pass^k {:.2}{}</p>{}</div>"#,
            if suite.gate_passed { "ok" } else { "bad" },
            text(&suite.name),
            suite.pass_rate * 100.0,
            suite.cases_passed,
            suite.cases_total,
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
            suite.pass_at_k,
            suite.pass_pow_k,
            text(&crate::eval::report::markdown::attempts_note(suite)),
            not_passed(s, suite),
        );
    }
    out.push_str("</div></section>");
}

/// The suite's cases that did not pass, each a link to its transcript.
fn not_passed(s: usize, suite: &SuiteResult) -> String {
    let mut links = Vec::new();
    for (c, case) in suite.cases.iter().enumerate() {
        if case.status == CaseStatus::Passed {
            continue;
        }
        let (class, word) = verdict(case);
        let name = match &case.model {
            Some(model) => format!("{} [{model}]", case.name),
            None => case.name.clone(),
        };
        let label = text(&name);
        links.push(match case_link(s, c, case) {
            Some(id) => format!(
                r##"<li><a class="case-link {class}" href="#{id}">{label}</a> {word}</li>"##
            ),
            None => format!("<li>{label} {word}</li>"),
        });
    }
    if links.is_empty() {
        return String::new();
    }
    format!(
        r#"<p>Not passed (each opens its transcript):</p><ul class="not-passed">{}</ul>"#,
        links.concat()
    )
}

fn regressions(results: &Results, out: &mut String) {
    possible_regressions(results, out);
    if results.regressions.is_empty() {
        return;
    }
    out.push_str(
        r#"<section id="regressions"><h2>Regressions against the baseline</h2><table><thead><tr><th>what</th><th>before</th><th>after</th></tr></thead><tbody>"#,
    );
    regression_rows(&results.regressions, r#" class="bad""#, out);
    out.push_str("</tbody></table></section>");
}

/// One table row per drop: what, before, after; `attrs` go on each `<tr>`.
fn regression_rows(rows: &[Regression], attrs: &str, out: &mut String) {
    for r in rows {
        let _ = write!(
            out,
            "<tr{attrs}><td>{}</td><td>{}</td><td>{}</td></tr>",
            text(&r.message),
            text(&r.before),
            text(&r.after)
        );
    }
}

/// Drops that are not significant, and the `--repeat` advice.
fn possible_regressions(results: &Results, out: &mut String) {
    if results.possible_regressions.is_empty() && results.repeat_advice.is_empty() {
        return;
    }
    out.push_str(r#"<section id="possible-regressions"><h2>Possible regressions</h2>"#);
    if !results.possible_regressions.is_empty() {
        out.push_str(
            r#"<p class="dim">Drops that are not significant at the chosen confidence: reported, they do not fail the job.</p><table><thead><tr><th>what</th><th>before</th><th>after</th></tr></thead><tbody>"#,
        );
        regression_rows(&results.possible_regressions, "", out);
        out.push_str("</tbody></table>");
    }
    for advice in &results.repeat_advice {
        let _ = write!(out, r#"<p class="dim">{}</p>"#, text(&advice.message));
    }
    out.push_str("</section>");
}

/// Series names and CSS classes: one per model (or "this run"), then the baseline.
fn series(runs: &[Option<String>], baseline: bool) -> (Vec<String>, Vec<String>) {
    let mut names: Vec<String> = runs
        .iter()
        .map(|m| m.clone().unwrap_or_else(|| "this run".to_string()))
        .collect();
    let mut classes: Vec<String> = (0..runs.len()).map(|i| format!("s{}", i % 6)).collect();
    if baseline {
        names.push("baseline".to_string());
        classes.push("base".to_string());
    }
    (names, classes)
}

/// The case of `suite` named `name` run against `model`.
fn find<'a>(suite: &'a SuiteResult, name: &str, model: &Option<String>) -> Option<&'a CaseResult> {
    suite
        .cases
        .iter()
        .find(|c| c.name == name && (c.model == *model || model.is_none()))
}

/// Each case once, in suite order, whatever the models.
fn case_rows(results: &Results) -> Vec<(&SuiteResult, &str)> {
    let mut rows: Vec<(&SuiteResult, &str)> = Vec::new();
    for suite in &results.suites {
        for case in &suite.cases {
            if !rows
                .iter()
                .any(|(s, c)| s.name == suite.name && *c == case.name)
            {
                rows.push((suite, case.name.as_str()));
            }
        }
    }
    rows
}

fn charts(
    results: &Results,
    baseline: Option<&Results>,
    runs: &[Option<String>],
    out: &mut String,
) {
    let (names, classes) = series(runs, baseline.is_some());
    let percent: fn(f64) -> String = |v| format!("{:.0}%", v * 100.0);
    out.push_str(r#"<section id="charts"><h2>Pass rates</h2>"#);
    out.push_str(&chart::legend(&names, &classes));
    let _ = write!(
        out,
        r#"<figure id="chart-suites"><figcaption>Cases passed, per suite</figcaption>{}</figure>"#,
        chart::svg(&Chart {
            title: "Cases passed, per suite",
            series: &names,
            classes: &classes,
            rows: suite_rows(results, baseline, runs),
            max: Some(1.0),
            format: percent,
        })
    );
    let rows = case_rows(results);
    let _ = write!(
        out,
        r#"<figure id="chart-cases"><figcaption>Attempts passed, per case (errored attempts left out)</figcaption>{}</figure></section>"#,
        chart::svg(&Chart {
            title: "Attempts passed, per case",
            series: &names,
            classes: &classes,
            rows: case_chart(&rows, runs, baseline, &|c| (c.k > 0).then_some(c.pass_rate)),
            max: Some(1.0),
            format: percent,
        })
    );
    cost_charts(&rows, runs, out);
}

/// The pass-rate rows per suite; with several models, a suite's rate is
/// over that model's cases. The baseline's rate comes last when there is one.
fn suite_rows(results: &Results, baseline: Option<&Results>, runs: &[Option<String>]) -> Vec<Row> {
    results
        .suites
        .iter()
        .map(|suite| {
            let mut values: Vec<Option<f64>> = runs
                .iter()
                .map(|model| {
                    let cases: Vec<&CaseResult> = suite
                        .cases
                        .iter()
                        .filter(|c| model.is_none() || c.model == *model)
                        .collect();
                    (!cases.is_empty()).then(|| {
                        cases
                            .iter()
                            .filter(|c| c.status == CaseStatus::Passed)
                            .count() as f64
                            / cases.len() as f64
                    })
                })
                .collect();
            if let Some(base) = baseline {
                values.push(
                    base.suites
                        .iter()
                        .find(|s| s.name == suite.name)
                        .map(|s| s.pass_rate),
                );
            }
            Row {
                label: suite.name.clone(),
                values,
            }
        })
        .collect()
}

/// One row per case of what `pick` reads from it, for each run, then from
/// the baseline when one is given.
fn case_chart(
    rows: &[(&SuiteResult, &str)],
    runs: &[Option<String>],
    baseline: Option<&Results>,
    pick: &dyn Fn(&CaseResult) -> Option<f64>,
) -> Vec<Row> {
    rows.iter()
        .map(|(suite, name)| {
            let mut values: Vec<Option<f64>> = runs
                .iter()
                .map(|m| find(suite, name, m).and_then(pick))
                .collect();
            if let Some(base) = baseline {
                values.push(
                    base.suites
                        .iter()
                        .find(|s| s.name == suite.name)
                        .and_then(|s| s.cases.iter().find(|c| c.name == *name))
                        .and_then(pick),
                );
            }
            Row {
                label: format!("{}/{name}", suite.name),
                values,
            }
        })
        .collect()
}

/// The cost, tokens and time charts per case (means per attempt); a chart
/// whose figures are all unknown says so instead.
fn cost_charts(rows: &[(&SuiteResult, &str)], runs: &[Option<String>], out: &mut String) {
    let (run_names, run_classes) = series(runs, false);
    out.push_str(r#"<section id="costs"><h2>Cost, tokens and time per case</h2><p class="dim">Means per attempt.</p>"#);
    out.push_str(&chart::legend(&run_names, &run_classes));
    let plots: [Plot; 3] = [
        (
            "chart-cost",
            "Cost per attempt (USD)",
            |c| c.cost_usd.map(|v| c.per_attempt(v)),
            |v| format!("${v:.4}"),
        ),
        (
            "chart-tokens",
            "Tokens per attempt",
            |c| Some(c.per_attempt((c.input_tokens + c.output_tokens) as f64)),
            |v| format!("{v:.0}"),
        ),
        (
            "chart-time",
            "Time per attempt",
            |c| Some(c.per_attempt(c.duration_ms as f64) / 1000.0),
            |v| format!("{v:.1}s"),
        ),
    ];
    for (id, title, pick, format) in plots {
        let rows = case_chart(rows, runs, None, &pick);
        if rows.iter().all(|r| r.values.iter().all(Option::is_none)) {
            let _ = write!(
                out,
                r#"<figure id="{id}"><figcaption>{title}</figcaption><p class="dim">Unknown: no price is known for the models these attempts used.</p></figure>"#
            );
            continue;
        }
        let _ = write!(
            out,
            r#"<figure id="{id}"><figcaption>{title}</figcaption>{}</figure>"#,
            chart::svg(&Chart {
                title,
                series: &run_names,
                classes: &run_classes,
                rows,
                max: None,
                format,
            })
        );
    }
    out.push_str("</section>");
}

/// A per-case plot: its element id, title, the figure, and how it is written.
type Plot = (
    &'static str,
    &'static str,
    fn(&CaseResult) -> Option<f64>,
    fn(f64) -> String,
);

fn verdict(case: &CaseResult) -> (&'static str, &'static str) {
    match case.status {
        CaseStatus::Passed => ("ok", "passed"),
        CaseStatus::Failed => ("bad", "failed"),
        CaseStatus::Error => ("err", "error"),
    }
}

fn outcome_class(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "ok",
        Outcome::Failed => "bad",
        Outcome::Error => "err",
    }
}

/// The transcript a case's link opens: its first attempt that did not pass,
/// else its first.
fn case_link(s: usize, c: usize, case: &CaseResult) -> Option<String> {
    let attempt = case
        .attempts
        .iter()
        .find(|a| a.outcome != Outcome::Passed)
        .or(case.attempts.first())?;
    Some(attempt_id(s, c, attempt.attempt))
}

fn attempt_id(s: usize, c: usize, n: u32) -> String {
    format!("t-{s}-{c}-{n}")
}

fn cases_table(results: &Results, out: &mut String) {
    let compared = !results.compared_models().is_empty();
    out.push_str(
        r#"<section id="cases"><h2>Cases</h2><p class="filters"><label><input type="radio" name="show" value="all" checked> all</label> <label><input type="radio" name="show" value="notpassed"> not passed</label> <label><input type="radio" name="show" value="flaky"> flaky</label></p><table><thead><tr><th>suite</th><th>case</th>"#,
    );
    if compared {
        out.push_str("<th>model</th>");
    }
    out.push_str("<th>result</th><th>passed</th><th>pass@1</th><th>pass@k</th><th>pass^k</th><th>attempts (click for the transcript)</th></tr></thead><tbody>");
    for (s, suite) in results.suites.iter().enumerate() {
        for (c, case) in suite.cases.iter().enumerate() {
            let (class, word) = verdict(case);
            let _ = write!(
                out,
                r#"<tr class="case {class}{}"><td>{}</td><td>{}</td>"#,
                if case.flaky { " flaky" } else { "" },
                text(&suite.name),
                match case_link(s, c, case) {
                    Some(id) => format!(r##"<a href="#{id}">{}</a>"##, text(&case.name)),
                    None => text(&case.name).into_owned(),
                }
            );
            if compared {
                let _ = write!(
                    out,
                    "<td>{}</td>",
                    text(case.model.as_deref().unwrap_or("-"))
                );
            }
            let _ = write!(
                out,
                r#"<td><span class="badge {class}">{word}</span>{}{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>"#,
                if case.flaky {
                    r#" <span class="badge flaky">flaky</span>"#
                } else {
                    ""
                },
                drift_note(case),
                text(&crate::eval::report::markdown::passed(case)),
                case.pass_at_1,
                case.pass_at_k,
                case.pass_pow_k,
            );
            for attempt in &case.attempts {
                let class = outcome_class(attempt.outcome);
                let _ = write!(
                    out,
                    r##"<a class="attempt {class}" href="#{}" title="{}">#{} {}</a> "##,
                    attempt_id(s, c, attempt.attempt),
                    html_escape::encode_double_quoted_attribute(&attempt.reason),
                    attempt.attempt,
                    attempt.outcome.as_str()
                );
            }
            out.push_str("</td></tr>");
        }
    }
    out.push_str(
        "</tbody></table><p class=\"dim\">error: an attempt could not run to a verdict (the \
         provider failed, a cassette no longer matched, the workspace could not be made); the \
         case counts as not passed and its errored attempts are left out of pass@k. pass@k: at \
         least one of the k attempts that reached a verdict passed; pass^k: all of them did.</p></section>",
    );
}

/// A sequence replay's drift from its recording, under the verdict.
fn drift_note(case: &CaseResult) -> String {
    match &case.replay_drift {
        Some(drift) => format!(
            r#"<br><span class="drift dim" title="recorded answers served in order; re-record with --record">{}</span>"#,
            text(&drift.summary())
        ),
        None => String::new(),
    }
}
