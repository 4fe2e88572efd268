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
//!
//! A line that cannot be written (the model filled the disk) is held in
//! memory, in order, behind any line held before it, and every later event
//! tries to write them first, so they reach the file as soon as space comes
//! back. Just before `run.completed` ([`EventSink::settle`]) and at the end,
//! the writer releases the space reserved for the records
//! ([`super::reserve`]) to write what it still holds. Up to [`HELD_LIMIT`]
//! bytes are held; later lines are dropped (never `run.completed`), and
//! the record is then incomplete. The file only ever holds whole lines
//! in order, except for the last one when the space runs out mid-line, as
//! after a kill.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::reserve::{self, RecordReserve};
use crate::event::bus::{EventSink, SinkError};
use crate::event::{Event, EventKind};
use crate::safe_file::{self, FileIdentity};

/// How many bytes of trace lines are held in memory while they cannot be
/// written; past it, lines are dropped rather than grow without bound.
pub const HELD_LIMIT: usize = 64 << 20;

/// Streams every event to a JSONL file.
pub struct TraceWriter {
    path: PathBuf,
    file: File,
    /// The file as created, to tell at the end whether the path still names it.
    identity: FileIdentity,
    /// The digest of every byte written: the file must read back as
    /// exactly these bytes, or someone else changed it.
    digest: Sha256,
    /// Lines not written yet, in order.
    held: Vec<u8>,
    /// Lines dropped because too much was held: how many, how many bytes.
    dropped: (u64, u64),
    /// Settling found the trace incomplete, which `run.completed` says:
    /// the end does not report it a second time.
    reported: bool,
    /// Space to write the held lines with at the end.
    reserve: RecordReserve,
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
        let identity = FileIdentity::of_file(&file).map_err(create_error)?;
        Ok(TraceWriter {
            path: path.to_path_buf(),
            file,
            identity,
            digest: Sha256::new(),
            held: Vec::new(),
            dropped: (0, 0),
            reported: false,
            reserve: RecordReserve::default(),
        })
    }

    /// Write held lines with `reserve`'s space once nothing else can (see
    /// the module's doc).
    pub fn with_reserve(mut self, reserve: RecordReserve) -> TraceWriter {
        self.reserve = reserve;
        self
    }

    /// Create the trace file anew holding `kept` (the trace of a resumed
    /// run up to its checkpoint), to go on writing after it. Made as
    /// [`TraceWriter::create`] makes a file: whatever is at the path is
    /// replaced, never written through.
    pub fn continue_from(path: &Path, kept: &[u8]) -> Result<TraceWriter, SinkError> {
        let mut writer = TraceWriter::create(path)?;
        writer.file.write_all(kept).map_err(|e| writer.error(e))?;
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

    /// Write as much of the held lines as the file takes; what was written
    /// leaves `held` (a short write leaves the rest of a line held).
    fn write_held(&mut self) -> std::io::Result<()> {
        while !self.held.is_empty() {
            match self.file.write(&self.held) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(written) => {
                    self.digest.update(&self.held[..written]);
                    self.held.drain(..written);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Write what is held, with the reserved space released when the disk
    /// is full; the error, naming what is lost, when some stays unwritten.
    fn write_held_with_reserve(&mut self) -> Result<(), SinkError> {
        let mut written = self.write_held();
        if let Err(e) = &written
            && reserve::out_of_space(e)
            && self.reserve.release()
        {
            written = self.write_held();
        }
        let (events, bytes) = self.dropped;
        match written {
            Ok(()) if events == 0 => Ok(()),
            Ok(()) => Err(self.error(std::io::Error::other(format!(
                "{events} events ({bytes} bytes) were dropped: they could not be written \
                 and more than {} MiB of the trace waited in memory",
                HELD_LIMIT >> 20
            )))),
            Err(e) => {
                let lost = std::io::Error::new(
                    e.kind(),
                    format!(
                        "{e}; the last {} bytes of the trace could not be written",
                        self.held.len()
                    ),
                );
                Err(self.error(lost))
            }
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
            .and_then(|_| safe_file::replace(&self.path, &ours, None))
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
        let last = matches!(event.kind, EventKind::RunCompleted(_));
        if self.held.len() + line.len() > HELD_LIMIT && !last {
            self.dropped.0 += 1;
            self.dropped.1 += line.len() as u64;
            return Ok(());
        }
        // One write per line, straight to the file: nothing sits in a
        // user-space buffer when the process is killed. Lines held before
        // go first: space may have come back.
        match self.held.is_empty() {
            true => self.held = line,
            false => self.held.extend_from_slice(&line),
        }
        // What is not written stays held: for the next event, or the end.
        let _ = self.write_held();
        Ok(())
    }

    fn settle(&mut self) -> Result<(), SinkError> {
        let settled = self.write_held_with_reserve();
        self.reported = settled.is_err();
        settled
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        let written = match self.write_held_with_reserve() {
            // `run.completed`'s reason names it already.
            Err(_) if self.reported => Ok(()),
            written => written,
        };
        self.file.flush().map_err(|e| self.error(e))?;
        let untouched = self.check_untouched();
        written.and(untouched)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::bus::EventBus;
    use std::sync::{Arc, Mutex};

    /// A sink that hands events to the shared trace writer.
    struct Shared(Arc<Mutex<TraceWriter>>);
    impl EventSink for Shared {
        fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
            self.0.lock().unwrap().on_event(event)
        }
        fn settle(&mut self) -> Result<(), SinkError> {
            self.0.lock().unwrap().settle()
        }
    }

    fn warning(message: &str) -> EventKind {
        EventKind::Warning {
            source: "test".into(),
            message: message.into(),
        }
    }

    // Regression: lines written while the disk was full were lost for good.
    // `/dev/full` fails every write with ENOSPC, as a full disk does.
    #[test]
    fn lines_a_full_disk_refused_are_written_in_order_when_space_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let writer = Arc::new(Mutex::new(TraceWriter::create(&path).unwrap()));
        let bus = EventBus::new("r", vec![Box::new(Shared(Arc::clone(&writer)))]);
        bus.emit(warning("before"));
        let real = std::mem::replace(
            &mut writer.lock().unwrap().file,
            File::options().write(true).open("/dev/full").unwrap(),
        );
        bus.emit(warning("while full 1"));
        bus.emit(warning("while full 2"));
        // No reserve to release: settling says what is lost.
        let unwritten = bus.settle();
        assert_eq!(unwritten.len(), 1);
        let message = unwritten[0].to_string();
        assert!(
            message.starts_with(&format!("write trace to {}: No space left", path.display())),
            "{message}"
        );
        writer.lock().unwrap().file = real;
        bus.emit(warning("space is back"));
        let messages: Vec<String> = read_trace(&path)
            .unwrap()
            .into_iter()
            .map(|e| match e.kind {
                EventKind::Warning { message, .. } => format!("{} {message}", e.seq),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            messages,
            [
                "1 before",
                "2 while full 1",
                "3 while full 2",
                "4 space is back"
            ]
        );
        assert!(writer.lock().unwrap().finish().is_ok());
    }

    #[test]
    fn past_the_limit_lines_are_dropped_but_run_completed_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let mut writer = TraceWriter::create(&path).unwrap();
        writer.file = File::options().write(true).open("/dev/full").unwrap();
        writer.held = vec![b'x'; HELD_LIMIT - 10];
        let event = |kind| Event {
            seq: 1,
            ts: String::new(),
            run_id: "r".into(),
            agent: None,
            kind,
        };
        writer.on_event(&event(warning("dropped"))).unwrap();
        assert_eq!(writer.dropped.0, 1);
        let done = crate::event::RunCompleted {
            status: crate::event::RunStatus::Passed,
            reason: String::new(),
            summary: None,
            totals: crate::event::Totals::default(),
            checks_passed: 0,
            checks_failed: 0,
            result: None,
            signal: None,
        };
        writer
            .on_event(&event(EventKind::RunCompleted(done)))
            .unwrap();
        assert!(writer.held.len() > HELD_LIMIT);
        assert_eq!(writer.dropped.0, 1);
    }
}
