//! Shared test helpers: the fake model server, workspaces, running the binary.

pub mod docs;
pub mod fake_github;
pub mod fake_model;
pub mod git_https;
pub mod harness;
pub mod job;
pub mod junit_schema;
pub mod notes_script;
pub mod origin;
pub mod prerequisites;
pub mod redact;
pub mod server_thread;
pub mod tls_server;
pub mod tmux;
pub mod trace_schema;
pub mod users;
pub mod wait;
