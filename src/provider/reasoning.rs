//! What a reasoning model thought, in the words each API sends it back in,
//! and what a job asks of its reasoning.
//!
//! Reasoning is carried, never interpreted: an Anthropic thinking block must
//! go back byte for byte with its signature in the assistant turn that holds
//! the tool call it led to, a Responses reasoning item with its encrypted
//! content, a Chat Completions `reasoning_content` as it came. So each kind
//! keeps the fields its API checks, and a provider sends back only the kinds
//! it wrote (a conversation replayed through another provider drops the rest).

use serde::{Deserialize, Serialize};

/// One piece of a model's reasoning, in the order the answer gave it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reasoning {
    /// An Anthropic `thinking` block: the text and the signature that lets
    /// the API check it comes back unmodified.
    Thinking { text: String, signature: String },
    /// An Anthropic `redacted_thinking` block: encrypted, sent back as is.
    Redacted { data: String },
    /// An OpenAI Responses `reasoning` item: its id, the encrypted content
    /// that carries it between stateless requests, and the summary text.
    Item {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
    },
    /// A Chat Completions `reasoning_content` (vLLM, SGLang, llama.cpp,
    /// DeepSeek): plain text.
    Text { text: String },
}

impl Reasoning {
    /// The text a person can read, if the API gave any: a thinking block's
    /// text, a reasoning item's summary, `reasoning_content`.
    pub fn readable(&self) -> Option<String> {
        let text = match self {
            Reasoning::Thinking { text, .. } | Reasoning::Text { text } => text.clone(),
            Reasoning::Item { summary, .. } => summary.join("\n\n"),
            Reasoning::Redacted { .. } => return None,
        };
        (!text.trim().is_empty()).then_some(text)
    }

    /// How long it is in characters, as context estimates count.
    pub fn chars(&self) -> usize {
        match self {
            Reasoning::Thinking { text, signature } => text.len() + signature.len(),
            Reasoning::Redacted { data } => data.len(),
            Reasoning::Item {
                encrypted_content,
                summary,
                ..
            } => {
                encrypted_content.as_ref().map_or(0, String::len)
                    + summary.iter().map(String::len).sum::<usize>()
            }
            Reasoning::Text { text } => text.len(),
        }
    }
}

/// The readable text of an answer's reasoning, joined; `None` when there is none.
pub fn readable(reasoning: &[Reasoning]) -> Option<String> {
    let parts: Vec<String> = reasoning.iter().filter_map(Reasoning::readable).collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// How hard the model should think, in the words every API maps from.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "lowercase")]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    Minimal,
    Low,
    Medium,
    High,
}

impl Effort {
    pub fn parse(text: &str) -> Option<Effort> {
        match text {
            "minimal" => Some(Effort::Minimal),
            "low" => Some(Effort::Low),
            "medium" => Some(Effort::Medium),
            "high" => Some(Effort::High),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Whether a Responses answer carries a summary of its reasoning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SummaryMode {
    Auto,
    None,
}

/// `model.reasoning` of a job, checked against its provider; unset fields
/// leave the API's default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReasoningSettings {
    /// `effort`: `reasoning.effort` (Responses), `reasoning_effort` (Chat
    /// Completions), `output_config.effort` (Anthropic adaptive thinking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// `budget_tokens`: Anthropic manual thinking's budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
    /// `mode: adaptive`: Anthropic adaptive thinking (the model decides how much).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive: bool,
    /// `interleaved`: Anthropic thinking between tool calls (a beta header
    /// with manual thinking).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interleaved: bool,
    /// `summary`: whether a Responses answer summarizes its reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<SummaryMode>,
    /// `send_back`: whether a Chat Completions server's `reasoning_content`
    /// goes back in the assistant turns; `None` decides by model family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_back: Option<bool>,
    /// `previous_response_id`: a Responses run chains on the server's
    /// stored state instead of sending its reasoning items back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub previous_response_id: bool,
}

impl ReasoningSettings {
    /// Whether the job asked for anything at all.
    pub fn is_set(&self) -> bool {
        *self != ReasoningSettings::default()
    }

    /// Whether Anthropic thinking is on (manual or adaptive).
    pub fn thinking(&self) -> bool {
        self.budget_tokens.is_some() || self.adaptive
    }
}

/// Open model families whose chat templates read `reasoning_content` back
/// in assistant turns (interleaved thinking); for these it is sent back
/// unless the job says otherwise.
pub fn sends_back_by_default(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    let name = model.rsplit('/').next().unwrap_or(&model);
    [
        "qwen3",
        "deepseek",
        "kimi-k2",
        "minimax-m2",
        "glm-4.5",
        "glm-4.6",
        "gpt-oss",
    ]
    .iter()
    .any(|family| name.starts_with(family))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_text_leaves_out_redacted_and_empty_reasoning() {
        let reasoning = vec![
            Reasoning::Thinking {
                text: "Look at the test first.".into(),
                signature: "sig".into(),
            },
            Reasoning::Redacted { data: "xx".into() },
            Reasoning::Item {
                id: "rs_1".into(),
                encrypted_content: Some("enc".into()),
                summary: vec![],
            },
        ];
        assert_eq!(
            readable(&reasoning).as_deref(),
            Some("Look at the test first.")
        );
        assert_eq!(readable(&reasoning[1..]), None);
    }

    #[test]
    fn known_families_get_their_reasoning_back() {
        assert!(sends_back_by_default("Qwen/Qwen3-32B"));
        assert!(sends_back_by_default("deepseek-reasoner"));
        assert!(sends_back_by_default("moonshotai/Kimi-K2-Thinking"));
        assert!(!sends_back_by_default("gpt-4o-mini"));
        assert!(!sends_back_by_default("llama-3.1-8b"));
    }
}
