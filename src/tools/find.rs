//! The `find` tool. (stub: to be written)

use serde_json::Value;

use super::{BoxFuture, Tool, ToolContext, ToolResult, ToolSpec};

pub struct FindTool {
    spec: ToolSpec,
}

impl FindTool {
    pub fn new() -> Self {
        FindTool {
            spec: ToolSpec {
                name: "find".into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
                read_only: false,
            },
        }
    }
}

impl Tool for FindTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call<'a>(&'a self, _args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        todo!()
    }
}
