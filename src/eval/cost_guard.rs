//! `--max-cost-usd`: what an evaluation may spend, checked twice.
//!
//! Before the run, [`estimate`] adds up what the selected cases are likely
//! to cost: a case's cost per attempt in the baseline when it has one, else
//! its cassettes' recorded token usage at the model's list price. The CLI
//! refuses to start when the estimate is over the limit. During the run,
//! [`CostGuard`] adds up what finished attempts cost and stops the
//! evaluation (through the same cancel signal as SIGINT) once the total
//! reaches the limit; what finished is kept. The estimate is a guide, the
//! guard is the limit: an attempt's own cost is only known when it ends, so
//! attempts in flight at that moment are stopped, not counted.

use std::sync::{Arc, Mutex};

use crate::agent::CancelTrigger;
use crate::provider::cassette::Cassette;
use crate::provider::pricing::builtin_price;

use super::engine::EvalObserver;
use super::results::{AttemptResult, Reuse};
use super::{Results, SuiteSpec};

/// What the selected cases are estimated to cost.
#[derive(Debug, Clone, PartialEq)]
pub struct CostEstimate {
    pub usd: f64,
    /// Case runs (a case against one model) with an estimate, and without one
    /// (no baseline cost, no cassette, or a model without a known price).
    pub estimated: usize,
    pub unknown: usize,
}

/// The estimate for `selected` `(suite, case)` positions run `repeat` times
/// against each of `models` (none: the cassettes' own model).
pub fn estimate(
    suites: &[SuiteSpec],
    selected: &[(usize, usize)],
    repeat: u32,
    models: &[String],
    baseline: Option<&Results>,
) -> CostEstimate {
    let mut out = CostEstimate {
        usd: 0.0,
        estimated: 0,
        unknown: 0,
    };
    let runs: Vec<Option<&str>> = if models.is_empty() {
        vec![None]
    } else {
        models.iter().map(|m| Some(m.as_str())).collect()
    };
    for &(s, c) in selected {
        let (suite, case) = (&suites[s], &suites[s].cases[c]);
        for model in &runs {
            let per_attempt = from_baseline(baseline, &suite.name, &case.name, *model)
                .or_else(|| from_cassettes(case, *model));
            match per_attempt {
                Some(usd) => {
                    out.usd += usd * f64::from(repeat.max(1));
                    out.estimated += 1;
                }
                None => out.unknown += 1,
            }
        }
    }
    out
}

/// The case's cost per attempt in the baseline.
fn from_baseline(
    baseline: Option<&Results>,
    suite: &str,
    case: &str,
    model: Option<&str>,
) -> Option<f64> {
    let case = baseline?
        .suites
        .iter()
        .find(|s| s.name == suite)?
        .cases
        .iter()
        .find(|c| c.name == case && (model.is_none() || c.model.as_deref() == model))?;
    let attempts = case.attempts.len();
    (attempts > 0).then_some(())?;
    Some(case.cost_usd? / attempts as f64)
}

/// The mean cost of the case's cassettes, their recorded usage priced at
/// `model`'s list price (`PROVIDER:NAME`), or at the recorded model's.
fn from_cassettes(case: &super::suite::CaseSpec, model: Option<&str>) -> Option<f64> {
    let files = if case.cassettes.is_empty() {
        std::slice::from_ref(&case.default_cassette)
    } else {
        case.cassettes.as_slice()
    };
    let mut total = 0.0;
    for file in files {
        let cassette = Cassette::read(file).ok()?;
        let name = model
            .and_then(|m| m.split_once(':').map(|(_, n)| n))
            .unwrap_or(&cassette.header.model);
        let price = builtin_price(name)?;
        total += cassette
            .exchanges
            .iter()
            .map(|e| price.cost(&e.exchange.response.usage))
            .sum::<f64>();
    }
    Some(total / files.len() as f64)
}

/// Adds up finished attempts' cost and stops the evaluation at the limit.
pub struct CostGuard {
    inner: Arc<dyn EvalObserver>,
    limit: f64,
    spent: Mutex<f64>,
    trigger: CancelTrigger,
}

impl CostGuard {
    pub fn new(inner: Arc<dyn EvalObserver>, limit: f64, trigger: CancelTrigger) -> CostGuard {
        CostGuard {
            inner,
            limit,
            spent: Mutex::new(0.0),
            trigger,
        }
    }

    /// What finished attempts cost so far.
    pub fn spent(&self) -> f64 {
        *self
            .spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the spending reached the limit.
    pub fn reached(&self) -> bool {
        self.spent() >= self.limit
    }
}

impl EvalObserver for CostGuard {
    fn planned(&self, reuse: &Reuse) {
        self.inner.planned(reuse);
    }

    fn started(&self, suite: &str, case: &str, attempt: u32) {
        self.inner.started(suite, case, attempt);
    }

    fn finished(&self, suite: &str, case: &str, result: &AttemptResult) {
        self.inner.finished(suite, case, result);
        let spent = {
            let mut spent = self
                .spent
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *spent += result.cost_usd.unwrap_or(0.0);
            *spent
        };
        if spent >= self.limit {
            self.trigger.cancel(format!(
                "stopped by --max-cost-usd {}: finished attempts cost ${spent:.4}",
                self.limit
            ));
        }
    }
}
