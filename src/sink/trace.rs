//! The JSONL trace: one serialized [`Event`] per line, written as it happens.
//!
//! The trace is what survives a crash or a kill, so every line is written in
//! a single `write_all` on an unbuffered file: when the process dies, every
//! event delivered so far is complete on disk and at most the line being
//! written is cut short. Reading a trace back ([`read_trace`],
//! [`read_trace_partial`]) is here too, so the format has one owner; what the
//! lines mean is `docs/trace-schema.json` and [`crate::event`].
//!
//! The file is made by [`safe_file`] (a link planted at its path is replaced,
//! not followed), and at the end the writer checks that the path still names
//! the file it wrote, whole: a trace that a command the agent ran replaced or
//! cut is an error, and a replaced one is put back.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::event::Event;
use crate::event::bus::{EventSink, SinkError};
use crate::redact::Masked;
use crate::safe_file::{self, FileIdentity, MaskedStream};

/// Streams every event to a JSONL file.
pub struct TraceWriter {
    path: PathBuf,
    file: MaskedStream,
    /// The file as created, to tell at the end whether the path still names it.
    identity: FileIdentity,
    /// The digest of every byte written: the file must read back as
    /// exactly these bytes, or someone else changed it.
    digest: Sha256,
}

impl TraceWriter {
    /// Create the trace file, creating its parent directories. Whatever is
    /// at the path (an old trace, a symlink someone planted) is replaced,
    /// never followed or truncated through.
    pub fn create(path: &Path) -> Result<TraceWriter, SinkError> {
        let display = path.display().to_string();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| SinkError {
                what: "create the trace directory for",
                path: display.clone(),
                source,
            })?;
        }
        let create_error = |source| SinkError {
            what: "create trace file",
            path: display.clone(),
            source,
        };
        let file = safe_file::create_stream(path).map_err(create_error)?;
        let identity = file.identity().map_err(create_error)?;
        Ok(TraceWriter {
            path: path.to_path_buf(),
            file,
            identity,
            digest: Sha256::new(),
        })
    }

    /// Create the trace file anew holding `kept` (the trace of a resumed
    /// run up to its checkpoint), to go on writing after it. Made as
    /// [`TraceWriter::create`] makes a file: whatever is at the path is
    /// replaced, never written through.
    pub fn continue_from(path: &Path, kept: &[u8]) -> Result<TraceWriter, SinkError> {
        let mut writer = TraceWriter::create(path)?;
        // The kept lines are the trace's own, masked when they were written.
        writer
            .file
            .write_masked(&Masked::from_masked_parts(kept))
            .map_err(|e| writer.error(e))?;
        writer.digest.update(kept);
        Ok(writer)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, source: std::io::Error) -> SinkError {
        SinkError {
            what: "write trace to",
            path: self.path.display().to_string(),
            source,
        }
    }

    /// After the last event: is the file at the path still the one written,
    /// holding exactly what was written? A trace replaced by another file
    /// gets agentci's own lines put back; either way the tampering is an
    /// error, so a run that passed does not report a pass on a trace
    /// someone else touched.
    fn check_untouched(&mut self) -> Result<(), SinkError> {
        let tampered = |what: &str| SinkError {
            what: "keep the trace intact at",
            path: self.path.display().to_string(),
            source: std::io::Error::other(format!(
                "the file was {what} by something else during the run"
            )),
        };
        let mut on_disk = Sha256::new();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| std::io::copy(&mut self.file, &mut on_disk))
            .map_err(|e| self.error(e))?;
        if on_disk.finalize() != self.digest.clone().finalize() {
            return Err(tampered("truncated or written to"));
        }
        if FileIdentity::of_path(&self.path).ok() == Some(self.identity) {
            return Ok(());
        }
        let mut ours = Vec::new();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.read_to_end(&mut ours))
            // Our own lines, read back: masked when they were written.
            .and_then(|_| safe_file::replace(&self.path, &Masked::from_masked_parts(ours), None))
            .map_err(|e| self.error(e))?;
        Err(tampered(
            "replaced, moved or removed (agentci put its own trace back)",
        ))
    }
}

impl EventSink for TraceWriter {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        let mut line = serde_json::to_vec(event).map_err(|e| self.error(e.into()))?;
        line.push(b'\n');
        // One write per line, straight to the file: nothing sits in a user-space
        // buffer when the process is killed. The bus masked the event before
        // any sink saw it.
        self.file
            .write_masked(&Masked::from_masked_parts(&line[..]))
            .map_err(|e| self.error(e))?;
        self.digest.update(&line);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.file.flush().map_err(|e| self.error(e))?;
        self.check_untouched()
    }
}

/// The events of a trace up to its first malformed line.
#[derive(Debug, Default)]
pub struct PartialTrace {
    pub events: Vec<Event>,
    /// Why reading stopped early, naming the file and 1-based line number.
    pub error: Option<TraceReadError>,
}

/// Why a trace could not be read back, naming the file (and the line).
#[derive(Debug, thiserror::Error)]
pub enum TraceReadError {
    #[error("cannot read trace {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("trace {} line {line}: not a valid event: {source}", path.display())]
    Malformed {
        path: PathBuf,
        /// 1-based.
        line: usize,
        source: serde_json::Error,
    },
}

/// Read a whole trace; fails on the first malformed line, naming it.
pub fn read_trace(path: &Path) -> Result<Vec<Event>, TraceReadError> {
    let partial = read_trace_partial(path)?;
    match partial.error {
        Some(error) => Err(error),
        None => Ok(partial.events),
    }
}

/// Read a trace as far as it is intact: the events before the first
/// malformed line (a run killed mid-write leaves half a line at the end),
/// plus what was wrong with that line. Fails only if the file cannot be read.
pub fn read_trace_partial(path: &Path) -> Result<PartialTrace, TraceReadError> {
    let text = std::fs::read(path).map_err(|source| TraceReadError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let mut trace = PartialTrace::default();
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let last = lines.len().saturating_sub(1);
    for (index, line) in lines.into_iter().enumerate() {
        let number = index + 1;
        // The newline that ends the last line leaves one empty piece behind it.
        if index == last && line.is_empty() {
            break;
        }
        match serde_json::from_slice::<Event>(line) {
            Ok(event) => trace.events.push(event),
            Err(source) => {
                trace.error = Some(TraceReadError::Malformed {
                    path: path.to_path_buf(),
                    line: number,
                    source,
                });
                break;
            }
        }
    }
    Ok(trace)
}
