//! `--baseline FILE`: compare results with an earlier `results.json` and
//! name every regression: a case that passed and now does not, a suite pass
//! rate lower by more than a threshold, a suite's cost or mean duration up
//! by more than a threshold. Cases or suites missing from either side are
//! not regressions (a new case has nothing to regress from).

use serde::{Deserialize, Serialize};

use super::results::{CaseResult, CaseStatus, Results, SuiteResult};

/// One regression, with the figures before and after, so every output
/// (stderr, `results.json`, JUnit, Markdown, annotations) can show them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regression {
    pub suite: String,
    /// Set for a case that passed in the baseline and does not now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// The model the case ran against, when several were compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `case`, `pass_rate`, `cost` or `duration`.
    pub kind: String,
    pub before: String,
    pub after: String,
    /// One line naming the suite (and case), the figures and the limit.
    pub message: String,
}

impl Regression {
    /// `suite/case` or `suite`, as the JUnit testcase and annotations name it.
    pub fn subject(&self) -> String {
        let mut name = match &self.case {
            Some(case) => format!("{}/{case}", self.suite),
            None => self.suite.clone(),
        };
        if let Some(model) = &self.model {
            name.push_str(&format!(" [{model}]"));
        }
        name
    }
}

/// How much worse is still not a regression.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Absolute drop in a suite's pass rate (0.05 = five points).
    pub pass_rate_drop: f64,
    /// Relative increase of a suite's mean cost per attempt (0.2 = +20%).
    pub cost_increase: f64,
    /// Relative increase of a suite's mean attempt duration (1.0 = twice as long).
    pub duration_increase: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            pass_rate_drop: 0.05,
            cost_increase: 0.2,
            duration_increase: 1.0,
        }
    }
}

/// Every regression of `current` against `baseline`, one line each, naming
/// the suite (and case).
pub fn regressions(baseline: &Results, current: &Results, limits: &Thresholds) -> Vec<Regression> {
    let mut found = Vec::new();
    for suite in &current.suites {
        let Some(before) = baseline.suites.iter().find(|s| s.name == suite.name) else {
            continue;
        };
        for case in &suite.cases {
            let was = before
                .cases
                .iter()
                .find(|c| c.name == case.name && c.model == case.model);
            if let Some(was) = was
                && was.status == CaseStatus::Passed
                && case.status != CaseStatus::Passed
            {
                let subject = match &case.model {
                    Some(model) => format!("{}/{} [{model}]", suite.name, case.name),
                    None => format!("{}/{}", suite.name, case.name),
                };
                found.push(Regression {
                    suite: suite.name.clone(),
                    case: Some(case.name.clone()),
                    model: case.model.clone(),
                    kind: "case".to_string(),
                    before: format!(
                        "passed ({}/{} attempts)",
                        was.attempts_passed,
                        was.attempts_passed + was.attempts_failed
                    ),
                    after: format!(
                        "{} ({}/{} attempts, {} errored)",
                        case.status.as_str(),
                        case.attempts_passed,
                        case.attempts_passed + case.attempts_failed,
                        case.attempts_errored
                    ),
                    message: format!(
                        "{subject}: passed in the baseline, {} now",
                        case.status.as_str()
                    ),
                });
            }
        }
        suite_regressions(before, suite, limits, &mut found);
    }
    found
}

fn suite_regressions(
    before: &SuiteResult,
    now: &SuiteResult,
    limits: &Thresholds,
    found: &mut Vec<Regression>,
) {
    let name = &now.name;
    let mut push = |kind: &str, before: String, after: String, message: String| {
        found.push(Regression {
            suite: name.clone(),
            case: None,
            model: None,
            kind: kind.to_string(),
            before,
            after,
            message,
        });
    };
    if before.pass_rate - now.pass_rate > limits.pass_rate_drop + 1e-9 {
        let (was, is) = (
            format!("{:.1}%", before.pass_rate * 100.0),
            format!("{:.1}%", now.pass_rate * 100.0),
        );
        let message = format!(
            "{name}: pass rate {was} → {is}, down more than {:.1} points",
            limits.pass_rate_drop * 100.0
        );
        push("pass_rate", was, is, message);
    }
    // Per attempt: the baseline may have run another `--repeat`, and a
    // case's cost and duration are sums over its attempts.
    let cost = |suite: &SuiteResult| per_attempt(suite, |case| case.cost_usd);
    if let (Some(was), Some(is)) = (cost(before), cost(now))
        && was > 0.0
        && is > was * (1.0 + limits.cost_increase)
    {
        let message = format!(
            "{name}: cost per attempt ${was:.4} → ${is:.4}, up more than {:.0}%",
            limits.cost_increase * 100.0
        );
        push("cost", format!("${was:.4}"), format!("${is:.4}"), message);
    }
    let duration = |suite: &SuiteResult| per_attempt(suite, |case| Some(case.duration_ms as f64));
    if let (Some(was), Some(is)) = (duration(before), duration(now))
        && was > 0.0
        && is > was * (1.0 + limits.duration_increase)
    {
        let (before, after) = (
            format!("{:.1}s", was / 1000.0),
            format!("{:.1}s", is / 1000.0),
        );
        let message = format!(
            "{name}: mean attempt duration {before} → {after}, up more than {:.0}%",
            limits.duration_increase * 100.0
        );
        push("duration", before, after, message);
    }
}

/// The mean per attempt of a figure each case sums over its attempts;
/// `None` when a case's figure is unknown or no attempt ran.
fn per_attempt(suite: &SuiteResult, figure: impl Fn(&CaseResult) -> Option<f64>) -> Option<f64> {
    let attempts: u32 = suite
        .cases
        .iter()
        .map(|c| c.attempts_passed + c.attempts_failed + c.attempts_errored)
        .sum();
    let total: Option<f64> = suite.cases.iter().map(figure).sum();
    total
        .filter(|_| attempts > 0)
        .map(|t| t / f64::from(attempts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::results::{CaseResult, SuiteResult};

    fn results(rate_per_case: &[(&str, bool)]) -> Results {
        let cases = rate_per_case
            .iter()
            .enumerate()
            .map(|(i, (name, passed))| {
                let mut case = CaseResult::new(name, i, 1.0, Vec::new());
                case.status = if *passed {
                    CaseStatus::Passed
                } else {
                    CaseStatus::Failed
                };
                case.attempts_passed = u32::from(*passed);
                case.attempts_failed = u32::from(!*passed);
                case
            })
            .collect();
        Results::new(None, 1, vec![SuiteResult::new("s", "s.yaml", 0.0, cases)])
    }

    #[test]
    fn each_regression_carries_its_figures() {
        let before = results(&[("a", true), ("b", true)]);
        let now = results(&[("a", false), ("b", true), ("new", false)]);
        let found = regressions(&before, &now, &Thresholds::default());
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].subject(), "s/a");
        assert_eq!(found[0].before, "passed (1/1 attempts)");
        assert_eq!(found[0].after, "failed (0/1 attempts, 0 errored)");
        assert_eq!(found[1].kind, "pass_rate");
        assert_eq!(
            (found[1].before.as_str(), found[1].after.as_str()),
            ("100.0%", "33.3%")
        );
    }

    /// One passing case of `attempts` attempts, each taking `ms` and costing `usd`.
    fn timed(attempts: u32, ms: u64, usd: f64) -> Results {
        let mut case = CaseResult::new("a", 0, 1.0, Vec::new());
        case.attempts_passed = attempts;
        case.duration_ms = ms * u64::from(attempts);
        case.cost_usd = Some(usd * f64::from(attempts));
        Results::new(
            None,
            attempts,
            vec![SuiteResult::new("s", "s.yaml", 0.0, vec![case])],
        )
    }

    // Regression: with `--repeat 3` against a baseline run once, the case's
    // duration (a sum over attempts) tripled and was reported as a
    // regression though every attempt took as long as before.
    #[test]
    fn cost_and_duration_compare_per_attempt_whatever_the_repeat() {
        let limits = Thresholds::default();
        let found = regressions(&timed(1, 1000, 0.01), &timed(3, 1000, 0.01), &limits);
        assert!(found.is_empty(), "{found:?}");
        let found = regressions(&timed(3, 1000, 0.01), &timed(1, 2500, 0.02), &limits);
        let kinds: Vec<&str> = found.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(kinds, ["cost", "duration"], "{found:?}");
        assert_eq!(
            found[1].message,
            "s: mean attempt duration 1.0s → 2.5s, up more than 100%"
        );
        assert_eq!(
            found[0].message,
            "s: cost per attempt $0.0100 → $0.0200, up more than 20%"
        );
    }
}
