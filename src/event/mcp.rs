//! How the job's MCP servers started. They start before the agent's first
//! turn, together, and their start-up is part of the run: it counts in the
//! run's duration and against `budget.timeout`, so the trace gives it its
//! own event and a reader of the trace its own phase.

use serde::{Deserialize, Serialize};

/// The start-up of the job's servers, emitted right after the run's start.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct McpStartup {
    /// From the start of the servers to the last one ready or given up
    /// (they start together).
    pub duration_ms: u64,
    /// Each server, in the job's order.
    pub servers: Vec<McpServerStartup>,
}

/// One server's start.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct McpServerStartup {
    pub server: String,
    pub duration_ms: u64,
    pub outcome: McpStartOutcome,
}

/// How a server's start ended.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpStartOutcome {
    /// Initialized, its tools listed.
    Started,
    /// Did not start (its `mcp.server.down` says why).
    Failed,
    /// The run's `budget.timeout` ran out before it was ready: the run
    /// ends there.
    TimedOut,
}

impl McpStartup {
    /// The servers the run's timeout cut short.
    pub fn timed_out(&self) -> impl Iterator<Item = &str> {
        self.servers
            .iter()
            .filter(|s| s.outcome == McpStartOutcome::TimedOut)
            .map(|s| s.server.as_str())
    }
}
