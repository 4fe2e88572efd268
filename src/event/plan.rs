//! The plan's payloads: the steps the model planned, how it said each one
//! ended, and the phase (planning or executing) a model turn belongs to.
//!
//! Data only, part of the trace's schema (see [`crate::event`]).

use serde::{Deserialize, Serialize};

/// How a step ended, as the model reported it with `step_done`.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    Serialize,
    Deserialize,
    PartialEq,
    Eq,
    schemars::JsonSchema,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// The expected outcome was reached.
    #[default]
    Done,
    /// Tried, and the expected outcome was not reached.
    Failed,
    /// Something outside the agent's control prevented it.
    Blocked,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct PlanStep {
    pub title: String,
    pub expected_outcome: String,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Plan,
    Execute,
    Summary,
}
