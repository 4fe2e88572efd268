//! agentci: run LLM coding agents unattended in CI.
//!
//! Data flows one way: a job file is validated into a [`job::JobSpec`], the
//! [`runner`] runs it: the [`agent`] works with [`tools`] under a [`policy`], talking to a model
//! through a [`provider`], and everything that happens is an [`event::Event`]
//! that the [`sink`]s (trace, JUnit, progress, exit status) observe. The
//! agent's changes leave as a patch, commit or push through [`git`].
//! The library never prints; only the CLI and the sinks write to the terminal.
//!
//! # Layering
//!
//! Modules use only modules below them in this list, never one above, so
//! there is no circle between top-level modules (`tests/suite/module_graph.rs`
//! fails naming the circle when one comes back; unit tests may reach anywhere):
//!
//! 1. leaves, using no other module: [`safe_file`], [`redact`], [`run_env`]
//!    (the environment, read once by the CLI), [`inert`]
//!    (text from the run made safe to show), [`tls`] (the one TLS
//!    configuration every HTTP client uses), [`netproxy`] (the allowlist
//!    proxy of `sandbox.network`, and the address checks `web_fetch` shares);
//!    [`git`] uses only `safe_file`; [`github_api`] (the REST calls of the
//!    eval workflow) uses only `inert` and `tls`.
//! 2. [`provider`]: model clients and the provider-neutral types (messages,
//!    [`provider::Usage`], [`provider::ModelInfo`]).
//! 3. [`event`]: the contract (data; it carries the provider's types) and
//!    the bus that stamps, masks and delivers it ([`event::bus`], which uses
//!    `redact`), so the agent emits without knowing any sink.
//! 4. [`sandbox`], then [`process`] (starting commands), then [`tools`]
//!    (the builtin tools and their catalog), then [`untrusted`].
//! 5. [`policy`]: decides calls by its own [`policy::PermissionRules`].
//! 6. [`job`]: the job file, validated; it converts into the configuration types
//!    the modules below own (permission rules, sandbox, replay mode).
//! 7. [`mcp`], [`skills`]: servers and skills a job names.
//! 8. [`sink`] (what observes the events), [`trace_view`].
//! 9. [`agent`] (the loop, emitting through the bus), [`runner`] (wiring a
//!    run), [`eval`] (many runs), and [`cli`] on top.

pub mod agent;
pub mod cli;
pub mod eval;
pub mod event;
pub mod git;
pub mod github_api;
pub mod inert;
pub mod job;
pub mod mcp;
pub mod netproxy;
pub mod policy;
pub mod process;
pub mod provider;
pub mod redact;
pub mod run_env;
pub mod runner;
pub mod safe_file;
pub mod sandbox;
pub mod sink;
pub mod skills;
pub mod telemetry;
pub mod tls;
pub mod tools;
pub mod trace_view;
pub mod untrusted;
