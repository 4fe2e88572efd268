//! The checks' payloads: what one objective check reported and whether it
//! passed.
//!
//! Data only, part of the trace's schema (see [`crate::event`]); running
//! the checks is the runner's.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct CheckCompleted {
    pub name: String,
    pub command: String,
    pub outcome: CheckOutcome,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// Combined stdout and stderr, capped.
    pub output: String,
    /// The sandbox profile the check ran under.
    #[serde(default)]
    pub sandbox: String,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    Passed,
    Failed,
    TimedOut,
    /// Not run, because the agent did not finish (budget or provider failure).
    Skipped,
}
