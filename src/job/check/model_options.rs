//! How model calls are made, beyond which model: `model.stream`,
//! `model.retry` and `model.price`. Each wrong value is reported at its own
//! line and column; what the values do is the provider layer's business.

use serde_saphyr::Spanned;

use super::Checker;
use crate::job::load::pos_of;
use crate::job::raw::{RawModel, RawPrice, RawRetry, Scalar};
use crate::job::{CompactWith, ContextSpec, PriceSpec, RetrySpec};

/// Windows outside this range are typos (a window of 500 tokens cannot
/// hold the system prompt; no model reads 100 million).
const MIN_CONTEXT_WINDOW: u64 = 1_000;
const MAX_CONTEXT_WINDOW: u64 = 100_000_000;

/// Attempts above this are almost certainly a typo (and would keep a job
/// waiting for a dead server for a long time).
const MAX_ATTEMPTS: u64 = 20;

pub(super) struct ModelOptions {
    pub stream: bool,
    pub retry: RetrySpec,
    pub price: Option<PriceSpec>,
    pub context: ContextSpec,
}

impl Checker<'_> {
    pub(super) fn model_options(&mut self, raw: Option<&RawModel>) -> ModelOptions {
        let stream = raw
            .and_then(|m| m.stream.as_ref())
            .and_then(|s| self.boolean(s, "stream"))
            .unwrap_or(true);
        let retry = raw
            .and_then(|m| m.retry.as_ref())
            .map(|r| self.retry(r))
            .unwrap_or_default();
        let price = raw
            .and_then(|m| m.price.as_ref())
            .and_then(|p| self.price(p));
        let context = self.context(raw);
        ModelOptions {
            stream,
            retry,
            price,
            context,
        }
    }

    /// `model.context_window`, `model.compact_at` (a share such as `0.8` or
    /// `80%`, from 10% to 95%) and `model.compact_with` (`summary` or `digest`).
    fn context(&mut self, raw: Option<&RawModel>) -> ContextSpec {
        let mut spec = ContextSpec::default();
        if let Some(v) = raw.and_then(|m| m.context_window.as_ref()) {
            match self.positive(v, "context_window", MAX_CONTEXT_WINDOW) {
                Some(n) if n < MIN_CONTEXT_WINDOW => {
                    let pos = pos_of(&self.r, v);
                    self.r.error(
                        pos,
                        format!(
                            "`context_window` must be at least {MIN_CONTEXT_WINDOW} tokens, \
                             found `{n}`; it is the model's whole context window, e.g. `200000`"
                        ),
                    );
                }
                Some(n) => spec.window = Some(n),
                None => {}
            }
        }
        if let Some(v) = raw.and_then(|m| m.compact_at.as_ref()) {
            match share(&v.value) {
                Some(share) if (0.1..=0.95).contains(&share) => spec.high_water = share,
                _ => {
                    let pos = pos_of(&self.r, v);
                    self.r.error(
                        pos,
                        format!(
                            "`compact_at` must be a share of the context window from 10% to \
                             95%, written `0.8` or `80%`, found {} `{}`",
                            v.value.kind(),
                            v.value.text()
                        ),
                    );
                }
            }
        }
        if let Some(v) = raw.and_then(|m| m.compact_with.as_ref()) {
            match v.value.trim() {
                "summary" => spec.method = CompactWith::Summary,
                "digest" => spec.method = CompactWith::Digest,
                other => {
                    let pos = pos_of(&self.r, v);
                    self.r.error(
                        pos,
                        format!(
                            "`compact_with` must be `summary` (the model summarises older turns) \
                             or `digest` (a list of the calls made, no extra model call), found \
                             `{other}`"
                        ),
                    );
                }
            }
        }
        spec
    }

    /// An optional `true`/`false` key: absent is `false`; anything else is an error (and `false`).
    pub(super) fn optional_boolean(&mut self, value: Option<&Spanned<Scalar>>, key: &str) -> bool {
        value.and_then(|v| self.boolean(v, key)).unwrap_or(false)
    }

    /// `true` or `false`; anything else is an error at its position.
    pub(super) fn boolean(&mut self, value: &Spanned<Scalar>, key: &str) -> Option<bool> {
        if let Scalar::Bool(b) = value.value {
            return Some(b);
        }
        let pos = pos_of(&self.r, value);
        self.r.error(
            pos,
            format!(
                "`{key}` must be `true` or `false`, found {} `{}`",
                value.value.kind(),
                value.value.text()
            ),
        );
        None
    }

    fn retry(&mut self, raw: &Spanned<RawRetry>) -> RetrySpec {
        let r = &raw.value;
        let attempts = |this: &mut Self, v: &Option<Spanned<Scalar>>, key| {
            v.as_ref()
                .and_then(|v| this.positive(v, key, MAX_ATTEMPTS))
                .map(|n| n as u32)
        };
        let spec = RetrySpec {
            max_attempts_connect: attempts(self, &r.max_attempts_connect, "max_attempts_connect"),
            max_attempts_status: attempts(self, &r.max_attempts_status, "max_attempts_status"),
            initial_backoff: r
                .initial_backoff
                .as_ref()
                .and_then(|v| self.duration(v, "initial_backoff")),
            max_backoff: r
                .max_backoff
                .as_ref()
                .and_then(|v| self.duration(v, "max_backoff")),
        };
        if let (Some(initial), Some(max), Some(at)) = (
            spec.initial_backoff,
            spec.max_backoff,
            r.max_backoff.as_ref(),
        ) && initial > max
        {
            let pos = pos_of(&self.r, at);
            self.r.error(
                pos,
                "`max_backoff` is shorter than `initial_backoff`; the cap must be at least the \
                 first wait",
            );
        }
        spec
    }

    fn price(&mut self, raw: &Spanned<RawPrice>) -> Option<PriceSpec> {
        let p = &raw.value;
        let mut rate =
            |v: &Option<Spanned<Scalar>>, key: &str| v.as_ref().and_then(|v| self.rate(v, key));
        let input = rate(&p.input_per_mtok, "input_per_mtok");
        let output = rate(&p.output_per_mtok, "output_per_mtok");
        let cache_read = rate(&p.cache_read_per_mtok, "cache_read_per_mtok");
        let cache_write = rate(&p.cache_write_per_mtok, "cache_write_per_mtok");
        if p.input_per_mtok.is_none() || p.output_per_mtok.is_none() {
            let pos = pos_of(&self.r, raw);
            self.r.error(
                pos,
                "`price` needs both `input_per_mtok` and `output_per_mtok` (US dollars per \
                 million tokens), e.g. `price: {input_per_mtok: 3, output_per_mtok: 15}`",
            );
            return None;
        }
        Some(PriceSpec {
            input_per_mtok: input?,
            output_per_mtok: output?,
            cache_read_per_mtok: cache_read,
            cache_write_per_mtok: cache_write,
        })
    }

    /// Dollars per million tokens: a number, zero or more.
    fn rate(&mut self, value: &Spanned<Scalar>, key: &str) -> Option<f64> {
        let number = match value.value {
            Scalar::Int(n) => Some(n as f64),
            Scalar::Float(f) => Some(f),
            _ => None,
        };
        match number {
            Some(n) if n.is_finite() && n >= 0.0 => Some(n),
            _ => {
                let pos = pos_of(&self.r, value);
                self.r.error(
                    pos,
                    format!(
                        "`{key}` must be a number of US dollars per million tokens, zero or more, \
                         found {} `{}`",
                        value.value.kind(),
                        value.value.text()
                    ),
                );
                None
            }
        }
    }
}

/// `0.8` or `"80%"` as a share; `None` for anything else.
fn share(value: &Scalar) -> Option<f64> {
    match value {
        Scalar::Float(f) if f.is_finite() => Some(*f),
        Scalar::Str(text) => text
            .trim()
            .strip_suffix('%')
            .and_then(|n| n.trim().parse::<f64>().ok())
            .filter(|n| n.is_finite())
            .map(|n| n / 100.0),
        _ => None,
    }
}
