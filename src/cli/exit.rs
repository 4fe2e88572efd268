//! How a command ended, and where that becomes the process's exit code:
//! every command returns `Result<Exit, CliError>` and [`exit_code`] prints
//! the error, if any, and picks the number. Commands decide what happened;
//! they never pick numbers. The table itself is [`Exit::code`], with the
//! events (`crate::event::Exit`), so that a run's `run.completed`, the
//! GitHub outputs and `trace show` give the number the process exits with.

use std::io::Write;

pub use crate::event::{EXIT_BAD_INPUT, Exit};

/// Why a command could not do its work: input the user must fix, or what
/// it needs from the machine. Every one exits 2.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Problems with the input, one line each, already in the form they
    /// are printed in (`FILE:LINE:COL: error: …`, `error: --repeat: …`).
    #[error("{}", .0.join("\n"))]
    Input(Vec<String>),
    /// Problems already reported where they were found: a job that did
    /// not start (on stderr and, under GitHub Actions, as annotations), a
    /// usage error clap printed.
    #[error("the problems above")]
    Reported,
    #[error("cannot read the current directory: {0}")]
    CurrentDir(std::io::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot listen for signals: {0}")]
    Signals(std::io::Error),
    /// `agentci trace`: a trace that cannot be shown at all.
    #[error(transparent)]
    Trace(#[from] crate::trace_view::TraceLoadError),
}

impl CliError {
    /// One problem, printed as `error: MESSAGE`.
    pub fn input(message: impl std::fmt::Display) -> Self {
        CliError::Input(vec![format!("error: {message}")])
    }
}

/// Problem lines, as the checks that collect them return them.
impl From<Vec<String>> for CliError {
    fn from(lines: Vec<String>) -> Self {
        CliError::Input(lines)
    }
}

/// Print the error of a command, if it has one, and pick its exit code.
pub fn exit_code(outcome: Result<Exit, CliError>) -> u8 {
    let error = match outcome {
        Ok(exit) => return exit.code(),
        Err(error) => error,
    };
    print(&error);
    EXIT_BAD_INPUT
}

/// Print `error` on stderr, unless it was already reported.
pub fn print(error: &CliError) {
    let mut stderr = std::io::stderr();
    match error {
        CliError::Reported => {}
        // Messages quote files and what the model wrote: shown inert.
        CliError::Input(lines) => {
            for line in lines {
                let _ = writeln!(stderr, "{}", crate::inert::terminal(line));
            }
        }
        other => {
            let _ = writeln!(
                stderr,
                "error: {}",
                crate::inert::terminal(&other.to_string())
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_exits_as_bad_input() {
        assert_eq!(exit_code(Err(CliError::Reported)), 2);
        assert_eq!(exit_code(Ok(Exit::Interrupted(Some(libc::SIGTERM)))), 143);
    }
}
