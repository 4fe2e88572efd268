//! The `todo` tool: the agent's own checklist for the run.
//!
//! The list lives in the tool (one tool per run) and every result carries
//! the whole list in its `data`, so the trace records each change and the
//! progress display and the GitHub step summary show the latest list from
//! the `tool.result` events. It never touches the workspace, but it is not
//! read-only: calls apply one after another, in the order the model gave.

use std::sync::Mutex;

use serde_json::{Value, json};

use super::support::{str_arg, usize_arg};
use super::{BoxFuture, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec};

/// Items a list may hold: a checklist, not a place to store text.
pub const MAX_ITEMS: usize = 100;
/// Characters an item's text may have.
pub const MAX_TEXT: usize = 300;
const STATUSES: &[&str] = &["pending", "in_progress", "done"];

#[derive(Clone, Debug)]
struct Item {
    id: usize,
    text: String,
    status: String,
}

pub struct TodoTool {
    spec: ToolSpec,
    items: Mutex<Vec<Item>>,
}

impl TodoTool {
    pub fn new() -> Self {
        TodoTool {
            spec: ToolSpec {
                name: "todo".into(),
                description: "Your own checklist for this run. `{action: \"add\", text}` adds an \
                    item (status pending) and returns its id; `{action: \"update\", id, status?, \
                    text?}` changes one (status: pending, in_progress or done); `{action: \
                    \"list\"}` shows the list. Every answer shows the whole list."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["add", "update", "list"],
                                   "description": "add an item, update one, or list them."},
                        "text": {"type": "string", "description": "The item, for add (or a new text, for update)."},
                        "id": {"type": "integer", "minimum": 1, "description": "The item to update."},
                        "status": {"type": "string", "enum": STATUSES,
                                   "description": "The item's new status, for update."}
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }),
                read_only: false,
                rule_argument: RuleArgument::None,
                changes_files: false,
            },
            items: Mutex::new(Vec::new()),
        }
    }
}

impl Default for TodoTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for TodoTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            // A poisoned lock only means an earlier call panicked mid-update; the list is still whole.
            let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
            match apply(&mut items, &args) {
                Ok(what) => ToolResult::success(what, render(&items), list_data(&items)),
                Err(message) => ToolResult::failure(ToolErrorCode::InvalidArgument, message)
                    .with_output(render(&items))
                    .with_data(list_data(&items)),
            }
        })
    }
}

fn apply(items: &mut Vec<Item>, args: &Value) -> Result<String, String> {
    let text = str_arg(args, "text").map(str::trim);
    if text.is_some_and(|t| t.chars().count() > MAX_TEXT) {
        return Err(format!(
            "`text` is longer than {MAX_TEXT} characters; keep items short"
        ));
    }
    match str_arg(args, "action").unwrap_or_default() {
        "add" => {
            let Some(text) = text.filter(|t| !t.is_empty()) else {
                return Err("`add` needs a non-empty `text`".into());
            };
            if items.len() >= MAX_ITEMS {
                return Err(format!("the list already has {MAX_ITEMS} items"));
            }
            let id = items.len() + 1;
            items.push(Item {
                id,
                text: text.to_string(),
                status: "pending".into(),
            });
            Ok(format!("added item {id}"))
        }
        "update" => {
            let Some(id) = usize_arg(args, "id") else {
                return Err("`update` needs the `id` of an item".into());
            };
            let count = items.len();
            let Some(item) = items.iter_mut().find(|i| i.id == id) else {
                return Err(format!("no item {id}; the list has items 1 to {count}"));
            };
            if let Some(status) = str_arg(args, "status") {
                item.status = status.to_string();
            }
            if let Some(text) = text.filter(|t| !t.is_empty()) {
                item.text = text.to_string();
            }
            Ok(format!("updated item {id}"))
        }
        _ => Ok(format!("{} items", items.len())),
    }
}

fn render(items: &[Item]) -> String {
    items
        .iter()
        .map(|i| {
            let mark = match i.status.as_str() {
                "done" => "x",
                "in_progress" => "~",
                _ => " ",
            };
            format!("[{mark}] {}. {}", i.id, i.text)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn list_data(items: &[Item]) -> Value {
    json!({
        "items": items
            .iter()
            .map(|i| json!({"id": i.id, "text": i.text, "status": i.status}))
            .collect::<Vec<_>>()
    })
}
