//! One background session from the inside: starting it
//! ([`ProcessRunner::start_session`]), the bounded log its stdout and stderr
//! readers fill ([`Shared`]), and reading that log back
//! ([`Sessions::read`], [`Sessions::first_output`]).
//!
//! Which sessions exist, their ids, limits and ending them belong to the
//! registry in the parent module; what the model reads of a page is the
//! `process` tool's.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};

use super::{
    EndReason, Entry, LOG_CAP, MAX_RUNNING, Page, SessionError, SessionExit, Sessions, lock,
    not_found,
};
use crate::process::{ProcessRunner, ProcessTree};
use crate::redact::Redactor;

/// What one session has said and how it ended, shared with its reader tasks.
#[derive(Debug, Default)]
pub(super) struct Shared {
    /// The kept output: stdout and stderr in the order they arrived.
    pub(super) log: Vec<u8>,
    /// Bytes dropped from the front of `log` to keep it under [`LOG_CAP`].
    pub(super) dropped: u64,
    pub(super) exit: Option<SessionExit>,
    /// The end reason to record when the waiter sees the process die.
    pub(super) ending: Option<EndReason>,
}

impl Shared {
    /// How it ended, as far as anyone should care: a session agentci killed
    /// has ended from that moment (SIGKILL cannot be refused), even before
    /// the waiter has reaped it.
    pub(super) fn ended(&self) -> Option<SessionExit> {
        self.exit.clone().or_else(|| {
            self.ending.map(|reason| SessionExit {
                exit_code: None,
                signal: Some(libc::SIGKILL),
                killed: Some(reason),
            })
        })
    }

    pub(super) fn total(&self) -> u64 {
        self.dropped + self.log.len() as u64
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.log.extend_from_slice(bytes);
        let excess = self.log.len().saturating_sub(LOG_CAP);
        if excess > 0 {
            self.log.drain(..excess);
            self.dropped += excess as u64;
        }
    }
}

impl Sessions {
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
                Ok(status) => SessionExit {
                    exit_code: status.code(),
                    signal: status.signal(),
                    killed,
                },
                Err(_) => SessionExit {
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

    #[test]
    fn the_log_keeps_its_newest_bytes() {
        let mut shared = Shared::default();
        shared.push(&vec![b'a'; LOG_CAP]);
        shared.push(b"bc");
        assert_eq!((shared.dropped, shared.total()), (2, LOG_CAP as u64 + 2));
        assert!(shared.log.ends_with(b"abc"));
    }
}
