//! The cassette format shared by recording and replay.
//!
//! A cassette is JSONL: a header line
//! `{"cassette": 3, "provider": …, "model": …, "agentci_version": …}`, then one
//! `{"request": …, "response": …}` line per model exchange. A conversation
//! only grows, so each stored request holds just what is new: `keep` messages
//! of the previous request, then its own `messages`, and `tools` only when
//! they changed. That keeps a long session's cassette (and a replay's memory)
//! linear in its length instead of quadratic. This module owns
//! the line types, reading a cassette back, the workspace-path normalization
//! applied on both sides, and the "first difference" report a diverged replay
//! shows. It does not decide when to record or how to serve (see
//! [`super::record`] and [`super::replay`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    ChatRequest, ChatResponse, Message, ProviderError, ToolCall, ToolChoice, ToolDefinition,
};

/// The format version this build reads and writes. Version 3: every
/// request of a run offers one tool list and the summary turn records
/// `tool_choice` (what the model is sent changed, so older cassettes could
/// not replay anyway; the version says so up front).
pub const CASSETTE_VERSION: u64 = 3;

/// What the workspace's absolute path becomes inside a cassette.
pub const WORKSPACE_PLACEHOLDER: &str = "${WORKSPACE}";

/// How long an abbreviated value in a difference report may get.
const ABBREVIATE_CHARS: usize = 80;

/// The first line of a cassette.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteHeader {
    pub cassette: u64,
    pub provider: String,
    pub model: String,
    pub agentci_version: String,
}

impl CassetteHeader {
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            cassette: CASSETTE_VERSION,
            provider: provider.into(),
            model: model.into(),
            agentci_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// One model exchange as stored, with the workspace path already normalized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    pub request: StoredRequest,
    pub response: ChatResponse,
}

/// A request stored as what it adds to the previous one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredRequest {
    pub model: String,
    /// How many messages of the previous request this one starts with.
    #[serde(default)]
    pub keep: usize,
    /// The messages after those.
    pub messages: Vec<Message>,
    /// The tools, when they differ from the previous request's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    /// Whether tools could be called; left out when they could.
    #[serde(default, skip_serializing_if = "ToolChoice::is_auto")]
    pub tool_choice: ToolChoice,
}

/// The previous request of a cassette being recorded, which the next
/// stored one builds on. (A replay keeps references into the cassette
/// instead: see `super::replay_state`.)
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conversation {
    messages: Vec<Message>,
    tools: Vec<ToolDefinition>,
}

impl Conversation {
    /// Store `request` as a delta on the previous one, and remember it.
    pub fn encode(&mut self, request: &ChatRequest) -> StoredRequest {
        let keep = self
            .messages
            .iter()
            .zip(&request.messages)
            .take_while(|(a, b)| a == b)
            .count();
        let stored = StoredRequest {
            model: request.model.clone(),
            keep,
            messages: request.messages[keep..].to_vec(),
            tools: (request.tools != self.tools).then(|| request.tools.clone()),
            tool_choice: request.tool_choice,
        };
        self.messages = request.messages.clone();
        self.tools = request.tools.clone();
        stored
    }
}

/// An exchange and the 1-based line it was read from.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedExchange {
    pub line: usize,
    pub exchange: Exchange,
}

/// A cassette read into memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Cassette {
    pub path: PathBuf,
    pub header: CassetteHeader,
    pub exchanges: Vec<RecordedExchange>,
}

impl Cassette {
    /// Reads and checks a whole cassette; errors name the file and line.
    pub fn read(path: &Path) -> Result<Self, ProviderError> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                ProviderError::Config(format!(
                    "cassette {shown} does not exist; record one with --record {shown}"
                ))
            } else {
                ProviderError::Config(format!("cannot read cassette {shown}: {err}"))
            }
        })?;
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(index, line)| (index + 1, line))
            .filter(|(_, line)| !line.trim().is_empty());
        let Some((header_line, header_text)) = lines.next() else {
            return Err(ProviderError::Config(format!(
                "cassette {shown} is empty; expected a header line like {{\"cassette\": {CASSETTE_VERSION}, \"provider\": \"openai\", \"model\": \"…\", \"agentci_version\": \"…\"}}"
            )));
        };
        let header: CassetteHeader = serde_json::from_str(header_text).map_err(|err| {
            ProviderError::Config(format!(
                "cassette {shown} line {header_line} is not a cassette header: {err}"
            ))
        })?;
        if header.cassette != CASSETTE_VERSION {
            return Err(ProviderError::Config(format!(
                "cassette {shown} line {header_line} has format version {}, but this agentci reads version {CASSETTE_VERSION}; re-record it with --record",
                header.cassette
            )));
        }
        let mut previous_len = 0;
        let exchanges = lines
            .map(|(line, text)| {
                let exchange: Exchange = serde_json::from_str(text).map_err(|err| {
                    ProviderError::Config(format!(
                        "cassette {shown} line {line} is not a valid exchange: {err}"
                    ))
                })?;
                if exchange.request.keep > previous_len {
                    return Err(ProviderError::Config(format!(
                        "cassette {shown} line {line} keeps {} messages but the previous request has only {previous_len}; re-record it with --record",
                        exchange.request.keep
                    )));
                }
                previous_len = exchange.request.keep + exchange.request.messages.len();
                Ok(RecordedExchange { line, exchange })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            path: path.to_path_buf(),
            header,
            exchanges,
        })
    }
}

/// Swaps the workspace's absolute path for [`WORKSPACE_PLACEHOLDER`] (and
/// each skill folder's for `${SKILL:<name>}`) and back, so a cassette
/// recorded in one checkout replays in another.
///
/// Every string the model sees or writes is rewritten: message contents,
/// tool-call arguments, tool descriptions and schemas. Responses are
/// normalized when recorded and expanded when replayed, so a path the model
/// wrote comes back as the replaying workspace's path and the next request
/// (which echoes it) normalizes to what was recorded.
#[derive(Clone, Debug)]
pub struct WorkspacePaths {
    /// Spellings of each folder and the placeholder each becomes, longest first.
    forms: Vec<(String, String)>,
    /// What each placeholder expands to.
    expansions: Vec<(String, String)>,
}

impl WorkspacePaths {
    pub fn new(root: &Path) -> Self {
        let paths = Self {
            forms: Vec::new(),
            expansions: Vec::new(),
        };
        paths.with_folder(WORKSPACE_PLACEHOLDER, root)
    }

    /// Also normalizes the folder of skill `name`, which lies wherever the
    /// skill was found (a skills path, the git cache) and so differs
    /// between checkouts just as the workspace does.
    pub fn with_skill_folder(self, name: &str, dir: &Path) -> Self {
        self.with_folder(&format!("${{SKILL:{name}}}"), dir)
    }

    fn with_folder(mut self, placeholder: &str, root: &Path) -> Self {
        let forms = &mut self.forms;
        let mut push = |path: &Path| {
            let text = path.to_string_lossy().trim_end_matches('/').to_string();
            // A relative root ("." would rewrite every dot) or "/" (every
            // slash) is not a recognisable path; leave text alone.
            if text.is_empty() || !path.is_absolute() {
                return;
            }
            // Inside tool-call arguments the path is JSON-escaped.
            let escaped = serde_json::to_string(&text)
                .map(|quoted| quoted[1..quoted.len() - 1].to_string())
                .unwrap_or_else(|_| text.clone());
            for form in [text, escaped] {
                if !forms.iter().any(|(f, _)| *f == form) {
                    forms.push((form, placeholder.to_string()));
                }
            }
        };
        push(root);
        // A folder under a symlink (macOS /var → /private/var) shows up both ways.
        let canonical = root.canonicalize().ok();
        if let Some(canonical) = canonical.as_deref().filter(|canonical| *canonical != root) {
            push(canonical);
        }
        // Expand to the path as given, or to the canonical one for a relative root.
        let expanded = if root.is_absolute() {
            Some(root)
        } else {
            canonical.as_deref()
        };
        if let Some(text) = expanded
            .map(|path| path.to_string_lossy().trim_end_matches('/').to_string())
            .filter(|text| !text.is_empty())
        {
            self.expansions.push((placeholder.to_string(), text));
        }
        self.forms
            .sort_by_key(|(form, _)| std::cmp::Reverse(form.len()));
        self
    }

    pub fn normalize_text(&self, text: &str) -> String {
        self.forms
            .iter()
            .fold(text.to_string(), |text, (form, placeholder)| {
                text.replace(form.as_str(), placeholder)
            })
    }

    pub fn expand_text(&self, text: &str) -> String {
        self.expansions
            .iter()
            .fold(text.to_string(), |text, (placeholder, root)| {
                text.replace(placeholder.as_str(), root)
            })
    }

    pub fn normalize_message(&self, message: &Message) -> Message {
        map_message(message, &|text| self.normalize_text(text))
    }

    pub fn normalize_request(&self, request: &ChatRequest) -> ChatRequest {
        map_request(request, &|text| self.normalize_text(text))
    }

    pub fn normalize_response(&self, response: &ChatResponse) -> ChatResponse {
        map_response(response, &|text| self.normalize_text(text))
    }

    pub fn expand_response(&self, response: &ChatResponse) -> ChatResponse {
        map_response(response, &|text| self.expand_text(text))
    }
}

type MapText<'a> = &'a dyn Fn(&str) -> String;

fn map_request(request: &ChatRequest, f: MapText<'_>) -> ChatRequest {
    ChatRequest {
        model: request.model.clone(),
        messages: request
            .messages
            .iter()
            .map(|message| map_message(message, f))
            .collect(),
        tools: request
            .tools
            .iter()
            .map(|tool| super::ToolDefinition {
                name: tool.name.clone(),
                description: f(&tool.description),
                parameters: map_value(&tool.parameters, f),
            })
            .collect(),
        tool_choice: request.tool_choice,
    }
}

fn map_message(message: &Message, f: MapText<'_>) -> Message {
    match message {
        Message::System { content } => Message::System {
            content: f(content),
        },
        Message::User { content } => Message::User {
            content: f(content),
        },
        Message::Assistant {
            content,
            tool_calls,
        } => Message::Assistant {
            content: content.as_deref().map(f),
            tool_calls: map_calls(tool_calls, f),
        },
        Message::Tool {
            tool_call_id,
            content,
        } => Message::Tool {
            tool_call_id: tool_call_id.clone(),
            content: f(content),
        },
    }
}

fn map_response(response: &ChatResponse, f: MapText<'_>) -> ChatResponse {
    ChatResponse {
        text: response.text.as_deref().map(f),
        tool_calls: map_calls(&response.tool_calls, f),
        usage: response.usage.clone(),
        finish_reason: response.finish_reason.clone(),
    }
}

fn map_calls(calls: &[ToolCall], f: MapText<'_>) -> Vec<ToolCall> {
    calls
        .iter()
        .map(|call| ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: f(&call.arguments),
        })
        .collect()
}

fn map_value(value: &Value, f: MapText<'_>) -> Value {
    match value {
        Value::String(text) => Value::String(f(text)),
        Value::Array(items) => Value::Array(items.iter().map(|item| map_value(item, f)).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, item)| (key.clone(), map_value(item, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

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
            match super::replay_drift::system_part(content, sent) {
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

    #[test]
    fn skill_folders_round_trip() {
        let paths = WorkspacePaths::new(Path::new("/tmp/ws-a"))
            .with_skill_folder("pdf", Path::new("/home/u/skills/pdf"));
        let text = "read /home/u/skills/pdf/reference.md, edit /tmp/ws-a/x";
        let normalized = paths.normalize_text(text);
        assert_eq!(
            normalized,
            "read ${SKILL:pdf}/reference.md, edit ${WORKSPACE}/x"
        );
        let other = WorkspacePaths::new(Path::new("/ci/ws"))
            .with_skill_folder("pdf", Path::new("/ci/cache/pdf"));
        assert_eq!(
            other.expand_text(&normalized),
            "read /ci/cache/pdf/reference.md, edit /ci/ws/x"
        );
    }

    #[test]
    fn workspace_paths_round_trip() {
        let paths = WorkspacePaths::new(Path::new("/tmp/ws-a/"));
        assert_eq!(
            paths.normalize_text("open /tmp/ws-a/src/lib.rs"),
            "open ${WORKSPACE}/src/lib.rs"
        );
        assert_eq!(paths.expand_text("${WORKSPACE}/x"), "/tmp/ws-a/x");
        // "/" would rewrite every separator, so it is not treated as a root.
        let root = WorkspacePaths::new(Path::new("/"));
        assert_eq!(root.normalize_text("/etc/passwd"), "/etc/passwd");
        assert_eq!(root.expand_text("${WORKSPACE}"), "${WORKSPACE}");
        // A relative root is used through its absolute form, never as is.
        let here = WorkspacePaths::new(Path::new("."));
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(here.normalize_text("a.b"), "a.b");
        assert_eq!(
            here.normalize_text(&format!("{}/x", cwd.display())),
            "${WORKSPACE}/x"
        );
    }
}
