//! What the full-content trace records of what the run was given (the
//! budget and permissions in `run.started`) and what the model was sent: each request
//! as a [`SentDelta`] against the one before it, so the trace holds every
//! message once (the system prompt on the first request, each tool result
//! as the model received it) instead of the whole conversation per turn.
//!
//! [`SentLog`] only remembers the last request and computes deltas; when
//! requests are made and what they hold is the session's business, and
//! rebuilding requests from a trace is
//! [`crate::trace_view::rebuild`]'s.

use crate::event::{BudgetInEffect, PermissionsInEffect, SentDelta};
use crate::job::{BudgetSpec, PermissionsSpec};
use crate::policy::DefaultDecision;
use crate::provider::{Message, ToolDefinition};

use super::budget::DEFAULT_MAX_TURNS;

/// The budget a run holds to, as the budget tracker combines it.
pub fn budget_in_effect(spec: &BudgetSpec, skill_max_turns: Option<u32>) -> BudgetInEffect {
    BudgetInEffect {
        max_turns: spec
            .max_turns
            .or(skill_max_turns)
            .unwrap_or(DEFAULT_MAX_TURNS),
        max_tool_calls: spec.max_tool_calls,
        max_tokens: spec.max_tokens,
        max_cost_usd: spec.max_cost_usd,
        timeout_secs: spec.timeout.map(|t| t.as_secs_f64()),
    }
}

/// The job's permission rules as written.
pub fn permissions_in_effect(spec: &PermissionsSpec) -> PermissionsInEffect {
    let written = |rules: &[crate::policy::ToolPattern]| {
        rules.iter().map(|r| r.as_str().to_string()).collect()
    };
    PermissionsInEffect {
        default: match spec.default {
            DefaultDecision::Allow => "allow",
            DefaultDecision::Deny => "deny",
        }
        .to_string(),
        allow: written(&spec.allow),
        deny: written(&spec.deny),
    }
}

/// The last request sent, to diff the next one against.
#[derive(Debug, Default)]
pub struct SentLog {
    messages: Vec<Message>,
    /// `None` until the first request, so that one always lists its tools.
    offered: Option<Vec<ToolDefinition>>,
}

impl SentLog {
    /// The log of a run whose last request, as its trace tells, held
    /// `messages` and offered `offered`: a resumed run's next delta is
    /// against what the trace already holds.
    pub fn continuing(messages: Vec<Message>, offered: Option<Vec<ToolDefinition>>) -> SentLog {
        SentLog { messages, offered }
    }

    /// The delta of a request of `messages` offering `offered`, which
    /// becomes the request the next one is compared with.
    pub fn record(&mut self, messages: &[Message], offered: &[ToolDefinition]) -> SentDelta {
        // Usually the conversation only grew: everything before is kept and
        // only the new messages are copied. Trimming or compaction rewrites
        // the middle, and the delta says how much of the old request went.
        let kept = self
            .messages
            .iter()
            .zip(messages)
            .take_while(|(old, new)| old == new)
            .count();
        let messages_dropped = self.messages.len() - kept;
        let messages_added = messages[kept..].to_vec();
        self.messages.truncate(kept);
        self.messages.extend_from_slice(&messages[kept..]);
        let tools_offered = (self.offered.as_deref() != Some(offered)).then(|| offered.to_vec());
        if tools_offered.is_some() {
            self.offered = Some(offered.to_vec());
        }
        SentDelta {
            kept,
            messages_dropped,
            messages_added,
            tools_offered,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_view::{Rebuilt, rebuild};

    fn user(text: &str) -> Message {
        Message::User {
            content: text.into(),
        }
    }

    #[test]
    fn a_growing_conversation_sends_only_new_messages_and_tools_once() {
        let tools = vec![ToolDefinition {
            name: "read".into(),
            description: "d".into(),
            parameters: serde_json::json!({}),
        }];
        let mut log = SentLog::default();
        let first = log.record(&[user("a")], &tools);
        assert_eq!((first.kept, first.messages_added.len()), (0, 1));
        assert!(first.tools_offered.is_some());
        let second = log.record(&[user("a"), user("b"), user("c")], &tools);
        assert_eq!(second.kept, 1);
        assert_eq!(second.messages_dropped, 0);
        assert_eq!(second.messages_added, vec![user("b"), user("c")]);
        assert!(second.tools_offered.is_none());
    }

    #[test]
    fn a_rewritten_conversation_says_what_was_dropped_and_rebuilds() {
        let mut log = SentLog::default();
        let mut rebuilt = Rebuilt::default();
        let requests = [
            vec![user("s"), user("a"), user("b")],
            vec![user("s"), user("a"), user("b"), user("c")],
            vec![user("s"), user("note"), user("c")],
        ];
        for request in &requests {
            let delta = log.record(request, &[]);
            rebuild(&mut rebuilt, &delta).unwrap();
            assert_eq!(&rebuilt.messages, request);
        }
        let delta = log.record(&[user("s")], &[]);
        assert_eq!((delta.kept, delta.messages_dropped), (1, 2));
    }
}
