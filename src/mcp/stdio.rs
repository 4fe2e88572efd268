//! A stdio server's process and pipes: spawns the [`server_command`],
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

use super::command::{StdioLaunch, server_command};
use super::state::ServerState;

/// A message line longer than this cuts the server off (rmcp's own limit is similar).
const MAX_LINE: u64 = 16 * 1024 * 1024;
/// Longest stderr line kept; the rest of the line is dropped.
const MAX_STDERR_LINE: usize = 2000;
/// Buffer between the stdout watcher and rmcp.
const PIPE_BUFFER: usize = 64 * 1024;

/// A running stdio server process.
pub(super) struct StdioChild {
    child: Child,
}

/// What rmcp talks over: the watched stdout and the server's stdin.
pub(super) type StdioPipes = (DuplexStream, ChildStdin);

/// Starts the server; `Err` is a message for the user.
pub(super) fn spawn(
    launch: &StdioLaunch,
    state: &Arc<ServerState>,
) -> Result<(StdioChild, StdioPipes), String> {
    let mut child = server_command(launch).spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "cannot start `{}`: command not found (is it installed and on PATH?)",
                launch.command
            )
        } else {
            format!("cannot start `{}`: {e}", launch.command)
        }
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(format!(
            "cannot start `{}`: its pipes are missing",
            launch.command
        ));
    };
    let (to_rmcp, for_rmcp) = tokio::io::duplex(PIPE_BUFFER);
    tokio::spawn(watch_stdout(stdout, to_rmcp, Arc::clone(state)));
    tokio::spawn(keep_stderr(stderr, Arc::clone(state)));
    Ok((StdioChild { child }, (for_rmcp, stdin)))
}

impl StdioChild {
    /// How the process exited, waiting up to `wait` for it to do so.
    pub async fn exit_within(&mut self, wait: Duration) -> Option<String> {
        match tokio::time::timeout(wait, self.child.wait()).await {
            Ok(Ok(status)) => Some(describe_exit(status)),
            _ => None,
        }
    }

    /// Waits up to `grace` for the process to exit (after its stdin was
    /// closed), then kills its whole process group.
    pub async fn stop(&mut self, grace: Duration) {
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            self.kill();
            let _ = self.child.wait().await;
        } else {
            // The server is gone; what it started in its group must go too.
            self.kill_group();
        }
    }

    /// Kills the process group now.
    pub fn kill(&mut self) {
        self.kill_group();
        let _ = self.child.start_kill();
    }

    fn kill_group(&self) {
        if let Some(pid) = self.child.id().and_then(|id| i32::try_from(id).ok()) {
            // SAFETY: killpg only sends a signal; the group is the one
            // `server_command` created for this child (process_group(0)).
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
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
                    shorten(trimmed, 200)
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
            state.push_stderr(shorten(text, MAX_STDERR_LINE));
        }
    }
}

/// `text` cut to `max` characters, with `…` when cut.
pub(super) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
