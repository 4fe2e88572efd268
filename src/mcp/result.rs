//! What a server sends back, in agentci's terms: a tool as listed (name,
//! description, input schema, read-only hint) and a tool call's result
//! (text for the model, the full content for the trace).
//!
//! Both are read from the JSON the server sent rather than from rmcp's
//! typed enums, so keywords this client does not know (`$schema`,
//! `outputSchema`, `annotations`, `title`, `execution`, content types
//! added in later protocol versions) are carried along, never a failure.

use serde::Serialize;
use serde_json::{Value, json};

/// One tool a server offers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct McpTool {
    /// The server's own name for it (not `mcp__server__tool`).
    pub name: String,
    pub description: String,
    /// The JSON schema of the arguments, as the server sent it.
    pub input_schema: Value,
    /// Only when the server says so with `annotations.readOnlyHint: true`.
    pub read_only: bool,
}

impl McpTool {
    pub(super) fn from_json(tool: &Value) -> Option<McpTool> {
        let name = tool.get("name")?.as_str()?.to_string();
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .or_else(|| tool.get("title").and_then(Value::as_str))
            .unwrap_or_default()
            .to_string();
        let read_only = tool
            .pointer("/annotations/readOnlyHint")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let input_schema = tool
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        Some(McpTool {
            name,
            description,
            input_schema,
            read_only,
        })
    }
}

/// The result of one `tools/call`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolOutput {
    /// `isError: true`, or a JSON-RPC error answered to the call.
    pub is_error: bool,
    /// What the model reads: text blocks as they are, other blocks summarised.
    pub text: String,
    /// `structuredContent`, passed on as JSON.
    pub structured: Option<Value>,
    /// Every content block in full, for the trace.
    pub content: Vec<Value>,
}

impl ToolOutput {
    /// From a `CallToolResult` serialized to JSON.
    pub(super) fn from_result(result: &Value) -> ToolOutput {
        let content: Vec<Value> = result
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let structured = result
            .get("structuredContent")
            .cloned()
            .filter(|v| !v.is_null());
        let mut parts: Vec<String> = content.iter().map(summarise).collect();
        if parts.is_empty()
            && let Some(structured) = &structured
        {
            parts.push(structured.to_string());
        }
        ToolOutput {
            is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
            text: parts.join("\n"),
            structured,
            content,
        }
    }

    /// A JSON-RPC error answered to the call (an unknown tool is -32602,
    /// a server without tools -32601): the model gets it as an error result.
    pub(super) fn from_rpc_error(code: i32, message: &str) -> ToolOutput {
        ToolOutput {
            is_error: true,
            text: format!("MCP error {code}: {message}"),
            structured: None,
            content: Vec::new(),
        }
    }
}

/// One content block as text for the model.
fn summarise(block: &Value) -> String {
    let str_at = |pointer: &str| block.pointer(pointer).and_then(Value::as_str);
    match str_at("/type").unwrap_or_default() {
        "text" => str_at("/text").unwrap_or_default().to_string(),
        "image" | "audio" => {
            let kind = str_at("/type").unwrap_or_default();
            let bytes = str_at("/data").map_or(0, |d| d.len() * 3 / 4);
            format!(
                "[{kind}: {}, about {bytes} bytes; kept in the trace]",
                str_at("/mimeType").unwrap_or("unknown type")
            )
        }
        "resource" => match str_at("/resource/text") {
            Some(text) => format!(
                "[resource {}]\n{text}",
                str_at("/resource/uri").unwrap_or_default()
            ),
            None => format!(
                "[resource {} ({}), binary; kept in the trace]",
                str_at("/resource/uri").unwrap_or_default(),
                str_at("/resource/mimeType").unwrap_or("unknown type")
            ),
        },
        "resource_link" => {
            let mut line = format!("[resource link {}", str_at("/uri").unwrap_or_default());
            if let Some(name) = str_at("/name") {
                line.push_str(&format!(" \"{name}\""));
            }
            if let Some(description) = str_at("/description") {
                line.push_str(&format!(": {description}"));
            }
            line.push(']');
            line
        }
        other => format!("[{other} content; kept in the trace]"),
    }
}

/// A resource or resource template a server lists, as shown to users.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct McpResource {
    /// `uri` of a resource, `uriTemplate` of a template.
    pub uri: String,
    pub name: String,
    pub description: Option<String>,
    pub mime_type: Option<String>,
}

impl McpResource {
    pub(super) fn from_json(resource: &Value) -> Option<McpResource> {
        let uri = resource
            .get("uri")
            .or_else(|| resource.get("uriTemplate"))?
            .as_str()?
            .to_string();
        let text = |key: &str| {
            resource
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Some(McpResource {
            name: text("name").unwrap_or_default(),
            description: text("description"),
            mime_type: text("mimeType"),
            uri,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_text_content_is_summarised_and_kept() {
        let result = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "x://y", "text": "body"}},
            {"type": "hologram"}
        ], "structuredContent": {"n": 1}, "isError": false});
        let out = ToolOutput::from_result(&result);
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "hello\n[image: image/png, about 3 bytes; kept in the trace]\n\
             [resource link file:///a \"a\"]\n[resource x://y]\nbody\n\
             [hologram content; kept in the trace]"
        );
        assert_eq!(out.content.len(), 5);
        assert_eq!(out.structured, Some(json!({"n": 1})));
    }

    #[test]
    fn tools_tolerate_unknown_keywords() {
        let tool = json!({"name": "t", "title": "T", "inputSchema": {"$schema": "x", "type": "object"},
            "outputSchema": {}, "execution": {"taskSupport": "forbidden"},
            "annotations": {"readOnlyHint": true}});
        let tool = McpTool::from_json(&tool).unwrap();
        assert!(tool.read_only);
        assert_eq!(tool.description, "T");
    }
}
