//! The run's checkpoint: the loop's state saved in the run folder before
//! every model turn, so that `agentci run JOB --resume RUN_DIR` can go on
//! from the last one, and reading it back.
//!
//! Saving must not cost more as the conversation grows, so the checkpoint
//! is two files in `RUN_DIR/checkpoint/`:
//! - `messages-G.jsonl`, the conversation, one message a line, only ever
//!   appended to (a new file, `G` + 1, when the run trims or compacts the
//!   conversation, which rewrites its middle);
//! - `state.json`, a small record rewritten whole each time (a new file
//!   renamed over the old one): the rest of the loop's state, which file
//!   holds the messages, how many messages and bytes of it count, and the
//!   SHA-256 of those bytes, kept running as lines are appended.
//!
//! A string of the record longer than [`BLOB_MIN_BYTES`] (a plan title,
//! a report, anything the model made huge) is stored once, in a file of
//! its own named by its SHA-256 (`blob-<sha256>`), and the record holds
//! that name instead: a 30 MB argument costs one 30 MB write, not one per
//! turn. The MAC covers the name, so a blob is checked against it on load.
//!
//! What is stored is masked with the run's secrets, as the trace is (the
//! run folder is what a workflow uploads): the messages, the record and
//! every blob. A resumed run reads the masked conversation back, so the
//! model sees `***` where a secret was, as the trace shows it.
//!
//! The record is the commit point: a process killed while appending leaves
//! lines the record does not count, and one killed while writing the
//! record leaves the previous record, which still names a valid prefix of
//! the messages. A save the disk has no room for fails the same way: the
//! part of the lines that got written is cut off again and the previous
//! record stays, so the checkpoint on disk is the last one that fit, still
//! authentic, and the next save (once space is back) appends after it.
//!
//! The run folder is often inside the workspace, within the model's reach,
//! so the record carries an HMAC made with the user's checkpoint key
//! ([`super::checkpoint_key`]): it covers the record, and through the
//! running hash the messages it counts, so a changed byte in either is
//! refused on load. Which checkpoints may be resumed, and with what, is
//! [`super::resume`]'s business; this module only saves and loads.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hmac::Mac;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use super::checkpoint_key::CheckpointKey;
use crate::agent::{LoopState, NotSaved, StateSaver};
use crate::event::Event;
use crate::event::bus::{EventSink, SinkError};
use crate::provider::Message;
use crate::redact::{Masked, Redactor};
use crate::safe_file::{MaskedStream, OutputFolder};
use crate::skills::Skill;

/// The checkpoint's folder inside a run folder.
pub const CHECKPOINT_DIR: &str = "checkpoint";
const STATE_FILE: &str = "state.json";
/// Strings of the record at least this long are stored once, by reference.
pub const BLOB_MIN_BYTES: usize = 64 * 1024;
/// The prefix of a blob's file name; its SHA-256 follows.
const BLOB_PREFIX: &str = "blob-";
/// The key of the object that stands for a blob in the record.
const BLOB_KEY: &str = "checkpoint_blob";
/// What the MAC is of, besides the record: a record is never taken for
/// anything else the key might one day sign.
const MAC_CONTEXT: &[u8] = b"agentci checkpoint record\n";

/// What a checkpoint was made by and for; a resume must match it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Origin {
    pub agentci_version: String,
    pub run_id: String,
    /// The job file (or `<command line>`) and the SHA-256 of what made the
    /// job: the file's bytes and the flags that shape it.
    pub job_file: String,
    pub job_sha256: String,
    /// The skill's `SKILL.md` and its SHA-256.
    pub skill_file: String,
    pub skill_sha256: String,
    /// Where the run worked and wrote, absolute.
    pub workspace: PathBuf,
    pub run_dir: PathBuf,
    pub trace: PathBuf,
    pub junit: PathBuf,
}

/// The record `state.json` holds, inside its envelope. Generic over how
/// the state is held: a borrow when saving, owned when loading.
#[derive(Serialize, Deserialize)]
struct Record<S> {
    origin: Origin,
    /// The file of the conversation, in the checkpoint folder.
    messages_file: String,
    /// How many of its messages, in how many bytes, are the conversation.
    messages: usize,
    messages_bytes: u64,
    /// The SHA-256 of those bytes: the MAC covers the record, the record
    /// covers the messages.
    messages_sha256: String,
    /// The trace's next `seq` when the checkpoint was taken: a resumed run
    /// cuts the trace back to here.
    next_seq: u64,
    /// The loop's state, its conversation left out (it is in the messages file).
    state: S,
}

/// `state.json` as read: the version first (another version's record may
/// have another format), the MAC, and the record's exact bytes.
#[derive(Deserialize)]
struct Envelope {
    agentci_version: Option<String>,
    mac: Option<String>,
    record: Option<Box<RawValue>>,
}

/// A loaded checkpoint.
#[derive(Debug)]
pub struct Checkpoint {
    pub origin: Origin,
    pub next_seq: u64,
    /// The loop's state, conversation included.
    pub state: LoopState,
}

/// Why a checkpoint cannot be loaded. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(
        "{}: no checkpoint: {} is not the folder of a run that got to its first model turn \
         (a run's folder is `.agentci/runs/<run-id>/` in the workspace, or `--out`)",
        .record.display(), .run_dir.display()
    )]
    Missing { record: PathBuf, run_dir: PathBuf },
    #[error("cannot read the checkpoint {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: the checkpoint is not valid JSON: {source}", .path.display())]
    NotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "{}: the checkpoint was written by agentci {version}, and this is agentci {ours}: \
         resume it with agentci {version}, or run the job again",
        .path.display(), ours = env!("CARGO_PKG_VERSION")
    )]
    OtherVersion { path: PathBuf, version: String },
    #[error(
        "{}: the checkpoint's record is not authentic: its MAC does not match the record for \
         the checkpoint key {} (the record was changed after agentci wrote it, or written with \
         another key, by another user or machine); it cannot be resumed, run the job again",
        .path.display(), .key.display()
    )]
    NotAuthentic { path: PathBuf, key: PathBuf },
    #[error(
        "{}: the checkpoint's messages are not the ones it recorded (their SHA-256 differs: \
         the file was changed after agentci wrote it); it cannot be resumed, run the job again",
        .path.display()
    )]
    MessagesChanged { path: PathBuf },
    #[error("{}: the checkpoint cannot be read: {source}", .path.display())]
    BadRecord {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "{}: the checkpoint's stored text is not the one its record names (its SHA-256 \
         differs, or it is missing: the file was changed after agentci wrote it); it cannot \
         be resumed, run the job again",
        .path.display()
    )]
    BlobChanged { path: PathBuf },
    #[error("{} line {line}: not a message: {source}", .path.display())]
    BadMessage {
        path: PathBuf,
        line: usize,
        source: serde_json::Error,
    },
    #[error("{}: the checkpoint counts {counted} messages and the file holds {held}", .path.display())]
    Count {
        path: PathBuf,
        counted: usize,
        held: usize,
    },
}

/// The SHA-256 of `parts`, each length-prefixed, in hex.
pub fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        // Length-prefixed, so that two parts cannot pass for one.
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    format!("{:x}", hasher.finalize())
}

/// The skill's file and fingerprint: its `SKILL.md` as it is on disk (or
/// the instructions as loaded, when the file cannot be read).
pub fn skill_fingerprint(skill: &Skill) -> (String, String) {
    let file = skill.dir.join("SKILL.md");
    let bytes = std::fs::read(&file).unwrap_or_else(|_| skill.instructions.clone().into_bytes());
    (file.display().to_string(), sha256_hex(&[&bytes]))
}

/// The MAC of a record's bytes, in hex.
fn record_mac(key: &CheckpointKey, record: &[u8]) -> String {
    let mut mac = key.mac();
    mac.update(MAC_CONTEXT);
    mac.update(record);
    hex(&mac.finalize().into_bytes())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where the trace stands, for the checkpoint writer: the `seq` the next
/// event gets. It follows the run's bus as a sink (the bus only stamps and
/// delivers), starting where a resumed run's trace goes on.
#[derive(Clone, Debug)]
pub struct TracePosition(Arc<AtomicU64>);

impl TracePosition {
    /// A position before the event numbered `next_seq`.
    pub fn starting_at(next_seq: u64) -> TracePosition {
        TracePosition(Arc::new(AtomicU64::new(next_seq)))
    }

    /// The `seq` the next event gets.
    pub fn next_seq(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// The sink that moves this position on with every event delivered.
    pub fn sink(&self) -> Box<dyn EventSink> {
        Box::new(self.clone())
    }
}

impl EventSink for TracePosition {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        self.0.store(event.seq + 1, Ordering::SeqCst);
        Ok(())
    }
}

/// Saves the run's checkpoint before every model turn.
pub struct CheckpointWriter {
    /// The checkpoint folder, opened by descriptor beneath the run folder
    /// before the run: every file is made, replaced and removed through it.
    folder: OutputFolder,
    origin: Origin,
    key: CheckpointKey,
    /// The run's secrets: what is stored is masked with them.
    secrets: Redactor,
    /// The messages file being appended to; `None` until the first save,
    /// which writes it whole.
    messages: Option<MaskedStream>,
    messages_file: String,
    /// Messages and bytes in it, and the SHA-256 of those bytes so far.
    saved: usize,
    bytes: u64,
    hasher: Sha256,
    /// `LoopState::rewrites` when the file was started.
    generation: u64,
    /// Gives the trace's next `seq` at the moment of saving.
    next_seq: Box<dyn Fn() -> u64 + Send>,
    /// The blobs the last record names, all on disk.
    blobs: BTreeSet<String>,
    /// Bytes written to the checkpoint by this writer so far.
    bytes_written: u64,
}

impl CheckpointWriter {
    /// A writer for the checkpoint folder `folder` (`checkpoint/` of the
    /// run folder, opened), signing with `key` and masking `secrets` in
    /// what it stores.
    pub fn new(
        folder: OutputFolder,
        origin: Origin,
        key: CheckpointKey,
        secrets: Redactor,
        next_seq: Box<dyn Fn() -> u64 + Send>,
    ) -> CheckpointWriter {
        CheckpointWriter {
            folder,
            origin,
            key,
            secrets,
            messages: None,
            messages_file: String::new(),
            saved: 0,
            bytes: 0,
            hasher: Sha256::new(),
            generation: 0,
            next_seq,
            blobs: BTreeSet::new(),
            bytes_written: 0,
        }
    }

    /// Bytes this writer has written to the checkpoint (messages, records
    /// and blobs) so far: what saving has cost the disk.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    fn error(&self, what: &str, e: impl std::fmt::Display) -> String {
        format!(
            "failed to {what} the checkpoint in {}: {e}",
            self.folder.path().display()
        )
    }

    /// Start a new messages file holding all of `conversation`.
    fn start_messages(&mut self, conversation: &[Message], generation: u64) -> Result<(), String> {
        // A new name each time, so the record in place keeps naming a whole file.
        let name = format!("messages-{generation}-{}.jsonl", (self.next_seq)());
        // Whatever sits at the name (a link planted in the run folder) is replaced, not followed.
        let mut file = self
            .folder
            .file(OsStr::new(&name))
            .create_stream()
            .map_err(|e| self.error("create", e))?;
        let lines = lines_of(conversation, &self.secrets).map_err(|e| self.error("encode", e))?;
        file.write_masked(&lines)
            .map_err(|e| self.error("write", e))?;
        self.bytes_written += lines.len() as u64;
        let lines = lines.as_bytes();
        self.messages_file = name;
        self.messages = Some(file);
        self.saved = conversation.len();
        self.bytes = lines.len() as u64;
        self.hasher = Sha256::new();
        self.hasher.update(lines);
        self.generation = generation;
        Ok(())
    }

    /// Remove the messages files and blobs the record no longer names.
    fn remove_stale(&self) {
        // Listed and removed through the folder's descriptor: a folder
        // swapped for a link since the start deletes nothing where it points.
        let Ok(names) = self.folder.names() else {
            return;
        };
        for name in names {
            let text = name.to_string_lossy();
            let stale_messages =
                text.starts_with("messages-") && text != self.messages_file.as_str();
            let stale_blob = text.starts_with(BLOB_PREFIX) && !self.blobs.contains(text.as_ref());
            if stale_messages || stale_blob {
                let _ = self.folder.remove_file(&name);
            }
        }
    }

    /// Append the messages after the saved ones.
    fn append_messages(&mut self, new: &[Message]) -> Result<(), String> {
        if new.is_empty() {
            return Ok(());
        }
        let lines = lines_of(new, &self.secrets).map_err(|e| self.error("encode", e))?;
        let Some(file) = self.messages.as_mut() else {
            return Ok(());
        };
        // One write: a kill leaves at most a part of these lines, which the
        // record (still the previous one) does not count.
        if let Err(e) = file.write_masked(&lines) {
            // A full disk takes part of the lines: cut them off, so the next
            // save appends right after what the record counts. When even
            // that fails, the next save starts a new file.
            let counted = self.bytes;
            let cut = file
                .set_len(counted)
                .and_then(|()| file.seek(SeekFrom::Start(counted)));
            if cut.is_err() {
                self.messages = None;
            }
            return Err(format!("failed to write the checkpoint's messages: {e}"));
        }
        self.saved += new.len();
        self.bytes += lines.len() as u64;
        self.bytes_written += lines.len() as u64;
        self.hasher.update(lines.as_bytes());
        Ok(())
    }

    /// Write the record; returns whether the blobs it names changed.
    fn write_record(&mut self, state: &LoopState) -> Result<bool, String> {
        let mut state = serde_json::to_value(state).map_err(|e| self.error("encode", e))?;
        let mut named = BTreeSet::new();
        self.store_large_strings(&mut state, &mut named)?;
        let record = Record {
            origin: self.origin.clone(),
            messages_file: self.messages_file.clone(),
            messages: self.saved,
            messages_bytes: self.bytes,
            // A copy of the running hash: as cheap at turn 200 as at turn 1.
            messages_sha256: format!("{:x}", self.hasher.clone().finalize()),
            next_seq: (self.next_seq)(),
            state,
        };
        let record = self
            .secrets
            .mask_json(&record)
            .map_err(|e| self.error("encode", e))?;
        let mut file = format!(
            "{{\"agentci_version\":\"{}\",\"mac\":\"{}\",\"record\":",
            env!("CARGO_PKG_VERSION"),
            record_mac(&self.key, record.as_bytes())
        )
        .into_bytes();
        file.extend_from_slice(record.as_bytes());
        file.extend_from_slice(b"}\n");
        // The masked record in an envelope of the version and its MAC.
        let file = Masked::from_masked_parts(file);
        // A new file renamed over the old: a kill mid-write leaves the old one whole.
        self.folder
            .file(OsStr::new(STATE_FILE))
            .replace(&file, None)
            .map_err(|e| self.error("write", e))?;
        self.bytes_written += file.len() as u64;
        let changed = named != self.blobs;
        self.blobs = named;
        Ok(changed)
    }

    /// Replace every string of `value` of at least [`BLOB_MIN_BYTES`] with
    /// a reference to a blob holding it, masked, writing the blobs not on
    /// disk yet; `named` collects the blobs' file names.
    fn store_large_strings(
        &mut self,
        value: &mut Value,
        named: &mut BTreeSet<String>,
    ) -> Result<(), String> {
        match value {
            Value::String(text) if text.len() >= BLOB_MIN_BYTES => {
                let masked = self.secrets.mask(text);
                let sha256 = format!("{:x}", Sha256::digest(masked.as_bytes()));
                let name = format!("{BLOB_PREFIX}{sha256}");
                if !self.blobs.contains(&name) && !named.contains(&name) {
                    self.folder
                        .file(OsStr::new(&name))
                        .replace(&masked, None)
                        .map_err(|e| self.error("write", e))?;
                    self.bytes_written += masked.len() as u64;
                }
                named.insert(name);
                *value = serde_json::json!({ BLOB_KEY: sha256 });
            }
            Value::Array(items) => {
                for item in items {
                    self.store_large_strings(item, named)?;
                }
            }
            Value::Object(map) => {
                for item in map.values_mut() {
                    self.store_large_strings(item, named)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl StateSaver for CheckpointWriter {
    fn save(&mut self, state: &mut LoopState) -> Result<(), NotSaved> {
        self.save_now(state).map_err(NotSaved)
    }
}

impl CheckpointWriter {
    fn save_now(&mut self, state: &mut LoopState) -> Result<(), String> {
        let rewritten = self.messages.is_none()
            || state.rewrites != self.generation
            || state.conversation.len() < self.saved;
        if rewritten {
            self.start_messages(&state.conversation, state.rewrites)?;
        } else {
            let saved = self.saved;
            self.append_messages(&state.conversation[saved..])?;
        }
        // The conversation is in the messages file; the record holds the rest.
        let conversation = std::mem::take(&mut state.conversation);
        let written = self.write_record(state);
        state.conversation = conversation;
        let blobs_changed = written?;
        if rewritten || blobs_changed {
            self.remove_stale();
        }
        Ok(())
    }
}

/// `messages` as JSON lines, each masked with `secrets`.
fn lines_of(messages: &[Message], secrets: &Redactor) -> serde_json::Result<Masked<'static>> {
    let mut lines = Vec::new();
    for message in messages {
        lines.extend_from_slice(secrets.mask_json(message)?.as_bytes());
        lines.push(b'\n');
    }
    // Masked lines joined by newlines.
    Ok(Masked::from_masked_parts(lines))
}

/// Put back every blob `value` refers to from the checkpoint folder `dir`,
/// each checked against the SHA-256 that names it.
fn load_blobs(value: &mut Value, dir: &Path) -> Result<(), CheckpointError> {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key(BLOB_KEY) => {
            let sha256 = map
                .get(BLOB_KEY)
                .and_then(Value::as_str)
                .unwrap_or_default();
            let path = dir.join(format!("{BLOB_PREFIX}{sha256}"));
            let changed = || CheckpointError::BlobChanged { path: path.clone() };
            // The name is the record's, which the MAC covers; still, only hex.
            if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(changed());
            }
            let bytes = std::fs::read(&path).map_err(|_| changed())?;
            if format!("{:x}", Sha256::digest(&bytes)) != sha256 {
                return Err(changed());
            }
            *value = Value::String(String::from_utf8(bytes).map_err(|_| changed())?);
        }
        Value::Array(items) => {
            for item in items {
                load_blobs(item, dir)?;
            }
        }
        Value::Object(map) => {
            for item in map.values_mut() {
                load_blobs(item, dir)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Where the checkpoint of the run folder `run_dir` keeps its record.
pub fn record_path(run_dir: &Path) -> PathBuf {
    run_dir.join(CHECKPOINT_DIR).join(STATE_FILE)
}

/// The record of the checkpoint of `run_dir`, its MAC checked with `key`.
/// A checkpoint written by another version of agentci is refused before
/// anything else is read: its format may differ.
fn read_record(run_dir: &Path, key: &CheckpointKey) -> Result<Box<RawValue>, CheckpointError> {
    let path = record_path(run_dir);
    let text = std::fs::read(&path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => CheckpointError::Missing {
            record: path.clone(),
            run_dir: run_dir.to_path_buf(),
        },
        _ => CheckpointError::Read {
            path: path.clone(),
            source,
        },
    })?;
    let envelope: Envelope =
        serde_json::from_slice(&text).map_err(|source| CheckpointError::NotJson {
            path: path.clone(),
            source,
        })?;
    let version = envelope
        .agentci_version
        .unwrap_or_else(|| "an unknown version".to_string());
    if version != env!("CARGO_PKG_VERSION") {
        return Err(CheckpointError::OtherVersion { path, version });
    }
    let not_authentic = || CheckpointError::NotAuthentic {
        path: path.clone(),
        key: key.path().to_path_buf(),
    };
    let (Some(mac), Some(record)) = (envelope.mac, envelope.record) else {
        return Err(not_authentic());
    };
    let mut check = key.mac();
    check.update(MAC_CONTEXT);
    check.update(record.get().as_bytes());
    let given = decode_hex(&mac).ok_or_else(not_authentic)?;
    // Constant-time: how much of a forged MAC matched says nothing.
    check.verify_slice(&given).map_err(|_| not_authentic())?;
    Ok(record)
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Load the checkpoint of the run folder `run_dir`, conversation included,
/// after checking its MAC with `key` and its messages with its record.
pub fn load(run_dir: &Path, key: &CheckpointKey) -> Result<Checkpoint, CheckpointError> {
    let raw = read_record(run_dir, key)?;
    let bad_record = |source| CheckpointError::BadRecord {
        path: record_path(run_dir),
        source,
    };
    let mut record: Record<Value> = serde_json::from_str(raw.get()).map_err(bad_record)?;
    if record.origin.agentci_version != env!("CARGO_PKG_VERSION") {
        return Err(CheckpointError::OtherVersion {
            path: record_path(run_dir),
            version: record.origin.agentci_version,
        });
    }
    load_blobs(&mut record.state, &run_dir.join(CHECKPOINT_DIR))?;
    let mut state: LoopState =
        serde_json::from_value(std::mem::take(&mut record.state)).map_err(bad_record)?;
    state.conversation = read_messages(
        &run_dir.join(CHECKPOINT_DIR).join(&record.messages_file),
        record.messages,
        record.messages_bytes,
        &record.messages_sha256,
    )?;
    Ok(Checkpoint {
        origin: record.origin,
        next_seq: record.next_seq,
        state,
    })
}

/// The first `count` messages of a messages file, in its first `bytes`
/// bytes, whose SHA-256 must be `sha256`.
fn read_messages(
    path: &Path,
    count: usize,
    bytes: u64,
    sha256: &str,
) -> Result<Vec<Message>, CheckpointError> {
    let read = |source| CheckpointError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(read)?;
    let mut text = Vec::new();
    file.take(bytes).read_to_end(&mut text).map_err(read)?;
    if format!("{:x}", Sha256::digest(&text)) != sha256 {
        return Err(CheckpointError::MessagesChanged {
            path: path.to_path_buf(),
        });
    }
    let messages = text
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .enumerate()
        .map(|(index, line)| {
            serde_json::from_slice::<Message>(line).map_err(|source| CheckpointError::BadMessage {
                path: path.to_path_buf(),
                line: index + 1,
                source,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if messages.len() != count {
        return Err(CheckpointError::Count {
            path: path.to_path_buf(),
            counted: count,
            held: messages.len(),
        });
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The checkpoint writer follows the trace as a sink: a resumed run's
    // position starts where its trace goes on and moves with each event.
    #[test]
    fn the_trace_position_follows_the_bus() {
        use crate::event::EventKind;
        use crate::event::bus::EventBus;
        let position = TracePosition::starting_at(7);
        let bus = EventBus::new("r", vec![position.sink()]).continuing_at(7);
        assert_eq!(position.next_seq(), 7);
        for _ in 0..2 {
            bus.emit(EventKind::Warning {
                source: "test".into(),
                message: String::new(),
            });
        }
        assert_eq!(position.next_seq(), 9);
    }
    use crate::agent::budget::BudgetTracker;
    use crate::agent::loop_guard::LoopGuard;
    use crate::job::BudgetSpec;

    fn user(text: &str) -> Message {
        Message::User {
            content: text.into(),
        }
    }

    fn writer(dir: &Path) -> CheckpointWriter {
        let origin = Origin {
            agentci_version: env!("CARGO_PKG_VERSION").into(),
            run_id: "r1".into(),
            job_file: "job.yaml".into(),
            job_sha256: "j".into(),
            skill_file: "SKILL.md".into(),
            skill_sha256: "s".into(),
            workspace: dir.to_path_buf(),
            run_dir: dir.to_path_buf(),
            trace: dir.join("trace.jsonl"),
            junit: dir.join("junit.xml"),
        };
        let folder = OutputFolder::create(dir, Path::new(CHECKPOINT_DIR)).unwrap();
        CheckpointWriter::new(folder, origin, key(), Redactor::default(), Box::new(|| 7))
    }

    fn key() -> CheckpointKey {
        CheckpointKey::from_bytes(Path::new("/keys/checkpoint.key"), &[7; 32]).unwrap()
    }

    fn load(dir: &Path) -> Result<Checkpoint, CheckpointError> {
        super::load(dir, &key())
    }

    fn state(messages: &[&str]) -> LoopState {
        LoopState::new(
            messages.iter().map(|m| user(m)).collect(),
            BudgetTracker::new(&BudgetSpec::default(), None),
            LoopGuard::new(3),
        )
    }

    fn messages_files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.join(CHECKPOINT_DIR))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("messages-"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn saves_append_the_new_messages_and_load_gives_the_state_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(dir.path());
        let mut state = state(&["system", "goal"]);
        writer.save(&mut state).unwrap();
        state.conversation.push(user("turn 1"));
        state.budget.record_tool_calls(2);
        writer.save(&mut state).unwrap();
        assert_eq!(
            state.conversation.len(),
            3,
            "the saver gives the conversation back"
        );
        assert_eq!(
            messages_files(dir.path()).len(),
            1,
            "appended, not rewritten"
        );

        let loaded = load(dir.path()).unwrap();
        assert_eq!(loaded.state.conversation, state.conversation);
        assert_eq!(loaded.state.budget.tool_calls, 2);
        assert_eq!(loaded.next_seq, 7);
        assert_eq!(loaded.origin.run_id, "r1");
    }

    #[test]
    fn lines_the_record_does_not_count_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(dir.path());
        let mut state = state(&["system", "goal"]);
        writer.save(&mut state).unwrap();
        // A kill while appending the next turn: a line and a half, no new record.
        let file = dir
            .path()
            .join(CHECKPOINT_DIR)
            .join(&messages_files(dir.path())[0]);
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str("{\"role\":\"user\",\"content\":\"turn 1\"}\n{\"role\":\"us");
        std::fs::write(&file, text).unwrap();
        let loaded = load(dir.path()).unwrap();
        assert_eq!(
            loaded.state.conversation,
            vec![user("system"), user("goal")]
        );
    }

    #[test]
    fn a_rewritten_conversation_starts_a_new_messages_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(dir.path());
        let mut state = state(&["system", "goal", "old 1", "old 2"]);
        writer.save(&mut state).unwrap();
        state.conversation = vec![user("system"), user("goal"), user("summary of the old")];
        state.rewrites += 1;
        writer.save(&mut state).unwrap();
        assert_eq!(
            messages_files(dir.path()).len(),
            1,
            "the old file is removed"
        );
        assert_eq!(
            load(dir.path()).unwrap().state.conversation,
            state.conversation
        );
    }

    /// Every file of the checkpoint folder, read whole.
    fn checkpoint_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
        std::fs::read_dir(dir.join(CHECKPOINT_DIR))
            .unwrap()
            .flatten()
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect()
    }

    // Regression: the checkpoint stored the model's own output unmasked
    // (plan titles, tool arguments, text), while the trace masked it.
    #[test]
    fn what_is_stored_is_masked_and_loads_as_the_trace_shows_it() {
        const SECRET: &str = "tok-5f3a9c1e7d";
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(dir.path());
        writer.secrets = Redactor::new([SECRET]);
        let mut state = state(&["system", &format!("use {SECRET}")]);
        let long = format!("{SECRET} {}", "y".repeat(BLOB_MIN_BYTES));
        state.plan = vec![crate::event::PlanStep {
            title: format!("send {SECRET}"),
            expected_outcome: long.clone(),
        }];
        state.report = Some(format!("done with {SECRET}"));
        writer.save(&mut state).unwrap();
        state.conversation.push(user(&format!("again {SECRET}")));
        writer.save(&mut state).unwrap();
        for (name, bytes) in checkpoint_bytes(dir.path()) {
            assert!(
                !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
                "{name} holds the secret"
            );
        }
        let loaded = load(dir.path()).unwrap().state;
        assert_eq!(loaded.conversation[1], user("use ***"));
        assert_eq!(loaded.conversation[2], user("again ***"));
        assert_eq!(loaded.plan[0].title, "send ***");
        assert_eq!(loaded.plan[0].expected_outcome, long.replace(SECRET, "***"));
        assert_eq!(loaded.report.as_deref(), Some("done with ***"));
    }

    // Regression: one huge string in the loop's state (a 30 MB argument
    // the loop guard kept, a plan title) was rewritten in `state.json` at
    // every later turn.
    #[test]
    fn a_large_string_is_stored_once_by_reference() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(dir.path());
        let mut state = state(&["system", "goal"]);
        let huge = "z".repeat(4 * BLOB_MIN_BYTES);
        state.report = Some(huge.clone());
        writer.save(&mut state).unwrap();
        let after_first = writer.bytes_written();
        assert!(after_first > huge.len() as u64);
        for turn in 0..5 {
            state.conversation.push(user(&format!("turn {turn}")));
            writer.save(&mut state).unwrap();
        }
        let per_turn = (writer.bytes_written() - after_first) / 5;
        assert!(per_turn < 4096, "{per_turn} bytes a turn");
        let record = std::fs::metadata(record_path(dir.path())).unwrap().len();
        assert!(record < 4096, "state.json is {record} bytes");
        assert_eq!(load(dir.path()).unwrap().state.report, Some(huge));

        // A changed blob is refused, like changed messages.
        let blob = checkpoint_bytes(dir.path())
            .into_iter()
            .find(|(name, _)| name.starts_with(BLOB_PREFIX))
            .unwrap();
        let path = dir.path().join(CHECKPOINT_DIR).join(&blob.0);
        std::fs::write(&path, "z".repeat(4 * BLOB_MIN_BYTES - 1)).unwrap();
        let error = load(dir.path()).unwrap_err();
        assert!(
            matches!(error, CheckpointError::BlobChanged { .. }),
            "{error}"
        );
        assert!(error.to_string().contains(&blob.0), "{error}");

        // A string that shrinks below the size is stored inline again, and
        // the blob nobody names is removed.
        state.report = Some("short".into());
        writer.save(&mut state).unwrap();
        assert!(
            checkpoint_bytes(dir.path())
                .iter()
                .all(|(name, _)| !name.starts_with(BLOB_PREFIX))
        );
        assert_eq!(
            load(dir.path()).unwrap().state.report.as_deref(),
            Some("short")
        );
    }

    #[test]
    fn another_version_is_refused_before_the_state_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(dir.path());
        writer.save(&mut state(&["system"])).unwrap();
        let path = record_path(dir.path());
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        record["agentci_version"] = "9.9.9".into();
        record["record"] = "not a record".into();
        std::fs::write(&path, record.to_string()).unwrap();
        let error = load(dir.path()).unwrap_err().to_string();
        assert!(error.contains("agentci 9.9.9"), "{error}");
        assert!(error.contains("state.json"), "{error}");
    }

    /// The record's MAC covers the record and, through its running hash,
    /// the messages it counts: one byte changed in either is refused, and
    /// so is a record signed with another key.
    #[test]
    fn a_changed_byte_or_another_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(dir.path());
        let mut state = state(&["system", "goal"]);
        writer.save(&mut state).unwrap();
        state.conversation.push(user("turn 1"));
        writer.save(&mut state).unwrap();
        let record = record_path(dir.path());
        let messages = dir
            .path()
            .join(CHECKPOINT_DIR)
            .join(&messages_files(dir.path())[0]);
        let flip = |path: &Path, find: &str, with: &str| {
            let text = std::fs::read_to_string(path).unwrap();
            assert!(text.contains(find), "{text}");
            std::fs::write(path, text.replacen(find, with, 1)).unwrap();
            text
        };

        let saved = flip(&record, "\"turns\":", "\"turns\": ");
        let error = load(dir.path()).unwrap_err();
        assert!(
            matches!(error, CheckpointError::NotAuthentic { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("state.json"), "{error}");
        assert!(
            error.to_string().contains("/keys/checkpoint.key"),
            "{error}"
        );
        std::fs::write(&record, saved).unwrap();

        let saved = flip(&messages, "turn 1", "turn 2");
        let error = load(dir.path()).unwrap_err();
        assert!(
            matches!(error, CheckpointError::MessagesChanged { .. }),
            "{error}"
        );
        std::fs::write(&messages, saved).unwrap();
        assert!(load(dir.path()).is_ok());

        let other = CheckpointKey::from_bytes(Path::new("/other.key"), &[8; 32]).unwrap();
        let error = super::load(dir.path(), &other).unwrap_err();
        assert!(
            matches!(error, CheckpointError::NotAuthentic { .. }),
            "{error}"
        );
    }
}
