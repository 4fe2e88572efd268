//! `outputs.result`: the run's structured result as a JSON file, for the
//! next step of a workflow to read.
//!
//! It is written from `run.completed` (so it holds what the trace holds,
//! secrets masked) and only when the run has a valid result: a file that
//! exists is a result that matched the schema. Checking the result is the
//! agent's business ([`crate::agent::result`]), not this sink's.

use super::reserve::{self, RecordReserve};
use crate::event::bus::{EventSink, SinkError};
use crate::event::{Event, EventKind};
use crate::safe_file::OutputFile;

/// Writes the result of `run.completed` to one file.
pub struct ResultWriter {
    out: OutputFile,
    /// Space to write the file with when the disk is full.
    reserve: RecordReserve,
}

impl ResultWriter {
    /// Writes to `out`, in a folder opened by descriptor.
    pub fn new(out: OutputFile) -> ResultWriter {
        ResultWriter {
            out,
            reserve: RecordReserve::default(),
        }
    }

    /// Write the file with `reserve`'s space when the disk is full.
    pub fn with_reserve(mut self, reserve: RecordReserve) -> ResultWriter {
        self.reserve = reserve;
        self
    }

    /// Write through a new file renamed over the name: a reader never sees
    /// half a result, and a link at the name is replaced, not followed.
    fn write(&self, result: &serde_json::Value) -> Result<(), SinkError> {
        let failed = |source: std::io::Error| SinkError {
            what: "write the result to",
            path: self.out.path().display().to_string(),
            source,
        };
        let mut text =
            serde_json::to_string_pretty(result).map_err(|e| failed(std::io::Error::other(e)))?;
        text.push('\n');
        // From `run.completed`, which the bus masked.
        let text = crate::redact::Masked::from_masked_parts(text.into_bytes());
        self.out.replace(&text, None).map_err(failed)
    }
}

impl EventSink for ResultWriter {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        match &event.kind {
            EventKind::RunCompleted(done) => match &done.result {
                Some(result) => match self.write(result) {
                    Err(e) if reserve::out_of_space(&e.source) && self.reserve.release() => {
                        self.write(result)
                    }
                    written => written,
                },
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }
}
