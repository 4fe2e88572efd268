//! What a replay keeps between two requests to compare the next one: for
//! each message of the previous recorded request, where the cassette
//! stores it and a fingerprint of its comparable form; for each message of
//! the last request sent, fingerprints of it and of its comparable form.
//!
//! A conversation only grows, so keeping copies of it (the recorded one,
//! the sent one, and the comparable forms of both) made a long replay's
//! memory grow with every turn, four times over. Fingerprints take a few
//! bytes a message, and each turn converts only the messages it adds. The
//! full comparable requests are rebuilt (from the cassette, which is in
//! memory anyway, and from the request at hand) only when the
//! fingerprints differ, so a divergence is reported exactly as before.
//! Serving and the divergence message are [`super::replay`]'s.

use std::hash::{BuildHasher, Hasher, RandomState};

use serde::Serialize;
use serde_json::Value;

use super::cassette::{Cassette, WorkspacePaths, comparable_message};
use super::{ChatRequest, Message, ToolDefinition};

/// Fingerprints of serialized values, with a key chosen per replay (the
/// way `HashMap` keys its hashes), so that no request can be written to
/// collide with a recorded one.
#[derive(Debug)]
pub struct Fingerprints {
    key: RandomState,
}

impl Fingerprints {
    pub fn new() -> Self {
        Fingerprints {
            key: RandomState::new(),
        }
    }

    fn of(&self, value: &impl Serialize) -> u64 {
        let mut hasher = self.key.build_hasher();
        // Writing into a hasher does not fail, and a value that does not
        // serialize has no other fingerprint than what was written so far.
        let _ = serde_json::to_writer(HashWriter(&mut hasher), value);
        hasher.finish()
    }
}

/// Feeds what is written to a hasher, so nothing is serialized into memory.
struct HashWriter<'h, H: Hasher>(&'h mut H);

impl<H: Hasher> std::io::Write for HashWriter<'_, H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The recorded request before the next exchange, by reference into the cassette.
#[derive(Clone, Debug, Default)]
pub struct RecordedState {
    /// Per message: the exchange whose stored request holds it, and its index there.
    at: Vec<(usize, usize)>,
    /// Per message: the fingerprint of its comparable form.
    comparables: Vec<u64>,
    /// The exchange whose stored tools the request offers (none: no tools).
    tools_from: Option<usize>,
}

impl RecordedState {
    /// The recorded request of exchange `index`, which builds on this one.
    pub fn then(
        &self,
        cassette: &Cassette,
        index: usize,
        fingerprints: &Fingerprints,
    ) -> Result<RecordedState, String> {
        let stored = &cassette.exchanges[index].exchange.request;
        if stored.keep > self.at.len() {
            return Err(format!(
                "keeps {} messages but the previous request has only {}",
                stored.keep,
                self.at.len()
            ));
        }
        let mut next = RecordedState {
            at: Vec::with_capacity(stored.keep + stored.messages.len()),
            comparables: Vec::with_capacity(stored.keep + stored.messages.len()),
            tools_from: if stored.tools.is_some() {
                Some(index)
            } else {
                self.tools_from
            },
        };
        next.at.extend_from_slice(&self.at[..stored.keep]);
        next.comparables
            .extend_from_slice(&self.comparables[..stored.keep]);
        for (position, message) in stored.messages.iter().enumerate() {
            next.at.push((index, position));
            next.comparables
                .push(fingerprints.of(&comparable_message(message)));
        }
        Ok(next)
    }

    pub fn comparables(&self) -> &[u64] {
        &self.comparables
    }

    /// The tools the request offers.
    pub fn tools<'c>(&self, cassette: &'c Cassette) -> &'c [ToolDefinition] {
        self.tools_from
            .and_then(|index| cassette.exchanges[index].exchange.request.tools.as_deref())
            .unwrap_or_default()
    }

    /// The comparable form of every message, rebuilt from the cassette.
    pub fn comparable_messages(&self, cassette: &Cassette) -> Vec<Value> {
        self.at
            .iter()
            .map(|&(index, position)| {
                comparable_message(&cassette.exchanges[index].exchange.request.messages[position])
            })
            .collect()
    }
}

/// The last request the run sent, as fingerprints.
#[derive(Debug, Default)]
pub struct SentState {
    /// Per message: the fingerprint of the message as sent.
    messages: Vec<u64>,
    /// Per message: the fingerprint of its comparable form, normalized.
    comparables: Vec<u64>,
}

impl SentState {
    /// Make `request` the last request sent, converting only the messages
    /// that differ from the previous one's at the same place.
    pub fn update(
        &mut self,
        request: &ChatRequest,
        paths: &WorkspacePaths,
        fingerprints: &Fingerprints,
    ) {
        let mut messages = Vec::with_capacity(request.messages.len());
        let mut comparables = Vec::with_capacity(request.messages.len());
        for (index, message) in request.messages.iter().enumerate() {
            let print = fingerprints.of(message);
            let comparable = match (self.messages.get(index), self.comparables.get(index)) {
                (Some(previous), Some(comparable)) if *previous == print => *comparable,
                _ => fingerprints.of(&normalized_comparable(message, paths)),
            };
            messages.push(print);
            comparables.push(comparable);
        }
        self.messages = messages;
        self.comparables = comparables;
    }

    pub fn comparables(&self) -> &[u64] {
        &self.comparables
    }

    /// The comparable form of every message of `request`.
    pub fn comparable_messages(request: &ChatRequest, paths: &WorkspacePaths) -> Vec<Value> {
        request
            .messages
            .iter()
            .map(|message| normalized_comparable(message, paths))
            .collect()
    }
}

fn normalized_comparable(message: &Message, paths: &WorkspacePaths) -> Value {
    comparable_message(&paths.normalize_message(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_tell_messages_apart_and_agree_on_equal_ones() {
        let prints = Fingerprints::new();
        let a = Message::User {
            content: "read a.txt".into(),
        };
        let b = Message::User {
            content: "read b.txt".into(),
        };
        assert_eq!(prints.of(&a), prints.of(&a.clone()));
        assert_ne!(prints.of(&a), prints.of(&b));
        assert_eq!(
            prints.of(&comparable_message(&a)),
            prints.of(&comparable_message(&a))
        );
    }

    #[test]
    fn a_changed_message_is_converted_again() {
        let prints = Fingerprints::new();
        let paths = WorkspacePaths::new(std::path::Path::new("/tmp/ws"));
        let request = |texts: &[&str]| ChatRequest {
            max_output_tokens: None,
            model: "m".into(),
            messages: texts
                .iter()
                .map(|t| Message::User {
                    content: t.to_string(),
                })
                .collect(),
            tools: Vec::new(),
            tool_choice: Default::default(),
        };
        let mut sent = SentState::default();
        sent.update(&request(&["one", "/tmp/ws/x"]), &paths, &prints);
        let before = sent.comparables().to_vec();
        sent.update(&request(&["one", "/tmp/ws/y", "three"]), &paths, &prints);
        assert_eq!(sent.comparables()[0], before[0]);
        assert_ne!(sent.comparables()[1], before[1]);
        assert_eq!(sent.comparables().len(), 3);
        // The comparable form is of the normalized message.
        let other = WorkspacePaths::new(std::path::Path::new("/ci/ws"));
        let mut elsewhere = SentState::default();
        elsewhere.update(&request(&["one", "/ci/ws/y", "three"]), &other, &prints);
        assert_eq!(elsewhere.comparables(), sent.comparables());
    }
}
