//! A stdio server's process and pipes: spawns the [`server_command`]
//! through the run's process runner (sandbox, scrubbed environment),
//! keeps the last lines of its stderr (capped, never on agentci's own
//! stderr), and watches its stdout before rmcp reads it.
//!
//! Why watch stdout: rmcp skips a line that is not JSON (as the other SDKs
//! do), but the MCP stdio transport says a server "MUST NOT write anything
//! to its stdout that is not a valid MCP message"
//! (<https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio>);
//! such a line means the stream can no longer be trusted (a stray `print`
//! can split a message), so the server is cut off and its calls fail.
//! The watcher also sees `notifications/tools/list_changed` even when a
//! server sends it before the `initialize` answer, which rmcp drops.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{Child, ChildStdin};

use super::command::{LaunchError, StdioLaunch, server_command};
use super::state::ServerState;
use crate::process::{ProcessRunner, ProcessTree};

/// A message line longer than this cuts the server off (rmcp's own limit is similar).
const MAX_LINE: u64 = 16 * 1024 * 1024;
/// Longest stderr line kept; the rest of the line is dropped.
const MAX_STDERR_LINE: usize = 2000;
/// Buffer between the stdout watcher and rmcp.
const PIPE_BUFFER: usize = 64 * 1024;

/// A running stdio server process; dropping it kills the server and
/// everything it started.
pub(super) struct StdioChild {
    child: Child,
    /// Kills the server's process group (in the sandbox: its PID
    /// namespace) once, on [`StdioChild::kill`] or drop.
    tree: ProcessTree,
}

/// What rmcp talks over: the watched stdout and the server's stdin.
pub(super) type StdioPipes = (DuplexStream, ChildStdin);

/// Starts the server through `runner`; `Err` is a message for the user.
pub(super) fn spawn(
    launch: &StdioLaunch,
    runner: &ProcessRunner,
    state: &Arc<ServerState>,
) -> Result<(StdioChild, StdioPipes), LaunchError> {
    let started = server_command(launch, runner).and_then(|mut c| ProcessTree::spawn(&mut c));
    let command = launch.command.clone();
    let (mut child, tree) = started.map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            LaunchError::NotFound { command }
        } else {
            LaunchError::Start { command, source }
        }
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(LaunchError::NoPipes {
            command: launch.command.clone(),
        });
    };
    let (to_rmcp, for_rmcp) = tokio::io::duplex(PIPE_BUFFER);
    tokio::spawn(watch_stdout(stdout, to_rmcp, Arc::clone(state)));
    tokio::spawn(keep_stderr(stderr, Arc::clone(state)));
    Ok((StdioChild { child, tree }, (for_rmcp, stdin)))
}

impl StdioChild {
    /// How the process exited, waiting up to `wait` for it to do so.
    pub async fn exit_within(&mut self, wait: Duration) -> Option<String> {
        match tokio::time::timeout(wait, self.child.wait()).await {
            Ok(Ok(status)) => Some(describe_exit(status)),
            _ => None,
        }
    }

    /// Waits up to `grace` for the process to exit (its stdin is closed by
    /// then), then kills its whole process tree: a server that ignores the
    /// closed stdin, and what a server that did exit left running.
    pub async fn stop(&mut self, grace: Duration) {
        let exited = tokio::time::timeout(grace, self.child.wait()).await;
        self.kill();
        if exited.is_err() {
            let _ = self.child.wait().await;
        }
    }

    /// Kills the process tree now.
    pub fn kill(&mut self) {
        self.tree.kill();
        let _ = self.child.start_kill();
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "exited".to_string(),
    }
}

/// Copies JSON lines from the server to rmcp; a line that is not JSON ends
/// the stream and marks the server broken.
async fn watch_stdout(
    stdout: impl AsyncRead + Unpin,
    mut to_rmcp: DuplexStream,
    state: Arc<ServerState>,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() as u64 > MAX_LINE {
            state.mark_broken(format!("wrote a stdout line longer than {MAX_LINE} bytes"));
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let trimmed = text.trim();
        if trimmed.is_empty() {
            continue;
        }
        match serde_json::from_str::<serde_json::Value>(trimmed) {
            Ok(message) => {
                if message.get("method").and_then(|m| m.as_str())
                    == Some("notifications/tools/list_changed")
                {
                    state.note_tools_changed();
                }
            }
            Err(_) => {
                state.mark_broken(format!(
                    "wrote a line that is not JSON-RPC to stdout (servers must log to stderr): \
                     `{}`",
                    crate::inert::clip(trimmed, 200)
                ));
                break;
            }
        }
        if to_rmcp.write_all(trimmed.as_bytes()).await.is_err()
            || to_rmcp.write_all(b"\n").await.is_err()
        {
            break;
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Keeps the last lines of the server's stderr.
async fn keep_stderr(stderr: impl AsyncRead + Unpin, state: Arc<ServerState>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(64 * 1024)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end();
        if !text.is_empty() {
            state.push_stderr(crate::inert::clip(text, MAX_STDERR_LINE));
        }
    }
}
