use proptest::prelude::*;

use super::*;
use crate::agent::protocol::SUBMIT_PLAN;
use crate::provider::ToolCall;

fn user(text: &str) -> Message {
    Message::User {
        content: text.to_string(),
    }
}

fn calls(ids: &[&str], name: &str) -> Message {
    Message::Assistant {
        reasoning: Vec::new(),
        content: None,
        tool_calls: ids
            .iter()
            .map(|id| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: format!("{{\"path\":\"{id}.rs\"}}"),
            })
            .collect(),
    }
}

fn result(id: &str, size: usize) -> Message {
    Message::Tool {
        tool_call_id: id.to_string(),
        content: format!("first line of {id}\n{}", "x".repeat(size)),
    }
}

fn count(m: &Message) -> u64 {
    let chars = match m {
        Message::System { content } | Message::User { content } => content.len(),
        Message::Tool { content, .. } => content.len(),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            content.as_deref().map_or(0, str::len)
                + tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.len())
                    .sum::<usize>()
        }
    };
    chars as u64 / 4 + 4
}

fn weights(messages: &[Message]) -> Vec<u64> {
    messages.iter().map(count).collect()
}

fn total(messages: &[Message]) -> u64 {
    messages.iter().map(count).sum()
}

/// system, goal, a look-around, the plan, step 1 with reads, step 2 started.
fn conversation(reads: usize, size: usize) -> Vec<Message> {
    let mut m = vec![
        Message::System {
            content: "system prompt".into(),
        },
        user("the goal"),
        calls(&["p1"], "ls"),
        result("p1", 300),
        calls(&["plan"], SUBMIT_PLAN),
        result("plan", 20),
        user("step 1 of 2"),
    ];
    for i in 0..reads {
        let id = format!("r{i}");
        m.push(calls(&[&id], "read"));
        m.push(result(&id, size));
    }
    m.push(user("step 2 of 2"));
    m.push(calls(&["last"], "read"));
    m.push(result("last", 100));
    m
}

/// Every assistant message's calls are answered right after it, in order.
fn calls_answered(messages: &[Message]) -> bool {
    messages.iter().enumerate().all(|(i, m)| match m {
        Message::Assistant { tool_calls, .. } => tool_calls.iter().enumerate().all(|(k, c)| {
            matches!(messages.get(i + 1 + k), Some(Message::Tool { tool_call_id, .. }) if *tool_call_id == c.id)
        }),
        _ => true,
    })
}

#[test]
fn keeps_the_head_the_plan_the_step_and_the_newest_turns() {
    let m = conversation(10, 5_000);
    let selection = select(&m, &weights(&m), 3_000);
    assert!(selection.removes_any());
    let removed = selection.removed(&m);
    let out = apply(
        &m,
        &selection,
        note(Method::Digest, removed.len(), "", &digest(&removed)),
    );
    assert!(total(&out) < total(&m) / 2);
    assert_eq!(out[0], m[0]);
    assert_eq!(out[1], m[1]);
    assert!(out.iter().any(submits_plan));
    assert!(out.contains(&user("step 2 of 2")));
    assert_eq!(out.last(), m.last());
    assert!(calls_answered(&out));
    let Message::User { content } = &out[2] else {
        panic!("{out:?}")
    };
    assert!(content.starts_with(NOTE_MARK), "{content}");
    assert!(
        content.contains("- read {\"path\":\"r0.rs\"} → first line of r0"),
        "{content}"
    );
}

#[test]
fn a_second_compaction_carries_the_first_note_over() {
    let m = conversation(10, 5_000);
    let s = select(&m, &weights(&m), 3_000);
    let removed = s.removed(&m);
    let mut once = apply(
        &m,
        &s,
        note(Method::Digest, removed.len(), "", &digest(&removed)),
    );
    once.push(user("step 3 of 3"));
    for i in 0..6 {
        let id = format!("s{i}");
        once.push(calls(&[&id], "exec"));
        once.push(result(&id, 5_000));
    }
    let s = select(&once, &weights(&once), 3_000);
    let removed = s.removed(&once);
    let digest = digest(&removed);
    assert!(digest.contains("(from an earlier compaction)"), "{digest}");
    assert!(digest.contains("first line of r0"), "{digest}");
}

#[test]
fn the_summary_request_has_no_tools_and_fences_the_transcript() {
    let m = conversation(2, 5_000);
    let s = select(&m, &weights(&m), 10);
    let request = summary_request("gpt-4o", &s.removed(&m));
    assert!(request.tools.is_empty());
    assert_eq!(request.tool_choice, ToolChoice::Auto);
    let Message::User { content } = &request.messages[1] else {
        panic!()
    };
    assert!(content.contains("[call r0] read"));
    assert!(content.contains("more characters]"));
    assert!(content.len() < 6_000, "{}", content.len());
}

#[test]
fn huge_kept_outputs_are_shortened_until_they_fit() {
    let mut m = conversation(0, 0);
    m.push(calls(&["big"], "exec"));
    m.push(result("big", 200_000));
    let shortened = shorten_outputs(&mut m, &mut |m| total(m) < 2_000);
    assert!(shortened >= 1);
    assert!(total(&m) < 2_000);
    assert!(calls_answered(&m));
}

fn arb_conversation() -> impl Strategy<Value = Vec<Message>> {
    // Steps, each a list of turns, each turn 1 to 3 calls with result sizes.
    let turn = prop::collection::vec(0usize..20_000, 1..4);
    let step = prop::collection::vec(turn, 0..8);
    (prop::collection::vec(step, 1..4), any::<bool>()).prop_map(|(steps, text)| {
        let mut m = vec![
            Message::System {
                content: "system prompt and skill".repeat(20),
            },
            user("the goal"),
            calls(&["plan"], SUBMIT_PLAN),
            result("plan", 200),
        ];
        let mut n = 0;
        for (s, turns) in steps.iter().enumerate() {
            m.push(user(&format!("step {s}")));
            for sizes in turns {
                let ids: Vec<String> = sizes
                    .iter()
                    .map(|_| {
                        n += 1;
                        format!("c{n}")
                    })
                    .collect();
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                let mut call = calls(&refs, "read");
                if text && let Message::Assistant { content, .. } = &mut call {
                    *content = Some("thinking ".repeat(30));
                }
                m.push(call);
                for (id, size) in ids.iter().zip(sizes) {
                    m.push(result(id, *size));
                }
            }
        }
        m
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn compaction_keeps_what_it_must_and_ends_under_the_mark(
        m in arb_conversation(),
        mark in 3_000u64..20_000,
    ) {
        let selection = select(&m, &weights(&m), target_for(mark));
        let removed = selection.removed(&m);
        let body = digest(&removed);
        let mut out = apply(&m, &selection, note(Method::Digest, removed.len(), "1. [done] x", &body));
        shorten_outputs(&mut out, &mut |m| total(m) < mark);
        prop_assert!(total(&out) < mark, "{} >= {mark}", total(&out));
        prop_assert_eq!(&out[0], &m[0]);
        prop_assert!(out.iter().any(submits_plan));
        prop_assert!(calls_answered(&out));
        // The newest turn: its call is there, with every result.
        let newest = m.iter().rposition(|x| matches!(x, Message::Assistant { .. } | Message::User { .. })).unwrap();
        match &m[newest] {
            Message::Assistant { tool_calls, .. } => {
                let kept = out.iter().any(|x| matches!(x, Message::Assistant { tool_calls: t, .. } if t == tool_calls));
                prop_assert!(kept, "the newest turn is gone");
            }
            other => prop_assert!(out.contains(other)),
        }
    }
}
