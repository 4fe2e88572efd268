//! Background sessions: commands `exec {background: true}` starts and the
//! `process` tool reads, writes to, lists and kills.
//!
//! A session is started by the run's [`ProcessRunner`](super::ProcessRunner)
//! exactly like a foreground `exec` (scrubbed environment, sandbox, its own
//! process group), except that stdin is a pipe and nobody waits for it. Its stdout and stderr
//! go, in arrival order, into one bounded log that `process read` pages
//! through by byte offset. The registry ends sessions: those not kept when
//! their step ends ([`Sessions::end_step`]), all of them when the run's agent
//! phase ends ([`Sessions::kill_all`]), and whatever is left when the runner
//! is dropped. Ending a session kills its whole process group (and, in the
//! sandbox, its PID namespace, so `setsid` and double forks die with it).
//!
//! This module is the registry (ids, limits, views, writing to stdin,
//! ending sessions); starting one session and paging its log are
//! `session`'s. What a session may run is [`crate::policy`]'s decision,
//! made before it starts; what the model reads of it is the `process` tool's.

mod session;

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

use super::ProcessTree;
use session::Shared;

/// Sessions that may run at the same time in one run.
pub const MAX_RUNNING: usize = 8;
/// Ended sessions whose output stays readable; the oldest go first.
const MAX_ENDED: usize = 32;
/// Bytes of output a session keeps; older output is dropped (and said so).
pub const LOG_CAP: usize = 1024 * 1024;

/// Locks a mutex even if a holder panicked: the data is plain bytes and counters.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How a background session ended (not `event::exit::Exit`, the exit-code table).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionExit {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Killed by agentci (`process kill`, the step's or the run's end), not on its own.
    pub killed: Option<EndReason>,
}

/// Why agentci killed a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    Killed,
    StepEnded,
    RunEnded,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Killed => "killed by process kill",
            EndReason::StepEnded => "killed at the end of its step",
            EndReason::RunEnded => "killed at the end of the run",
        }
    }
}

#[derive(Debug)]
struct Entry {
    command: String,
    cwd: String,
    keep: bool,
    started: Instant,
    shared: Arc<Mutex<Shared>>,
    tree: Arc<Mutex<ProcessTree>>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    /// Where the last `read` without an offset ended.
    cursor: u64,
}

impl Entry {
    fn kill(&self, reason: EndReason) -> bool {
        let mut shared = lock(&self.shared);
        if shared.ended().is_some() {
            return false;
        }
        shared.ending = Some(reason);
        drop(shared);
        lock(&self.tree).kill();
        true
    }

    fn view(&self, id: u32) -> SessionView {
        let shared = lock(&self.shared);
        SessionView {
            id,
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            keep: self.keep,
            running: shared.ended().is_none(),
            exit: shared.ended(),
            output_bytes: shared.total(),
            age: self.started.elapsed(),
        }
    }
}

/// A session as `process list` shows it.
#[derive(Clone, Debug)]
pub struct SessionView {
    pub id: u32,
    pub command: String,
    pub cwd: String,
    pub keep: bool,
    pub running: bool,
    pub exit: Option<SessionExit>,
    pub output_bytes: u64,
    pub age: Duration,
}

/// One page of a session's output, secrets masked.
#[derive(Clone, Debug)]
pub struct Page {
    pub text: String,
    /// Where the page starts; later than asked when that output was dropped.
    pub offset: u64,
    pub next_offset: u64,
    pub total: u64,
    /// Bytes between the asked offset and the oldest kept output.
    pub skipped: u64,
    pub session: SessionView,
}

/// Why a session could not be used.
#[derive(Debug, PartialEq)]
pub enum SessionError {
    NotFound {
        id: u32,
        known: Vec<u32>,
    },
    TooMany {
        running: Vec<(u32, String)>,
    },
    StdinClosed(u32),
    /// The run has no `process` tool, so a session could be neither read nor stopped.
    NotEnabled,
    Io(String),
}

/// The run's background sessions; one registry per [`ProcessRunner`](crate::process::ProcessRunner).
#[derive(Debug, Default)]
pub struct Sessions {
    state: Mutex<State>,
    /// Set when the run offers the `process` tool; sessions start only then.
    enabled: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    next_id: u32,
    entries: BTreeMap<u32, Entry>,
}

impl Drop for Sessions {
    fn drop(&mut self) {
        self.kill_all();
    }
}

impl Sessions {
    /// Let sessions start: the run offers the `process` tool to manage them.
    pub fn enable(&self) {
        self.enabled
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Kill the sessions not started with `keep`; the ones this ended.
    pub fn end_step(&self) -> Vec<SessionView> {
        self.end(EndReason::StepEnded, |e| !e.keep)
    }

    /// Kill every session still running; the ones this ended.
    pub fn kill_all(&self) -> Vec<SessionView> {
        self.end(EndReason::RunEnded, |_| true)
    }

    fn end(&self, reason: EndReason, which: impl Fn(&Entry) -> bool) -> Vec<SessionView> {
        let state = lock(&self.state);
        state
            .entries
            .iter()
            .filter(|(_, e)| which(e) && e.kill(reason))
            .map(|(id, e)| e.view(*id))
            .collect()
    }

    /// Kill session `id`; `Ok(false)` when it had already ended.
    pub fn kill(&self, id: u32) -> Result<bool, SessionError> {
        let state = lock(&self.state);
        let entry = state
            .entries
            .get(&id)
            .ok_or_else(|| not_found(&state, id))?;
        Ok(entry.kill(EndReason::Killed))
    }

    pub fn list(&self) -> Vec<SessionView> {
        let state = lock(&self.state);
        state.entries.iter().map(|(id, e)| e.view(*id)).collect()
    }

    /// Session `id` as it is now.
    pub fn view(&self, id: u32) -> Result<SessionView, SessionError> {
        let state = lock(&self.state);
        let entry = state
            .entries
            .get(&id)
            .ok_or_else(|| not_found(&state, id))?;
        Ok(entry.view(id))
    }

    /// Write `data` to session `id`'s stdin.
    pub async fn write(&self, id: u32, data: &str) -> Result<SessionView, SessionError> {
        let stdin = {
            let state = lock(&self.state);
            let entry = state
                .entries
                .get(&id)
                .ok_or_else(|| not_found(&state, id))?;
            Arc::clone(&entry.stdin)
        };
        let mut stdin = stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(SessionError::StdinClosed(id));
        };
        let written = async {
            pipe.write_all(data.as_bytes()).await?;
            pipe.flush().await
        };
        if let Err(e) = written.await {
            *stdin = None;
            return Err(match e.kind() {
                io::ErrorKind::BrokenPipe => SessionError::StdinClosed(id),
                _ => SessionError::Io(e.to_string()),
            });
        }
        drop(stdin);
        self.view(id)
    }

    fn running(state: &State) -> Vec<(u32, String)> {
        state
            .entries
            .iter()
            .filter(|(_, e)| lock(&e.shared).ended().is_none())
            .map(|(id, e)| (*id, e.command.clone()))
            .collect()
    }

    /// Forget the oldest ended sessions beyond [`MAX_ENDED`].
    fn prune(state: &mut State) {
        let ended: Vec<u32> = state
            .entries
            .iter()
            .filter(|(_, e)| lock(&e.shared).ended().is_some())
            .map(|(id, _)| *id)
            .collect();
        for id in ended.iter().take(ended.len().saturating_sub(MAX_ENDED)) {
            state.entries.remove(id);
        }
    }
}

fn not_found(state: &State, id: u32) -> SessionError {
    SessionError::NotFound {
        id,
        known: state.entries.keys().copied().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::ProcessRunner;
    use crate::redact::Redactor;

    fn runner() -> ProcessRunner {
        let runner = ProcessRunner::unsandboxed(&[], Redactor::default());
        runner.sessions().enable();
        runner
    }

    async fn ended(runner: &ProcessRunner, id: u32) -> SessionView {
        for _ in 0..200 {
            let view = runner.sessions().view(id).unwrap();
            if !view.running {
                return view;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("session {id} did not end");
    }

    #[tokio::test]
    async fn output_is_paged_and_the_cursor_follows_reads() {
        let runner = runner();
        let dir = std::env::temp_dir();
        let id = runner
            .start_session("printf 'abcdef'; echo gh", &dir, ".", false)
            .unwrap();
        let view = ended(&runner, id).await;
        assert_eq!(view.exit.unwrap().exit_code, Some(0));
        let page = runner
            .sessions()
            .read(id, None, 4, &Redactor::default())
            .unwrap();
        assert_eq!((page.text.as_str(), page.next_offset), ("abcd", 4));
        let page = runner
            .sessions()
            .read(id, None, 100, &Redactor::default())
            .unwrap();
        assert_eq!(page.text, "efgh\n");
        let page = runner
            .sessions()
            .read(id, Some(2), 2, &Redactor::default())
            .unwrap();
        assert_eq!(page.text, "cd");
    }

    // Attack: page so that a secret falls across two pages, or start a page
    // inside it; each part alone would pass the mask.
    #[tokio::test]
    async fn no_offset_shows_part_of_a_secret() {
        let runner = runner();
        let dir = std::env::temp_dir();
        let id = runner
            .start_session("echo 'a SECRET-VALUE b'", &dir, ".", false)
            .unwrap();
        ended(&runner, id).await;
        let secrets = Redactor::new(["SECRET-VALUE"]);
        let whole = runner.sessions().read(id, Some(0), 100, &secrets).unwrap();
        assert_eq!(whole.text, "a *** b\n");
        for offset in 0..whole.total {
            for max in 1..6 {
                let page = runner
                    .sessions()
                    .read(id, Some(offset), max, &secrets)
                    .unwrap();
                assert!(
                    !page.text.contains("SEC") && !page.text.contains("LUE"),
                    "{page:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn stdin_reaches_the_command_and_kill_ends_it() {
        let runner = runner();
        let dir = std::env::temp_dir();
        let id = runner
            .start_session("while read l; do echo got $l; done", &dir, ".", true)
            .unwrap();
        runner.sessions().write(id, "one\n").await.unwrap();
        runner
            .sessions()
            .first_output(id, Duration::from_secs(5))
            .await;
        assert_eq!(
            runner
                .sessions()
                .read(id, None, 100, &Redactor::default())
                .unwrap()
                .text,
            "got one\n"
        );
        // A kept session survives the step's end, not the run's.
        assert!(runner.sessions().end_step().is_empty());
        assert_eq!(runner.sessions().kill_all().len(), 1);
        let view = ended(&runner, id).await;
        assert_eq!(view.exit.unwrap().killed, Some(EndReason::RunEnded));
        assert!(runner.sessions().kill(id).is_ok_and(|killed| !killed));
    }

    #[tokio::test]
    async fn at_most_max_running_sessions() {
        let runner = runner();
        let dir = std::env::temp_dir();
        for _ in 0..MAX_RUNNING {
            runner.start_session("sleep 30", &dir, ".", false).unwrap();
        }
        let refused = runner.start_session("sleep 30", &dir, ".", false);
        assert!(
            matches!(refused, Err(SessionError::TooMany { running }) if running.len() == MAX_RUNNING)
        );
        assert_eq!(runner.sessions().end_step().len(), MAX_RUNNING);
    }
}
