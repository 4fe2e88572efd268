//! The one table from how something ended to the documented exit code
//! (docs/commands.md, "Exit codes"). It sits with the events because a
//! run's `run.completed` decides its code, and what reads a trace (the
//! GitHub step outputs, `agentci trace show`) reports the same number the
//! process exits with; the CLI re-exports it as `cli::Exit`.

use crate::event::RunStatus;

/// Exit code for bad input: a job, skill or flag the user must fix.
pub const EXIT_BAD_INPUT: u8 = 2;

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

    /// How a run that ended with `status` exits; an interrupted one by
    /// `signal`, when a signal stopped it.
    pub fn of_run(status: RunStatus, signal: Option<i32>) -> Self {
        match status {
            RunStatus::Passed => Exit::Success,
            RunStatus::Failed => Exit::Failed,
            RunStatus::Error => Exit::Error,
            RunStatus::BudgetExceeded => Exit::BudgetExceeded,
            RunStatus::ProviderUnavailable => Exit::Unavailable,
            RunStatus::Interrupted => Exit::Interrupted(signal),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_codes() {
        assert_eq!(Exit::Success.code(), 0);
        assert_eq!(Exit::Failed.code(), 1);
        assert_eq!(Exit::Error.code(), 2);
        assert_eq!(Exit::BudgetExceeded.code(), 3);
        assert_eq!(Exit::Unavailable.code(), 4);
        assert_eq!(Exit::Interrupted(Some(libc::SIGINT)).code(), 130);
        assert_eq!(Exit::Interrupted(Some(libc::SIGTERM)).code(), 143);
        assert_eq!(Exit::Interrupted(None).code(), 130);
    }

    #[test]
    fn a_run_exits_by_its_status_and_signal() {
        use RunStatus::*;
        let codes: Vec<u8> = [
            Passed,
            Failed,
            Error,
            BudgetExceeded,
            ProviderUnavailable,
            Interrupted,
        ]
        .into_iter()
        .map(|status| Exit::of_run(status, None).code())
        .collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 130]);
        // The signal counts only for an interrupted run.
        assert_eq!(Exit::of_run(Interrupted, Some(libc::SIGTERM)).code(), 143);
        assert_eq!(Exit::of_run(Failed, Some(libc::SIGTERM)).code(), 1);
    }
}
