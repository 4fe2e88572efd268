//! What model calls cost: a built-in table of list prices for common
//! models, and the arithmetic from [`Usage`] to US dollars.
//!
//! A model that is not in the table has no price: its cost is unknown
//! (`None`), never zero, unless the job gives `model.price`. This module
//! does not add costs up or enforce `budget.max_cost_usd`; the agent's
//! budget does.

use crate::provider::Usage;

/// Prices in US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Input tokens read from the prompt cache; `None`: billed as input.
    pub cache_read_per_mtok: Option<f64>,
    /// Input tokens written to the prompt cache (Anthropic); `None`: billed as input.
    pub cache_write_per_mtok: Option<f64>,
}

impl Price {
    const fn new(input: f64, output: f64, cache_read: f64, cache_write: Option<f64>) -> Self {
        Self {
            input_per_mtok: input,
            output_per_mtok: output,
            cache_read_per_mtok: Some(cache_read),
            cache_write_per_mtok: cache_write,
        }
    }

    /// The cost of one call. `usage.input_tokens` counts every input token,
    /// cached ones included; the cached parts are billed at their own rates.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cache_read = usage.cache_read_tokens.min(usage.input_tokens);
        let cache_write = usage
            .cache_write_tokens
            .min(usage.input_tokens - cache_read);
        let plain = usage.input_tokens - cache_read - cache_write;
        let per_token = |per_mtok: f64| per_mtok / 1_000_000.0;
        plain as f64 * per_token(self.input_per_mtok)
            + cache_read as f64 * per_token(self.cache_read_per_mtok.unwrap_or(self.input_per_mtok))
            + cache_write as f64
                * per_token(self.cache_write_per_mtok.unwrap_or(self.input_per_mtok))
            + usage.output_tokens as f64 * per_token(self.output_per_mtok)
    }
}

/// List prices in USD per million tokens (input, output, cache read, cache
/// write), as published by OpenAI and Anthropic for standard (non-batch)
/// requests; the figures are those known when this table was written
/// (2026-11) and may have changed since: a job can override them with
/// `model.price`. Anthropic cache writes are the 5-minute cache rate (1.25×
/// input). Names match exactly or with a date suffix.
const PRICES: &[(&str, Price)] = &[
    // OpenAI
    ("gpt-5", Price::new(1.25, 10.0, 0.125, None)),
    ("gpt-5-mini", Price::new(0.25, 2.0, 0.025, None)),
    ("gpt-5-nano", Price::new(0.05, 0.40, 0.005, None)),
    ("gpt-4.1", Price::new(2.0, 8.0, 0.50, None)),
    ("gpt-4.1-mini", Price::new(0.40, 1.60, 0.10, None)),
    ("gpt-4.1-nano", Price::new(0.10, 0.40, 0.025, None)),
    ("gpt-4o", Price::new(2.50, 10.0, 1.25, None)),
    ("gpt-4o-mini", Price::new(0.15, 0.60, 0.075, None)),
    ("o3", Price::new(2.0, 8.0, 0.50, None)),
    ("o3-mini", Price::new(1.10, 4.40, 0.55, None)),
    ("o4-mini", Price::new(1.10, 4.40, 0.275, None)),
    ("o1", Price::new(15.0, 60.0, 7.50, None)),
    // Anthropic
    ("claude-opus-4-5", Price::new(5.0, 25.0, 0.50, Some(6.25))),
    ("claude-opus-4-1", Price::new(15.0, 75.0, 1.50, Some(18.75))),
    ("claude-opus-4-0", Price::new(15.0, 75.0, 1.50, Some(18.75))),
    ("claude-opus-4", Price::new(15.0, 75.0, 1.50, Some(18.75))),
    ("claude-sonnet-4-5", Price::new(3.0, 15.0, 0.30, Some(3.75))),
    ("claude-sonnet-4-0", Price::new(3.0, 15.0, 0.30, Some(3.75))),
    ("claude-sonnet-4", Price::new(3.0, 15.0, 0.30, Some(3.75))),
    ("claude-haiku-4-5", Price::new(1.0, 5.0, 0.10, Some(1.25))),
    ("claude-3-7-sonnet", Price::new(3.0, 15.0, 0.30, Some(3.75))),
    ("claude-3-5-sonnet", Price::new(3.0, 15.0, 0.30, Some(3.75))),
    ("claude-3-5-haiku", Price::new(0.80, 4.0, 0.08, Some(1.0))),
];

/// The built-in price of `model`, if it is in the table.
///
/// `openai/gpt-4o` (OpenRouter style) is looked up as `gpt-4o`; a dated
/// snapshot (`gpt-4.1-mini-2025-04-14`, `claude-sonnet-4-5-20250929`,
/// `claude-sonnet-4-5@20250929`) or `-latest` alias has its base model's
/// price. Anything else is unknown: `gpt-4o-audio` is not `gpt-4o`.
pub fn builtin_price(model: &str) -> Option<Price> {
    let name = model.rsplit('/').next().unwrap_or(model).trim();
    let name = anthropic_name(&name.to_ascii_lowercase()).to_string();
    PRICES
        .iter()
        .find(|(known, _)| {
            name.strip_prefix(known)
                .is_some_and(|rest| rest.is_empty() || is_version_suffix(rest))
        })
        .map(|(_, price)| *price)
}

/// Bedrock's inference profile prefixes: `us.anthropic.claude-…` is served
/// from several regions of one geography, `global.` from any.
const BEDROCK_PROFILES: &[&str] = &[
    "us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global.",
];

/// A cloud's id for an Anthropic model as Anthropic names it: Bedrock's
/// `us.anthropic.claude-sonnet-4-5-20250929-v1:0` (an inference profile,
/// the provider prefix and the `-v1:0` version) is
/// `claude-sonnet-4-5-20250929`. The clouds bill Anthropic's list prices
/// for the same model (regional endpoints may add a premium, which a job
/// states with `model.price`). Any other name is returned as it is; a
/// Vertex AI id (`claude-sonnet-4-5@20250929`) already reads as a dated name.
pub fn anthropic_name(id: &str) -> &str {
    let without_profile = BEDROCK_PROFILES
        .iter()
        .find_map(|profile| id.strip_prefix(profile))
        .unwrap_or(id);
    let Some(bare) = without_profile.strip_prefix("anthropic.") else {
        return id;
    };
    // `-v1:0`, `-v2:0`, `-v1`: Bedrock's model version.
    match bare.rsplit_once("-v") {
        Some((name, version))
            if version
                .split(':')
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit())) =>
        {
            name
        }
        _ => bare,
    }
}

/// `-20250929`, `@20250929`, `-2025-04-14`, `-latest`.
fn is_version_suffix(rest: &str) -> bool {
    let Some(tail) = rest.strip_prefix('-').or_else(|| rest.strip_prefix('@')) else {
        return false;
    };
    let digits_only = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    tail == "latest"
        || (tail.len() == 8 && digits_only(tail))
        || (tail.len() == 10
            && tail.split('-').map(str::len).eq([4, 2, 2])
            && tail.split('-').all(digits_only))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            reasoning_tokens: 0,
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }

    #[test]
    fn names_match_exactly_or_with_a_date() {
        let input = |m: &str| builtin_price(m).map(|p| p.input_per_mtok);
        assert_eq!(input("gpt-4.1-mini"), Some(0.40));
        assert_eq!(input("gpt-4.1-mini-2025-04-14"), Some(0.40));
        assert_eq!(input("gpt-4.1"), Some(2.0));
        assert_eq!(input("gpt-4o-mini"), Some(0.15));
        assert_eq!(input("openai/gpt-4o"), Some(2.50));
        assert_eq!(input("claude-sonnet-4-5"), Some(3.0));
        assert_eq!(input("claude-sonnet-4-5-20250929"), Some(3.0));
        assert_eq!(input("claude-sonnet-4-5@20250929"), Some(3.0));
        assert_eq!(input("claude-opus-4-5"), Some(5.0));
        assert_eq!(input("claude-opus-4-1-20250805"), Some(15.0));
        assert_eq!(input("claude-3-5-haiku-latest"), Some(0.80));
        // Unknown models and unknown variants have no price.
        assert_eq!(input("gpt-4o-audio-preview"), None);
        assert_eq!(input("claude-opus-4-7"), None);
        assert_eq!(input("qwen2.5-coder"), None);
        assert_eq!(input("fake-model"), None);
    }

    #[test]
    fn cloud_ids_have_anthropic_prices() {
        let input = |m: &str| builtin_price(m).map(|p| p.input_per_mtok);
        assert_eq!(
            input("anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some(3.0)
        );
        assert_eq!(
            input("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some(3.0)
        );
        assert_eq!(
            input("eu.anthropic.claude-haiku-4-5-20251001-v1:0"),
            Some(1.0)
        );
        assert_eq!(
            input("global.anthropic.claude-opus-4-5-20251101-v1:0"),
            Some(5.0)
        );
        assert_eq!(
            input("apac.anthropic.claude-3-5-sonnet-20241022-v2:0"),
            Some(3.0)
        );
        assert_eq!(input("anthropic.claude-opus-4-1-20250805-v1:0"), Some(15.0));
        assert_eq!(input("claude-opus-4-1@20250805"), Some(15.0));
        assert_eq!(input("claude-haiku-4-5@20251001"), Some(1.0));
        // Not Anthropic's, or not a model it knows: no price.
        assert_eq!(input("us.meta.llama3-3-70b-instruct-v1:0"), None);
        assert_eq!(input("anthropic.claude-opus-4-7-v1:0"), None);
        assert_eq!(anthropic_name("anthropic.claude-x-vbeta"), "claude-x-vbeta");
        assert_eq!(anthropic_name("gpt-4o"), "gpt-4o");
    }

    #[test]
    fn cost_bills_cached_tokens_at_their_rates() {
        let price = builtin_price("claude-sonnet-4-5").unwrap();
        // 1M input of which 200k read from cache and 100k written to it, 100k output.
        let cost = price.cost(&usage(1_000_000, 100_000, 200_000, 100_000));
        let expected = 0.7 * 3.0 + 0.2 * 0.30 + 0.1 * 3.75 + 0.1 * 15.0;
        assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");

        let custom = Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        };
        // Without cache rates, cached tokens cost what input costs.
        let cost = custom.cost(&usage(2_000_000, 1_000_000, 500_000, 0));
        assert!((cost - 4.0).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn inconsistent_usage_never_underflows() {
        let price = builtin_price("gpt-4o").unwrap();
        let cost = price.cost(&usage(10, 0, 50, 50));
        assert!(cost >= 0.0 && cost.is_finite());
    }
}
