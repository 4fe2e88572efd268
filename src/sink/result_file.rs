//! `outputs.result`: the run's structured result as a JSON file, for the
//! next step of a workflow to read.
//!
//! It is written from `run.completed` (so it holds what the trace holds,
//! secrets masked) and only when the run has a valid result: a file that
//! exists is a result that matched the schema. Checking the result is the
//! agent's business ([`crate::agent::result`]), not this sink's.

use std::path::PathBuf;

use crate::event::bus::{EventSink, SinkError};
use crate::event::{Event, EventKind};

/// Writes the result of `run.completed` to one path.
pub struct ResultWriter {
    path: PathBuf,
}

impl ResultWriter {
    pub fn new(path: PathBuf) -> ResultWriter {
        ResultWriter { path }
    }

    /// Write through a new file renamed into place: a reader never sees
    /// half a result, and a link planted at the path is replaced.
    fn write(&self, result: &serde_json::Value) -> Result<(), SinkError> {
        let failed = |source: std::io::Error| SinkError {
            what: "write the result to",
            path: self.path.display().to_string(),
            source,
        };
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        std::fs::create_dir_all(dir).map_err(failed)?;
        let mut text =
            serde_json::to_string_pretty(result).map_err(|e| failed(std::io::Error::other(e)))?;
        text.push('\n');
        // From `run.completed`, which the bus masked.
        let text = crate::redact::Masked::from_masked_parts(text.into_bytes());
        crate::safe_file::replace(&self.path, &text, None).map_err(failed)
    }
}

impl EventSink for ResultWriter {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        match &event.kind {
            EventKind::RunCompleted(done) => match &done.result {
                Some(result) => self.write(result),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }
}
