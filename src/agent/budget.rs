//! The run's budget: what has been spent and whether the next model call or
//! tool batch may go ahead.
//!
//! Checked *before* spending, so a run stops cleanly between steps rather
//! than in the middle of one. The wall-clock `timeout` is also enforced from
//! outside (the agent phase runs under a deadline), because a single tool or
//! model call can outlast it.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::event::{BudgetInEffect, BudgetLimit};
use crate::job::BudgetSpec;
use crate::provider::Usage;
use crate::provider::pricing::Price;

/// Turns allowed when neither the job nor the skill sets `max_turns`:
/// nobody is watching, so a run never goes on without a limit.
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// A limit that ran out: which one, how much was used, what was allowed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Exceeded {
    pub limit: BudgetLimit,
    pub used: f64,
    pub max: f64,
}

impl Exceeded {
    pub fn reason(&self) -> String {
        match self.limit {
            BudgetLimit::Timeout => format!("budget exceeded: timeout of {:.0}s reached", self.max),
            limit => format!(
                "budget exceeded: {} is {} and {} were used",
                limit.key(),
                self.max,
                self.used
            ),
        }
    }
}

/// Limits and what was spent against them. Serializable as part of the
/// loop's state; the running clock is not, but the time it had counted when
/// it was saved is (see [`BudgetTracker::fold_time`]): a loaded tracker goes
/// on from there, so `timeout` holds across a resume.
#[derive(Debug, Serialize, Deserialize)]
pub struct BudgetTracker {
    max_turns: u32,
    max_tool_calls: Option<u32>,
    max_tokens: Option<u64>,
    max_cost_usd: Option<f64>,
    timeout: Option<Duration>,
    #[serde(skip, default = "Instant::now")]
    started: Instant,
    /// Time counted before `started` (earlier parts of a resumed run).
    #[serde(default)]
    earlier: Duration,
    /// The model's price; `None`: cost unknown, and `max_cost_usd` cannot hold.
    price: Option<Price>,
    /// What the priced calls cost; a lower bound when some went unpriced.
    cost_usd: f64,
    /// Model calls whose server reported no usage: their cost is unknown.
    pub calls_without_usage: u32,
    pub turns: u32,
    pub tool_calls: u32,
    pub usage: Usage,
}

impl BudgetTracker {
    /// `skill_max_turns` applies when the job sets no `max_turns`.
    pub fn new(spec: &BudgetSpec, skill_max_turns: Option<u32>) -> Self {
        BudgetTracker {
            max_turns: spec
                .max_turns
                .or(skill_max_turns)
                .unwrap_or(DEFAULT_MAX_TURNS),
            max_tool_calls: spec.max_tool_calls,
            max_tokens: spec.max_tokens,
            max_cost_usd: spec.max_cost_usd,
            timeout: spec.timeout,
            started: Instant::now(),
            earlier: Duration::ZERO,
            price: None,
            cost_usd: 0.0,
            calls_without_usage: 0,
            turns: 0,
            tool_calls: 0,
            usage: Usage::default(),
        }
    }

    /// Prices model calls with `price`, so cost is counted and `max_cost_usd` holds.
    pub fn with_price(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    /// What the model calls so far cost; `None` when the price is unknown
    /// or a call's usage was not reported (its cost is not zero, just unknown).
    pub fn cost_usd(&self) -> Option<f64> {
        self.counted_cost()
            .filter(|_| self.calls_without_usage == 0)
    }

    /// What the calls with a known cost add up to; what `max_cost_usd` holds against.
    fn counted_cost(&self) -> Option<f64> {
        self.price.map(|_| self.cost_usd)
    }

    pub fn elapsed(&self) -> Duration {
        self.earlier + self.started.elapsed()
    }

    /// Count `spent` (time the run spent before the tracker started) as
    /// already used.
    pub fn count_time(&mut self, spent: Duration) {
        self.earlier += spent;
    }

    /// Count the time so far into the saved part of the tracker, so that a
    /// checkpoint taken now carries it.
    pub fn fold_time(&mut self) {
        let now = Instant::now();
        self.earlier += now.duration_since(self.started);
        self.started = now;
    }

    /// This tracker's spending under the limits and price of `fresh` (the
    /// budget of the job as loaded for a resume, flags included).
    pub fn with_limits_of(self, fresh: BudgetTracker) -> BudgetTracker {
        BudgetTracker {
            max_turns: fresh.max_turns,
            max_tool_calls: fresh.max_tool_calls,
            max_tokens: fresh.max_tokens,
            max_cost_usd: fresh.max_cost_usd,
            timeout: fresh.timeout,
            price: fresh.price,
            started: Instant::now(),
            ..self
        }
    }

    /// The limits, as the trace reports them.
    pub fn in_effect(&self) -> BudgetInEffect {
        BudgetInEffect {
            max_turns: self.max_turns,
            max_tool_calls: self.max_tool_calls,
            max_tokens: self.max_tokens,
            max_cost_usd: self.max_cost_usd,
            timeout_secs: self.timeout.map(|t| t.as_secs_f64()),
        }
    }

    /// Time left before `timeout`, if there is one.
    pub fn remaining_time(&self) -> Option<Duration> {
        self.timeout.map(|t| t.saturating_sub(self.elapsed()))
    }

    /// The timeout as an [`Exceeded`], for when the deadline fires mid-call.
    pub fn timeout_exceeded(&self) -> Exceeded {
        let max = self.timeout.unwrap_or_default().as_secs_f64();
        Exceeded {
            limit: BudgetLimit::Timeout,
            used: self.elapsed().as_secs_f64(),
            max,
        }
    }

    /// May another model call go ahead?
    pub fn check_model_call(&self) -> Result<(), Exceeded> {
        self.check_time()?;
        if self.turns >= self.max_turns {
            return Err(Exceeded {
                limit: BudgetLimit::MaxTurns,
                used: f64::from(self.turns),
                max: f64::from(self.max_turns),
            });
        }
        self.check_spend()
    }

    /// May a sub-agent's model call go ahead? It counts its own turns
    /// (`task.max_turns`); the run's time, tokens and cost are shared.
    pub fn check_spend(&self) -> Result<(), Exceeded> {
        self.check_time()?;
        if let Some(max) = self.max_tokens
            && self.usage.total() >= max
        {
            return Err(Exceeded {
                limit: BudgetLimit::MaxTokens,
                used: self.usage.total() as f64,
                max: max as f64,
            });
        }
        if let (Some(max), Some(cost)) = (self.max_cost_usd, self.counted_cost())
            && cost >= max
        {
            return Err(Exceeded {
                limit: BudgetLimit::MaxCostUsd,
                used: cost,
                max,
            });
        }
        Ok(())
    }

    /// Is there room for one extra model call of about `tokens` (input and
    /// output) and still one more turn after it? Compaction asks before it
    /// spends a call on a summary.
    pub fn room_for_extra_call(&self, tokens: u64, output_tokens: u64) -> bool {
        if self.check_model_call().is_err() || self.turns + 2 > self.max_turns {
            return false;
        }
        if let Some(max) = self.max_tokens
            && self.usage.total() + tokens + output_tokens >= max
        {
            return false;
        }
        if let (Some(max), Some(price)) = (self.max_cost_usd, self.price) {
            let extra = price.cost(&Usage {
                input_tokens: tokens,
                output_tokens,
                ..Usage::default()
            });
            if self.cost_usd + extra >= max {
                return false;
            }
        }
        true
    }

    /// May a batch of `calls` tool calls go ahead?
    pub fn check_tool_batch(&self, calls: u32) -> Result<(), Exceeded> {
        self.check_time()?;
        if let Some(max) = self.max_tool_calls
            && self.tool_calls + calls > max
        {
            return Err(Exceeded {
                limit: BudgetLimit::MaxToolCalls,
                used: f64::from(self.tool_calls + calls),
                max: f64::from(max),
            });
        }
        Ok(())
    }

    fn check_time(&self) -> Result<(), Exceeded> {
        match self.timeout {
            Some(t) if self.elapsed() >= t => Err(self.timeout_exceeded()),
            _ => Ok(()),
        }
    }

    /// Counts a finished model call; returns its cost when the price and
    /// the usage are known. A server that reports no usage at all leaves
    /// every figure at zero: that call's cost is unknown, not free.
    pub fn record_model_call(&mut self, usage: &Usage) -> Option<f64> {
        self.turns += 1;
        self.record_usage(usage)
    }

    /// Counts a sub-agent's model call: its tokens and cost, not a turn of the run.
    pub fn record_usage(&mut self, usage: &Usage) -> Option<f64> {
        if *usage == Usage::default() {
            self.calls_without_usage += 1;
            return None;
        }
        self.usage.input_tokens += usage.input_tokens;
        self.usage.output_tokens += usage.output_tokens;
        self.usage.cache_read_tokens += usage.cache_read_tokens;
        self.usage.cache_write_tokens += usage.cache_write_tokens;
        self.usage.reasoning_tokens += usage.reasoning_tokens;
        let cost = self.price.map(|price| price.cost(usage));
        self.cost_usd += cost.unwrap_or(0.0);
        cost
    }

    pub fn record_tool_calls(&mut self, calls: u32) {
        self.tool_calls += calls;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_tracker_keeps_what_was_spent_under_the_new_limits() {
        let spec = |turns| BudgetSpec {
            max_turns: Some(turns),
            timeout: Some(Duration::from_secs(3600)),
            ..Default::default()
        };
        let mut b = BudgetTracker::new(&spec(2), None);
        b.record_model_call(&Usage::default());
        b.record_model_call(&Usage::default());
        assert!(b.check_model_call().is_err());
        b.earlier = Duration::from_secs(600);
        b.fold_time();
        let saved: BudgetTracker =
            serde_json::from_value(serde_json::to_value(&b).unwrap()).unwrap();
        assert!(
            saved.elapsed() >= Duration::from_secs(600),
            "the clock is saved"
        );
        let resumed = saved.with_limits_of(BudgetTracker::new(&spec(5), None));
        assert_eq!(resumed.turns, 2);
        assert!(resumed.check_model_call().is_ok());
        assert_eq!(resumed.in_effect().max_turns, 5);
        assert!(resumed.remaining_time().unwrap() <= Duration::from_secs(3000));
    }

    #[test]
    fn turns_run_out_before_the_next_call() {
        let mut b = BudgetTracker::new(
            &BudgetSpec {
                max_turns: Some(2),
                ..Default::default()
            },
            None,
        );
        assert!(b.check_model_call().is_ok());
        b.record_model_call(&Usage::default());
        assert!(b.check_model_call().is_ok());
        b.record_model_call(&Usage::default());
        let e = b.check_model_call().unwrap_err();
        assert_eq!(e.limit, BudgetLimit::MaxTurns);
    }

    #[test]
    fn a_sub_agents_calls_spend_tokens_but_not_the_runs_turns() {
        let mut b = BudgetTracker::new(
            &BudgetSpec {
                max_turns: Some(1),
                max_tokens: Some(100),
                ..Default::default()
            },
            None,
        );
        b.record_model_call(&Usage::default());
        assert_eq!(
            b.check_model_call().unwrap_err().limit,
            BudgetLimit::MaxTurns
        );
        assert!(b.check_spend().is_ok(), "turns are the sub-agent's own");
        b.record_usage(&Usage {
            input_tokens: 90,
            output_tokens: 10,
            ..Default::default()
        });
        assert_eq!(b.turns, 1);
        assert_eq!(b.check_spend().unwrap_err().limit, BudgetLimit::MaxTokens);
    }

    #[test]
    fn tool_batch_that_would_overshoot_is_refused() {
        let mut b = BudgetTracker::new(
            &BudgetSpec {
                max_tool_calls: Some(3),
                ..Default::default()
            },
            None,
        );
        b.record_tool_calls(2);
        assert!(b.check_tool_batch(1).is_ok());
        assert_eq!(
            b.check_tool_batch(2).unwrap_err().limit,
            BudgetLimit::MaxToolCalls
        );
    }

    #[test]
    fn skill_turns_apply_only_when_the_job_sets_none() {
        let b = BudgetTracker::new(&BudgetSpec::default(), Some(7));
        assert_eq!(b.max_turns, 7);
        let b = BudgetTracker::new(
            &BudgetSpec {
                max_turns: Some(3),
                ..Default::default()
            },
            Some(7),
        );
        assert_eq!(b.max_turns, 3);
        let b = BudgetTracker::new(&BudgetSpec::default(), None);
        assert_eq!(b.max_turns, DEFAULT_MAX_TURNS);
    }

    #[test]
    fn tokens_count_input_and_output() {
        let mut b = BudgetTracker::new(
            &BudgetSpec {
                max_tokens: Some(100),
                ..Default::default()
            },
            None,
        );
        b.record_model_call(&Usage {
            reasoning_tokens: 0,
            input_tokens: 60,
            output_tokens: 40,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        });
        assert_eq!(
            b.check_model_call().unwrap_err().limit,
            BudgetLimit::MaxTokens
        );
    }

    #[test]
    fn cost_is_unknown_without_a_price_and_limited_with_one() {
        let spec = BudgetSpec {
            max_cost_usd: Some(0.01),
            ..Default::default()
        };
        let usage = Usage {
            input_tokens: 10_000,
            output_tokens: 1_000,
            ..Default::default()
        };
        let mut unknown = BudgetTracker::new(&spec, None);
        assert_eq!(unknown.record_model_call(&usage), None);
        assert_eq!(unknown.cost_usd(), None);
        assert!(unknown.check_model_call().is_ok());

        let price = Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        };
        let mut priced = BudgetTracker::new(&spec, None).with_price(Some(price));
        assert_eq!(priced.cost_usd(), Some(0.0));
        let cost = priced.record_model_call(&usage).unwrap();
        assert!((cost - 0.012).abs() < 1e-12);
        let exceeded = priced.check_model_call().unwrap_err();
        assert_eq!(exceeded.limit, BudgetLimit::MaxCostUsd);
        assert!((exceeded.used - 0.012).abs() < 1e-12);
    }

    #[test]
    fn a_call_without_usage_makes_the_cost_unknown_not_zero() {
        // A server that sends no usage left every figure at zero, and the
        // call was priced (and reported) at $0.
        let price = Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        };
        let spec = BudgetSpec {
            max_cost_usd: Some(0.01),
            ..Default::default()
        };
        let mut b = BudgetTracker::new(&spec, None).with_price(Some(price));
        assert_eq!(b.record_model_call(&Usage::default()), None);
        assert_eq!(b.calls_without_usage, 1);
        assert_eq!(b.cost_usd(), None);
        assert_eq!(b.turns, 1);
        // The calls that did report still count against max_cost_usd.
        let usage = Usage {
            input_tokens: 10_000,
            output_tokens: 1_000,
            ..Default::default()
        };
        assert!(b.record_model_call(&usage).is_some());
        assert_eq!(b.cost_usd(), None);
        assert_eq!(
            b.check_model_call().unwrap_err().limit,
            BudgetLimit::MaxCostUsd
        );
    }
}
