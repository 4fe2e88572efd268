//! How far a run's requests drifted from a recording, for the replay's
//! `sequence` mode: which parts of a request differ from the recorded one
//! (in the words a user edits: the skill text, the memory file, a tool
//! result…) and the count over the run ([`DriftCounter`]).
//!
//! Requests are compared as [`super::cassette::comparable`] makes them
//! (paths normalized, tool results by their first line). Serving the
//! answers is [`super::replay`]'s job; reporting the figure is the
//! agent's (`replay.drift`) and the evaluation's.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How far a sequence replay's requests drifted from the recording.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ReplayDrift {
    /// Requests answered from the cassette.
    pub turns: u32,
    /// Of those, the requests that differed from the recorded ones.
    pub drifted: u32,
    /// Exchanges the cassette holds.
    pub recorded: u32,
    /// What differed and in how many turns (`skill text`, `tool result`…).
    pub parts: std::collections::BTreeMap<String, u32>,
    /// The first turn whose request differed, 1-based.
    pub first_drifted_turn: Option<u32>,
}

impl ReplayDrift {
    /// One line for people: `recordings out of date in 3/12 turns (skill text 3)`.
    pub fn summary(&self) -> String {
        if self.drifted == 0 {
            return format!("recordings match in all {} turns", self.turns);
        }
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|(part, turns)| format!("{part} {turns}"))
            .collect();
        format!(
            "recordings out of date in {}/{} turns ({})",
            self.drifted,
            self.turns,
            parts.join(", ")
        )
    }
}

/// The parts in which `actual` differs from `recorded`, both
/// [`comparable`](super::cassette::comparable) requests; empty when they
/// are equal.
pub fn differing_parts(recorded: &Value, actual: &Value) -> BTreeSet<&'static str> {
    let mut parts = BTreeSet::new();
    if recorded.get("tools") != actual.get("tools") {
        parts.insert("tool list");
    }
    if recorded.get("tool_choice") != actual.get("tool_choice") {
        parts.insert("tool choice");
    }
    let (left, right) = (messages(recorded), messages(actual));
    for index in 0..left.len().max(right.len()) {
        match (left.get(index), right.get(index)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                parts.insert(message_part(a, b));
            }
            _ => {
                parts.insert("conversation length");
            }
        }
    }
    parts
}

fn messages(request: &Value) -> &[Value] {
    request
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// What a message that differs is, by the recorded message's role.
fn message_part(recorded: &Value, actual: &Value) -> &'static str {
    let text = |m: &Value| {
        m.get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    match recorded.get("role").and_then(Value::as_str) {
        Some("system") => system_part(&text(recorded), &text(actual)),
        Some("user") => "task",
        Some("tool") => "tool result",
        Some("assistant") => "earlier answer",
        _ => "conversation length",
    }
}

/// Which section of a system message differs: the protocol (agentci's own
/// text), the skill, the memory file, the rules (see
/// [`crate::agent::protocol::system_prompt`]) or the run details.
pub fn system_part(recorded: &str, actual: &str) -> &'static str {
    if !recorded.contains("# Skill:") {
        return "run details";
    }
    let at = recorded
        .bytes()
        .zip(actual.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    // The section the first difference falls in: the last heading before it.
    let before = &recorded[..floor_boundary(recorded, at)];
    let sections = [
        ("\n# Rules\n", "rules"),
        ("\n# Memory: ", "memory file"),
        ("\n# Skill: ", "skill text"),
    ];
    sections
        .iter()
        .filter_map(|(heading, part)| before.rfind(heading).map(|pos| (pos, *part)))
        .max_by_key(|(pos, _)| *pos)
        .map_or("protocol", |(_, part)| part)
}

fn floor_boundary(text: &str, at: usize) -> usize {
    let mut end = at.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// The drift figure of one replay, turn by turn.
#[derive(Clone, Debug, Default)]
pub struct DriftCounter {
    drift: ReplayDrift,
}

impl DriftCounter {
    pub fn new(recorded: usize) -> DriftCounter {
        DriftCounter {
            drift: ReplayDrift {
                recorded: recorded as u32,
                ..ReplayDrift::default()
            },
        }
    }

    /// One request served; `parts` is what differed from the recording.
    pub fn served(&mut self, parts: &BTreeSet<&'static str>) {
        self.drift.turns += 1;
        if parts.is_empty() {
            return;
        }
        self.drift.drifted += 1;
        self.drift
            .first_drifted_turn
            .get_or_insert(self.drift.turns);
        for part in parts {
            *self.drift.parts.entry((*part).to_string()).or_default() += 1;
        }
    }

    pub fn figure(&self) -> ReplayDrift {
        self.drift.clone()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(system: &str, tool: &str) -> Value {
        json!({
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": "Goal: fix it"},
                {"role": "tool", "tool_call_id": "c1", "content": tool},
            ],
            "tools": [{"name": "read"}],
            "tool_choice": "auto",
        })
    }

    #[test]
    fn every_differing_part_is_named() {
        let prompt = "You are agentci.\n\n# Skill: fixer\nFix.\n\n# Memory: AGENTS.md\nTabs.\n\n# Rules\nRules:\n1. Be brief.";
        let recorded = request(prompt, "ok");
        assert!(differing_parts(&recorded, &recorded).is_empty());
        let edited = request(&prompt.replace("Fix.", "Fix it."), "failed");
        let parts: Vec<_> = differing_parts(&recorded, &edited).into_iter().collect();
        assert_eq!(parts, ["skill text", "tool result"]);
        let memory = request(&prompt.replace("Tabs.", "Spaces."), "ok");
        assert_eq!(
            differing_parts(&recorded, &memory)
                .into_iter()
                .collect::<Vec<_>>(),
            ["memory file"]
        );
        let rules = request(&prompt.replace("Be brief.", "Be kind."), "ok");
        assert_eq!(
            differing_parts(&recorded, &rules)
                .into_iter()
                .collect::<Vec<_>>(),
            ["rules"]
        );
        let mut longer = recorded.clone();
        longer["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": "more"}));
        longer["tools"] = json!([]);
        assert_eq!(
            differing_parts(&recorded, &longer)
                .into_iter()
                .collect::<Vec<_>>(),
            ["conversation length", "tool list"]
        );
    }

    #[test]
    fn the_counter_counts_turns_and_parts() {
        let mut counter = DriftCounter::new(5);
        counter.served(&BTreeSet::new());
        counter.served(&["skill text", "tool result"].into());
        counter.served(&["skill text"].into());
        let figure = counter.figure();
        assert_eq!((figure.turns, figure.drifted, figure.recorded), (3, 2, 5));
        assert_eq!(figure.first_drifted_turn, Some(2));
        assert_eq!(figure.parts["skill text"], 2);
        assert_eq!(
            figure.summary(),
            "recordings out of date in 2/3 turns (skill text 2, tool result 1)"
        );
    }
}
