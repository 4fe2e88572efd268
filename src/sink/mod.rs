//! The sinks of the event stream: everything that observes a run without
//! taking part in it.
//!
//! Each sink is configured when it is built and then only consumes
//! [`Event`](crate::event::Event)s through [`EventSink`](crate::event::bus::EventSink):
//! the JSONL trace ([`TraceWriter`]), the JUnit XML ([`JunitWriter`]) and the
//! terminal display ([`PlainLog`] for logs, [`ProgressBars`] for a terminal)
//! and, under GitHub Actions, grouped logs, annotations, the step summary
//! and step outputs ([`GithubActions`]); with a result schema, the result
//! file ([`ResultWriter`]).
//! Sinks never call back into the run, and a sink that fails to write does
//! not stop it: the [`EventBus`](crate::event::bus::EventBus) collects the error.
//! The files that record the run (trace, JUnit, result) share the space
//! [`reserve`] holds back for a full disk.
//! Choosing which sinks a run gets (terminal or not, `--out`) is the CLI's job.

mod described;
mod github;
pub mod junit;
mod network;
pub(crate) mod progress;
pub mod reserve;
mod result_file;
mod resumed;
mod trace;

pub use described::{describe_compaction, describe_mcp_startup};
pub use github::{
    GithubActions, GithubConfig, annotation, escape_data, escape_property, output_line,
    problem_annotation, report_start_failure, step_summary,
};
pub use junit::{FileBase, JunitWriter};
pub use network::describe_network;
pub use progress::{Palette, PlainLog, ProgressBars};
pub use result_file::ResultWriter;
pub use resumed::describe_resume;
pub use trace::{PartialTrace, TraceReadError, TraceWriter, read_trace, read_trace_partial};
