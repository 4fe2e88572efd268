//! Reading a trace file into events, as far as it is readable.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::event::{Event, EventKind, SCHEMA_VERSION};

/// One line of a trace.
#[derive(Clone, Debug)]
pub enum TraceLine {
    Event(Box<Event>),
    /// A well-formed line of a type this version does not know (written by
    /// a newer agentci): shown as it is, not dropped.
    Other {
        kind: String,
        ts: Option<String>,
        value: Value,
    },
}

impl TraceLine {
    pub fn ts(&self) -> Option<&str> {
        match self {
            TraceLine::Event(event) => Some(&event.ts),
            TraceLine::Other { ts, .. } => ts.as_deref(),
        }
    }
}

/// Why reading stopped before the end of the file.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceProblem {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
    /// How many lines come after the bad one (not read).
    pub lines_after: usize,
}

impl TraceProblem {
    /// A kill mid-write cuts only the last line; anything else is damage.
    pub fn is_cut_last_line(&self) -> bool {
        self.lines_after == 0
    }
}

/// A trace as far as it could be read.
#[derive(Clone, Debug, Default)]
pub struct LoadedTrace {
    pub lines: Vec<TraceLine>,
    pub problem: Option<TraceProblem>,
    /// `schema_version` of `run.started`, when the trace has one.
    pub schema_version: Option<u32>,
    /// Notes for the reader: a newer schema, a missing `run.started`.
    pub notes: Vec<String>,
}

impl LoadedTrace {
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.lines.iter().filter_map(|line| match line {
            TraceLine::Event(event) => Some(event.as_ref()),
            TraceLine::Other { .. } => None,
        })
    }
}

/// Why a trace could not be shown at all.
#[derive(Debug, thiserror::Error)]
pub enum TraceLoadError {
    #[error("cannot read trace {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("trace {} holds no events", .path.display())]
    Empty { path: PathBuf },
    /// The first line is already damaged.
    #[error("trace {} line {line}: {message}", .path.display())]
    Damaged {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// Read the trace at `path`; `Err` only when the file cannot be read or
/// holds no event at all.
pub fn load(path: &Path) -> Result<LoadedTrace, TraceLoadError> {
    let bytes = std::fs::read(path).map_err(|source| TraceLoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    let mut trace = LoadedTrace::default();
    for (index, line) in all.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Ok(parsed) => trace.lines.push(parsed),
            Err(message) => {
                trace.problem = Some(TraceProblem {
                    line: index + 1,
                    message,
                    lines_after: all.len() - index - 1,
                });
                break;
            }
        }
    }
    if trace.lines.is_empty() {
        let path = path.to_path_buf();
        return Err(match trace.problem {
            Some(problem) => TraceLoadError::Damaged {
                path,
                line: problem.line,
                message: problem.message,
            },
            None => TraceLoadError::Empty { path },
        });
    }
    match trace.lines.first() {
        Some(TraceLine::Event(event)) => {
            if let EventKind::RunStarted(run) = &event.kind {
                trace.schema_version = Some(run.schema_version);
                if run.schema_version > SCHEMA_VERSION {
                    trace.notes.push(format!(
                        "written by agentci {} with trace schema {}; this agentci reads up to \
                         schema {SCHEMA_VERSION}, so newer details may be missing",
                        run.agentci_version, run.schema_version
                    ));
                }
            } else {
                trace.notes.push(
                    "the trace does not start with run.started: its beginning is missing".into(),
                );
            }
        }
        _ => trace
            .notes
            .push("the trace does not start with run.started: its beginning is missing".into()),
    }
    Ok(trace)
}

fn parse_line(line: &str) -> Result<TraceLine, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        if e.is_eof() {
            "the line is cut short (the run was probably killed while writing it)".to_string()
        } else {
            format!("not JSON: {e}")
        }
    })?;
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .ok_or("not an event: it has no \"type\"")?
        .to_string();
    match serde_json::from_value::<Event>(value.clone()) {
        Ok(event) => Ok(TraceLine::Event(Box::new(event))),
        // A type this version does not know, from a newer agentci: keep it.
        Err(e) if e.to_string().contains("unknown variant") => Ok(TraceLine::Other {
            kind,
            ts: value.get("ts").and_then(Value::as_str).map(str::to_string),
            value,
        }),
        Err(e) => Err(format!("not a valid {kind} event: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<LoadedTrace, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        std::fs::write(&path, text).unwrap();
        load(&path).map_err(|e| e.to_string())
    }

    const WARNING: &str =
        r#"{"seq":1,"ts":"t","run_id":"r","type":"warning","source":"s","message":"m"}"#;

    #[test]
    fn a_cut_last_line_is_reported_with_its_number() {
        let text = format!("{WARNING}\n{}", &WARNING[..30]);
        let trace = load_text(&text).unwrap();
        assert_eq!(trace.lines.len(), 1);
        let problem = trace.problem.unwrap();
        assert_eq!(problem.line, 2);
        assert!(problem.is_cut_last_line());
        assert!(problem.message.contains("cut short"), "{}", problem.message);
    }

    #[test]
    fn a_corrupt_middle_line_stops_reading_and_says_how_much_follows() {
        let text = format!("{WARNING}\n{{\"type\":\"check.completed\"}}\n{WARNING}\n");
        let trace = load_text(&text).unwrap();
        let problem = trace.problem.unwrap();
        assert_eq!((problem.line, problem.lines_after), (2, 1));
        assert!(
            problem.message.contains("check.completed"),
            "{}",
            problem.message
        );
    }

    #[test]
    fn unknown_event_types_are_kept() {
        let text = format!(
            "{WARNING}\n{{\"seq\":2,\"ts\":\"t\",\"run_id\":\"r\",\"type\":\"checkpoint.saved\",\"turn\":2}}\n"
        );
        let trace = load_text(&text).unwrap();
        assert!(trace.problem.is_none());
        assert!(
            matches!(&trace.lines[1], TraceLine::Other { kind, .. } if kind == "checkpoint.saved")
        );
        assert!(!trace.notes.is_empty(), "no run.started is noted");
    }

    #[test]
    fn garbage_and_empty_files_are_errors_not_panics() {
        assert!(load_text("").unwrap_err().contains("no events"));
        assert!(
            load_text("\u{0}\u{1}binary")
                .unwrap_err()
                .contains("line 1")
        );
    }
}
