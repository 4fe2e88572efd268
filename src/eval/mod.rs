//! Regression evaluation of skills: `agentci eval` runs each case of a
//! suite (a fixture, overrides of a base job, assertions) many times, in
//! parallel and in process, each attempt in a fresh copy of its fixture, and
//! reports pass rates, flakiness and regressions against a baseline.
//!
//! The flow: [`suite`] (the suite file) → [`engine`] (select, resume,
//! schedule) → [`attempt`] (one run via [`crate::runner`], judged by
//! [`assertions`]) → [`results`] (per case and suite, `results.json`) →
//! [`report`] (JUnit, Markdown) and [`baseline`]. Nothing here prints; the
//! CLI shows progress through [`engine::EvalObserver`].

pub mod assertions;
pub mod attempt;
mod attempt_patch;
pub mod baseline;
pub mod cost_guard;
pub mod engine;
pub mod fingerprint;
pub mod fixture;
pub mod isolation;
pub mod judge;
pub mod report;
pub mod results;
mod reuse;
pub mod shard;
pub mod significance;
pub mod snapshot;
pub mod spans;
pub mod stats;
pub mod suite;
mod walk;

pub use attempt::AttemptSettings;
pub use baseline::{Comparison, Thresholds, compare, regressions};
pub use engine::{EvalObserver, EvalOptions, run_eval, select_cases};
pub use results::{Results, ResultsError};
pub use shard::Shard;
pub use suite::{SuiteLoadOptions, SuiteSpec, load_suite};
