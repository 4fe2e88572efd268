//! What replay compares of a request and how it reports a mismatch: the
//! [`comparable`] form of a (normalized) request, the [`first_difference`]
//! between a recorded and an actual one, and the part of the request a user
//! edits that it lies in ([`changed_part`]).
//!
//! It does not normalize paths (see [`super::paths`]) or decide what a
//! diverged replay does (see `crate::provider::replay`).

use serde_json::Value;

use crate::provider::{ChatRequest, Message};

/// How long an abbreviated value in a difference report may get.
const ABBREVIATE_CHARS: usize = 80;
/// The part of a (normalized) request that replay compares: everything but
/// the model name, which may differ between the recording and the replaying
/// job, and the bodies of tool results.
///
/// A tool result is compared by its first line only (the summary, such as
/// `exit code 101` or `ERROR NO_MATCH: ...`), with durations masked: command
/// output differs between machines and toolchain versions by nature, while
/// the summary says whether the run took the same path as the recording.
pub fn comparable(request: &ChatRequest) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(comparable_message).collect();
    serde_json::json!({
        "messages": messages,
        "tools": request.tools,
        "tool_choice": request.tool_choice,
    })
}

/// One message of a [`comparable`] request.
pub fn comparable_message(message: &Message) -> Value {
    match message {
        Message::Tool {
            tool_call_id,
            content,
        } => serde_json::json!({
            "role": "tool",
            "tool_call_id": tool_call_id,
            "content": mask_durations(content.lines().next().unwrap_or_default()),
        }),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

/// `in 0.42s`, `(1200 ms)` → `<duration>`: times differ between runs.
fn mask_durations(text: &str) -> String {
    static DURATION: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    match DURATION.get_or_init(|| regex::Regex::new(r"\b\d+(\.\d+)?\s?(ms|s|m)\b").ok()) {
        Some(re) => re.replace_all(text, "<duration>").into_owned(),
        None => text.to_string(),
    }
}

/// Where two JSON values first differ, both sides abbreviated for a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// Like `messages[3].content`; empty when the roots differ.
    pub path: String,
    pub recorded: String,
    pub actual: String,
}

/// The first place, in document order, where `actual` differs from `recorded`.
pub fn first_difference(recorded: &Value, actual: &Value) -> Option<Difference> {
    diff_at(String::new(), recorded, actual)
}

/// Where a replayed request left its recording, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangedPart {
    /// The part in the words a user edits: `the skill text (system prompt)`.
    pub what: String,
    /// How to make the replay match again.
    pub fix: &'static str,
}

/// How the system prompt's note about untrusted input begins (written by
/// `agent::protocol`).
pub const UNTRUSTED_NOTE_OPENING: &str = "Some input in this run comes from outside the job";

/// How the fenced untrusted input in the goal message begins (written by
/// `untrusted::fence`).
pub const UNTRUSTED_FENCE_OPENING: &str =
    "The input below comes from outside this job and is untrusted.";

/// The fix for a part of the request the job, skill or agentci decides.
const RE_RECORD: &str = "re-record with --record";

/// The fix when the untrusted input differs: it comes from the event that
/// started the run (or the job's `untrusted_inputs`), not from an edit.
const SAME_INPUT: &str = "replay under the same GitHub event and untrusted_inputs as the \
     recording (a cassette recorded without an event replays under any), or re-record with --record";

/// What part of the request a difference at `path` lies in, and its fix.
pub fn changed_part(recorded: &Value, actual: &Value, path: &str) -> ChangedPart {
    let content_at = |request: &Value| -> String {
        message_index(path)
            .and_then(|index| {
                request
                    .get("messages")?
                    .get(index)?
                    .get("content")?
                    .as_str()
            })
            .unwrap_or_default()
            .to_string()
    };
    let (was, sent) = (content_at(recorded), content_at(actual));
    let untrusted = |opening: &str| was.contains(opening) != sent.contains(opening);
    let in_fence = |text: &str| {
        let differs_at = common_prefix(&was, &sent);
        text.find(UNTRUSTED_FENCE_OPENING)
            .is_some_and(|at| (at..fence_end(text)).contains(&differs_at))
    };
    if untrusted(UNTRUSTED_NOTE_OPENING) {
        return ChangedPart {
            what: "the run's untrusted input (the note about it in the system prompt: the \
                   recording and this run differ in whether a GitHub event's text, such as a \
                   pull request's title and body, or the job's untrusted_inputs reached the model)"
                .to_string(),
            fix: SAME_INPUT,
        };
    }
    if untrusted(UNTRUSTED_FENCE_OPENING) || in_fence(&was) || in_fence(&sent) {
        return ChangedPart {
            what: "the run's untrusted input in the task (a GitHub event's text, such as a pull \
                   request's title and body, or the job's untrusted_inputs)"
                .to_string(),
            fix: SAME_INPUT,
        };
    }
    ChangedPart {
        what: part_name(recorded, actual, path),
        fix: RE_RECORD,
    }
}

/// The message index a difference's `path` starts with (`messages[3]…`).
fn message_index(path: &str) -> Option<usize> {
    path.strip_prefix("messages[")
        .and_then(|rest| rest.split(']').next())
        .and_then(|n| n.parse::<usize>().ok())
}

/// Where the fenced untrusted blocks of a goal message end: after its last
/// line of only backticks (a block's closing fence).
fn fence_end(text: &str) -> usize {
    let mut offset = 0;
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        let bare = line.trim_end_matches('\n');
        if bare.len() >= 3 && bare.bytes().all(|b| b == b'`') {
            end = offset;
        }
    }
    end
}

/// How many bytes `a` and `b` share from their start.
fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// What part of the request a difference at `path` lies in, in the words a
/// user edits: the skill text, the run details, the task, a tool result, the
/// tool list. `recorded` is the [`comparable`] recorded request, whose
/// message roles say what each message is.
fn part_name(recorded: &Value, actual: &Value, path: &str) -> String {
    if path.starts_with("tools") {
        return "the tool list".to_string();
    }
    if path.starts_with("tool_choice") {
        return "the tool choice".to_string();
    }
    let Some(index) = message_index(path) else {
        return "the request".to_string();
    };
    let message = recorded.get("messages").and_then(|m| m.get(index));
    let role = message.and_then(|m| m.get("role")).and_then(Value::as_str);
    let content = message
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    match role {
        // The first system message carries the skill, then the job's memory
        // file and rules (see agent::protocol).
        Some("system") if content.contains("# Skill:") => {
            let sent = actual
                .get("messages")
                .and_then(|m| m.get(index))
                .and_then(|m| m.get("content"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            match crate::provider::replay_drift::system_part(content, sent) {
                "memory file" => "the memory file (system prompt)".to_string(),
                "rules" => "the job's rules (system prompt)".to_string(),
                "protocol" => "agentci's protocol text (system prompt)".to_string(),
                _ => "the skill text (system prompt)".to_string(),
            }
        }
        Some("system") => {
            "the run details in the system prompt (workspace, skill folders, allowed commands, checks)"
                .to_string()
        }
        Some("user") => format!("the task (message {})", index + 1),
        Some("tool") => format!("a tool result (message {})", index + 1),
        Some("assistant") => format!("an earlier model answer (message {})", index + 1),
        _ => format!("the conversation length (message {})", index + 1),
    }
}

fn diff_at(path: String, recorded: &Value, actual: &Value) -> Option<Difference> {
    match (recorded, actual) {
        (Value::Object(left), Value::Object(right)) => {
            for (key, value) in left {
                let child = join_key(&path, key);
                match right.get(key) {
                    Some(other) => {
                        if let Some(diff) = diff_at(child, value, other) {
                            return Some(diff);
                        }
                    }
                    None => return Some(missing(child, Some(value), None)),
                }
            }
            right
                .iter()
                .find(|(key, _)| !left.contains_key(*key))
                .map(|(key, value)| missing(join_key(&path, key), None, Some(value)))
        }
        (Value::Array(left), Value::Array(right)) => {
            for (index, (value, other)) in left.iter().zip(right).enumerate() {
                if let Some(diff) = diff_at(format!("{path}[{index}]"), value, other) {
                    return Some(diff);
                }
            }
            let index = left.len().min(right.len());
            match (left.get(index), right.get(index)) {
                (None, None) => None,
                (value, other) => Some(missing(format!("{path}[{index}]"), value, other)),
            }
        }
        (Value::String(left), Value::String(right)) if left != right => {
            let (recorded, actual) = abbreviate_strings(left, right);
            Some(Difference {
                path,
                recorded,
                actual,
            })
        }
        _ if recorded == actual => None,
        _ => Some(Difference {
            path,
            recorded: abbreviate_value(recorded),
            actual: abbreviate_value(actual),
        }),
    }
}

fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn missing(path: String, recorded: Option<&Value>, actual: Option<&Value>) -> Difference {
    let show =
        |value: Option<&Value>| value.map_or_else(|| "nothing".to_string(), abbreviate_value);
    Difference {
        path,
        recorded: show(recorded),
        actual: show(actual),
    }
}

fn abbreviate_value(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= ABBREVIATE_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(ABBREVIATE_CHARS).collect();
    cut.push('…');
    cut
}

/// Both strings quoted and cut to a window around the first differing
/// character, so a change deep inside a long prompt is visible.
fn abbreviate_strings(left: &str, right: &str) -> (String, String) {
    const BEFORE: usize = 20;
    let left_chars: Vec<char> = left.chars().collect();
    let right_chars: Vec<char> = right.chars().collect();
    let common = left_chars
        .iter()
        .zip(&right_chars)
        .take_while(|(a, b)| a == b)
        .count();
    let start = common.saturating_sub(BEFORE);
    let window = |chars: &[char]| {
        let end = chars.len().min(start + ABBREVIATE_CHARS);
        let body: String = chars[start..end].iter().collect();
        let quoted = serde_json::to_string(&body).unwrap_or_else(|_| format!("\"{body}\""));
        let open = if start > 0 { "…" } else { "" };
        let close = if end < chars.len() { "…" } else { "" };
        // The ellipses go inside the quotes: `"…text…"`.
        format!("\"{open}{}{close}\"", &quoted[1..quoted.len() - 1])
    };
    (window(&left_chars), window(&right_chars))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn first_difference_names_the_path() {
        let recorded =
            json!({"messages": [{"role": "user", "content": "a"}, {"content": "hello world"}]});
        let actual =
            json!({"messages": [{"role": "user", "content": "a"}, {"content": "hello there"}]});
        let diff = first_difference(&recorded, &actual).unwrap();
        assert_eq!(diff.path, "messages[1].content");
        assert_eq!(diff.recorded, "\"hello world\"");
        assert_eq!(diff.actual, "\"hello there\"");
        assert_eq!(first_difference(&recorded, &recorded), None);
    }

    #[test]
    fn first_difference_reports_extra_and_missing_items() {
        let diff = first_difference(&json!({"a": [1, 2]}), &json!({"a": [1, 2, 3]})).unwrap();
        assert_eq!(
            (
                diff.path.as_str(),
                diff.recorded.as_str(),
                diff.actual.as_str()
            ),
            ("a[2]", "nothing", "3")
        );
        let diff = first_difference(&json!({"a": 1, "b": 2}), &json!({"a": 1})).unwrap();
        assert_eq!(
            (
                diff.path.as_str(),
                diff.recorded.as_str(),
                diff.actual.as_str()
            ),
            ("b", "2", "nothing")
        );
        let diff = first_difference(&json!({"a": 1}), &json!({"a": 1, "c": true})).unwrap();
        assert_eq!((diff.path.as_str(), diff.actual.as_str()), ("c", "true"));
        let diff = first_difference(&json!([1]), &json!("x")).unwrap();
        assert_eq!(
            (
                diff.path.as_str(),
                diff.recorded.as_str(),
                diff.actual.as_str()
            ),
            ("", "[1]", "\"x\"")
        );
    }

    #[test]
    fn long_strings_are_cut_around_the_change() {
        let left = format!("{}CHANGED{}", "x".repeat(500), "y".repeat(500));
        let right = format!("{}altered{}", "x".repeat(500), "y".repeat(500));
        let diff = first_difference(&json!(left), &json!(right)).unwrap();
        assert!(diff.recorded.starts_with("\"…xxxx"), "{}", diff.recorded);
        assert!(diff.recorded.contains("CHANGED"), "{}", diff.recorded);
        assert!(diff.actual.contains("altered"), "{}", diff.actual);
        assert!(diff.recorded.ends_with("…\""), "{}", diff.recorded);
        assert!(diff.recorded.chars().count() < 100);
    }

    #[test]
    fn a_changed_system_prompt_names_its_section() {
        let prompt = "You are agentci.\n\n# Skill: s\nDo it.\n\n# Memory: AGENTS.md\nTabs.\n\n# Rules\n1. Be brief.";
        let request = |text: &str| json!({"messages": [{"role": "system", "content": text}]});
        let recorded = request(prompt);
        let part = |edited: &str| {
            let actual = request(edited);
            let diff = first_difference(&recorded, &actual).unwrap();
            changed_part(&recorded, &actual, &diff.path).what
        };
        assert_eq!(
            part(&prompt.replace("Do it.", "Do.")),
            "the skill text (system prompt)"
        );
        assert_eq!(
            part(&prompt.replace("Tabs.", "Spaces.")),
            "the memory file (system prompt)"
        );
        assert_eq!(
            part(&prompt.replace("brief", "kind")),
            "the job's rules (system prompt)"
        );
        assert_eq!(
            part(&prompt.replace("You are", "You're")),
            "agentci's protocol text (system prompt)"
        );
    }

    #[test]
    fn a_difference_in_untrusted_input_is_named_as_such_with_its_own_fix() {
        use super::{
            UNTRUSTED_FENCE_OPENING as FENCE_OPENING, UNTRUSTED_NOTE_OPENING as PROMPT_NOTE_OPENING,
        };
        let system = |text: &str| json!({"messages": [{"role": "system", "content": text}]});
        let plain = "You are agentci.\n\n# Skill: s\nDo it.";
        let noted =
            format!("You are agentci.\n\n{PROMPT_NOTE_OPENING}: data.\n\n# Skill: s\nDo it.");
        let part = |recorded: &Value, actual: &Value| {
            let diff = first_difference(recorded, actual).unwrap();
            changed_part(recorded, actual, &diff.path)
        };
        let noted_part = part(&system(&noted), &system(plain));
        assert!(
            noted_part.what.contains("untrusted input"),
            "{noted_part:?}"
        );
        assert!(
            noted_part.fix.contains("same GitHub event"),
            "{noted_part:?}"
        );
        assert_eq!(part(&system(plain), &system(&noted)).fix, noted_part.fix);

        let goal = |body: &str, trailer: &str| {
            json!({"messages": [{"role": "user", "content": format!(
                "Goal:\nfix\n\n{FENCE_OPENING} Data.\n\nUntrusted input 1 of 1: pull request body\n```untrusted\n{body}\n```\n\n{trailer}"
            )}]})
        };
        let body_changed = part(
            &goal("Merge me", "Make a plan."),
            &goal("Merge you", "Make a plan."),
        );
        assert!(
            body_changed.what.contains("untrusted input in the task"),
            "{body_changed:?}"
        );
        // After the last fence is agentci's own text again.
        let trailer_changed = part(
            &goal("Merge me", "Make a plan."),
            &goal("Merge me", "Plan."),
        );
        assert_eq!(trailer_changed.what, "the task (message 1)");
        assert_eq!(trailer_changed.fix, "re-record with --record");
    }
}
