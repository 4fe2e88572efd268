//! Keeping the conversation inside the model's context window when the
//! provider says it no longer fits.
//!
//! [`trim`] cuts the conversation in place: the system prompt and the goal,
//! the turn that submitted the plan, the current step's instruction and the
//! most recent turns stay; older turns go, replaced by one note that says
//! so; long tool outputs that stay are shortened. Turns are removed whole
//! (an assistant message with its tool results), so every tool call still
//! has its result. Deciding when to trim (once, after a "too long" answer)
//! is the session's job.

use crate::provider::Message;

use super::protocol::SUBMIT_PLAN;

/// The share of the older turns' size that the kept recent turns may take.
const KEEP_RECENT_SHARE: f64 = 0.25;
/// A tool output kept after trimming is cut to this many characters.
const MAX_KEPT_TOOL_CHARS: usize = 8_000;

/// What a trim did, for the `context.trimmed` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trimmed {
    pub messages_before: usize,
    pub messages_after: usize,
    pub estimated_tokens_before: u64,
    pub estimated_tokens_after: u64,
}

/// A rough token count: about four characters a token for English and code.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    (messages.iter().map(chars).sum::<usize>() / 4) as u64
}

fn chars(message: &Message) -> usize {
    match message {
        Message::System { content } | Message::User { content } => content.len(),
        Message::Assistant {
            reasoning,
            content,
            tool_calls,
        } => {
            reasoning.iter().map(|r| r.chars()).sum::<usize>()
                + content.as_deref().map_or(0, str::len)
                + tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.len())
                    .sum::<usize>()
        }
        Message::Tool { content, .. } => content.len(),
    }
}

/// Cuts `messages` to fit; `None` when there is nothing left to cut.
pub fn trim(messages: &mut Vec<Message>) -> Option<Trimmed> {
    let messages_before = messages.len();
    let estimated_tokens_before = estimate_tokens(messages);
    // The system prompt(s) and the goal: everything up to the first user message.
    let head = messages
        .iter()
        .position(|m| matches!(m, Message::User { .. }))
        .map_or(messages.len(), |i| i + 1);
    let groups = turn_groups(messages, head);
    let keep = turns_to_keep(messages, &groups);

    let removed: usize = groups
        .iter()
        .zip(&keep)
        .filter(|(_, keep)| !**keep)
        .map(|(g, _)| g.1 - g.0)
        .sum();
    let mut out: Vec<Message> = messages[..head].to_vec();
    let mut noted = false;
    let mut shortened = false;
    for (group, keep) in groups.iter().zip(&keep) {
        if !keep {
            if !noted {
                out.push(Message::User {
                    content: removal_note(removed),
                });
                noted = true;
            }
            continue;
        }
        for message in &messages[group.0..group.1] {
            out.push(match message {
                Message::Tool {
                    tool_call_id,
                    content,
                } if content.len() > MAX_KEPT_TOOL_CHARS => {
                    shortened = true;
                    Message::Tool {
                        tool_call_id: tool_call_id.clone(),
                        content: shorten(content),
                    }
                }
                other => other.clone(),
            });
        }
    }
    if removed == 0 && !shortened {
        return None;
    }
    *messages = out;
    Some(Trimmed {
        messages_before,
        messages_after: messages.len(),
        estimated_tokens_before,
        estimated_tokens_after: estimate_tokens(messages),
    })
}

/// Which of the turn `groups` a trim keeps: the latest plan and the latest
/// step's opening (pinned), and the most recent other turns.
fn turns_to_keep(messages: &[Message], groups: &[(usize, usize)]) -> Vec<bool> {
    let plan_group = groups.iter().rposition(|g| submits_plan(&messages[g.0]));
    let step_group = groups
        .iter()
        .rposition(|g| matches!(messages[g.0], Message::User { .. }));
    let pinned = |i: usize| Some(i) == plan_group || Some(i) == step_group;

    // Keep the most recent unpinned turns, newest first, while they stay
    // within a quarter of what the unpinned turns weigh; always the last one.
    let size = |g: &(usize, usize)| messages[g.0..g.1].iter().map(chars).sum::<usize>();
    let droppable: usize = (0..groups.len())
        .filter(|&i| !pinned(i))
        .map(|i| size(&groups[i]))
        .sum();
    let allowance = (droppable as f64 * KEEP_RECENT_SHARE) as usize;
    let mut keep = vec![false; groups.len()];
    let mut kept = 0;
    for i in (0..groups.len()).rev() {
        if pinned(i) {
            keep[i] = true;
            continue;
        }
        let weight = size(&groups[i]);
        if i + 1 == groups.len() || kept + weight <= allowance {
            keep[i] = true;
            kept += weight;
        } else {
            break;
        }
    }
    for (i, pinned_group) in keep.iter_mut().enumerate() {
        *pinned_group |= pinned(i);
    }
    keep
}

/// `(start, end)` of each turn after `head`: a user or assistant message
/// with the tool results that follow it.
pub(super) fn turn_groups(messages: &[Message], head: usize) -> Vec<(usize, usize)> {
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for (i, message) in messages.iter().enumerate().skip(head) {
        match (message, groups.last_mut()) {
            (Message::Tool { .. }, Some(last)) => last.1 = i + 1,
            _ => groups.push((i, i + 1)),
        }
    }
    groups
}

/// Is `message` the model's turn that submitted the plan?
pub(super) fn submits_plan(message: &Message) -> bool {
    matches!(message, Message::Assistant { tool_calls, .. }
        if tool_calls.iter().any(|c| c.name == SUBMIT_PLAN))
}

fn removal_note(removed: usize) -> String {
    format!(
        "[agentci] {removed} earlier messages were removed because the conversation no longer \
         fit the model's context window. The goal, the plan and the most recent turns are kept; \
         read files again if you need their content."
    )
}

fn shorten(content: &str) -> String {
    let mut end = MAX_KEPT_TOOL_CHARS;
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[agentci] output cut from {} to {end} characters to fit the context window",
        &content[..end],
        content.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    fn user(text: &str) -> Message {
        Message::User {
            content: text.to_string(),
        }
    }

    fn call(id: &str, name: &str) -> Message {
        Message::Assistant {
            reasoning: Vec::new(),
            content: None,
            tool_calls: vec![ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: "{}".to_string(),
            }],
        }
    }

    fn result(id: &str, size: usize) -> Message {
        Message::Tool {
            tool_call_id: id.to_string(),
            content: "x".repeat(size),
        }
    }

    /// system, goal, a planning look-around, the plan, step 1 with many reads, step 2 started.
    fn conversation() -> Vec<Message> {
        let mut m = vec![
            Message::System {
                content: "system prompt".into(),
            },
            user("the goal"),
            call("p1", "ls"),
            result("p1", 3000),
            call("plan", SUBMIT_PLAN),
            result("plan", 20),
            user("step 1 of 2"),
        ];
        for i in 0..10 {
            m.push(call(&format!("r{i}"), "read"));
            m.push(result(&format!("r{i}"), 5000));
        }
        m.push(user("step 2 of 2"));
        m.push(call("last", "read"));
        m.push(result("last", 100));
        m
    }

    #[test]
    fn keeps_system_goal_plan_current_step_and_recent_turns() {
        let mut m = conversation();
        let before = m.len();
        let t = trim(&mut m).unwrap();
        assert_eq!(t.messages_before, before);
        assert_eq!(t.messages_after, m.len());
        assert!(
            t.estimated_tokens_after * 2 < t.estimated_tokens_before,
            "{t:?}"
        );
        assert!(matches!(&m[0], Message::System { content } if content == "system prompt"));
        assert!(matches!(&m[1], Message::User { content } if content == "the goal"));
        assert!(
            matches!(&m[2], Message::User { content } if content.contains("earlier messages were removed"))
        );
        assert!(m.iter().any(submits_plan));
        assert!(
            m.iter()
                .any(|x| matches!(x, Message::User { content } if content == "step 2 of 2"))
        );
        assert!(
            matches!(m.last(), Some(Message::Tool { tool_call_id, .. }) if tool_call_id == "last")
        );
        // The old reads of step 1 are gone.
        assert!(
            !m.iter()
                .any(|x| matches!(x, Message::Tool { tool_call_id, .. } if tool_call_id == "r0"))
        );
    }

    #[test]
    fn every_kept_tool_call_keeps_its_result() {
        let mut m = conversation();
        trim(&mut m).unwrap();
        for (i, message) in m.iter().enumerate() {
            if let Message::Assistant { tool_calls, .. } = message {
                for (k, c) in tool_calls.iter().enumerate() {
                    assert!(
                        matches!(&m[i + 1 + k], Message::Tool { tool_call_id, .. } if *tool_call_id == c.id),
                        "call {} lost its result",
                        c.id
                    );
                }
            }
        }
    }

    #[test]
    fn a_huge_last_tool_output_is_shortened() {
        let mut m = vec![
            Message::System {
                content: "s".into(),
            },
            user("goal"),
            call("big", "read"),
            result("big", 200_000),
        ];
        let t = trim(&mut m).unwrap();
        assert_eq!(t.messages_after, 4);
        let Message::Tool { content, .. } = &m[3] else {
            panic!("{m:?}")
        };
        assert!(content.len() < 9_000 && content.contains("output cut from 200000"));
    }

    #[test]
    fn nothing_to_trim_is_none() {
        let mut m = vec![
            Message::System {
                content: "s".into(),
            },
            user("goal"),
        ];
        assert_eq!(trim(&mut m), None);
        assert_eq!(m.len(), 2);
    }
}
