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

/// What part of the request a difference at `path` lies in, in the words a
/// user edits: the skill text, the run details, the task, a tool result, the
/// tool list. `recorded` is the [`comparable`] recorded request, whose
/// message roles say what each message is.
pub fn changed_part(recorded: &Value, actual: &Value, path: &str) -> String {
    if path.starts_with("tools") {
        return "the tool list".to_string();
    }
    if path.starts_with("tool_choice") {
        return "the tool choice".to_string();
    }
    let index = path
        .strip_prefix("messages[")
        .and_then(|rest| rest.split(']').next())
        .and_then(|n| n.parse::<usize>().ok());
    let Some(index) = index else {
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
            changed_part(&recorded, &actual, &diff.path)
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
}
