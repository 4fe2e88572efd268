//! `agentci run --json` (or `--trace -`): the trace's events on stdout, one
//! JSON object per line, as they happen. Nothing else may be written to
//! stdout while this sink is in use; the summary goes to stderr instead.
//! The trace file is still written; this is a second copy for pipes.

use std::io::Write;

use crate::event::Event;
use crate::sink::bus::{EventSink, SinkError};

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
