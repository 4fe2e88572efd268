//! Background sessions: commands `exec {background: true}` starts and the
//! `process` tool reads, writes to, lists and kills.
//!
//! A session is started by the run's [`ProcessRunner`] exactly like a
//! foreground `exec` (scrubbed environment, sandbox, its own process group),
//! except that stdin is a pipe and nobody waits for it. Its stdout and stderr
//! go, in arrival order, into one bounded log that `process read` pages
//! through by byte offset. The registry ends sessions: those not kept when
//! their step ends ([`Sessions::end_step`]), all of them when the run's agent
//! phase ends ([`Sessions::kill_all`]), and whatever is left when the runner
//! is dropped. Ending a session kills its whole process group (and, in the
//! sandbox, its PID namespace, so `setsid` and double forks die with it).
//!
//! What a session may run is [`crate::policy`]'s decision, made before it
//! starts; what the model reads of it is the `process` tool's.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;

use super::{ProcessRunner, ProcessTree};
use crate::redact::Redactor;

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

/// How a session ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Exit {
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

/// What one session has said and how it ended, shared with its reader tasks.
#[derive(Debug, Default)]
struct Shared {
    /// The kept output: stdout and stderr in the order they arrived.
    log: Vec<u8>,
    /// Bytes dropped from the front of `log` to keep it under [`LOG_CAP`].
    dropped: u64,
    exit: Option<Exit>,
    /// The end reason to record when the waiter sees the process die.
    ending: Option<EndReason>,
}

impl Shared {
    /// How it ended, as far as anyone should care: a session agentci killed
    /// has ended from that moment (SIGKILL cannot be refused), even before
    /// the waiter has reaped it.
    fn ended(&self) -> Option<Exit> {
        self.exit.clone().or_else(|| {
            self.ending.map(|reason| Exit {
                exit_code: None,
                signal: Some(libc::SIGKILL),
                killed: Some(reason),
            })
        })
    }

    fn total(&self) -> u64 {
        self.dropped + self.log.len() as u64
    }

    fn push(&mut self, bytes: &[u8]) {
        self.log.extend_from_slice(bytes);
        let excess = self.log.len().saturating_sub(LOG_CAP);
        if excess > 0 {
            self.log.drain(..excess);
            self.dropped += excess as u64;
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
    pub exit: Option<Exit>,
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

/// The run's background sessions; one registry per [`ProcessRunner`].
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

    /// Up to `max` bytes of session `id`'s output from `offset` (default:
    /// where the last read without an offset ended). Offsets count bytes of
    /// the output with `secrets` masked: the kept output is masked whole
    /// before a page is cut from it, so no offset splits a secret into
    /// halves that each pass the mask.
    pub fn read(
        &self,
        id: u32,
        offset: Option<u64>,
        max: usize,
        secrets: &Redactor,
    ) -> Result<Page, SessionError> {
        let mut state = lock(&self.state);
        let missing = not_found(&state, id);
        let entry = state.entries.get_mut(&id).ok_or(missing)?;
        let asked = offset.unwrap_or(entry.cursor);
        let shared = lock(&entry.shared);
        let dropped = shared.dropped;
        let kept = secrets
            .redact(&String::from_utf8_lossy(&shared.log))
            .into_owned();
        drop(shared);
        let total = dropped + kept.len() as u64;
        let start = asked.clamp(dropped, total);
        let mut from = (start - dropped) as usize;
        while !kept.is_char_boundary(from) {
            from -= 1;
        }
        let mut to = (from + max).min(kept.len());
        while !kept.is_char_boundary(to) {
            to -= 1;
        }
        if to == from {
            // A page smaller than one character still shows that character.
            to += kept[from..].chars().next().map_or(0, char::len_utf8);
        }
        let next_offset = dropped + to as u64;
        if offset.is_none() || next_offset > entry.cursor {
            entry.cursor = next_offset;
        }
        Ok(Page {
            text: kept[from..to].to_string(),
            offset: dropped + from as u64,
            next_offset,
            total,
            skipped: dropped.saturating_sub(asked),
            session: entry.view(id),
        })
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

    /// Wait until session `id` has printed a line, ended, or `wait` passed.
    pub async fn first_output(&self, id: u32, wait: Duration) {
        let Some(shared) = lock(&self.state)
            .entries
            .get(&id)
            .map(|e| Arc::clone(&e.shared))
        else {
            return;
        };
        let deadline = Instant::now() + wait;
        loop {
            {
                let shared = lock(&shared);
                if shared.ended().is_some() || shared.log.contains(&b'\n') {
                    return;
                }
            }
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
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

impl ProcessRunner {
    /// The run's background sessions.
    pub fn sessions(&self) -> &Sessions {
        &self.inner.sessions
    }

    /// Start `command_line` with `bash -c` in `cwd` as a background session
    /// (`shown_cwd` is how the model wrote it); its id. `Err` when
    /// [`MAX_RUNNING`] sessions run already or it could not be started.
    pub fn start_session(
        &self,
        command_line: &str,
        cwd: &Path,
        shown_cwd: &str,
        keep: bool,
    ) -> Result<u32, SessionError> {
        let sessions = self.sessions();
        if !sessions.enabled.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(SessionError::NotEnabled);
        }
        let mut state = lock(&sessions.state);
        let running = Sessions::running(&state);
        if running.len() >= MAX_RUNNING {
            return Err(SessionError::TooMany { running });
        }
        let mut command = self
            .command(crate::process::SHELL, cwd)
            .map_err(|e| SessionError::Io(e.to_string()))?;
        command.arg("-c").arg(command_line).stdin(Stdio::piped());
        let (mut child, tree) =
            ProcessTree::spawn(&mut command).map_err(|e| SessionError::Io(e.to_string()))?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let tree = Arc::new(Mutex::new(tree));
        let readers: Vec<_> = [
            child.stdout.take().map(|p| reader(p, Arc::clone(&shared))),
            child.stderr.take().map(|p| reader(p, Arc::clone(&shared))),
        ]
        .into_iter()
        .flatten()
        .collect();
        let stdin = Arc::new(tokio::sync::Mutex::new(child.stdin.take()));
        let waiter_shared = Arc::clone(&shared);
        let waiter_tree = Arc::clone(&tree);
        tokio::spawn(async move {
            let status = child.wait().await;
            // Nothing the session started outlives it, as with a foreground exec.
            lock(&waiter_tree).kill();
            for reader in readers {
                if tokio::time::timeout(Duration::from_millis(500), reader)
                    .await
                    .is_err()
                {
                    // Only a process that escaped the kill holds the pipe open.
                }
            }
            let mut shared = lock(&waiter_shared);
            let killed = shared.ending;
            shared.exit = Some(match status {
                Ok(status) => Exit {
                    exit_code: status.code(),
                    signal: status.signal(),
                    killed,
                },
                Err(_) => Exit {
                    exit_code: None,
                    signal: None,
                    killed,
                },
            });
        });
        state.next_id += 1;
        let id = state.next_id;
        state.entries.insert(
            id,
            Entry {
                command: command_line.to_string(),
                cwd: shown_cwd.to_string(),
                keep,
                started: Instant::now(),
                shared,
                tree,
                stdin,
                cursor: 0,
            },
        );
        Sessions::prune(&mut state);
        Ok(id)
    }
}

fn reader<R: AsyncRead + Unpin + Send + 'static>(
    mut pipe: R,
    shared: Arc<Mutex<Shared>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            lock(&shared).push(&buf[..n]);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn the_log_keeps_its_newest_bytes() {
        let mut shared = Shared::default();
        shared.push(&vec![b'a'; LOG_CAP]);
        shared.push(b"bc");
        assert_eq!((shared.dropped, shared.total()), (2, LOG_CAP as u64 + 2));
        assert!(shared.log.ends_with(b"abc"));
    }
}
