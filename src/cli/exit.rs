//! How a command ended, and the one place where that becomes the documented
//! exit code (docs/commands.md, "Exit codes"): every command returns
//! `Result<Exit, CliError>` and [`exit_code`] prints the error, if any, and
//! picks the number. Commands decide what happened; they never pick numbers.
//!
//! A run's status has its own number in the trace contract
//! ([`RunStatus::exit_code`], which the GitHub outputs and `trace show`
//! report); [`Exit::from`] maps statuses so the two agree, and a test holds
//! them together.

use std::io::Write;

use crate::event::RunStatus;

/// How a command that got to do its work ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// `0`: checks passed, every file was valid, the tool answered, the gates held.
    Success,
    /// `1`: the work ran and failed: a check, a suite below its gate or with
    /// a regression, a tool that answered with an error.
    Failed,
    /// `2`: the run ended with status `error` (input the user must fix,
    /// found once the run was under way, or results that could not be written).
    Error,
    /// `3`: a budget ran out (turns, tool calls, tokens, cost, timeout).
    BudgetExceeded,
    /// `4`: the model provider or an MCP server could not be used.
    Unavailable,
    /// `128 + signal`: stopped by SIGINT (130) or SIGTERM (143); `None`
    /// when the signal is not known, counted as SIGINT.
    Interrupted(Option<i32>),
}

impl Exit {
    /// The documented exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failed => 1,
            Exit::Error => EXIT_BAD_INPUT,
            Exit::BudgetExceeded => 3,
            Exit::Unavailable => 4,
            Exit::Interrupted(signal) => signal
                .and_then(|s| u8::try_from(128 + s).ok())
                .unwrap_or(130),
        }
    }
}

impl From<RunStatus> for Exit {
    fn from(status: RunStatus) -> Self {
        match status {
            RunStatus::Passed => Exit::Success,
            RunStatus::Failed => Exit::Failed,
            RunStatus::Error => Exit::Error,
            RunStatus::BudgetExceeded => Exit::BudgetExceeded,
            RunStatus::ProviderUnavailable => Exit::Unavailable,
            RunStatus::Interrupted => Exit::Interrupted(None),
        }
    }
}

/// Exit code for bad input: a job, skill or flag the user must fix.
pub const EXIT_BAD_INPUT: u8 = 2;

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
    fn a_run_exits_with_the_code_its_trace_reports() {
        use RunStatus::*;
        for status in [
            Passed,
            Failed,
            Error,
            BudgetExceeded,
            ProviderUnavailable,
            Interrupted,
        ] {
            assert_eq!(Exit::from(status).code(), status.exit_code(), "{status:?}");
        }
    }

    #[test]
    fn the_documented_codes() {
        assert_eq!(Exit::Success.code(), 0);
        assert_eq!(Exit::Failed.code(), 1);
        assert_eq!(exit_code(Err(CliError::Reported)), 2);
        assert_eq!(Exit::BudgetExceeded.code(), 3);
        assert_eq!(Exit::Unavailable.code(), 4);
        assert_eq!(Exit::Interrupted(Some(libc::SIGINT)).code(), 130);
        assert_eq!(Exit::Interrupted(Some(libc::SIGTERM)).code(), 143);
        assert_eq!(Exit::Interrupted(None).code(), 130);
    }
}
