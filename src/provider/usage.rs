//! Provider-neutral figures of a model call: the tokens it used ([`Usage`])
//! and the model that answered ([`ModelInfo`]). Every provider reports in
//! these words; events carry them as they are. Pricing is [`super::pricing`]'s job.

use serde::{Deserialize, Serialize};

/// Tokens of one model call as the server reported them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Usage {
    /// Every input token, the cached ones included (OpenAI counts them this
    /// way; Anthropic's separate cache figures are added in).
    pub input_tokens: u64,
    /// Every output token, the reasoning ones included.
    pub output_tokens: u64,
    /// Output tokens spent on reasoning (already in `output_tokens`), when
    /// the server says.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's prompt cache (Anthropic).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ModelInfo {
    pub provider: String,
    pub name: String,
}

/// For `skip_serializing_if`: a count that is zero is left out.
pub fn is_zero(n: &u64) -> bool {
    *n == 0
}
