//! The `exec` tool: a shell command in the workspace, run by the run's
//! [`ProcessRunner`](crate::process::ProcessRunner) (scrubbed environment,
//! sandbox, nothing outliving the call, bounded and masked output), or, with
//! `background: true` in a run that has the `process` tool, started as a
//! session ([`super::process`]).
//! Whether a command may run is decided by [`crate::policy`], not here.

use std::time::Duration;

use serde_json::{Value, json};

use super::support::{bool_arg, outside, str_arg, usize_arg};
use super::{BoxFuture, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec};

use crate::process::ShellOutput;
use crate::sandbox::{LimitReached, SandboxProfile};

pub use crate::process::{INHERITED_ENV, INHERITED_ENV_PREFIXES, is_inherited};

pub struct ExecTool {
    spec: ToolSpec,
}

impl ExecTool {
    /// `exec` as every run without the `process` tool offers it: no
    /// background sessions, the same schema and text as before they existed.
    pub fn new() -> Self {
        ExecTool {
            spec: ToolSpec {
                name: "exec".into(),
                description: DESCRIPTION.into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "minLength": 1,
                                    "description": "Shell command line, e.g. `cargo test -q`."},
                        "cwd": {"type": "string",
                                "description": "Directory to run in, relative to the workspace root, or a skill folder by its absolute path. Default: the root."},
                        "timeout_ms": {"type": "integer", "minimum": 1,
                                       "description": "Time limit in milliseconds. Default 120000."}
                    },
                    "required": ["command"],
                    "additionalProperties": false
                }),
                read_only: false,
                rule_argument: RuleArgument::Command,
                changes_files: false,
            },
        }
    }

    /// `exec` in a run that has the `process` tool: `background` and `keep`
    /// start sessions that `process` reads, writes to and stops.
    pub fn with_background() -> Self {
        let mut tool = Self::new();
        tool.spec.description = format!("{DESCRIPTION} {BACKGROUND}");
        let properties = &mut tool.spec.parameters["properties"];
        properties["timeout_ms"]["description"] =
            json!("Time limit in milliseconds. Default 120000. Not for background sessions.");
        properties["background"] = json!({"type": "boolean",
            "description": "Start the command as a background session and return at once. Default false."});
        properties["keep"] = json!({"type": "boolean",
            "description": "With `background`: keep the session running after this step ends (until the run ends). Default false."});
        tool
    }
}

const DESCRIPTION: &str = "Run a shell command with `bash -c` in the workspace root (or in \
    `cwd`, a directory inside the workspace or a skill folder). stdin is empty, so interactive \
    commands fail rather than wait. Returns the exit code, stdout and then \
    stderr (after a `[stderr]` line); long output keeps its start and end and \
    says how much was cut. `timeout_ms` defaults to 120000 and is capped at \
    600000; on timeout the command and everything it started are killed. \
    Background processes do not survive the command: when it exits, its whole \
    process group is killed.";

const BACKGROUND: &str = "For a server or watcher the next commands need, pass \
    `background: true`: the command starts as a session and the call returns at once with \
    its id and first output; use the `process` tool to read its output, write to its \
    stdin, list or kill it. A session is killed when its step ends unless `keep: true`, \
    and always when the run ends.";

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
    let cwd = match ctx
        .workspace
        .resolve_cwd(str_arg(&args, "cwd").unwrap_or("."))
    {
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
    let keep = bool_arg(&args, "keep");
    if bool_arg(&args, "background") == Some(true) {
        if args.get("timeout_ms").is_some() {
            return ToolResult::failure(
                ToolErrorCode::InvalidArgument,
                "`timeout_ms` is for commands exec waits for; a background session runs until \
                 `process kill`, the end of its step (unless `keep`) or the end of the run, so \
                 leave `timeout_ms` out",
            );
        }
        return super::process::start(command, &cwd, &shown_cwd, keep == Some(true), ctx).await;
    }
    if keep.is_some() {
        return ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            "`keep` applies to background sessions only; pass `background: true` with it, or \
             leave `keep` out",
        );
    }
    let timeout = usize_arg(&args, "timeout_ms")
        .map(|ms| Duration::from_millis(ms as u64))
        .unwrap_or(ctx.limits.exec_timeout)
        .min(ctx.limits.exec_max_timeout);
    let run = match ctx
        .processes
        .run_shell(command, &cwd, timeout, capture_limit(ctx))
        .await
    {
        Ok(run) => run,
        Err(e) => {
            return ToolResult::failure(
                ToolErrorCode::Io,
                format!(
                    "cannot start `{}` to run the command: {e}; exec runs every command with \
                     bash, whose grammar the permission rules are judged by, so install bash",
                    crate::process::SHELL
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
        "sandbox": ctx.processes.profile().as_str(),
    });
    judged(run, timeout, data, ctx.processes.profile())
}

/// What a finished command's run means for the model: a timeout, a
/// sandbox limit it reached, or its exit status (a failing command is a
/// normal outcome to read, not a tool error), with the output and `data`.
fn judged(run: ShellOutput, timeout: Duration, data: Value, profile: SandboxProfile) -> ToolResult {
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
    if let Some(reached) = run.limit_reached {
        let (what, key) = match reached {
            LimitReached::Processes => ("process limit (a fork was refused)", "processes"),
            LimitReached::Memory => ("memory limit (a process was killed for memory)", "memory"),
        };
        return ToolResult::failure(
            ToolErrorCode::ResourceLimit,
            format!(
                "command reached the sandbox's {what} and was ended with everything it \
                 started ({summary}); if the job needs more, raise `sandbox.limits.{key}`"
            ),
        )
        .with_output(run.output)
        .with_data(data);
    }
    if passed_file_size_limit(&run) && profile != SandboxProfile::Off {
        return ToolResult::failure(
            ToolErrorCode::ResourceLimit,
            format!(
                "command stopped at the sandbox's file size limit (SIGXFSZ, {summary}): a file it \
                 wrote was cut at the limit; if the file is meant to be this large, raise \
                 `sandbox.limits.file_size` in the job"
            ),
        )
        .with_output(run.output)
        .with_data(data);
    }
    ToolResult {
        ok: run.exit_code == Some(0),
        error: None,
        summary,
        output: run.output,
        data,
    }
}

/// Whether the command, or the last program the shell ran, was ended by
/// SIGXFSZ: the kernel sends it only to a process that writes past
/// `RLIMIT_FSIZE`. bash reports a child's death by signal N as exit code
/// 128 + N.
fn passed_file_size_limit(run: &ShellOutput) -> bool {
    run.signal == Some(libc::SIGXFSZ) || run.exit_code == Some(128 + libc::SIGXFSZ)
}

/// How much of a command's output is captured: when the run keeps long
/// outputs whole, up to [`KEPT_OUTPUT_BYTES`] (the batch cuts it for the
/// model and keeps the rest in a file); otherwise what the model is shown.
fn capture_limit(ctx: &ToolContext) -> usize {
    match ctx.limits.kept_outputs {
        Some(_) => KEPT_OUTPUT_BYTES.max(ctx.limits.max_output_chars),
        None => ctx.limits.max_output_chars,
    }
}

/// The most of a command's output kept for the model to page through;
/// beyond it the middle is dropped (memory stays bounded).
const KEPT_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_allow_list_is_inherited() {
        assert!(is_inherited("PATH") && is_inherited("LC_ALL") && is_inherited("CARGO_HOME"));
        assert!(!is_inherited("OPENAI_API_KEY") && !is_inherited("GITHUB_TOKEN"));
        assert!(!is_inherited("CARGO_REGISTRY_TOKEN") && !is_inherited("PATHX"));
    }
}
