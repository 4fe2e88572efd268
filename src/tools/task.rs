//! The `task` tool as the model sees it: its name, schema and description.
//!
//! Running a task needs the whole run (the model, the budget, the trace),
//! which a tool does not get; the batch hands `task` calls to the run's
//! sub-agents ([`crate::agent::subagent`]) instead of calling this tool.
//! What is here: the spec, the kinds and the tool names each kind may use.

use serde_json::{Value, json};

use super::{BoxFuture, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec};

/// The tool's canonical name.
pub const TASK: &str = "task";

/// The tools an `explore` task may use: it only looks.
pub const EXPLORE_TOOLS: &[&str] = &["read", "find", "grep", "ls"];

/// What a sub-agent may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum TaskKind {
    /// Read-only: read, find, grep, ls.
    Explore,
    /// The parent's tools except `task`.
    General,
}

impl TaskKind {
    pub const NAMES: &[&str] = &["explore", "general"];

    pub fn parse(name: Option<&str>) -> Option<TaskKind> {
        match name {
            None | Some("general") => Some(TaskKind::General),
            Some("explore") => Some(TaskKind::Explore),
            Some(_) => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

pub struct TaskTool {
    spec: ToolSpec,
}

impl TaskTool {
    pub fn new() -> Self {
        TaskTool {
            spec: ToolSpec {
                name: TASK.into(),
                description: "Hand a focused errand to a sub-agent. It starts with a fresh \
                    conversation (it does not see yours), works with its own tools and turn \
                    limit, and its final answer is this call's result. `kind`: \"explore\" \
                    (read, find, grep, ls only; it may run while planning, and explore tasks \
                    in one turn run in parallel) or \
                    \"general\" (your tools except task; the default). `tools` narrows the \
                    kind's tools further. Write the prompt so it stands alone: what to find or \
                    do, and what to answer with."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "prompt": {"type": "string", "minLength": 1,
                                   "description": "The errand, complete in itself."},
                        "kind": {"type": "string", "enum": TaskKind::NAMES,
                                 "description": "explore (read-only) or general (default)."},
                        "tools": {"type": "array", "items": {"type": "string"},
                                  "description": "Only these of the kind's tools."}
                    },
                    "required": ["prompt"],
                    "additionalProperties": false
                }),
                // Decided per call: an explore task is read-only, see
                // `agent::subagent::Subagents::read_only`.
                read_only: false,
                // The sub-agent's own calls are judged and reported one by one.
                rule_argument: RuleArgument::None,
                changes_files: false,
            },
        }
    }
}

impl Default for TaskTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for TaskTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Only reached outside a run (the batch runs `task` through the sub-agents).
    fn call<'a>(&'a self, _args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async {
            ToolResult::failure(
                ToolErrorCode::InvalidArgument,
                "`task` starts a sub-agent and runs only inside an agent run",
            )
        })
    }
}
