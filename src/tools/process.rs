//! The `process` tool: reading, writing to, listing and killing the
//! background sessions `exec {background: true}` starts (and [`start`],
//! the background half of `exec`).
//!
//! Sessions live in the run's [`ProcessRunner`](crate::process::ProcessRunner)
//! ([`crate::process::sessions`]), which also ends them at the step's and
//! the run's end; this module only turns them into results for the model:
//! output paged by byte offset, capped and masked. `read` and `list` change
//! nothing and may run with other reads; `write` and `kill` are mutating.
//! Whether a call may run is [`crate::policy`]'s decision, as for any tool.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::support::{str_arg, usize_arg};
use super::{BoxFuture, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec};
use crate::process::sessions::{MAX_RUNNING, Page, SessionError, SessionExit, SessionView};

/// How long `exec {background: true}` waits for a first line of output.
pub const FIRST_OUTPUT_WAIT: Duration = Duration::from_millis(1500);

pub struct ProcessTool {
    spec: ToolSpec,
}

impl ProcessTool {
    pub fn new() -> Self {
        ProcessTool {
            spec: ToolSpec {
                name: "process".into(),
                description: "Work with the background sessions `exec {background: true}` \
                    started. `{action: \"read\", session_id, offset?}` returns the session's \
                    output (stdout and stderr as they arrived) from byte `offset`, by default \
                    from where your last read ended, and the `next_offset`; `{action: \
                    \"write\", session_id, data}` writes `data` to its stdin (add \"\\n\" to end \
                    a line); `{action: \"kill\", session_id}` kills it and everything it \
                    started; `{action: \"list\"}` shows every session and whether it runs."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["read", "write", "kill", "list"],
                                   "description": "read output, write to stdin, kill, or list sessions."},
                        "session_id": {"type": "integer", "minimum": 1,
                                       "description": "The session, as exec returned it."},
                        "data": {"type": "string", "description": "For write: the text sent to stdin."},
                        "offset": {"type": "integer", "minimum": 0,
                                   "description": "For read: the byte to start at. Default: where the last read ended."}
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }),
                // Per call: see `read_only_call`.
                read_only: false,
                // Its sessions' commands were judged when `exec` started them.
                rule_argument: RuleArgument::None,
                changes_files: false,
            },
        }
    }
}

impl Default for ProcessTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for ProcessTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn read_only_call(&self, args: &Value) -> bool {
        matches!(str_arg(args, "action"), Some("read" | "list"))
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(process(args, ctx))
    }
}

async fn process(args: Value, ctx: &ToolContext) -> ToolResult {
    let sessions = ctx.processes.sessions();
    let action = str_arg(&args, "action").unwrap_or_default();
    if action == "list" {
        return list(sessions.list());
    }
    let Some(id) = usize_arg(&args, "session_id").and_then(|n| u32::try_from(n).ok()) else {
        return ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!("`{action}` needs the `session_id` that `exec {{background: true}}` returned"),
        );
    };
    let result = match action {
        "read" => {
            let offset = usize_arg(&args, "offset").map(|n| n as u64);
            sessions
                .read(id, offset, ctx.limits.max_output_chars, &ctx.secrets)
                .map(|page| page_result(&page, "read"))
        }
        "write" => {
            let Some(data) = str_arg(&args, "data") else {
                return ToolResult::failure(
                    ToolErrorCode::InvalidArgument,
                    "`write` needs `data`, the text to send to the session's stdin",
                );
            };
            sessions.write(id, data).await.map(|view| {
                ToolResult::success(
                    format!("wrote {} bytes to session {id}'s stdin", data.len()),
                    "",
                    session_data(&view),
                )
            })
        }
        _ => sessions.kill(id).and_then(|killed| {
            let view = sessions.view(id)?;
            let summary = if killed {
                format!("session {id} killed with everything it started")
            } else {
                format!("session {id} had already ended ({})", state(&view))
            };
            Ok(ToolResult::success(summary, "", session_data(&view)))
        }),
    };
    result.unwrap_or_else(failure)
}

/// `exec {background: true}`: start the session, wait briefly for its
/// first output, and return its id with that output.
pub async fn start(
    command: &str,
    cwd: &Path,
    shown_cwd: &str,
    keep: bool,
    ctx: &ToolContext,
) -> ToolResult {
    let sessions = ctx.processes.sessions();
    let id = match ctx.processes.start_session(command, cwd, shown_cwd, keep) {
        Ok(id) => id,
        Err(error) => return failure(error),
    };
    sessions.first_output(id, FIRST_OUTPUT_WAIT).await;
    match sessions.read(id, None, ctx.limits.max_output_chars, &ctx.secrets) {
        Ok(page) => {
            let mut result = page_result(&page, "started");
            result.data["sandbox"] = json!(ctx.processes.profile().as_str());
            result
        }
        Err(error) => failure(error),
    }
}

fn page_result(page: &Page, verb: &str) -> ToolResult {
    let view = &page.session;
    let mut notes = Vec::new();
    if page.skipped > 0 {
        notes.push(format!(
            "{} older bytes were dropped (a session keeps its last {} KB)",
            page.skipped,
            crate::process::sessions::LOG_CAP / 1024
        ));
    }
    let more = page.total - page.next_offset;
    if more > 0 {
        notes.push(format!(
            "{more} more bytes: read again from offset {}",
            page.next_offset
        ));
    }
    if page.text.is_empty() {
        notes.push("no new output".into());
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!("; {}", notes.join("; "))
    };
    let summary = match verb {
        "started" => format!(
            "started background session {} ({}); bytes {}..{} of {}{notes}",
            view.id,
            state(view),
            page.offset,
            page.next_offset,
            page.total
        ),
        _ => format!(
            "session {} ({}): bytes {}..{} of {}{notes}",
            view.id,
            state(view),
            page.offset,
            page.next_offset,
            page.total
        ),
    };
    let mut data = session_data(view);
    data["offset"] = json!(page.offset);
    data["next_offset"] = json!(page.next_offset);
    data["skipped_bytes"] = json!(page.skipped);
    // A session that died on its own with an error is a failure the model should see.
    let failed = view
        .exit
        .as_ref()
        .is_some_and(|e| e.killed.is_none() && e.exit_code != Some(0));
    ToolResult {
        ok: !failed,
        error: None,
        summary,
        // Masked by the registry before the page was cut.
        output: page.text.clone(),
        data,
    }
}

fn list(views: Vec<SessionView>) -> ToolResult {
    let lines: Vec<String> = views
        .iter()
        .map(|v| {
            format!(
                "{}\t{}{}\t{} bytes\t{}",
                v.id,
                state(v),
                if v.keep { ", kept" } else { "" },
                v.output_bytes,
                v.command
            )
        })
        .collect();
    let running = views.iter().filter(|v| v.running).count();
    ToolResult::success(
        format!(
            "{} sessions, {running} running (at most {MAX_RUNNING})",
            views.len()
        ),
        lines.join("\n"),
        json!({ "sessions": views.iter().map(session_data).collect::<Vec<_>>() }),
    )
}

/// "running", "exited with code 1", "killed at the end of its step", …
fn state(view: &SessionView) -> String {
    match &view.exit {
        None => "running".into(),
        Some(SessionExit {
            killed: Some(reason),
            ..
        }) => reason.as_str().into(),
        Some(SessionExit {
            exit_code: Some(code),
            ..
        }) => format!("exited with code {code}"),
        Some(SessionExit {
            signal: Some(signal),
            ..
        }) => format!("killed by signal {signal}"),
        Some(_) => "ended".into(),
    }
}

pub fn session_data(view: &SessionView) -> Value {
    json!({
        "session_id": view.id,
        "command": view.command,
        "cwd": view.cwd,
        "keep": view.keep,
        "running": view.running,
        "state": state(view),
        "exit_code": view.exit.as_ref().and_then(|e| e.exit_code),
        "signal": view.exit.as_ref().and_then(|e| e.signal),
        "output_bytes": view.output_bytes,
        "age_ms": view.age.as_millis() as u64,
    })
}

/// A line for the trace about a session agentci ended, not the model.
pub fn ended_message(view: &SessionView, when: &str) -> String {
    format!(
        "background session {} (`{}`) was killed at the end of {when}{}",
        view.id,
        view.command,
        if when == "the run" {
            ""
        } else {
            "; start it with `keep: true` to keep it for the next steps"
        }
    )
}

fn failure(error: SessionError) -> ToolResult {
    match error {
        SessionError::NotFound { id, known } => ToolResult::failure(
            ToolErrorCode::NotFound,
            if known.is_empty() {
                format!(
                    "no session {id}: no background session was started; start one with \
                     `exec {{command, background: true}}`"
                )
            } else {
                format!(
                    "no session {id}; the sessions are {}",
                    known
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        ),
        SessionError::TooMany { running } => ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!(
                "{MAX_RUNNING} background sessions are running already, the most a run may \
                 have; kill one with `process {{action: \"kill\", session_id}}` first: {}",
                running
                    .iter()
                    .map(|(id, command)| format!("{id} `{command}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        SessionError::StdinClosed(id) => ToolResult::failure(
            ToolErrorCode::Io,
            format!("session {id}'s stdin is closed (the command ended or closed it)"),
        ),
        SessionError::NotEnabled => ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            "background sessions need the `process` tool to read and stop them, and this run \
             does not have it (the job's `tools:` must list `process`); run the command without \
             `background`",
        ),
        SessionError::Io(message) => ToolResult::failure(
            ToolErrorCode::Io,
            format!(
                "cannot start `{}` to run the command: {message}",
                crate::process::SHELL
            ),
        ),
    }
}
