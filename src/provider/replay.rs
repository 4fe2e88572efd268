//! Replay: a provider that serves a recorded cassette instead of a model.
//!
//! [`ReplayProvider`] answers the run's requests with the recorded responses,
//! in order, and insists that each request (normalized, model name aside)
//! equals the one recorded; when it does not, the error names the exchange,
//! the cassette line and the first field that differs. It needs no key and no
//! network. A recorded answer's text is handed to the observer in pieces
//! first, as a live stream would, so a display behaves the same in replay.
//! Reading the file and comparing live in [`super::cassette`]; what is kept
//! between two requests to compare them in `super::replay_state`.
//!
//! In `sequence` mode ([`ReplayMatch::Sequence`]) the recorded answers are
//! served in order whatever the requests, and each request that differs
//! from the recorded one is counted ([`super::replay_drift`]), so a suite
//! still runs offline after a skill edit and says how far its recordings
//! are out of date.

use std::path::Path;
use std::sync::Mutex;

use serde_json::Value;

use super::cassette::{Cassette, WorkspacePaths, changed_part, comparable, first_difference};
use super::replay_drift::{DriftCounter, differing_parts};
use super::replay_state::{Fingerprints, RecordedState, SentState};
use super::{ChatRequest, ChatResponse, ModelProvider, ProviderError, ProviderObserver};
use crate::provider::ModelInfo;
use crate::provider::replay_drift::ReplayDrift;
use futures_util::future::BoxFuture;

/// How a replay matches the run's requests to the recording (`model.replay.match`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum ReplayMatch {
    /// Every request must equal the recorded one; the first difference stops the run.
    #[default]
    Strict,
    /// Recorded answers are served in order whatever the requests; how far
    /// they drifted from the recording is counted.
    Sequence,
}

impl ReplayMatch {
    pub const NAMES: &[&str] = &["strict", "sequence"];

    pub fn parse(name: &str) -> Option<ReplayMatch> {
        match name {
            "strict" => Some(ReplayMatch::Strict),
            "sequence" => Some(ReplayMatch::Sequence),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Debug)]
pub struct ReplayProvider {
    cassette: Cassette,
    paths: WorkspacePaths,
    fingerprints: Fingerprints,
    /// Index of the next exchange to serve, the recorded request before it
    /// (which moves only on a match; in `sequence` mode, on every request)
    /// and the last request the run sent.
    next: Mutex<(usize, RecordedState, SentState)>,
    mode: ReplayMatch,
    drift: Mutex<DriftCounter>,
}

impl ReplayProvider {
    /// Reads the whole cassette up front, so a malformed line fails before
    /// the run starts. `workspace_root` is what `${WORKSPACE}` stands for.
    pub fn open(path: impl AsRef<Path>, workspace_root: &Path) -> Result<Self, ProviderError> {
        Ok(Self::serving(
            Cassette::read(path.as_ref())?,
            workspace_root,
        ))
    }

    /// Serves the eval judges' exchanges of the cassette at `path` (see
    /// [`super::cassette::Exchange::judge`]), in the order they were recorded.
    pub fn open_judges(
        path: impl AsRef<Path>,
        workspace_root: &Path,
    ) -> Result<Self, ProviderError> {
        let cassette = Cassette::read(path.as_ref())?.judges_only();
        Ok(Self::serving(cassette, workspace_root))
    }

    fn serving(cassette: Cassette, workspace_root: &Path) -> Self {
        Self {
            drift: Mutex::new(DriftCounter::new(cassette.exchanges.len())),
            cassette,
            paths: WorkspacePaths::new(workspace_root),
            fingerprints: Fingerprints::new(),
            next: Mutex::new((0, RecordedState::default(), SentState::default())),
            mode: ReplayMatch::Strict,
        }
    }

    /// Match requests in `mode` (strict unless told otherwise).
    pub fn with_match(mut self, mode: ReplayMatch) -> Self {
        self.mode = mode;
        self
    }

    /// Also normalizes these skill folders (name, absolute folder) in the cassette.
    pub fn with_skill_folders(mut self, folders: &[(String, std::path::PathBuf)]) -> Self {
        for (name, dir) in folders {
            self.paths = self.paths.with_skill_folder(name, dir);
        }
        self
    }

    /// How many exchanges the cassette holds.
    pub fn len(&self) -> usize {
        self.cassette.exchanges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cassette.exchanges.is_empty()
    }

    /// How many exchanges have been served so far.
    pub fn served(&self) -> usize {
        self.next.lock().map_or(0, |next| next.0)
    }

    fn serve(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let shown = self.cassette.path.display();
        let mut guard = self.next.lock().map_err(|_| {
            ProviderError::ReplayDiverged(format!(
                "cassette {shown}: an earlier replay call panicked"
            ))
        })?;
        let (next, previous, sent) = &mut *guard;
        let Some(recorded_exchange) = self.cassette.exchanges.get(*next) else {
            let count = self.cassette.exchanges.len();
            return Err(ProviderError::ReplayDiverged(match self.mode {
                ReplayMatch::Strict => {
                    format!("cassette {shown} has only {count} exchanges; the run asked for more")
                }
                ReplayMatch::Sequence => format!(
                    "cassette {shown} has only {count} exchanges and the run asked for answer {}: \
                     a sequence replay serves the recorded answers in order, and this run took \
                     more turns than the recording; re-record with --record",
                    *next + 1
                ),
            }));
        };
        let line = recorded_exchange.line;
        let exchange = &recorded_exchange.exchange;
        let recorded = previous
            .then(&self.cassette, *next, &self.fingerprints)
            .map_err(|e| {
                ProviderError::ReplayDiverged(format!("cassette {shown} line {line}: {e}"))
            })?;
        sent.update(request, &self.paths, &self.fingerprints);
        let sent_head = comparable(&self.paths.normalize_request(&without_messages(request)));
        let recorded_head = comparable(&ChatRequest {
            max_output_tokens: None,
            model: exchange.request.model.clone(),
            messages: Vec::new(),
            tools: recorded.tools(&self.cassette).to_vec(),
            tool_choice: exchange.request.tool_choice,
        });
        let same = sent_head == recorded_head && sent.comparables() == recorded.comparables();
        // The whole comparable requests are built only when they differ: a
        // long session would otherwise keep (or rebuild) copies of its
        // conversation on every turn.
        let whole = |head: &Value, messages: Vec<Value>| {
            let mut whole = head.clone();
            whole["messages"] = Value::Array(messages);
            whole
        };
        if self.mode == ReplayMatch::Sequence {
            let parts = if same {
                Default::default()
            } else {
                differing_parts(
                    &whole(&recorded_head, recorded.comparable_messages(&self.cassette)),
                    &whole(
                        &sent_head,
                        SentState::comparable_messages(request, &self.paths),
                    ),
                )
            };
            if let Ok(mut drift) = self.drift.lock() {
                drift.served(&parts);
            }
            *next += 1;
            *previous = recorded;
            return Ok(self.paths.expand_response(&exchange.response));
        }
        if !same {
            let recorded_value =
                whole(&recorded_head, recorded.comparable_messages(&self.cassette));
            let sent_value = whole(
                &sent_head,
                SentState::comparable_messages(request, &self.paths),
            );
            if let Some(diff) = first_difference(&recorded_value, &sent_value) {
                let part = changed_part(&recorded_value, &sent_value, &diff.path);
                return Err(ProviderError::ReplayDiverged(format!(
                    "replay diverged from cassette {shown} at exchange {} (line {line}): {} changed since the recording; {}: recorded {} but the run sent {}; {}",
                    *next + 1,
                    part.what,
                    if diff.path.is_empty() {
                        "request"
                    } else {
                        &diff.path
                    },
                    diff.recorded,
                    diff.actual,
                    part.fix
                )));
            }
            // Equal after all (the head and messages compare as one value).
        }
        *next += 1;
        *previous = recorded;
        Ok(self.paths.expand_response(&exchange.response))
    }
}

/// `request` without its messages: what [`comparable`] makes of the rest.
fn without_messages(request: &ChatRequest) -> ChatRequest {
    ChatRequest {
        max_output_tokens: None,
        model: request.model.clone(),
        messages: Vec::new(),
        tools: request.tools.clone(),
        tool_choice: request.tool_choice,
    }
}

impl ModelProvider for ReplayProvider {
    fn model_info(&self) -> ModelInfo {
        ModelInfo {
            provider: "replay".to_string(),
            name: self.cassette.header.model.clone(),
        }
    }

    fn replay_drift(&self) -> Option<ReplayDrift> {
        if self.mode != ReplayMatch::Sequence {
            return None;
        }
        self.drift.lock().ok().map(|drift| drift.figure())
    }

    fn complete_observed<'a>(
        &'a self,
        request: &'a ChatRequest,
        observer: &'a dyn ProviderObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let response = self.serve(request)?;
            if let Some(text) = &response.text {
                for piece in stream_pieces(text) {
                    observer.partial_text(piece);
                }
            }
            Ok(response)
        })
    }
}

/// `text` in word-sized pieces (each word with the space after it), the
/// way streamed answers usually arrive; the pieces join back to `text`.
fn stream_pieces(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_join_back_to_the_text() {
        let text = "Fixed the typo\n in greeting.txt.  Done";
        let pieces: Vec<&str> = stream_pieces(text).collect();
        assert!(pieces.len() > 3);
        assert_eq!(pieces.concat(), text);
    }
}
