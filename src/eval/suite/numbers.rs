//! Numbers in a suite file: rates, assertion limits and durations. A
//! case's budget is not checked here but by the job's own checks (see
//! `check::SuiteChecker::case_budget`).
//! They arrive as any scalar so a wrong type is reported with the other
//! semantic problems, at its own position.

use std::time::Duration;

use serde_saphyr::Spanned;

use super::check::SuiteChecker;
use crate::job::raw::Scalar;

impl SuiteChecker<'_> {
    /// A share from 0 to 1 (`0.8`), for `min_pass_rate`.
    pub(super) fn rate(&mut self, value: &Spanned<Scalar>, key: &str) -> Option<f64> {
        match number(&value.value) {
            Some(n) if (0.0..=1.0).contains(&n) => Some(n),
            _ => {
                let pos = self.r.pos(&value.referenced);
                self.r.error(
                    pos,
                    format!(
                        "`{key}` must be a number from 0 to 1 such as 0.8, found {} `{}`",
                        value.value.kind(),
                        value.value.text()
                    ),
                );
                None
            }
        }
    }

    /// A whole number from 1 to `max`; `at` gives the position.
    pub(super) fn whole<T>(
        &mut self,
        value: &Scalar,
        at: &Spanned<T>,
        key: &str,
        max: u64,
    ) -> Option<u64> {
        if let Scalar::Int(n) = value
            && *n >= 1
            && *n <= i128::from(max)
        {
            return u64::try_from(*n).ok();
        }
        let pos = self.r.pos(&at.referenced);
        self.r.error(
            pos,
            format!(
                "`{key}` must be a whole number from 1 to {max}, found {} `{}`",
                value.kind(),
                value.text()
            ),
        );
        None
    }

    /// A positive number of US dollars, in the job's own words.
    pub(super) fn cost<T>(&mut self, value: &Scalar, at: &Spanned<T>) -> Option<f64> {
        let pos = self.r.pos(&at.referenced);
        value
            .positive_usd("max_cost_usd")
            .map_err(|e| self.r.error(pos, e.to_string()))
            .ok()
    }

    /// A positive duration: `15m`, `1h30m`, `500ms`, or whole seconds.
    pub(super) fn duration<T>(
        &mut self,
        value: &Scalar,
        at: &Spanned<T>,
        key: &str,
    ) -> Option<Duration> {
        let pos = self.r.pos(&at.referenced);
        value
            .positive_duration(key)
            .map_err(|e| self.r.error(pos, e.to_string()))
            .ok()
    }
}

fn number(value: &Scalar) -> Option<f64> {
    match value {
        Scalar::Int(n) => Some(*n as f64),
        Scalar::Float(f) => Some(*f),
        _ => None,
    }
}
