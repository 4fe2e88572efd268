//! Numbers and durations in a job: the budget, turn limits and timeouts.
//! They arrive as any scalar so a wrong type is reported here, with the
//! other semantic problems, instead of stopping the parse.

use std::time::Duration;

use serde_saphyr::Spanned;

use super::Checker;
use crate::job::BudgetSpec;
use crate::job::load::pos_of;
use crate::job::raw::{RawBudget, Scalar};

impl Checker<'_> {
    pub(super) fn budget(&mut self, raw: &RawBudget) -> BudgetSpec {
        let int = |this: &mut Self, v: &Option<Spanned<Scalar>>, key, max| {
            v.as_ref().and_then(|v| this.positive(v, key, max))
        };
        BudgetSpec {
            max_turns: int(self, &raw.max_turns, "max_turns", u32::MAX.into()).map(|n| n as u32),
            max_tool_calls: int(self, &raw.max_tool_calls, "max_tool_calls", u32::MAX.into())
                .map(|n| n as u32),
            max_tokens: int(self, &raw.max_tokens, "max_tokens", u64::MAX),
            max_cost_usd: raw.max_cost_usd.as_ref().and_then(|v| self.cost(v)),
            timeout: raw
                .timeout
                .as_ref()
                .and_then(|v| self.duration(v, "timeout")),
        }
    }

    /// A whole number from 1 to `max`.
    pub(super) fn positive(&mut self, value: &Spanned<Scalar>, key: &str, max: u64) -> Option<u64> {
        if let Scalar::Int(n) = value.value
            && n >= 1
            && n <= i128::from(max)
        {
            return u64::try_from(n).ok();
        }
        let pos = pos_of(&self.r, value);
        let found = match &value.value {
            Scalar::Int(n) => format!("`{n}`"),
            other => format!("{} `{}`", other.kind(), other.text()),
        };
        self.r.error(
            pos,
            format!("`{key}` must be a whole number from 1 to {max}, found {found}"),
        );
        None
    }

    pub(super) fn cost(&mut self, value: &Spanned<Scalar>) -> Option<f64> {
        let pos = pos_of(&self.r, value);
        value
            .value
            .positive_usd("max_cost_usd")
            .map_err(|e| self.r.error(pos, e.to_string()))
            .ok()
    }

    /// A positive duration: `15m`, `1h30m`, `500ms`, or whole seconds.
    pub(super) fn duration(&mut self, value: &Spanned<Scalar>, key: &str) -> Option<Duration> {
        let pos = pos_of(&self.r, value);
        value
            .value
            .positive_duration(key)
            .map_err(|e| self.r.error(pos, e.to_string()))
            .ok()
    }
}
