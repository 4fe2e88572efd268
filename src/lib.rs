//! agentci: run LLM coding agents unattended in CI.
//!
//! Data flows one way: a job file is validated into a [`spec::JobSpec`], the
//! [`runner`] runs it: the [`agent`] works with [`tools`] under a [`policy`], talking to a model
//! through a [`provider`], and everything that happens is an [`event::Event`]
//! that the [`sink`]s (trace, JUnit, progress, exit status) observe. The
//! agent's changes leave as a patch, commit or push through [`git`].
//! The library never prints; only the CLI and the sinks write to the terminal.

pub mod agent;
pub mod cli;
pub mod eval;
pub mod event;
pub mod git;
pub mod mcp;
pub mod policy;
pub mod process;
pub mod provider;
pub mod redact;
pub mod runner;
pub mod safe_file;
pub mod sandbox;
pub mod sink;
pub mod skills;
pub mod spec;
pub mod tools;
pub mod trace_view;
pub mod untrusted;
