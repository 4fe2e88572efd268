//! `--baseline FILE`: compare results with an earlier `results.json` and
//! name every regression: a case that passed and now does not, a suite pass
//! rate lower by more than a threshold, a suite's cost or mean duration up
//! by more than a threshold. Cases or suites missing from either side are
//! not regressions (a new case has nothing to regress from).

use super::results::{CaseStatus, Results, SuiteResult};

/// How much worse is still not a regression.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Absolute drop in a suite's pass rate (0.05 = five points).
    pub pass_rate_drop: f64,
    /// Relative increase of a suite's total cost (0.2 = +20%).
    pub cost_increase: f64,
    /// Relative increase of a suite's mean case duration (1.0 = twice as long).
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
pub fn regressions(baseline: &Results, current: &Results, limits: &Thresholds) -> Vec<String> {
    let mut found = Vec::new();
    for suite in &current.suites {
        let Some(before) = baseline.suites.iter().find(|s| s.name == suite.name) else {
            continue;
        };
        for case in &suite.cases {
            let was = before.cases.iter().find(|c| c.name == case.name);
            if let Some(was) = was
                && was.status == CaseStatus::Passed
                && case.status != CaseStatus::Passed
            {
                found.push(format!(
                    "{}/{}: passed in the baseline, {} now",
                    suite.name,
                    case.name,
                    case.status.as_str()
                ));
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
    found: &mut Vec<String>,
) {
    let name = &now.name;
    if before.pass_rate - now.pass_rate > limits.pass_rate_drop + 1e-9 {
        found.push(format!(
            "{name}: pass rate {:.1}% → {:.1}%, down more than {:.1} points",
            before.pass_rate * 100.0,
            now.pass_rate * 100.0,
            limits.pass_rate_drop * 100.0
        ));
    }
    if let (Some(was), Some(is)) = (before.cost_usd, now.cost_usd)
        && was > 0.0
        && is > was * (1.0 + limits.cost_increase)
    {
        found.push(format!(
            "{name}: cost ${was:.4} → ${is:.4}, up more than {:.0}%",
            limits.cost_increase * 100.0
        ));
    }
    let (was, is) = (before.mean_duration_ms as f64, now.mean_duration_ms as f64);
    if was > 0.0 && is > was * (1.0 + limits.duration_increase) {
        found.push(format!(
            "{name}: mean case duration {:.1}s → {:.1}s, up more than {:.0}%",
            was / 1000.0,
            is / 1000.0,
            limits.duration_increase * 100.0
        ));
    }
}
