//! Workspace-path normalization for cassettes: the workspace's (and each
//! skill folder's) absolute path becomes a placeholder when a request or
//! response is recorded and the replaying checkout's path again when it is
//! served, so a cassette recorded in one checkout replays in another.
//!
//! It rewrites strings only; the cassette's line types and reading them are
//! the parent module's, comparing requests is [`super::compare`]'s.

use std::path::Path;

use serde_json::Value;

use super::WORKSPACE_PLACEHOLDER;
use crate::provider::{ChatRequest, ChatResponse, Message, ToolCall};

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
        max_output_tokens: None,
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
            reasoning,
            content,
            tool_calls,
        } => Message::Assistant {
            // Kept verbatim: a thinking block's signature covers its text.
            reasoning: reasoning.clone(),
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
        reasoning: response.reasoning.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
