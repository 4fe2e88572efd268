//! The `read` tool. (stub: to be written)

use serde_json::Value;

use super::{BoxFuture, Tool, ToolContext, ToolResult, ToolSpec};

pub struct ReadTool {
    spec: ToolSpec,
}

impl ReadTool {
    pub fn new() -> Self {
        ReadTool {
            spec: ToolSpec {
                name: "read".into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
                read_only: false,
            },
        }
    }
}

impl Tool for ReadTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call<'a>(&'a self, _args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        todo!()
    }
}
