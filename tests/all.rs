//! All integration tests in one binary: they drive the real `agentci`
//! binary against fake servers on 127.0.0.1 and temporary workspaces.

// Cargo's `[lints]` cannot exempt test targets, and clippy.toml exempts only
// `#[test]` functions: the helpers, fake servers and fixtures here unwrap
// and report with eprintln! too, where a panic is a failed test.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    reason = "test code: a panic is a failed test with its message"
)]

mod suite;
