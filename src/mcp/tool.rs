//! A job's MCP servers as [`Tool`]s: each server tool as
//! `mcp__<server>__<tool>`, and `mcp_list_resources` / `mcp_read_resource`
//! over every server's resources and resource templates.
//!
//! Calls go through the [`McpSet`]; a result keeps its text for the model
//! (cut at the run's output cap) and its full content and
//! `structuredContent` in `data`, for the trace. A server that is down
//! answers with a `SERVER_DOWN` error result: the run decides what a
//! server going down means (events, a required server stopping the run),
//! not this module. Permissions, schemas checks and parallelism are the
//! agent's, from each tool's [`ToolSpec`].

use std::sync::Arc;

use serde_json::{Value, json};

use super::{McpSet, McpTool, ServerDown, ToolOutput, model_tool_name};
use crate::job::mcp::{LIST_RESOURCES, READ_RESOURCE};
use crate::tools::support::{cut_chars, str_arg};
use crate::tools::{
    BoxFuture, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec,
};

/// Longest tool name model APIs accept (OpenAI and Anthropic: 64).
const MAX_NAME: usize = 64;

/// The tools the model gets from `set`'s servers that started, and a
/// warning for each server tool left out because its name cannot be
/// offered. A server that went down keeps its tools (as last listed), so
/// the model's calls of them say the server is down.
pub fn server_tools(set: &Arc<McpSet>) -> (Vec<Box<dyn Tool>>, Vec<String>) {
    let mut tools: Vec<Box<dyn Tool>> = Vec::new();
    let mut warnings = Vec::new();
    let listed = set
        .servers()
        .iter()
        .flat_map(|s| s.tools().into_iter().map(|t| (s.name().to_string(), t)));
    for (server, tool) in listed {
        let name = model_tool_name(&server, &tool.name);
        // Model APIs refuse a request whose tool names break their pattern,
        // which would fail every turn of the run; leave the one tool out.
        let valid = name.len() <= MAX_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            warnings.push(format!(
                "MCP server `{server}`'s tool `{}` is not offered: `{name}` is not a tool name \
                 model APIs accept (letters, digits, `_` and `-`, at most {MAX_NAME})",
                tool.name
            ));
            continue;
        }
        tools.push(Box::new(McpCallTool::new(
            Arc::clone(set),
            &server,
            tool,
            name,
        )));
    }
    (tools, warnings)
}

/// `mcp_list_resources` and `mcp_read_resource` over `set`'s servers.
pub fn resource_tools(set: &Arc<McpSet>) -> Vec<Box<dyn Tool>> {
    vec![
        Box::new(ListResources::new(Arc::clone(set))),
        Box::new(ReadResource::new(Arc::clone(set))),
    ]
}

/// One tool of one server.
pub struct McpCallTool {
    set: Arc<McpSet>,
    server: String,
    tool: String,
    spec: ToolSpec,
}

impl McpCallTool {
    fn new(set: Arc<McpSet>, server: &str, tool: McpTool, name: String) -> Self {
        let description = if tool.description.trim().is_empty() {
            format!("The `{}` tool of MCP server `{server}`.", tool.name)
        } else {
            tool.description.clone()
        };
        McpCallTool {
            set,
            server: server.to_string(),
            spec: ToolSpec {
                name,
                description,
                parameters: parameters(&tool.input_schema),
                // Only the server's `readOnlyHint` makes a tool read-only.
                read_only: tool.read_only,
                rule_argument: RuleArgument::None,
                changes_files: false,
            },
            tool: tool.name,
        }
    }
}

impl Tool for McpCallTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let data = json!({"server": self.server, "tool": self.tool});
            match self.set.call(&self.server, &self.tool, args).await {
                Ok(output) => output_result(&self.spec.name, output, data, ctx),
                Err(down) => down_result(&down),
            }
        })
    }
}

/// The server's input schema as the argument schema the agent checks
/// calls against: `$schema` (a draft the validator may not know) is
/// dropped, `type: object` is added when missing, and a schema that
/// still does not compile is replaced by a plain object, so the server
/// judges the arguments instead of every call failing here.
fn parameters(input_schema: &Value) -> Value {
    let Some(object) = input_schema.as_object() else {
        return json!({"type": "object"});
    };
    let mut schema = object.clone();
    schema.remove("$schema");
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    let schema = Value::Object(schema);
    if jsonschema::validator_for(&schema).is_ok() {
        schema
    } else {
        json!({"type": "object"})
    }
}

/// A server's answer as a result: its text for the model, cut at the
/// run's cap; every content block and `structuredContent` in `data`.
fn output_result(name: &str, output: ToolOutput, mut data: Value, ctx: &ToolContext) -> ToolResult {
    data["is_error"] = json!(output.is_error);
    data["content"] = json!(output.content);
    if let Some(structured) = &output.structured {
        data["structured_content"] = structured.clone();
    }
    let (shown, cut) = cut_chars(&output.text, ctx.limits.max_output_chars);
    let mut text = shown.to_string();
    if cut > 0 {
        text.push_str(&format!(
            "\n[{cut} more characters cut; the full result is kept in the trace]"
        ));
    }
    if output.is_error {
        ToolResult::failure(
            ToolErrorCode::ToolError,
            format!("`{name}` answered with an error"),
        )
        .with_output(text)
        .with_data(data)
    } else {
        ToolResult::success(format!("`{name}` answered"), text, data)
    }
}

fn down_result(down: &ServerDown) -> ToolResult {
    ToolResult::failure(
        ToolErrorCode::ServerDown,
        format!("{down}; its tools cannot be used in this run, the other tools can"),
    )
    .with_data(json!({"server": down.server, "reason": down.reason, "stderr": down.stderr}))
}

/// `mcp_list_resources {server?}`.
struct ListResources {
    set: Arc<McpSet>,
    spec: ToolSpec,
}

impl ListResources {
    fn new(set: Arc<McpSet>) -> Self {
        ListResources {
            set,
            spec: ToolSpec {
                name: LIST_RESOURCES.into(),
                description: "List the resources (and resource templates, whose `{placeholders}` \
                    you fill in to get a URI) that the job's MCP servers offer, of one server or \
                    of all. Read one with `mcp_read_resource`."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "server": {"type": "string", "minLength": 1,
                                   "description": "Only this server's resources. Default: every server's."}
                    },
                    "additionalProperties": false
                }),
                read_only: true,
                rule_argument: RuleArgument::None,
                changes_files: false,
            },
        }
    }
}

impl Tool for ListResources {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let server = str_arg(&args, "server");
            let listing = match self.set.list_resources(server).await {
                Ok(listing) => listing,
                Err(problem) => {
                    return ToolResult::failure(ToolErrorCode::NotFound, problem.to_string());
                }
            };
            let mut lines = Vec::new();
            for (server, r) in &listing.resources {
                lines.push(resource_line("resource", server, r));
            }
            for (server, t) in &listing.templates {
                lines.push(resource_line("template", server, t));
            }
            for down in &listing.down {
                lines.push(format!("{down}"));
            }
            let text = lines.join("\n");
            let (shown, cut) = cut_chars(&text, ctx.limits.max_output_chars);
            let mut output = shown.to_string();
            if cut > 0 {
                output.push_str(&format!(
                    "\n[{cut} more characters cut; ask for one server with `server`]"
                ));
            }
            ToolResult::success(
                format!(
                    "{} resources and {} templates",
                    listing.resources.len(),
                    listing.templates.len()
                ),
                output,
                json!(listing),
            )
        })
    }
}

fn resource_line(kind: &str, server: &str, r: &super::McpResource) -> String {
    let mut line = format!("{kind} server={server} uri={}", r.uri);
    if !r.name.is_empty() {
        line.push_str(&format!(" name={:?}", r.name));
    }
    if let Some(mime) = &r.mime_type {
        line.push_str(&format!(" type={mime}"));
    }
    if let Some(description) = &r.description {
        line.push_str(&format!(": {}", description.replace('\n', " ")));
    }
    line
}

/// `mcp_read_resource {server, uri}`.
struct ReadResource {
    set: Arc<McpSet>,
    spec: ToolSpec,
}

impl ReadResource {
    fn new(set: Arc<McpSet>) -> Self {
        ReadResource {
            set,
            spec: ToolSpec {
                name: READ_RESOURCE.into(),
                description: "Read one resource of a job's MCP server by its URI (as \
                    `mcp_list_resources` lists it, or a template with its placeholders filled in)."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "server": {"type": "string", "minLength": 1,
                                   "description": "The server that offers the resource."},
                        "uri": {"type": "string", "minLength": 1,
                                "description": "The resource's URI."}
                    },
                    "required": ["server", "uri"],
                    "additionalProperties": false
                }),
                read_only: true,
                rule_argument: RuleArgument::None,
                changes_files: false,
            },
        }
    }
}

impl Tool for ReadResource {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let server = str_arg(&args, "server").unwrap_or_default();
            let uri = str_arg(&args, "uri").unwrap_or_default();
            let data = json!({"server": server, "uri": uri});
            match self.set.read_resource(server, uri).await {
                Ok(output) => output_result(READ_RESOURCE, output, data, ctx),
                Err(down) => down_result(&down),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Servers send schemas with keywords and drafts the validator may not
    // know; none of them may make every call of the tool fail.
    #[test]
    fn server_schemas_are_tolerated() {
        let schema = json!({"$schema": "http://example.com/unknown-draft", "properties": {
            "a": {"type": "number"}}, "required": ["a"]});
        let p = parameters(&schema);
        assert_eq!(p["type"], "object");
        assert!(p.get("$schema").is_none());
        assert!(crate::tools::schema::check_arguments(&p, &json!({"a": 1})).is_ok());
        assert!(crate::tools::schema::check_arguments(&p, &json!({})).is_err());
        assert_eq!(parameters(&json!("nonsense")), json!({"type": "object"}));
        assert_eq!(parameters(&json!({"type": 12})), json!({"type": "object"}));
    }
}
