//! The `grep` tool. (stub: to be written)

use serde_json::Value;

use super::{BoxFuture, Tool, ToolContext, ToolResult, ToolSpec};

pub struct GrepTool {
    spec: ToolSpec,
}

impl GrepTool {
    pub fn new() -> Self {
        GrepTool {
            spec: ToolSpec {
                name: "grep".into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
                read_only: false,
            },
        }
    }
}

impl Tool for GrepTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call<'a>(&'a self, _args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        todo!()
    }
}
