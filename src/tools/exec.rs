//! The `exec` tool, and [`run_shell`], the one way agentci runs a shell
//! command (the job's checks use it too).
//!
//! A command runs as `bash -c COMMAND` (bash, whose grammar the policy
//! parses: [`crate::policy::shell::SHELL`]) with stdin from `/dev/null`, in a new
//! process group. When it finishes or times out the whole group is killed
//! with SIGKILL, so grandchildren (a `sleep &`, a test server) never outlive
//! it or hold its output pipes open. Output is captured with bounded memory:
//! the start and the end of each stream are kept and the middle is cut with
//! a note saying how much. Whether a command may run is decided by
//! [`crate::policy`], not here.
//!
//! Commands get a scrubbed environment: only the variables in
//! [`INHERITED_ENV`] (and the `LC_*` locale variables) come from agentci's
//! own environment, plus what the caller passes (the job's `env:`). API keys,
//! CI tokens and everything else a runner exports stay out of reach of a
//! command the model wrote.

use std::collections::VecDeque;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::support::{outside, str_arg, usize_arg};
use super::{BoxFuture, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec};
use crate::redact::Redactor;

/// How long to keep reading output after the command's group was killed;
/// only a process that left the group (setsid) can keep the pipes open.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Variables a command inherits from agentci's environment. The cargo and
/// rustup ones are there so `cargo test` finds the same toolchain, registry
/// cache and target folder as the caller when they are not in the default place.
pub const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "TMPDIR",
    "CARGO_HOME",
    "CARGO_TARGET_DIR",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
];

/// Prefixes of inherited variable names (the locale categories).
pub const INHERITED_ENV_PREFIXES: &[&str] = &["LC_"];

/// Whether a command inherits the variable `name` from agentci's environment.
pub fn is_inherited(name: &str) -> bool {
    INHERITED_ENV.contains(&name) || INHERITED_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The inherited part of a command's environment, from agentci's own.
fn inherited_env() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os()
        .filter(|(name, _)| name.to_str().is_some_and(is_inherited))
        .collect()
}

/// A shell command to run.
#[derive(Clone, Copy, Debug)]
pub struct ShellCommand<'a> {
    pub command: &'a str,
    /// Absolute directory to run in.
    pub cwd: &'a Path,
    pub timeout: Duration,
    /// Variables set on top of the scrubbed environment ([`INHERITED_ENV`]).
    pub env: &'a [(String, String)],
    /// Characters of stdout and stderr together kept in [`ShellOutput::output`].
    pub max_output_chars: usize,
    /// Secrets masked before long output is cut: a secret that straddles
    /// the cut would otherwise show half of itself, which no later masking
    /// recognises.
    pub secrets: &'a Redactor,
}

/// What a command did.
#[derive(Clone, Debug, PartialEq)]
pub struct ShellOutput {
    /// `None` when it was killed by a signal (including on timeout).
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// stdout then stderr (under a `[stderr]` line when both are present),
    /// cut in the middle of each stream to fit `max_output_chars`.
    pub output: String,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// Bytes of output not shown in `output`.
    pub cut_bytes: u64,
    pub duration: Duration,
}

/// Run `cmd` to completion or timeout; `Err` only when it could not be started.
pub async fn run_shell(cmd: &ShellCommand<'_>) -> io::Result<ShellOutput> {
    let started = Instant::now();
    // `/bin/bash`, not `bash`: with a cleared environment that sets PATH, std
    // spawns a bare program name with fork() (PATH must be searched in the
    // child), and fork in a busy multi-threaded process copies its page
    // tables and stalls its other threads; a path lets it use posix_spawn.
    let mut child = Command::new(crate::policy::shell::SHELL)
        .arg("-c")
        .arg(cmd.command)
        .current_dir(cmd.cwd)
        .env_clear()
        .envs(inherited_env())
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    // The child leads its own group, so the group id is its pid.
    let mut group = ProcessGroup(child.id().and_then(|id| i32::try_from(id).ok()));
    let keep = cmd.max_output_chars;
    let stdout = child.stdout.take().map(|pipe| capture(pipe, keep));
    let stderr = child.stderr.take().map(|pipe| capture(pipe, keep));

    let status = tokio::time::timeout(cmd.timeout, child.wait()).await;
    group.kill();
    let (status, timed_out) = match status {
        Ok(status) => (status?, false),
        Err(_) => (child.wait().await?, true),
    };
    let stdout = finish_capture(stdout).await;
    let stderr = finish_capture(stderr).await;

    let (output, cut_bytes) = render(&stdout, &stderr, cmd.max_output_chars, cmd.secrets);
    Ok(ShellOutput {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        output,
        stdout_bytes: stdout.total,
        stderr_bytes: stderr.total,
        cut_bytes,
        duration: started.elapsed(),
    })
}

/// The command's process group; killed when dropped, so a cancelled call
/// leaves nothing running either.
struct ProcessGroup(Option<i32>);

impl ProcessGroup {
    /// Kill the group once; afterwards the id may belong to someone else.
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take().filter(|&p| p > 1) {
            // SAFETY: killpg only sends a signal; pgid is our child's own group
            // (process_group(0)), never 0 or 1, so it cannot hit our own group or init.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One stream's output with bounded memory: the first `keep` bytes, the
/// last `keep` bytes after those, and how many there were in all.
#[derive(Debug, Default)]
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    keep: usize,
    total: u64,
}

impl Capture {
    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.keep {
            let take = bytes.len().min(self.keep - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.keep);
        self.tail.drain(..excess);
    }

    /// The stream shown within `budget` bytes: whole, or its start and end
    /// around a note; and how many bytes were cut. Secrets are masked
    /// before the cut, so none is shown in part.
    fn shown(&self, budget: usize, name: &str, secrets: &Redactor) -> (String, u64) {
        let kept = self.head.len() + self.tail.len();
        let dropped = self.total > kept as u64;
        let mask = |bytes: &[u8]| secrets.redact(&String::from_utf8_lossy(bytes)).into_owned();
        let (head, end) = if dropped {
            // The middle is gone: start and end are separate texts.
            let tail: Vec<u8> = self.tail.iter().copied().collect();
            (mask(&self.head), mask(&tail))
        } else {
            let mut all = self.head.clone();
            all.extend(self.tail.iter());
            let all = mask(&all);
            if all.len() <= budget {
                return (all, 0);
            }
            (all.clone(), all)
        };
        let front = budget / 2;
        let back = budget - front;
        let head = &head[..floor_char_boundary(&head, front.min(head.len()))];
        let end = &end[ceil_char_boundary(&end, end.len().saturating_sub(back))..];
        let cut = self.total.saturating_sub((head.len() + end.len()) as u64);
        let text = format!(
            "{head}\n[... {cut} of {} bytes of {name} cut ...]\n{end}",
            self.total
        );
        (text, cut)
    }
}

/// The largest char boundary of `text` at or before `index`.
fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The smallest char boundary of `text` at or after `index`.
fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

type SharedCapture = (Arc<Mutex<Capture>>, tokio::task::JoinHandle<()>);

fn capture<R: AsyncRead + Unpin + Send + 'static>(mut pipe: R, keep: usize) -> SharedCapture {
    let shared = Arc::new(Mutex::new(Capture {
        keep,
        ..Capture::default()
    }));
    let sink = Arc::clone(&shared);
    let task = tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(&buf[..n]);
        }
    });
    (shared, task)
}

/// Wait briefly for the reader to reach end of file, then take what it has.
async fn finish_capture(capture: Option<SharedCapture>) -> Capture {
    let Some((shared, mut task)) = capture else {
        return Capture::default();
    };
    if tokio::time::timeout(DRAIN_GRACE, &mut task).await.is_err() {
        task.abort();
    }
    std::mem::take(&mut *shared.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Both streams within `max` bytes: each keeps what it needs if the other
/// is short, otherwise they share the budget evenly.
fn render(stdout: &Capture, stderr: &Capture, max: usize, secrets: &Redactor) -> (String, u64) {
    let out_len = usize::try_from(stdout.total).unwrap_or(usize::MAX);
    let err_len = usize::try_from(stderr.total).unwrap_or(usize::MAX);
    let half = max / 2;
    let out_budget = if err_len < half {
        max - err_len
    } else if out_len < half {
        out_len
    } else {
        half
    };
    let err_budget = max - out_budget.min(max);
    let (out, out_cut) = stdout.shown(out_budget, "stdout", secrets);
    let (err, err_cut) = stderr.shown(err_budget, "stderr", secrets);
    let text = match (out.is_empty(), err.is_empty()) {
        (_, true) => out,
        (true, false) => err,
        (false, false) => format!("{}\n[stderr]\n{err}", out.trim_end_matches('\n')),
    };
    (text, out_cut + err_cut)
}

pub struct ExecTool {
    spec: ToolSpec,
}

impl ExecTool {
    pub fn new() -> Self {
        ExecTool {
            spec: ToolSpec {
                name: "exec".into(),
                description: "Run a shell command with `sh -c` in the workspace root (or in \
                    `cwd`, a directory inside the workspace). stdin is empty, so interactive \
                    commands fail rather than wait. Returns the exit code, stdout and then \
                    stderr (after a `[stderr]` line); long output keeps its start and end and \
                    says how much was cut. `timeout_ms` defaults to 120000 and is capped at \
                    600000; on timeout the command and everything it started are killed. \
                    Background processes do not survive the command: when it exits, its whole \
                    process group is killed."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "minLength": 1,
                                    "description": "Shell command line, e.g. `cargo test -q`."},
                        "cwd": {"type": "string",
                                "description": "Directory to run in, relative to the workspace root. Default: the root."},
                        "timeout_ms": {"type": "integer", "minimum": 1,
                                       "description": "Time limit in milliseconds. Default 120000."}
                    },
                    "required": ["command"],
                    "additionalProperties": false
                }),
                read_only: false,
            },
        }
    }
}

impl Default for ExecTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for ExecTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(exec(args, ctx))
    }
}

async fn exec(args: Value, ctx: &ToolContext) -> ToolResult {
    let command = str_arg(&args, "command").unwrap_or_default();
    let cwd = match ctx.workspace.resolve(str_arg(&args, "cwd").unwrap_or(".")) {
        Ok(p) => p,
        Err(e) => return outside(e),
    };
    let shown_cwd = ctx.workspace.relative(&cwd);
    if !cwd.is_dir() {
        return ToolResult::failure(
            ToolErrorCode::NotFound,
            format!("`cwd` `{shown_cwd}` is not a directory in the workspace"),
        );
    }
    let timeout = usize_arg(&args, "timeout_ms")
        .map(|ms| Duration::from_millis(ms as u64))
        .unwrap_or(ctx.limits.exec_timeout)
        .min(ctx.limits.exec_max_timeout);
    let shell = ShellCommand {
        command,
        cwd: &cwd,
        timeout,
        env: &ctx.exec_env,
        max_output_chars: ctx.limits.max_output_chars,
        secrets: &ctx.secrets,
    };
    let run = match run_shell(&shell).await {
        Ok(run) => run,
        Err(e) => {
            return ToolResult::failure(
                ToolErrorCode::Io,
                format!(
                    "cannot start `{}` to run the command: {e}; exec runs every command with \
                     bash, whose grammar the permission rules are judged by, so install bash",
                    crate::policy::shell::SHELL
                ),
            );
        }
    };
    let data = json!({
        "command": command,
        "cwd": shown_cwd,
        "exit_code": run.exit_code,
        "signal": run.signal,
        "timed_out": run.timed_out,
        "timeout_ms": timeout.as_millis() as u64,
        "duration_ms": run.duration.as_millis() as u64,
        "stdout_bytes": run.stdout_bytes,
        "stderr_bytes": run.stderr_bytes,
        "truncated": run.cut_bytes > 0,
        "cut_bytes": run.cut_bytes,
    });
    let mut notes = String::new();
    if run.output.is_empty() {
        notes.push_str(" (no output)");
    }
    if run.cut_bytes > 0 {
        notes.push_str(&format!("; output cut, {} bytes not shown", run.cut_bytes));
    }
    if run.timed_out {
        return ToolResult::failure(
            ToolErrorCode::Timeout,
            format!(
                "command timed out after {} ms and was killed with everything it started{notes}",
                timeout.as_millis()
            ),
        )
        .with_output(run.output)
        .with_data(data);
    }
    let summary = match (run.exit_code, run.signal) {
        (Some(code), _) => format!("exit code {code}{notes}"),
        (None, Some(signal)) => format!("killed by signal {signal}{notes}"),
        (None, None) => format!("ended without an exit code{notes}"),
    };
    // A failing command is a normal outcome for the model to read, not a tool error.
    ToolResult {
        ok: run.exit_code == Some(0),
        error: None,
        summary,
        output: run.output,
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(bytes: &[u8], keep: usize) -> Capture {
        let mut c = Capture {
            keep,
            ..Capture::default()
        };
        for chunk in bytes.chunks(3) {
            c.push(chunk);
        }
        c
    }

    #[test]
    fn only_the_allow_list_is_inherited() {
        assert!(is_inherited("PATH") && is_inherited("LC_ALL") && is_inherited("CARGO_HOME"));
        assert!(!is_inherited("OPENAI_API_KEY") && !is_inherited("GITHUB_TOKEN"));
        assert!(!is_inherited("CARGO_REGISTRY_TOKEN") && !is_inherited("PATHX"));
    }

    #[test]
    fn capture_keeps_start_and_end() {
        let c = captured(b"0123456789abcdefghij", 4);
        assert_eq!(c.head, b"0123");
        assert_eq!(c.tail.iter().copied().collect::<Vec<_>>(), b"ghij");
        let (text, cut) = c.shown(6, "stdout", &Redactor::default());
        assert_eq!(text, "012\n[... 14 of 20 bytes of stdout cut ...]\nhij");
        assert_eq!(cut, 14);
    }

    #[test]
    fn short_output_is_whole() {
        let c = captured(b"hello\n", 100);
        assert_eq!(
            c.shown(100, "stdout", &Redactor::default()),
            ("hello\n".to_string(), 0)
        );
        // End taken partly from head when the tail is short.
        let c = captured(b"0123456789", 8);
        assert_eq!(
            c.shown(6, "x", &Redactor::default()).0,
            "012\n[... 4 of 10 bytes of x cut ...]\n789"
        );
    }

    // Regression: the secret was masked only after the cut, so a secret
    // straddling it showed its first or last characters everywhere.
    #[test]
    fn a_secret_across_the_cut_is_masked_not_halved() {
        let secrets = Redactor::new(["SECRET-VALUE"]);
        let filler = "x".repeat(60);
        // With 8 bytes to show, 4 from the start and 4 from the end.
        for text in [
            format!("aSECRET-VALUE{filler}"),
            format!("{filler}SECRET-VALUEb"),
        ] {
            for keep in [30, 100] {
                let c = captured(text.as_bytes(), keep);
                let (shown, _) = c.shown(8, "stdout", &secrets);
                for part in ["SEC", "LUE"] {
                    assert!(!shown.contains(part), "keep {keep}: {shown}");
                }
            }
        }
        // Output shown whole is masked later, by the event bus; nothing is cut.
        let c = captured(b"xSECRET-VALUEx", 40);
        assert_eq!(c.shown(40, "stdout", &secrets).1, 0);
    }

    #[test]
    fn a_quiet_stream_leaves_its_budget_to_the_other() {
        let out = captured(&[b'o'; 50], 100);
        let err = captured(b"e", 100);
        let (text, cut) = render(&out, &err, 40, &Redactor::default());
        assert_eq!(cut, 11);
        assert!(text.ends_with("\n[stderr]\ne"), "{text}");
    }
}
