//! The JUnit XML of an evaluation: one `<testsuite>` per suite, one
//! `<testcase>` per case (never one per attempt: CI servers such as GitLab
//! drop duplicate names). Attempts other than the one the verdict reports
//! are `flakyFailure`/`flakyError` under a passing case and
//! `rerunFailure`/`rerunError` under a failing one, as nextest and surefire
//! write them. A missed assertion is a `<failure>`, an infrastructure
//! problem an `<error>`.

use std::time::Duration;

use quick_junit::{
    FlakyOrRerun, NonSuccessKind, Report, TestCase, TestCaseStatus, TestRerun, TestSuite,
};

use crate::eval::results::{AttemptResult, CaseResult, CaseStatus, Outcome, Results, SuiteResult};

pub fn to_xml(results: &Results) -> Result<String, super::ReportError> {
    let mut report = Report::new("agentci eval");
    for suite in &results.suites {
        report.add_test_suite(test_suite(suite));
    }
    if !results.regressions.is_empty() {
        report.add_test_suite(regressions(results));
    }
    if !results.possible_regressions.is_empty() {
        report.add_test_suite(possible_regressions(results));
    }
    report
        .to_string()
        .map(|xml| crate::sink::junit::attributes::line_breaks_as_references(&xml))
        .map_err(|e| super::ReportError::Junit(e.to_string()))
}

/// A `regressions` testsuite with one failing testcase per regression, so
/// a CI report shows what got worse even when every gate passed.
fn regressions(results: &Results) -> TestSuite {
    let mut out = TestSuite::new("regressions");
    // Readers (and the Jenkins schema) want a time and timestamp on each.
    out.set_timestamp(chrono::Utc::now().fixed_offset());
    out.set_time(Duration::ZERO);
    for r in &results.regressions {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
        status
            .set_message(r.message.as_str())
            .set_type(format!("regression.{}", r.kind))
            .set_description(format!(
                "{}\nbefore (baseline): {}\nafter: {}",
                r.message, r.before, r.after
            ));
        let name = match r.kind.as_str() {
            "case" => r.subject(),
            kind => format!("{} ({})", r.subject(), kind.replace('_', " ")),
        };
        let mut case = TestCase::new(name, status);
        case.set_classname(format!("regressions.{}", r.suite));
        case.set_time(Duration::ZERO);
        out.add_test_case(case);
    }
    out
}

/// A `possible regressions` testsuite: drops that are not significant, as
/// passing testcases whose output says the figures and the test, so a CI
/// report shows them without failing the build.
fn possible_regressions(results: &Results) -> TestSuite {
    let mut out = TestSuite::new("possible regressions");
    out.set_timestamp(chrono::Utc::now().fixed_offset());
    out.set_time(Duration::ZERO);
    for r in &results.possible_regressions {
        let mut case = TestCase::new(r.subject(), TestCaseStatus::success());
        case.set_classname(format!("possible_regressions.{}", r.suite));
        case.set_time(Duration::ZERO);
        case.set_system_out(format!(
            "{}\nbefore (baseline): {}\nafter: {}",
            r.message, r.before, r.after
        ));
        out.add_test_case(case);
    }
    out
}

fn test_suite(suite: &SuiteResult) -> TestSuite {
    let mut out = TestSuite::new(suite.name.as_str());
    let started = suite
        .cases
        .iter()
        .flat_map(|c| &c.attempts)
        .filter_map(|a| chrono::DateTime::parse_from_rfc3339(&a.started_at).ok())
        .min()
        .unwrap_or_else(|| chrono::Utc::now().fixed_offset());
    out.set_timestamp(started);
    out.set_time(Duration::from_millis(
        suite.cases.iter().map(|c| c.duration_ms).sum(),
    ));
    let models: Vec<&str> = {
        let mut m: Vec<&str> = suite
            .cases
            .iter()
            .flat_map(|c| &c.attempts)
            .filter_map(|a| a.model.as_deref())
            .collect();
        m.sort_unstable();
        m.dedup();
        m
    };
    let props: Vec<(&str, String)> = vec![
        ("model", models.join(", ")),
        ("turns", suite.turns.to_string()),
        ("input_tokens", suite.input_tokens.to_string()),
        ("output_tokens", suite.output_tokens.to_string()),
        (
            "cost_usd",
            suite
                .cost_usd
                .map_or_else(|| "unknown".to_string(), |c| format!("{c:.4}")),
        ),
        ("pass_rate", format!("{:.4}", suite.pass_rate)),
        ("pass_at_1", format!("{:.4}", suite.pass_at_1)),
        ("pass_at_k", format!("{:.4}", suite.pass_at_k)),
        ("pass_pow_k", format!("{:.4}", suite.pass_pow_k)),
        ("min_pass_rate", format!("{:.4}", suite.min_pass_rate)),
        ("flaky_cases", suite.cases_flaky.to_string()),
        ("file", suite.file.clone()),
    ];
    for (name, value) in props {
        out.add_property((name, value.as_str()));
    }
    for case in &suite.cases {
        out.add_test_case(test_case(&suite.name, case));
    }
    out
}

fn test_case(suite: &str, case: &CaseResult) -> TestCase {
    // The attempt the verdict is about: the first error, else the first failure.
    let headline = match case.status {
        CaseStatus::Passed => None,
        CaseStatus::Failed => case.attempts.iter().find(|a| a.outcome == Outcome::Failed),
        CaseStatus::Error => case.attempts.iter().find(|a| a.outcome == Outcome::Error),
    };
    let mut status = match (case.status, headline) {
        (CaseStatus::Passed, _) | (_, None) => TestCaseStatus::success(),
        (status, Some(attempt)) => {
            let kind = if status == CaseStatus::Error {
                NonSuccessKind::Error
            } else {
                NonSuccessKind::Failure
            };
            let mut s = TestCaseStatus::non_success(kind);
            let message = verdict_message(case, attempt);
            s.set_message(message.as_str())
                .set_type(attempt.outcome.as_str())
                .set_description(or(details(attempt), &message));
            s.set_rerun_kind(FlakyOrRerun::Rerun);
            s
        }
    };
    for attempt in &case.attempts {
        let is_headline = headline.is_some_and(|h| h.attempt == attempt.attempt);
        let kind = match attempt.outcome {
            Outcome::Passed => continue,
            _ if is_headline => continue,
            Outcome::Failed => NonSuccessKind::Failure,
            Outcome::Error => NonSuccessKind::Error,
        };
        let mut rerun = TestRerun::new(kind);
        let message = format!(
            "attempt {}: {}",
            attempt.attempt,
            or(attempt.reason.clone(), attempt.outcome.as_str())
        );
        rerun
            .set_time(Duration::from_millis(attempt.duration_ms))
            .set_message(message.as_str())
            .set_type(attempt.outcome.as_str())
            .set_description(or(details(attempt), &message));
        if let Ok(ts) = chrono::DateTime::parse_from_rfc3339(&attempt.started_at) {
            rerun.set_timestamp(ts);
        }
        status.add_rerun(rerun);
    }
    // One testcase per case and model: duplicate names would be dropped.
    let name = match &case.model {
        Some(model) => format!("{} [{model}]", case.name),
        None => case.name.clone(),
    };
    let mut out = TestCase::new(name, status);
    out.set_classname(suite);
    out.set_time(Duration::from_millis(case.duration_ms));
    out.set_system_out(case_summary(case));
    out
}

/// `text`, or `fallback` when it is blank: every `<failure>`/`<error>` gets
/// a message and text, since some readers (dorny's jest-junit parser) crash
/// on empty ones.
fn or(text: String, fallback: &str) -> String {
    if text.trim().is_empty() {
        fallback.to_string()
    } else {
        text
    }
}

fn verdict_message(case: &CaseResult, attempt: &AttemptResult) -> String {
    let reason = or(attempt.reason.clone(), attempt.outcome.as_str());
    let rate = format!(
        "{}/{} attempts passed",
        case.attempts_passed,
        case.attempts_passed + case.attempts_failed
    );
    match case.status {
        CaseStatus::Error => format!(
            "attempt {} errored: {reason} ({} errored)",
            attempt.attempt, case.attempts_errored
        ),
        // One failed assertion a line: JUnit readers show the message.
        _ if attempt.outcome == Outcome::Failed && attempt.assertions.iter().any(|a| !a.passed) => {
            let (headline, failed) = attempt.failed_assertions();
            format!(
                "{rate}, needed {:.0}%; attempt {}: {headline}\n{}",
                case.min_pass_rate * 100.0,
                attempt.attempt,
                failed.join("\n")
            )
        }
        _ => format!(
            "{rate}, needed {:.0}%; attempt {}: {reason}",
            case.min_pass_rate * 100.0,
            attempt.attempt,
        ),
    }
}

/// Each assertion that failed, one a line; for an error, what went wrong.
fn details(attempt: &AttemptResult) -> String {
    if attempt.outcome == Outcome::Error {
        return attempt.reason.clone();
    }
    let failed: Vec<String> = attempt
        .assertions
        .iter()
        .filter(|a| !a.passed)
        .map(|a| match &a.message {
            Some(m) => format!("{}: {m}", a.name),
            None => a.name.clone(),
        })
        .collect();
    if failed.is_empty() {
        attempt.reason.clone()
    } else {
        failed.join("\n")
    }
}

fn case_summary(case: &CaseResult) -> String {
    let mut lines = vec![format!(
        "{}: {}/{} attempts passed, {} errored; pass@1 {:.2}, pass@{k} {:.2}, pass^{k} {:.2}{}",
        case.status.as_str(),
        case.attempts_passed,
        case.attempts_passed + case.attempts_failed,
        case.attempts_errored,
        case.pass_at_1,
        case.pass_at_k,
        case.pass_pow_k,
        if case.flaky { "; flaky" } else { "" },
        k = case.k,
    )];
    for a in &case.attempts {
        lines.push(format!(
            "attempt {}: {} — {} ({} turns, {} tokens, {:.1}s, model {}, trace {})",
            a.attempt,
            a.outcome.as_str(),
            a.reason,
            a.turns,
            a.input_tokens + a.output_tokens,
            a.duration_ms as f64 / 1000.0,
            a.model.as_deref().unwrap_or("-"),
            a.trace.as_deref().unwrap_or("-"),
        ));
    }
    lines.join("\n")
}
