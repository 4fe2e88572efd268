//! The run's checkpoint: the loop's state saved in the run folder before
//! every model turn, so that `agentci run --resume RUN_DIR` can go on from
//! the last one, and reading it back.
//!
//! Saving must not cost more as the conversation grows, so the checkpoint
//! is two files in `RUN_DIR/checkpoint/`:
//! - `messages-G.jsonl`, the conversation, one message a line, only ever
//!   appended to (a new file, `G` + 1, when the run trims or compacts the
//!   conversation, which rewrites its middle);
//! - `state.json`, a small record rewritten whole each time (a new file
//!   renamed over the old one): the rest of the loop's state, which file
//!   holds the messages, and how many messages and bytes of it count.
//!
//! The record is the commit point: a process killed while appending leaves
//! lines the record does not count, and one killed while writing the
//! record leaves the previous record, which still names a valid prefix of
//! the messages. Which checkpoints may be resumed, and with what, is
//! [`super::resume`]'s business; this module only saves and loads.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::agent::{LoopState, StateSaver};
use crate::provider::Message;
use crate::skills::Skill;

/// The checkpoint's folder inside a run folder.
pub const CHECKPOINT_DIR: &str = "checkpoint";
const STATE_FILE: &str = "state.json";

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
    pub trace: PathBuf,
    pub junit: PathBuf,
}

/// The record `state.json` holds. Generic over how the state is held: a
/// borrow when saving, owned when loading.
#[derive(Serialize, Deserialize)]
struct Record<S> {
    origin: Origin,
    /// The file of the conversation, in the checkpoint folder.
    messages_file: String,
    /// How many of its messages, in how many bytes, are the conversation.
    messages: usize,
    messages_bytes: u64,
    /// The trace's next `seq` when the checkpoint was taken: a resumed run
    /// cuts the trace back to here.
    next_seq: u64,
    /// The loop's state, its conversation left out (it is in the messages file).
    state: S,
}

/// A loaded checkpoint.
#[derive(Debug)]
pub struct Checkpoint {
    pub origin: Origin,
    pub next_seq: u64,
    /// The loop's state, conversation included.
    pub state: LoopState,
}

/// The SHA-256 of `bytes`, in hex.
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

/// Saves the run's checkpoint before every model turn.
pub struct CheckpointWriter {
    dir: PathBuf,
    origin: Origin,
    /// The messages file being appended to; `None` until the first save,
    /// which writes it whole.
    messages: Option<File>,
    messages_file: String,
    /// Messages and bytes in it.
    saved: usize,
    bytes: u64,
    /// `LoopState::rewrites` when the file was started.
    generation: u64,
    /// Gives the trace's next `seq` at the moment of saving.
    next_seq: Box<dyn Fn() -> u64 + Send>,
}

impl CheckpointWriter {
    /// A writer for the checkpoint of the run folder `run_dir`.
    pub fn new(
        run_dir: &Path,
        origin: Origin,
        next_seq: Box<dyn Fn() -> u64 + Send>,
    ) -> CheckpointWriter {
        CheckpointWriter {
            dir: run_dir.join(CHECKPOINT_DIR),
            origin,
            messages: None,
            messages_file: String::new(),
            saved: 0,
            bytes: 0,
            generation: 0,
            next_seq,
        }
    }

    fn error(&self, what: &str, e: impl std::fmt::Display) -> String {
        format!(
            "failed to {what} the checkpoint in {}: {e}",
            self.dir.display()
        )
    }

    /// Start a new messages file holding all of `conversation`.
    fn start_messages(&mut self, conversation: &[Message], generation: u64) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir).map_err(|e| self.error("create the folder of", e))?;
        // A new name each time, so the record in place keeps naming a whole file.
        let name = format!("messages-{generation}-{}.jsonl", (self.next_seq)());
        let path = self.dir.join(&name);
        // Whatever sits at the path (a link planted in the run folder) is replaced, not followed.
        let mut file =
            crate::safe_file::create_stream(&path).map_err(|e| self.error("create", e))?;
        let lines = lines_of(conversation).map_err(|e| self.error("encode", e))?;
        file.write_all(&lines).map_err(|e| self.error("write", e))?;
        self.messages_file = name;
        self.messages = Some(file);
        self.saved = conversation.len();
        self.bytes = lines.len() as u64;
        self.generation = generation;
        Ok(())
    }

    /// Remove the messages files the record no longer names.
    fn remove_stale(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("messages-") && name != self.messages_file {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// Append the messages after the saved ones.
    fn append_messages(&mut self, new: &[Message]) -> Result<(), String> {
        if new.is_empty() {
            return Ok(());
        }
        let lines = lines_of(new).map_err(|e| self.error("encode", e))?;
        let Some(file) = self.messages.as_mut() else {
            return Ok(());
        };
        // One write: a kill leaves at most a part of these lines, which the
        // record (still the previous one) does not count.
        file.write_all(&lines)
            .map_err(|e| format!("failed to write the checkpoint's messages: {e}"))?;
        self.saved += new.len();
        self.bytes += lines.len() as u64;
        Ok(())
    }

    fn write_record(&self, state: &LoopState) -> Result<(), String> {
        let record = Record {
            origin: self.origin.clone(),
            messages_file: self.messages_file.clone(),
            messages: self.saved,
            messages_bytes: self.bytes,
            next_seq: (self.next_seq)(),
            state,
        };
        let json = serde_json::to_vec(&record).map_err(|e| self.error("encode", e))?;
        // A new file renamed over the old: a kill mid-write leaves the old one whole.
        crate::safe_file::replace(&self.dir.join(STATE_FILE), &json, None)
            .map_err(|e| self.error("write", e))
    }
}

impl StateSaver for CheckpointWriter {
    fn save(&mut self, state: &mut LoopState) -> Result<(), String> {
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
        written?;
        if rewritten {
            self.remove_stale();
        }
        Ok(())
    }
}

/// `messages` as JSON lines.
fn lines_of(messages: &[Message]) -> serde_json::Result<Vec<u8>> {
    let mut lines = Vec::new();
    for message in messages {
        serde_json::to_writer(&mut lines, message)?;
        lines.push(b'\n');
    }
    Ok(lines)
}

/// Where the checkpoint of the run folder `run_dir` keeps its record.
pub fn record_path(run_dir: &Path) -> PathBuf {
    run_dir.join(CHECKPOINT_DIR).join(STATE_FILE)
}

/// The record of the checkpoint of `run_dir`, as JSON. A checkpoint
/// written by another version of agentci is refused before its state is
/// read: its format may differ.
fn read_record(run_dir: &Path) -> Result<serde_json::Value, String> {
    let path = record_path(run_dir);
    let shown = path.display();
    let text = std::fs::read(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "{shown}: no checkpoint: {} is not the folder of a run that got to its first \
             model turn (a run's folder is `.agentci/runs/<run-id>/` in the workspace, or `--out`)",
            run_dir.display()
        ),
        _ => format!("cannot read the checkpoint {shown}: {e}"),
    })?;
    let value: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| format!("{shown}: the checkpoint is not valid JSON: {e}"))?;
    let version = value
        .pointer("/origin/agentci_version")
        .and_then(|v| v.as_str())
        .unwrap_or("an unknown version");
    let ours = env!("CARGO_PKG_VERSION");
    if version != ours {
        return Err(format!(
            "{shown}: the checkpoint was written by agentci {version}, and this is agentci \
             {ours}: resume it with agentci {version}, or run the job again"
        ));
    }
    Ok(value)
}

/// What the checkpoint of `run_dir` was made by and for.
pub fn load_origin(run_dir: &Path) -> Result<Origin, String> {
    let mut record = read_record(run_dir)?;
    serde_json::from_value(record["origin"].take()).map_err(|e| {
        format!(
            "{}: the checkpoint cannot be read: {e}",
            record_path(run_dir).display()
        )
    })
}

/// Load the checkpoint of the run folder `run_dir`, conversation included.
pub fn load(run_dir: &Path) -> Result<Checkpoint, String> {
    let record: Record<LoopState> = serde_json::from_value(read_record(run_dir)?).map_err(|e| {
        format!(
            "{}: the checkpoint cannot be read: {e}",
            record_path(run_dir).display()
        )
    })?;
    let mut state = record.state;
    state.conversation = read_messages(
        &run_dir.join(CHECKPOINT_DIR).join(&record.messages_file),
        record.messages,
        record.messages_bytes,
    )?;
    Ok(Checkpoint {
        origin: record.origin,
        next_seq: record.next_seq,
        state,
    })
}

/// The first `count` messages of a messages file, in its first `bytes` bytes.
fn read_messages(path: &Path, count: usize, bytes: u64) -> Result<Vec<Message>, String> {
    let shown = path.display();
    let file = File::open(path)
        .map_err(|e| format!("cannot read the checkpoint's messages {shown}: {e}"))?;
    let mut text = Vec::new();
    file.take(bytes)
        .read_to_end(&mut text)
        .map_err(|e| format!("cannot read the checkpoint's messages {shown}: {e}"))?;
    let messages = text
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .enumerate()
        .map(|(index, line)| {
            serde_json::from_slice::<Message>(line)
                .map_err(|e| format!("{shown} line {}: not a message: {e}", index + 1))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if messages.len() != count {
        return Err(format!(
            "{shown}: the checkpoint counts {count} messages and the file holds {}",
            messages.len()
        ));
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::budget::BudgetTracker;
    use crate::agent::loop_guard::LoopGuard;
    use crate::spec::BudgetSpec;

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
            trace: dir.join("trace.jsonl"),
            junit: dir.join("junit.xml"),
        };
        CheckpointWriter::new(dir, origin, Box::new(|| 7))
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

    #[test]
    fn another_version_is_refused_before_the_state_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(dir.path());
        writer.save(&mut state(&["system"])).unwrap();
        let path = record_path(dir.path());
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        record["origin"]["agentci_version"] = "9.9.9".into();
        record["state"] = "not a state".into();
        std::fs::write(&path, record.to_string()).unwrap();
        let error = load(dir.path()).unwrap_err();
        assert!(error.contains("agentci 9.9.9"), "{error}");
        assert!(error.contains("state.json"), "{error}");
    }
}
