//! The cassette format shared by recording and replay.
//!
//! A cassette is JSONL: a header line
//! `{"cassette": 3, "provider": …, "model": …, "agentci_version": …}`, then one
//! `{"request": …, "response": …}` line per model exchange. A conversation
//! only grows, so each stored request holds just what is new: `keep` messages
//! of the previous request, then its own `messages`, and `tools` only when
//! they changed. That keeps a long session's cassette (and a replay's memory)
//! linear in its length instead of quadratic. This module owns
//! the line types and reading a cassette back; the workspace-path
//! normalization applied on both sides is `paths`'s, and what replay
//! compares of a request and the "first difference" report a diverged replay
//! shows are `compare`'s. It does not decide when to record or how to
//! serve (see [`super::record`] and [`super::replay`]).

mod compare;
mod paths;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ChatRequest, ChatResponse, Message, ProviderError, ToolChoice, ToolDefinition};

pub use compare::{
    ChangedPart, Difference, UNTRUSTED_FENCE_OPENING, UNTRUSTED_NOTE_OPENING, changed_part,
    comparable, comparable_message, first_difference,
};
pub use paths::WorkspacePaths;

/// The format version this build reads and writes. Version 3: every
/// request of a run offers one tool list and the summary turn records
/// `tool_choice` (what the model is sent changed, so older cassettes could
/// not replay anyway; the version says so up front).
pub const CASSETTE_VERSION: u64 = 3;

/// What the workspace's absolute path becomes inside a cassette.
pub const WORKSPACE_PLACEHOLDER: &str = "${WORKSPACE}";

/// The first line of a cassette.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteHeader {
    pub cassette: u64,
    pub provider: String,
    pub model: String,
    pub agentci_version: String,
    /// The recorded run's prompt held what the GitHub event that started it
    /// adds: its free text (a pull request's title and body, a comment) and
    /// the untrusted framing a pull request gives the workspace's memory
    /// file. A replay follows the recording: without this, a replay started
    /// by such an event leaves the event out of the prompt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub event_text: bool,
}

impl CassetteHeader {
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            cassette: CASSETTE_VERSION,
            provider: provider.into(),
            model: model.into(),
            agentci_version: env!("CARGO_PKG_VERSION").to_string(),
            event_text: false,
        }
    }

    /// The header of the cassette at `path`, reading only its first line;
    /// `None` when it cannot be read (replay itself then says why).
    pub fn peek(path: &Path) -> Option<CassetteHeader> {
        use std::io::BufRead;
        let file = std::fs::File::open(path).ok()?;
        let first = std::io::BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .find(|line| !line.trim().is_empty())?;
        serde_json::from_str(&first).ok()
    }
}

/// One model exchange as stored, with the workspace path already normalized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    pub request: StoredRequest,
    pub response: ChatResponse,
    /// An eval judge's exchange (a graded assertion after the run), not the
    /// run's: judges' lines form their own conversation, after the run's,
    /// and a replay of the run never serves them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub judge: bool,
}

/// A request stored as what it adds to the previous one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredRequest {
    pub model: String,
    /// How many messages of the previous request this one starts with.
    #[serde(default)]
    pub keep: usize,
    /// The messages after those.
    pub messages: Vec<Message>,
    /// The tools, when they differ from the previous request's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    /// Whether tools could be called; left out when they could.
    #[serde(default, skip_serializing_if = "ToolChoice::is_auto")]
    pub tool_choice: ToolChoice,
}

/// The previous request of a cassette being recorded, which the next
/// stored one builds on. (A replay keeps references into the cassette
/// instead: see `super::replay_state`.)
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conversation {
    messages: Vec<Message>,
    tools: Vec<ToolDefinition>,
}

impl Conversation {
    /// Store `request` as a delta on the previous one, and remember it.
    pub fn encode(&mut self, request: &ChatRequest) -> StoredRequest {
        let keep = self
            .messages
            .iter()
            .zip(&request.messages)
            .take_while(|(a, b)| a == b)
            .count();
        let stored = StoredRequest {
            model: request.model.clone(),
            keep,
            messages: request.messages[keep..].to_vec(),
            tools: (request.tools != self.tools).then(|| request.tools.clone()),
            tool_choice: request.tool_choice,
        };
        self.messages = request.messages.clone();
        self.tools = request.tools.clone();
        stored
    }
}

/// An exchange and the 1-based line it was read from.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedExchange {
    pub line: usize,
    pub exchange: Exchange,
}

/// A cassette read into memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Cassette {
    pub path: PathBuf,
    pub header: CassetteHeader,
    /// The run's exchanges, in order.
    pub exchanges: Vec<RecordedExchange>,
    /// The eval judges' exchanges, in order (see [`Exchange::judge`]).
    pub judges: Vec<RecordedExchange>,
}

impl Cassette {
    /// Reads and checks a whole cassette; errors name the file and line.
    pub fn read(path: &Path) -> Result<Self, ProviderError> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                ProviderError::Config(format!(
                    "cassette {shown} does not exist; record one with --record {shown}"
                ))
            } else {
                ProviderError::Config(format!("cannot read cassette {shown}: {err}"))
            }
        })?;
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(index, line)| (index + 1, line))
            .filter(|(_, line)| !line.trim().is_empty());
        let Some((header_line, header_text)) = lines.next() else {
            return Err(ProviderError::Config(format!(
                "cassette {shown} is empty; expected a header line like {{\"cassette\": {CASSETTE_VERSION}, \"provider\": \"openai\", \"model\": \"…\", \"agentci_version\": \"…\"}}"
            )));
        };
        let header: CassetteHeader = serde_json::from_str(header_text).map_err(|err| {
            ProviderError::Config(format!(
                "cassette {shown} line {header_line} is not a cassette header: {err}"
            ))
        })?;
        if header.cassette != CASSETTE_VERSION {
            return Err(ProviderError::Config(format!(
                "cassette {shown} line {header_line} has format version {}, but this agentci reads version {CASSETTE_VERSION}; re-record it with --record",
                header.cassette
            )));
        }
        // The run's lines and the judges' each build on the previous line of their own kind.
        let (mut exchanges, mut judges) = (Vec::new(), Vec::new());
        let (mut run_len, mut judge_len) = (0, 0);
        for (line, text) in lines {
            let exchange: Exchange = serde_json::from_str(text).map_err(|err| {
                ProviderError::Config(format!(
                    "cassette {shown} line {line} is not a valid exchange: {err}"
                ))
            })?;
            let (previous_len, kept) = if exchange.judge {
                (&mut judge_len, &mut judges)
            } else {
                (&mut run_len, &mut exchanges)
            };
            if exchange.request.keep > *previous_len {
                return Err(ProviderError::Config(format!(
                    "cassette {shown} line {line} keeps {} messages but the previous request has only {previous_len}; re-record it with --record",
                    exchange.request.keep
                )));
            }
            *previous_len = exchange.request.keep + exchange.request.messages.len();
            kept.push(RecordedExchange { line, exchange });
        }
        Ok(Self {
            path: path.to_path_buf(),
            header,
            exchanges,
            judges,
        })
    }

    /// The judges' exchanges as a cassette of their own, which a replay
    /// serves to the judges in the order they were recorded.
    pub fn judges_only(self) -> Cassette {
        Cassette {
            exchanges: self.judges,
            judges: Vec::new(),
            ..self
        }
    }
}
