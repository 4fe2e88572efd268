//! `outputs.result`: the run's structured result as a JSON file, for the
//! next step of a workflow to read.
//!
//! It is written from `run.completed` (so it holds what the trace holds,
//! secrets masked) and only when the run has a valid result: a file that
//! exists is a result that matched the schema. Checking the result is the
//! agent's business ([`crate::agent::result`]), not this sink's.

use std::io::Write;
use std::path::PathBuf;

use super::reserve::{self, RecordReserve};
use crate::event::bus::{EventSink, SinkError};
use crate::event::{Event, EventKind};

/// Writes the result of `run.completed` to one path.
pub struct ResultWriter {
    path: PathBuf,
    /// Space to write the file with when the disk is full.
    reserve: RecordReserve,
}

impl ResultWriter {
    pub fn new(path: PathBuf) -> ResultWriter {
        ResultWriter {
            path,
            reserve: RecordReserve::default(),
        }
    }

    /// Write the file with `reserve`'s space when the disk is full.
    pub fn with_reserve(mut self, reserve: RecordReserve) -> ResultWriter {
        self.reserve = reserve;
        self
    }

    /// Write through a temporary file and rename it: a reader never sees half a result.
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
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
        let mut text =
            serde_json::to_string_pretty(result).map_err(|e| failed(std::io::Error::other(e)))?;
        text.push('\n');
        file.write_all(text.as_bytes()).map_err(failed)?;
        file.persist(&self.path).map_err(|e| failed(e.error))?;
        Ok(())
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
