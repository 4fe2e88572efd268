//! How one Messages request thinks: the job's `model.reasoning` turned into
//! the `thinking` parameter, `output_config.effort`, the interleaved-thinking
//! beta header and a `max_tokens` the API accepts, and the one rule that
//! depends on the conversation: an assistant turn keeps one thinking
//! configuration.
//!
//! The rules are the API's
//! (<https://docs.claude.com/en/docs/build-with-claude/extended-thinking>):
//! `max_tokens` must exceed `budget_tokens` unless thinking is interleaved;
//! with thinking on, the assistant turn being continued (the first assistant
//! message after the last user message that is not only tool results) must
//! start with its thinking block, or the API answers 400 ("Expected
//! `thinking` or `redacted_thinking`…. To avoid this requirement, disable
//! `thinking`"). A turn that started without thinking (one agentci wrote,
//! one a resumed or replayed conversation brought, one whose model chose
//! not to think) is therefore finished with thinking off, and thinking comes
//! back with the next turn. This module does not build the rest of the body.

use serde_json::{Value, json};

use super::request::WireMessage;
use crate::provider::ReasoningSettings;
use crate::provider::reasoning::Effort;

/// The beta header value that lets Claude 4 models think between tool calls
/// with manual thinking.
pub(super) const INTERLEAVED_BETA: &str = "interleaved-thinking-2025-05-14";
/// Room left for the answer after the thinking budget, as without thinking.
pub(super) const ANSWER_ROOM: u32 = 8192;
/// `max_tokens` with adaptive thinking: the model decides how much of it to
/// think with, so it gets room for both.
const ADAPTIVE_MAX_TOKENS: u32 = 32_000;

/// The thinking a job asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Thinking {
    Off,
    Manual { budget: u32, interleaved: bool },
    Adaptive { effort: Option<Effort> },
}

impl Thinking {
    pub(super) fn of(settings: &ReasoningSettings) -> Thinking {
        if settings.adaptive {
            Thinking::Adaptive {
                effort: settings.effort,
            }
        } else if let Some(budget) = settings.budget_tokens {
            Thinking::Manual {
                budget,
                interleaved: settings.interleaved,
            }
        } else {
            Thinking::Off
        }
    }

    /// The `thinking` parameter.
    pub(super) fn parameter(self) -> Option<Value> {
        match self {
            Thinking::Off => None,
            Thinking::Manual { budget, .. } => {
                Some(json!({"type": "enabled", "budget_tokens": budget}))
            }
            Thinking::Adaptive { .. } => Some(json!({"type": "adaptive"})),
        }
    }

    /// `output_config`: the effort adaptive thinking is steered with. The
    /// API's levels are low, medium and high; `minimal` asks for the least.
    pub(super) fn output_config(self) -> Option<Value> {
        let Thinking::Adaptive {
            effort: Some(effort),
        } = self
        else {
            return None;
        };
        let level = match effort {
            Effort::Minimal | Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        };
        Some(json!({ "effort": level }))
    }

    /// The `anthropic-beta` header value, when one is needed.
    pub(super) fn beta(self) -> Option<&'static str> {
        match self {
            Thinking::Manual {
                interleaved: true, ..
            } => Some(INTERLEAVED_BETA),
            _ => None,
        }
    }

    /// `max_tokens` for `model` when the answer itself needs `answer` tokens:
    /// the budget plus the answer's room with manual thinking, more room
    /// with adaptive thinking, capped at what the model can write.
    pub(super) fn max_tokens(self, model: &str, answer: u32) -> u32 {
        let cap = max_output_tokens(model);
        let wanted = match self {
            Thinking::Off => answer,
            Thinking::Manual { budget, .. } => budget.saturating_add(answer),
            Thinking::Adaptive { .. } => ADAPTIVE_MAX_TOKENS.max(answer),
        };
        wanted.min(cap)
    }

    /// Why `model` cannot think this way, in a line that names the setting
    /// and the fix: a manual budget that leaves no room for the answer
    /// under the model's output limit (interleaved thinking may exceed it).
    pub(super) fn problem(self, model: &str) -> Option<String> {
        let Thinking::Manual {
            budget,
            interleaved: false,
        } = self
        else {
            return None;
        };
        let cap = max_output_tokens(model);
        (budget >= cap).then(|| {
            format!(
                "model.reasoning.budget_tokens {budget} leaves no room for the answer: {model} \
                 writes at most {cap} tokens, and the Messages API wants max_tokens above the \
                 budget; lower budget_tokens below {cap} or set `interleaved: true`"
            )
        })
    }
}

/// The most tokens `model` writes in one answer, as Anthropic's model table
/// gives it; names it does not know (a proxy's alias) get the Claude 4 limit.
pub(super) fn max_output_tokens(model: &str) -> u32 {
    let name = model.rsplit('/').next().unwrap_or(model);
    // Bedrock and Vertex ids carry a prefix (`anthropic.`, `us.anthropic.`).
    let name = name.rsplit("anthropic.").next().unwrap_or(name);
    if ["claude-3-opus", "claude-3-sonnet", "claude-3-haiku"]
        .iter()
        .any(|p| name.starts_with(p))
    {
        4096
    } else if name.starts_with("claude-3-5") {
        8192
    } else if ["claude-opus-4-2025", "claude-opus-4-0", "claude-opus-4-1"]
        .iter()
        .any(|p| name.starts_with(p))
        || name == "claude-opus-4"
    {
        32_000
    } else {
        64_000
    }
}

/// Whether `block` is a thinking or redacted-thinking block.
pub(super) fn is_thinking(block: &Value) -> bool {
    matches!(
        block["type"].as_str(),
        Some("thinking" | "redacted_thinking")
    )
}

/// Where the assistant turn being continued starts in `messages`: the
/// first assistant message after the last user message that holds anything
/// but tool results. `None` when the conversation has no such assistant
/// message (a new turn starts).
pub(super) fn current_turn(messages: &[WireMessage]) -> Option<usize> {
    let answers_tools = |m: &WireMessage| m.content.iter().any(|b| b["type"] == "tool_result");
    let start = messages
        .iter()
        .rposition(|m| m.role == "user" && !answers_tools(m))
        .map_or(0, |i| i + 1);
    (start..messages.len()).find(|&i| messages[i].role == "assistant")
}

/// Whether a request may think: a turn in progress keeps thinking only if
/// it started with a thinking block.
pub(super) fn turn_allows_thinking(messages: &[WireMessage]) -> bool {
    current_turn(messages).is_none_or(|i| messages[i].content.first().is_some_and(is_thinking))
}

/// Takes the thinking blocks out of the turn in progress, for a request
/// sent with thinking off: a turn that runs without thinking carries none.
pub(super) fn strip_current_turn(messages: &mut [WireMessage]) {
    let Some(start) = current_turn(messages) else {
        return;
    };
    for message in &mut messages[start..] {
        if message.role != "assistant" {
            continue;
        }
        message.content.retain(|b| !is_thinking(b));
        if message.content.is_empty() {
            message
                .content
                .push(json!({"type": "text", "text": "(no answer)"}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(budget: Option<u32>, adaptive: bool, interleaved: bool) -> ReasoningSettings {
        ReasoningSettings {
            budget_tokens: budget,
            adaptive,
            interleaved,
            effort: adaptive.then_some(Effort::Minimal),
            ..Default::default()
        }
    }

    #[test]
    fn settings_become_the_parameter_effort_and_header() {
        let manual = Thinking::of(&settings(Some(4000), false, false));
        assert_eq!(
            manual.parameter(),
            Some(json!({"type": "enabled", "budget_tokens": 4000}))
        );
        assert_eq!(manual.output_config(), None);
        assert_eq!(manual.beta(), None);
        let interleaved = Thinking::of(&settings(Some(4000), false, true));
        assert_eq!(interleaved.beta(), Some(INTERLEAVED_BETA));
        let adaptive = Thinking::of(&settings(None, true, false));
        assert_eq!(adaptive.parameter(), Some(json!({"type": "adaptive"})));
        assert_eq!(adaptive.output_config(), Some(json!({"effort": "low"})));
        assert_eq!(adaptive.beta(), None);
        assert_eq!(Thinking::of(&ReasoningSettings::default()), Thinking::Off);
    }

    #[test]
    fn max_tokens_leaves_room_above_the_budget_within_the_model_limit() {
        let manual = Thinking::Manual {
            budget: 10_000,
            interleaved: false,
        };
        assert_eq!(manual.max_tokens("claude-sonnet-4-5", ANSWER_ROOM), 18_192);
        assert_eq!(manual.max_tokens("claude-sonnet-4-5", 100), 10_100);
        let big = Thinking::Manual {
            budget: 30_000,
            interleaved: false,
        };
        assert_eq!(big.max_tokens("claude-opus-4-1-20250805", 8192), 32_000);
        assert_eq!(big.problem("claude-opus-4-1-20250805"), None);
        let too_big = Thinking::Manual {
            budget: 40_000,
            interleaved: false,
        };
        let problem = too_big.problem("claude-opus-4-1").unwrap();
        assert!(problem.contains("budget_tokens 40000"), "{problem}");
        assert!(problem.contains("interleaved: true"), "{problem}");
        // Interleaved thinking's budget may exceed max_tokens.
        let interleaved = Thinking::Manual {
            budget: 40_000,
            interleaved: true,
        };
        assert_eq!(interleaved.problem("claude-opus-4-1"), None);
        assert_eq!(
            Thinking::Adaptive { effort: None }.max_tokens("claude-opus-4-6", 8192),
            32_000
        );
        assert_eq!(
            Thinking::Off.max_tokens("claude-3-haiku-20240307", 8192),
            4096
        );
        assert_eq!(
            max_output_tokens("us.anthropic.claude-opus-4-1-20250805-v1:0"),
            32_000
        );
    }

    fn wire(message: Value) -> WireMessage {
        WireMessage {
            role: if message["role"] == "user" {
                "user"
            } else {
                "assistant"
            },
            content: message["content"].as_array().unwrap().clone(),
        }
    }

    fn turn(messages: &[&Value]) -> Vec<WireMessage> {
        messages.iter().map(|m| wire((*m).clone())).collect()
    }

    #[test]
    fn a_turn_keeps_thinking_only_when_it_started_with_it() {
        let user = json!({"role": "user", "content": [{"type": "text", "text": "go"}]});
        let results = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
            {"type": "text", "text": "next step"}]});
        let thought = json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {}}]});
        let bare = json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "read", "input": {}}]});
        // A new turn may think.
        assert!(turn_allows_thinking(&turn(&[&user])));
        // A turn that started thinking goes on thinking, through tool
        // results and later calls without thinking of their own.
        let going = turn(&[&user, &thought, &results, &bare, &results]);
        assert_eq!(current_turn(&going), Some(1));
        assert!(turn_allows_thinking(&going));
        // One agentci wrote without thinking finishes without it.
        let mut written = turn(&[&user, &bare, &results, &thought, &results]);
        assert!(!turn_allows_thinking(&written));
        strip_current_turn(&mut written);
        assert!(
            written
                .iter()
                .all(|m| m.content.iter().all(|b| !is_thinking(b)))
        );
        // After a text answer, the next user message starts a new turn.
        let answered = json!({"role": "assistant", "content": [{"type": "text", "text": "done"}]});
        assert!(turn_allows_thinking(&turn(&[
            &user, &bare, &answered, &user
        ])));
    }
}
