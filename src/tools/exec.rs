//! The `exec` tool. (stub: to be written)

use serde_json::Value;

use super::{BoxFuture, Tool, ToolContext, ToolResult, ToolSpec};

pub struct ExecTool {
    spec: ToolSpec,
}

impl ExecTool {
    pub fn new() -> Self {
        ExecTool {
            spec: ToolSpec {
                name: "exec".into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
                read_only: false,
            },
        }
    }
}

impl Tool for ExecTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call<'a>(&'a self, _args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        todo!()
    }
}
