//! When a server's start must be over: its own `startup_timeout`, or the
//! run's `budget.timeout` when that runs out first. Servers start before
//! the agent's first turn and their start-up is part of the run's time, so
//! a run whose timeout is shorter than a server's start-up ends at its
//! timeout instead of waiting for the server.
//!
//! It only says when and in what words; timing the start out is
//! [`super::McpServer::start`]'s and the set's.

use std::time::Duration;

use tokio::time::Instant;

use crate::job::McpServerSpec;

/// The run's `budget.timeout` and the moment it runs out.
#[derive(Clone, Copy, Debug)]
pub struct RunDeadline {
    pub at: Instant,
    /// The whole timeout, for messages.
    pub timeout: Duration,
}

/// The deadline of one server's start.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StartLimit {
    at: Instant,
    /// The run's timeout, when it comes before the server's own.
    run_timeout: Option<Duration>,
    startup_timeout: Duration,
}

impl StartLimit {
    pub(crate) fn new(spec: &McpServerSpec, run: Option<RunDeadline>) -> StartLimit {
        let own = Instant::now() + spec.startup_timeout;
        let (at, run_timeout) = match run {
            Some(run) if run.at < own => (run.at, Some(run.timeout)),
            _ => (own, None),
        };
        StartLimit {
            at,
            run_timeout,
            startup_timeout: spec.startup_timeout,
        }
    }

    pub(crate) fn at(&self) -> Instant {
        self.at
    }

    /// The start ended at the run's deadline: the run is out of time.
    pub(crate) fn ran_out_of_run_time(&self) -> bool {
        self.run_timeout.is_some() && Instant::now() >= self.at
    }

    /// Why the server is down when it did not `what` in time
    /// ("answer a ping").
    pub(crate) fn missed(&self, what: &str) -> String {
        match self.run_timeout {
            Some(timeout) => format!(
                "did not {what} before the run's budget.timeout of {} ran out",
                human(timeout)
            ),
            None => format!(
                "did not {what} within its startup_timeout of {}",
                human(self.startup_timeout)
            ),
        }
    }
}

/// `30s`, `1m30s`, `500ms`.
pub(crate) fn human(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = duration.as_secs();
    match (secs / 60, secs % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(startup_timeout: Duration) -> McpServerSpec {
        McpServerSpec {
            name: "slow".into(),
            transport: crate::job::McpTransport::Stdio {
                command: "true".into(),
                args: Vec::new(),
                env: Vec::new(),
                cwd: None,
            },
            timeout: Duration::from_secs(60),
            startup_timeout,
            tools: None,
            required: false,
            roots: false,
            sampling: false,
        }
    }

    #[tokio::test]
    async fn the_sooner_deadline_decides_and_names_itself() {
        let run = RunDeadline {
            at: Instant::now() + Duration::from_secs(4),
            timeout: Duration::from_secs(4),
        };
        let cut = StartLimit::new(&spec(Duration::from_secs(30)), Some(run));
        assert_eq!(cut.at(), run.at);
        assert_eq!(
            cut.missed("answer a ping"),
            "did not answer a ping before the run's budget.timeout of 4s ran out"
        );
        let own = StartLimit::new(&spec(Duration::from_secs(2)), Some(run));
        assert!(own.at() < run.at);
        assert_eq!(
            own.missed("answer a ping"),
            "did not answer a ping within its startup_timeout of 2s"
        );
        assert!(!own.ran_out_of_run_time());
    }

    #[tokio::test]
    async fn a_start_is_out_of_run_time_only_once_the_run_deadline_passed() {
        let run = RunDeadline {
            at: Instant::now(),
            timeout: Duration::from_secs(1),
        };
        let limit = StartLimit::new(&spec(Duration::from_secs(30)), Some(run));
        assert!(limit.ran_out_of_run_time());
        let later = RunDeadline {
            at: Instant::now() + Duration::from_secs(10),
            ..run
        };
        let limit = StartLimit::new(&spec(Duration::from_secs(30)), Some(later));
        assert!(!limit.ran_out_of_run_time());
    }
}
