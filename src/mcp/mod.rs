//! MCP client: starts the servers a job names (`mcp.servers`), talks to
//! them with the official Rust SDK (`rmcp`), and turns what they answer
//! into agentci's terms — tools with their schemas and read-only hints,
//! tool results with text for the model and full content for the trace,
//! resources, and servers that went down (with their stderr).
//!
//! This module knows nothing of the agent loop, the permission policy or
//! the trace: callers (the `agentci mcp` commands, the run through
//! [`McpSet`], a job's servers managed together) decide what to offer the
//! model and which events to emit, using what [`McpServer`] reports (`tools_stale` for `mcp.tools.refreshed`,
//! [`ServerDown`] for `mcp.server.down`, `take_requests` for the requests a
//! server sent). Tool names as the model sees them are built by
//! [`model_tool_name`].

mod command;
mod handler;
mod result;
pub mod sampling;
mod server;
mod set;
mod start_limit;
mod state;
mod stdio;
pub mod tool;

pub use command::{StdioLaunch, server_command};
pub use result::{McpResource, McpTool, ToolOutput};
pub use sampling::{Sampler, SamplingAnswer, SamplingRequest, SamplingTurn};
pub use server::{McpServer, SHUTDOWN_GRACE, ServerDown, ServerIdentity, StartContext};
pub use set::{ListResourcesError, McpSet, RefreshedTools, ResourceListing, ServerStartup};
pub use start_limit::RunDeadline;
pub use state::ServerRequestRecord;

/// The name the model sees for `tool` of `server`: `mcp__<server>__<tool>`.
pub fn model_tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}
