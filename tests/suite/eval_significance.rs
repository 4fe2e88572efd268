//! Regressions that are not noise, end to end: the real binary replays a
//! case's recorded sessions `--repeat` times against a baseline. A case at
//! 2/3 after 3/3 is a possible regression (one-sided Fisher exact p = 0.5)
//! and the job passes; 0/10 after 10/10 is a regression (p = 1/184756) and
//! the job fails. The summaries, with the p-values, the Wilson intervals and
//! the `--repeat` advice, are snapshotted.

use super::eval::{eval, notes_sandbox, results};
use super::support::harness::{Sandbox, agentci_in, stderr, stdout};

/// A suite of one case that replays `cassettes` in turn, one per attempt.
fn suite(cassettes: &[&str]) -> String {
    format!(
        "version: 1\nname: notes\njob: job.yaml\ncases:\n  - name: steady\n    fixture: fixture\n    \
         cassettes: [{}]\n    assert:\n      - file_contains: {{path: notes.txt, pattern: 'status: fixed'}}\n",
        cassettes
            .iter()
            .map(|c| format!("cassettes/{c}.jsonl"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Run the baseline with `before`, then the same case with `after`, each
/// `repeat` times; the second run's output.
fn compared(
    sandbox: &Sandbox,
    before: &[&str],
    after: &[&str],
    repeat: &str,
) -> std::process::Output {
    let lenient = [
        "--min-pass-rate",
        "0",
        "--max-duration-increase",
        "1000",
        "--max-cost-increase",
        "1000",
    ];
    sandbox.write("base.yaml", &suite(before));
    let mut args = vec!["base.yaml", "--repeat", repeat, "--out", "base"];
    args.extend(lenient);
    let base = eval(sandbox, &args);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    sandbox.write("now.yaml", &suite(after));
    let mut args = vec![
        "now.yaml",
        "--repeat",
        repeat,
        "--out",
        "now",
        "--baseline",
        "base/results.json",
    ];
    args.extend(lenient);
    eval(sandbox, &args)
}

/// Durations and costs as placeholders.
fn redacted() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\b\d+(\.\d+)?s\b", "[TIME]");
    settings.add_filter(r"\$\d+\.\d{4}", "[COST]");
    settings
}

#[test]
fn two_of_three_after_three_of_three_is_only_a_possible_regression() {
    let sandbox = notes_sandbox();
    let now = compared(&sandbox, &["good"], &["good", "good", "bad"], "3");
    let err = stderr(&now);
    assert_eq!(
        now.status.code(),
        Some(0),
        "a possible regression fails nothing: {err}"
    );
    assert!(
        err.contains(
            "possible regression: notes/steady 3/3 → 2/3: possible regression, not significant \
             at 95% (one-sided Fisher exact p = 0.5000)"
        ),
        "{err}"
    );
    assert!(
        err.contains("agentci: no regression against the baseline"),
        "{err}"
    );
    assert!(err.contains("takes about 27 attempts per case"), "{err}");
    let r = results(&sandbox.path().join("now"));
    assert_eq!(r["regressions"].as_array().unwrap().len(), 0, "{r}");
    let possible = &r["possible_regressions"][0];
    assert_eq!(possible["test"], "fisher_exact");
    assert!((possible["p_value"].as_f64().unwrap() - 0.5).abs() < 1e-12);
    // In JUnit: listed, with its figures, and passing.
    let xml = std::fs::read_to_string(sandbox.path().join("now/junit.xml")).unwrap();
    let suite = xml
        .split("<testsuite ")
        .find(|s| s.starts_with(r#"name="possible regressions""#))
        .unwrap_or_else(|| panic!("no possible regressions testsuite: {xml}"));
    assert!(suite.contains(r#"failures="0""#), "{suite}");
    assert!(
        suite.contains(r#"<testcase name="notes/steady" classname="possible_regressions.notes""#),
        "{suite}"
    );
    assert!(suite.contains("p = 0.5000"), "{suite}");
    let ci = &r["suites"][0]["cases"][0]["pass_rate_ci"];
    assert!(
        (ci["low"].as_f64().unwrap() - 0.207_659_600_8).abs() < 1e-9,
        "{ci}"
    );
    assert!(
        (ci["high"].as_f64().unwrap() - 0.938_508_055_3).abs() < 1e-9,
        "{ci}"
    );
    redacted().bind(|| {
        insta::assert_snapshot!("significance_possible_summary", stdout(&now));
    });
    let html = eval(
        &sandbox,
        &[
            "now.yaml",
            "--repeat",
            "3",
            "--out",
            "now",
            "--baseline",
            "base/results.json",
            "--min-pass-rate",
            "0",
            "--max-duration-increase",
            "1000",
            "--max-cost-increase",
            "1000",
            "--html",
            "html",
        ],
    );
    assert_eq!(html.status.code(), Some(0), "{}", stderr(&html));
    let page = sandbox.read("html/index.html");
    assert!(
        page.contains("Possible regressions"),
        "no possible regressions in the HTML"
    );
    assert!(page.contains("2/3 (CI 21–94%)"), "no interval in the HTML");
}

#[test]
fn none_of_ten_after_ten_of_ten_is_a_regression() {
    let sandbox = notes_sandbox();
    let now = compared(&sandbox, &["good"], &["bad"], "10");
    let err = stderr(&now);
    assert_eq!(now.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "regression: notes/steady 10/10 → 0/10: a significant drop (one-sided Fisher exact \
             p = 5.41e-6 < 0.05)"
        ),
        "{err}"
    );
    assert!(!err.contains("possible regression"), "{err}");
    let r = results(&sandbox.path().join("now"));
    let found = r["regressions"].as_array().unwrap();
    assert_eq!(found.len(), 2, "the case and the suite: {r}");
    let p = found[0]["p_value"].as_f64().unwrap();
    assert!((p - 1.0 / 184_756.0).abs() < 1e-15, "{p}");
    redacted().bind(|| {
        insta::assert_snapshot!("significance_regression_summary", stdout(&now));
    });
}

#[test]
fn a_confidence_outside_zero_to_one_is_refused() {
    let sandbox = notes_sandbox();
    let out = eval(
        &sandbox,
        &["suite.yaml", "--regression-confidence", "95", "--out", "x"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "error: --regression-confidence: must be a number between 0 and 1 (0.95 for 95%)"
        ),
        "{}",
        stderr(&out)
    );
}

/// Under GitHub Actions a possible regression is a `::warning` annotation,
/// so it shows on the pull request without failing it.
#[test]
fn a_possible_regression_is_a_warning_annotation_under_github_actions() {
    let sandbox = notes_sandbox();
    let first = compared(&sandbox, &["good"], &["good", "good", "bad"], "3");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let out = agentci_in(
        sandbox.path(),
        &[
            "eval",
            "now.yaml",
            "--repeat",
            "3",
            "--out",
            "again",
            "--baseline",
            "base/results.json",
            "--min-pass-rate",
            "0",
            "--max-duration-increase",
            "1000",
            "--max-cost-increase",
            "1000",
        ],
        &[("GITHUB_ACTIONS", "true")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let warning = text
        .lines()
        .find(|l| {
            l.starts_with("::warning title=agentci eval%3A possible regression in notes/steady::")
        })
        .unwrap_or_else(|| panic!("no warning annotation in {text}"));
    assert!(warning.contains("p = 0.5000"), "{warning}");
    assert!(warning.contains("the job does not fail on it"), "{warning}");
    assert!(
        !text.contains("::error title=agentci eval%3A regression"),
        "not an error: {text}"
    );
}
