//! The Markdown summary of an evaluation: a line per suite with its gate,
//! one table row per case (per model when several were compared) with
//! pass@1, pass@k and pass^k and per-attempt means, the regressions against
//! the baseline, and the attempts that did not pass. Written to
//! `summary.md` and, by the CLI, to the GitHub step summary.

use std::fmt::Write;

use crate::eval::results::{CaseResult, CaseStatus, Outcome, Results, SuiteResult};
use crate::eval::significance::Interval;

/// What the ⚠️ error result means, said once under the table.
pub const ERROR_MEANING: &str = "⚠️ error: an attempt could not run to a verdict (the provider \
     failed, a cassette no longer matched, the workspace could not be made); the case counts as \
     not passed, its errored attempts are left out of pass@k, and `--retry-errors` re-runs them.";

/// How far sequence replays drifted from their recordings, per case: a
/// suite that still passes offline after a skill edit says so honestly.
fn drift_notes(results: &Results, out: &mut String) {
    let mut lines = String::new();
    for suite in &results.suites {
        for case in &suite.cases {
            if let Some(drift) = &case.replay_drift {
                let _ = writeln!(
                    lines,
                    "- {}{}: {}",
                    case_code(&suite.name, &case.name),
                    model_note(case.model.as_deref()),
                    cell(&drift.summary())
                );
            }
        }
    }
    if !lines.is_empty() {
        out.push_str(
            "\n### Replayed in sequence\n\nRecorded answers served in order whatever the \
             requests; a turn is out of date when its request differs from the recording. \
             Re-record with `--record` to bring them up to date.\n\n",
        );
        out.push_str(&lines);
    }
}

pub fn summary(results: &Results) -> String {
    let mut out = String::from("## agentci eval\n\n");
    if let Some(note) = &results.interrupted {
        let _ = writeln!(out, "> ⚠️ **Interrupted**: {}.\n", cell(note));
    }
    suite_lines(results, &mut out);
    reuse_line(results, &mut out);
    let any_error = cases_table(results, &mut out);
    out.push_str(
        "\npass@k: at least one of the k attempts that reached a verdict passed; pass^k: all \
         of them did. Turns, tokens, cost and time are means per attempt.\n",
    );
    if let Some(level) = interval_level(results) {
        let _ = writeln!(
            out,
            "\nCI: the {:.0}% Wilson score interval of the case's pass rate over its attempts.",
            level * 100.0
        );
    }
    if any_error {
        let _ = writeln!(out, "\n{ERROR_MEANING}");
    }
    drift_notes(results, &mut out);
    judged(results, &mut out);
    regressions(results, &mut out);
    possible_regressions(results, &mut out);
    attempts_not_passed(results, &mut out);
    out
}

/// One line per suite: its cases' results, the gate, and the pass metrics.
fn suite_lines(results: &Results, out: &mut String) {
    for suite in &results.suites {
        let _ = writeln!(
            out,
            "**{}**: {}/{} cases passed ({:.0}%, gate {:.0}%: {}), {} failed, {} errored, {} flaky; \
             pass@1 {:.2}, pass@k {:.2}, pass^k {:.2}{}\n",
            cell(&suite.name),
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
            suite.pass_at_k,
            suite.pass_pow_k,
            cell(&attempts_note(suite)),
        );
    }
}

/// What a run into an existing `--out` kept and ran again; nothing when it
/// kept nothing and re-ran nothing (a first run, or merged shards).
fn reuse_line(results: &Results, out: &mut String) {
    let Some(reuse) = &results.reuse else {
        return;
    };
    if reuse.kept == 0 && reuse.rerun.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "{} attempts kept from an earlier run into this folder, {} run",
        reuse.kept, reuse.ran
    );
    for rerun in &reuse.rerun {
        let _ = write!(out, "; {} re-run: {}", rerun.attempts, cell(&rerun.why));
    }
    out.push_str(".\n\n");
}

/// The table of cases (with a model column when models are compared);
/// true when a case errored, which the note under it then explains.
fn cases_table(results: &Results, out: &mut String) -> bool {
    let compared = !results.compared_models().is_empty();
    out.push_str(if compared {
        "| suite | case | model | result | attempts passed | pass@1 | pass@k | pass^k | turns | tokens | cost | time |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    } else {
        "| suite | case | result | attempts passed | pass@1 | pass@k | pass^k | turns | tokens | cost | time |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    });
    let mut any_error = false;
    for suite in &results.suites {
        for case in &suite.cases {
            any_error |= case.status == CaseStatus::Error;
            let model = if compared {
                format!(" {} |", cell(case.model.as_deref().unwrap_or("-")))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "| {} | {} |{model} {} | {} | {:.2} | {:.2} | {:.2} | {} |",
                cell(&suite.name),
                cell(&case.name),
                verdict(case),
                passed(case),
                case.pass_at_1,
                case.pass_at_k,
                case.pass_pow_k,
                means(case),
            );
        }
    }
    any_error
}

/// Every `judge:` assertion of every attempt: its verdict, median score
/// against `pass_score`, and reasons; then what the judges used per suite,
/// apart from the agent's figures in the table.
fn judged(results: &Results, out: &mut String) {
    let mut lines = String::new();
    for suite in &results.suites {
        for case in &suite.cases {
            for attempt in &case.attempts {
                for (a, judge) in attempt
                    .assertions
                    .iter()
                    .filter_map(|a| a.judge.as_ref().map(|j| (a, j)))
                {
                    let verdict = match judge.verdict.as_str() {
                        "pass" => "✅ pass",
                        "fail" => "❌ fail",
                        _ => "⚠️ error",
                    };
                    let score = judge
                        .score
                        .map_or_else(|| "—".to_string(), |s| format!("{s:.2}"));
                    let said = if a.error {
                        a.message.clone().unwrap_or_default()
                    } else {
                        judge.reasons.join("; ")
                    };
                    let _ = writeln!(
                        lines,
                        "| {}{} | {} | {} | {verdict} | {score} | {} | {} | {} |",
                        case_code(&suite.name, &case.name),
                        model_note(case.model.as_deref()),
                        attempt.attempt,
                        crate::inert::markdown::code(&a.name.replace('`', "'")),
                        judge.pass_score,
                        judge.samples.len(),
                        cell(&said),
                    );
                }
            }
        }
    }
    if lines.is_empty() {
        return;
    }
    out.push_str(
        "
### Graded assertions

A model judged each against its rubric; the median score \
         of its samples decides against pass_score.\n\n\
         | case | attempt | judge | verdict | score | pass_score | samples | reasons |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    out.push_str(&lines);
    for suite in &results.suites {
        if let Some(judge) = &suite.judge {
            let cost = judge
                .cost_usd
                .map_or_else(|| "cost unknown".to_string(), |c| format!("${c:.4}"));
            let _ = writeln!(
                out,
                "
Judges of **{}**: {} calls, {} tokens, {cost} (not counted in the agent's \
                 turns, tokens or cost above).",
                cell(&suite.name),
                judge.calls,
                judge.input_tokens + judge.output_tokens,
            );
        }
    }
}

/// The regressions against the baseline, when there are any.
fn regressions(results: &Results, out: &mut String) {
    if !results.regressions.is_empty() {
        out.push_str(
            "\n### Regressions against the baseline\n\n| what | before | after |\n|---|---|---|\n",
        );
        for r in &results.regressions {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                cell(&r.message),
                cell(&r.before),
                cell(&r.after)
            );
        }
    }
}

/// Drops that are not significant, and the `--repeat` advice.
fn possible_regressions(results: &Results, out: &mut String) {
    if !results.possible_regressions.is_empty() {
        out.push_str(
            "\n### Possible regressions\n\nDrops that are not significant at the chosen \
             confidence: reported, they do not fail the job.\n\n| what | before | after |\n|---|---|---|\n",
        );
        for r in &results.possible_regressions {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                cell(&r.message),
                cell(&r.before),
                cell(&r.after)
            );
        }
    }
    if !results.repeat_advice.is_empty() {
        out.push_str("\n### How many attempts\n\n");
        for advice in &results.repeat_advice {
            let _ = writeln!(out, "- {}", cell(&advice.message));
        }
    }
}

/// Each attempt that did not pass, with its outcome and reason.
fn attempts_not_passed(results: &Results, out: &mut String) {
    let mut problems = String::new();
    for suite in &results.suites {
        for case in &suite.cases {
            let model = model_note(case.model.as_deref());
            for attempt in case
                .attempts
                .iter()
                .filter(|a| a.outcome != Outcome::Passed)
            {
                let _ = writeln!(
                    problems,
                    "- {}{} attempt {}: {} — {}",
                    case_code(&suite.name, &case.name),
                    model,
                    attempt.attempt,
                    attempt.outcome.as_str(),
                    cell(&attempt.reason)
                );
            }
        }
    }
    if !problems.is_empty() {
        out.push_str("\n### Attempts that did not pass\n\n");
        out.push_str(&problems);
    }
}

fn verdict(case: &CaseResult) -> &'static str {
    match (case.status, case.flaky) {
        (CaseStatus::Passed, false) => "✅ passed",
        (CaseStatus::Passed, true) => "✅ passed (flaky)",
        (CaseStatus::Failed, false) => "❌ failed",
        (CaseStatus::Failed, true) => "❌ failed (flaky)",
        (CaseStatus::Error, _) => "⚠️ error",
    }
}

pub(super) fn passed(case: &CaseResult) -> String {
    let mut text = format!(
        "{}/{}",
        case.attempts_passed,
        case.attempts_passed + case.attempts_failed
    );
    if case.attempts_errored > 0 {
        let _ = write!(text, " ({} errored)", case.attempts_errored);
    }
    if let Some(ci) = &case.pass_rate_ci {
        let _ = write!(text, " (CI {})", range(ci));
    }
    text
}

/// `48–81%`.
fn range(ci: &Interval) -> String {
    format!("{:.0}–{:.0}%", ci.low * 100.0, ci.high * 100.0)
}

/// `; attempts 20/30 passed (95% CI 49–81%)` when a case ran two or more
/// attempts; nothing otherwise.
pub(crate) fn attempts_note(suite: &SuiteResult) -> String {
    match &suite.attempts_pass_rate_ci {
        Some(ci) => format!(
            "; attempts {}/{} passed ({:.0}% CI {})",
            suite.attempts_passed,
            suite.attempts_judged,
            ci.confidence * 100.0,
            range(ci)
        ),
        None => String::new(),
    }
}

/// The level of the intervals shown, when any case has one.
fn interval_level(results: &Results) -> Option<f64> {
    results
        .suites
        .iter()
        .flat_map(|s| &s.cases)
        .find_map(|c| c.pass_rate_ci.map(|ci| ci.confidence))
}

/// Turns, tokens, cost and time per attempt, as four cells.
fn means(case: &CaseResult) -> String {
    let tokens = (case.input_tokens + case.output_tokens) as f64;
    let cost = case.cost_usd.map_or_else(
        || "—".to_string(),
        |c| format!("${:.4}", case.per_attempt(c)),
    );
    format!(
        "{:.1} | {:.0} | {cost} | {:.1}s",
        case.per_attempt(f64::from(case.turns)),
        case.per_attempt(tokens),
        case.per_attempt(case.duration_ms as f64) / 1000.0,
    )
}

/// Text for a table cell or a list line: one line, no `|` to split the row,
/// and no Markdown or HTML a renderer (GitHub's summary page) would act on,
/// since names and reasons can come from the model.
fn cell(text: &str) -> String {
    crate::inert::markdown::inline(text)
}

/// `suite/case` as inline code (backticks in the names read as quotes).
fn case_code(suite: &str, case: &str) -> String {
    crate::inert::markdown::code(&format!("{suite}/{case}").replace('`', "'"))
}

/// ` [model]` after a case compared across models, or nothing.
fn model_note(model: Option<&str>) -> String {
    model.map_or_else(String::new, |m| format!(" \\[{}\\]", cell(m)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::results::{AttemptResult, CaseResult, SuiteResult};

    fn attempt(n: u32, outcome: Outcome, reason: &str) -> AttemptResult {
        AttemptResult {
            attempt: n,
            outcome,
            run_status: None,
            reason: reason.to_string(),
            assertions: Vec::new(),
            model: None,
            turns: 3,
            tool_calls: 1,
            input_tokens: 100,
            output_tokens: 50,
            cost_usd: Some(0.01),
            duration_ms: 2000,
            run_ms: 1500,
            setup_ms: 100,
            changed: Vec::new(),
            trace: None,
            patch: None,
            started_at: "2026-01-01T00:00:00Z".to_string(),
            fingerprint: String::new(),
            fingerprint_parts: Default::default(),
            interrupted: false,
            replay_drift: None,
            result: None,
            judge: None,
        }
    }

    #[test]
    fn figures_are_per_attempt_and_hostile_text_stays_in_its_cell() {
        let case = CaseResult::new(
            "a|b<img src=x>",
            0,
            0.5,
            vec![
                attempt(1, Outcome::Passed, "ok"),
                attempt(2, Outcome::Failed, "bad | worse\n<script>x</script>"),
            ],
        );
        let suite = SuiteResult::new("s", "s.yaml", 1.0, vec![case]);
        let md = summary(&Results::new(None, 2, vec![suite]));
        let row = md.lines().find(|l| l.starts_with("| s |")).unwrap();
        assert_eq!(
            row,
            "| s | a\\|b\\<img src=x\\> | ✅ passed (flaky) | 1/2 (CI 9–91%) | 0.50 | 1.00 | 0.00 | 3.0 | 150 | $0.0100 | 2.0s |"
        );
        assert!(
            md.contains("bad \\| worse\\\\n\\<script\\>x\\</script\\>"),
            "{md}"
        );
        assert!(
            !md.contains("⚠️ error: an attempt"),
            "no error, no note: {md}"
        );
    }
}
