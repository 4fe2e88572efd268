//! `agentci run --json` (or `--trace -`): the trace's events on stdout, one
//! JSON object per line, as they happen. Nothing else may be written to
//! stdout while this sink is in use; the summary goes to stderr instead.
//! The trace file is still written; this is a second copy for pipes. A run
//! that cannot start has no trace: its problems are one `run.not_started`
//! line instead ([`not_started`]).

use std::io::Write;

use serde_json::json;

use crate::event::Event;
use crate::event::bus::{EventSink, SinkError};
use crate::job::Diagnostic;

/// Writes every event to stdout as a JSON line.
pub struct JsonStdout;

impl JsonStdout {
    fn error(source: std::io::Error) -> SinkError {
        SinkError {
            what: "write events to",
            path: "stdout".to_string(),
            source,
        }
    }
}

impl EventSink for JsonStdout {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        let mut line = serde_json::to_vec(event).map_err(|e| Self::error(e.into()))?;
        line.push(b'\n');
        // One write and a flush per line, so a reader of the pipe sees each
        // event when it happens and never half a line.
        let mut out = std::io::stdout().lock();
        out.write_all(&line).map_err(Self::error)?;
        out.flush().map_err(Self::error)
    }
}

/// The problems that kept a run from starting, as one line on stdout:
/// `{"type": "run.not_started", "problems": [{"severity", "file", "line",
/// "column", "flag", "message"}]}`. A problem in a job file has its file
/// and place, one in a flag names the flag (`--goal`), and the others have
/// neither (`null`).
pub fn not_started(problems: &[Diagnostic]) -> std::io::Result<()> {
    let problems: Vec<serde_json::Value> = problems
        .iter()
        .map(|p| {
            let shown = p.file.display().to_string();
            let flag = p.is_placed() && shown.starts_with("--");
            let file = p.is_placed() && !flag;
            json!({
                "severity": p.severity.as_str(),
                "file": file.then_some(&shown),
                "line": (file && p.line > 0).then_some(p.line),
                "column": (file && p.column > 0).then_some(p.column),
                "flag": flag.then_some(&shown),
                "message": p.message,
            })
        })
        .collect();
    let event = json!({"type": "run.not_started", "problems": problems});
    let mut out = std::io::stdout().lock();
    writeln!(out, "{event}")?;
    out.flush()
}
