//! `--baseline FILE`: compare results with an earlier `results.json` and
//! name every regression: a case that passed and now does not, a suite pass
//! rate lower by more than a threshold, a suite's cost or mean duration up
//! by more than a threshold. Cases or suites missing from either side are
//! not regressions (a new case has nothing to regress from).
//!
//! With repeated attempts (either side ran a case two or more times) a pass
//! rate's drop is a regression only when it is significant (a one-sided
//! Fisher exact test at `--regression-confidence`, per case and per suite
//! with the attempts pooled), or when a case that passed every attempt now
//! fails every attempt. A drop that is not significant is a "possible
//! regression": reported, never failing the job. A single attempt on both
//! sides has no spread to test, and keeps "passed before, not now".

use serde::{Deserialize, Serialize};

use super::results::{CaseResult, CaseStatus, Results, SuiteResult};
use super::significance::{attempts_needed, fisher_drop_p};

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
    /// How a repeated pass rate was judged: `fisher_exact` (a significant
    /// one-sided Fisher exact test) or `all_failed` (passed every attempt,
    /// fails every attempt now); absent for single attempts and thresholds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// The one-sided Fisher exact p-value of the drop, with `test`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
}

/// How many attempts per case a suite would need for a drop to show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatAdvice {
    pub suite: String,
    /// The baseline's pass rate over its attempts (cases pooled).
    pub baseline_rate: f64,
    /// The drop to see, in rate (0.2 = twenty points).
    pub drop: f64,
    pub confidence: f64,
    pub power: f64,
    /// Attempts per case, in each run, by the normal approximation.
    pub attempts_needed: u32,
    /// `--repeat` of this run.
    pub repeat: u32,
    pub message: String,
}

/// What a comparison with the baseline found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// Fail the job.
    pub regressions: Vec<Regression>,
    /// Drops that are not significant: reported, the exit code unchanged.
    pub possible: Vec<Regression>,
    pub advice: Vec<RepeatAdvice>,
}

/// The drop [`RepeatAdvice`] sizes `--repeat` for, and with what power.
pub const ADVICE_DROP: f64 = 0.2;
pub const ADVICE_POWER: f64 = 0.8;

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
    /// How sure a repeated pass rate's drop must be to count (0.95: a
    /// one-sided p-value under 0.05).
    pub confidence: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            pass_rate_drop: 0.05,
            cost_increase: 0.2,
            duration_increase: 1.0,
            confidence: 0.95,
        }
    }
}

/// Every regression of `current` against `baseline`, one line each, naming
/// the suite (and case).
pub fn regressions(baseline: &Results, current: &Results, limits: &Thresholds) -> Vec<Regression> {
    compare(baseline, current, limits).regressions
}

/// The regressions, the possible regressions and the `--repeat` advice of
/// `current` against `baseline`.
pub fn compare(baseline: &Results, current: &Results, limits: &Thresholds) -> Comparison {
    let mut found = Comparison::default();
    for suite in &current.suites {
        let Some(before) = baseline.suites.iter().find(|s| s.name == suite.name) else {
            continue;
        };
        let mut pooled = Pooled::default();
        for case in &suite.cases {
            let was = before
                .cases
                .iter()
                .find(|c| c.name == case.name && c.model == case.model);
            let Some(was) = was else {
                continue;
            };
            pooled.add(was, case);
            let subject = match &case.model {
                Some(model) => format!("{}/{} [{model}]", suite.name, case.name),
                None => format!("{}/{}", suite.name, case.name),
            };
            let (bn, an) = (judged(was), judged(case));
            if (bn >= 2 || an >= 2) && bn > 0 && an > 0 {
                let drop = Drop {
                    subject: &subject,
                    before: (was.attempts_passed, bn),
                    after: (case.attempts_passed, an),
                };
                if let Some((regression, significant)) = drop.judge(limits.confidence) {
                    let regression = Regression {
                        suite: suite.name.clone(),
                        case: Some(case.name.clone()),
                        model: case.model.clone(),
                        kind: "case".to_string(),
                        ..regression
                    };
                    if significant {
                        found.regressions.push(regression);
                    } else {
                        found.possible.push(regression);
                    }
                }
                continue;
            }
            if was.status == CaseStatus::Passed && case.status != CaseStatus::Passed {
                found.regressions.push(Regression {
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
                    test: None,
                    p_value: None,
                });
            }
        }
        if pooled.repeated {
            let drop = Drop {
                subject: &suite.name,
                before: (pooled.before_passed, pooled.before_n),
                after: (pooled.after_passed, pooled.after_n),
            };
            if let Some((regression, significant)) = drop.judge(limits.confidence) {
                let regression = Regression {
                    suite: suite.name.clone(),
                    kind: "pass_rate".to_string(),
                    ..regression
                };
                if significant {
                    found.regressions.push(regression);
                } else {
                    found.possible.push(regression);
                }
            }
            suite_regressions(before, suite, limits, false, &mut found.regressions);
        } else {
            suite_regressions(before, suite, limits, true, &mut found.regressions);
        }
        if let Some(advice) = advice(&suite.name, &pooled, current.repeat, limits.confidence) {
            found.advice.push(advice);
        }
    }
    found
}

/// Attempts that reached a verdict.
fn judged(case: &CaseResult) -> u32 {
    case.attempts_passed + case.attempts_failed
}

/// A suite's attempts over the cases both runs have.
#[derive(Debug, Default)]
struct Pooled {
    before_passed: u32,
    before_n: u32,
    after_passed: u32,
    after_n: u32,
    /// A case ran two or more attempts on either side.
    repeated: bool,
}

impl Pooled {
    fn add(&mut self, was: &CaseResult, now: &CaseResult) {
        self.before_passed += was.attempts_passed;
        self.before_n += judged(was);
        self.after_passed += now.attempts_passed;
        self.after_n += judged(now);
        self.repeated |= judged(was) >= 2 || judged(now) >= 2;
    }
}

/// A pass rate before and after, as passed of attempts.
struct Drop<'a> {
    subject: &'a str,
    before: (u32, u32),
    after: (u32, u32),
}

impl Drop<'_> {
    /// `None` when the rate did not drop; else the regression (suite, case
    /// and kind left for the caller) and whether it counts.
    fn judge(&self, confidence: f64) -> Option<(Regression, bool)> {
        let ((bp, bn), (ap, an)) = (self.before, self.after);
        if bn == 0 || an == 0 || u64::from(ap) * u64::from(bn) >= u64::from(bp) * u64::from(an) {
            return None;
        }
        let p = fisher_drop_p(bp, bn, ap, an);
        let alpha = 1.0 - confidence;
        // Strictly under the level: `1 - 0.95` is 0.05000000000000004 in
        // binary, and p = 0.05 exactly is not under 0.05.
        let significant = p < alpha - 1e-12;
        let all_to_none = bp == bn && ap == 0;
        let level = format!("{}%", percent(confidence));
        let figures = format!("{} {bp}/{bn} → {ap}/{an}", self.subject);
        let test = format!("one-sided Fisher exact p = {}", p_value(p));
        let message = if significant {
            format!("{figures}: a significant drop ({test} < {})", trim(alpha))
        } else if all_to_none {
            format!(
                "{figures}: passed every attempt, fails every attempt now ({test}; all to none always counts)"
            )
        } else {
            format!("{figures}: possible regression, not significant at {level} ({test})")
        };
        let regression = Regression {
            suite: String::new(),
            case: None,
            model: None,
            kind: String::new(),
            before: format!("{bp}/{bn} attempts passed"),
            after: format!("{ap}/{an} attempts passed"),
            message,
            test: Some(
                if all_to_none && !significant {
                    "all_failed"
                } else {
                    "fisher_exact"
                }
                .to_string(),
            ),
            p_value: Some(p),
        };
        Some((regression, significant || all_to_none))
    }
}

/// `0.5000`, or `5.41e-6` for small ones.
pub fn p_value(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.2e}")
    } else {
        format!("{p:.4}")
    }
}

/// `95`, or `99.5`.
fn percent(share: f64) -> String {
    trim(share * 100.0)
}

/// A figure without trailing zeros: `0.05`, `95`.
fn trim(figure: f64) -> String {
    let text = format!("{figure:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The advice for a suite whose cases ran too few attempts to see a
/// 20-point drop from the baseline's pooled pass rate.
fn advice(suite: &str, pooled: &Pooled, repeat: u32, confidence: f64) -> Option<RepeatAdvice> {
    if pooled.before_n == 0 {
        return None;
    }
    let rate = f64::from(pooled.before_passed) / f64::from(pooled.before_n);
    let target = (rate - ADVICE_DROP).max(0.0);
    let needed = attempts_needed(rate, target, confidence, ADVICE_POWER)?;
    if needed <= repeat {
        return None;
    }
    let message = format!(
        "{suite}: to see a case's pass rate drop from the baseline's {}% to {}% at {}% \
         confidence with {}% power takes about {needed} attempts per case in each run (normal \
         approximation to the one-sided two-proportion test); this run had --repeat {repeat}",
        percent(rate),
        percent(target),
        percent(confidence),
        percent(ADVICE_POWER),
    );
    Some(RepeatAdvice {
        suite: suite.to_string(),
        baseline_rate: rate,
        drop: rate - target,
        confidence,
        power: ADVICE_POWER,
        attempts_needed: needed,
        repeat,
        message,
    })
}

/// The suite's cost and duration against their thresholds, and with
/// `pass_rate` (single attempts) its pass rate too.
fn suite_regressions(
    before: &SuiteResult,
    now: &SuiteResult,
    limits: &Thresholds,
    pass_rate: bool,
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
            test: None,
            p_value: None,
        });
    };
    if pass_rate && before.pass_rate - now.pass_rate > limits.pass_rate_drop + 1e-9 {
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

    /// One suite of cases given as (name, passed, attempts).
    fn repeated(cases: &[(&str, u32, u32)]) -> Results {
        let cases = cases
            .iter()
            .enumerate()
            .map(|(i, (name, passed, n))| {
                let mut case = CaseResult::new(name, i, 1.0, Vec::new());
                case.attempts_passed = *passed;
                case.attempts_failed = n - passed;
                case.k = *n;
                case.status = if passed == n {
                    CaseStatus::Passed
                } else {
                    CaseStatus::Failed
                };
                case
            })
            .collect::<Vec<CaseResult>>();
        let repeat = cases.iter().map(|c| c.k).max().unwrap_or(1);
        Results::new(
            None,
            repeat,
            vec![SuiteResult::new("s", "s.yaml", 0.0, cases)],
        )
    }

    #[test]
    fn a_drop_within_chance_is_only_possible() {
        let found = compare(
            &repeated(&[("a", 3, 3)]),
            &repeated(&[("a", 2, 3)]),
            &Thresholds::default(),
        );
        assert!(found.regressions.is_empty(), "{found:?}");
        // The case, and the suite (its only case, pooled).
        assert_eq!(found.possible.len(), 2, "{found:?}");
        let case = &found.possible[0];
        assert_eq!(case.test.as_deref(), Some("fisher_exact"));
        assert!((case.p_value.unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(
            case.message,
            "s/a 3/3 → 2/3: possible regression, not significant at 95% (one-sided Fisher \
             exact p = 0.5000)"
        );
        assert_eq!(
            (case.before.as_str(), case.after.as_str()),
            ("3/3 attempts passed", "2/3 attempts passed")
        );
        // 27 attempts to see 100% → 80% at 95% with 80% power.
        assert_eq!(found.advice.len(), 1);
        assert_eq!(found.advice[0].attempts_needed, 27);
    }

    #[test]
    fn a_significant_drop_and_all_to_none_are_regressions() {
        let found = compare(
            &repeated(&[("a", 10, 10)]),
            &repeated(&[("a", 0, 10)]),
            &Thresholds::default(),
        );
        assert!(found.possible.is_empty(), "{found:?}");
        let kinds: Vec<&str> = found.regressions.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(kinds, ["case", "pass_rate"]);
        let p = found.regressions[0].p_value.unwrap();
        assert!((p - 1.0 / 184_756.0).abs() < 1e-15, "{p}");
        assert_eq!(found.regressions[0].test.as_deref(), Some("fisher_exact"));
        // 3/3 → 0/3: p = 0.05, not under 0.05, but all to none counts.
        let found = compare(
            &repeated(&[("a", 3, 3), ("b", 3, 3)]),
            &repeated(&[("a", 0, 3), ("b", 3, 3)]),
            &Thresholds::default(),
        );
        assert_eq!(found.regressions.len(), 1, "{found:?}");
        assert_eq!(found.regressions[0].test.as_deref(), Some("all_failed"));
        assert_eq!(
            found.regressions[0].message,
            "s/a 3/3 → 0/3: passed every attempt, fails every attempt now (one-sided Fisher \
             exact p = 0.0500; all to none always counts)"
        );
        // The suite: 6/6 → 3/6, p = 0.0909, possible only.
        assert_eq!(found.possible.len(), 1, "{found:?}");
        assert_eq!(found.possible[0].kind, "pass_rate");
    }

    #[test]
    fn a_stricter_confidence_needs_a_bigger_drop() {
        let limits = Thresholds {
            confidence: 0.99,
            ..Thresholds::default()
        };
        // 10/10 → 6/10: p = 0.0433, significant at 95%, not at 99%.
        let (before, after) = (repeated(&[("a", 10, 10)]), repeated(&[("a", 6, 10)]));
        assert_eq!(
            compare(&before, &after, &Thresholds::default())
                .regressions
                .len(),
            2
        );
        let found = compare(&before, &after, &limits);
        assert!(found.regressions.is_empty(), "{found:?}");
        assert_eq!(found.possible.len(), 2);
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
