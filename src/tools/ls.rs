//! The `ls` tool. (stub: to be written)

use serde_json::Value;

use super::{BoxFuture, Tool, ToolContext, ToolResult, ToolSpec};

pub struct LsTool {
    spec: ToolSpec,
}

impl LsTool {
    pub fn new() -> Self {
        LsTool {
            spec: ToolSpec {
                name: "ls".into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
                read_only: false,
            },
        }
    }
}

impl Tool for LsTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call<'a>(&'a self, _args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        todo!()
    }
}
