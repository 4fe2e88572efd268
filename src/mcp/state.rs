//! What the parts of one server connection share: the tool-list change
//! counter, the requests the server sent us, its last stderr lines, and why
//! its stdout was cut off. Written by the stdout/stderr readers and the
//! client handler, read by [`super::McpServer`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::Serialize;

/// Stderr lines kept per server.
pub const STDERR_LINES: usize = 40;
/// Server requests kept per server (a flood keeps the first ones).
const MAX_REQUESTS: usize = 200;

/// A request the server sent to agentci, and what agentci answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServerRequestRecord {
    /// `ping`, `roots/list`, `sampling/createMessage`, `elicitation/create`, …
    pub method: String,
    /// `answered`, `declined` (with the reason in `detail`), or `failed`
    /// (agentci tried, e.g. the model call for a sampling request failed).
    pub outcome: &'static str,
    /// What was answered, or why it was declined.
    pub detail: String,
    /// The request's `params` as compact JSON, cut at `MAX_PARAMS_CHARS`
    /// (a sampling request can carry a whole conversation).
    pub params: String,
}

/// Characters of a request's `params` kept in its record.
pub const MAX_PARAMS_CHARS: usize = 1_000;

impl ServerRequestRecord {
    /// A record of `method`, with `params` summarised.
    pub fn new(
        method: &str,
        outcome: &'static str,
        detail: impl Into<String>,
        params: &impl Serialize,
    ) -> Self {
        let json = serde_json::to_string(params).unwrap_or_default();
        let params = match json.as_str() {
            "null" | "{}" => String::new(),
            _ => crate::inert::clip(&json, MAX_PARAMS_CHARS),
        };
        ServerRequestRecord {
            method: method.to_string(),
            outcome,
            detail: detail.into(),
            params,
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct ServerState {
    tool_changes: AtomicU64,
    requests: Mutex<Vec<ServerRequestRecord>>,
    stderr: Mutex<VecDeque<String>>,
    broken: Mutex<Option<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ServerState {
    /// A `notifications/tools/list_changed` arrived.
    pub fn note_tools_changed(&self) {
        self.tool_changes.fetch_add(1, Ordering::SeqCst);
    }

    /// How many tool-list changes were announced so far.
    pub fn tool_changes(&self) -> u64 {
        self.tool_changes.load(Ordering::SeqCst)
    }

    pub fn record_request(&self, record: ServerRequestRecord) {
        let mut requests = lock(&self.requests);
        if requests.len() < MAX_REQUESTS {
            requests.push(record);
        }
    }

    /// The requests recorded since the last call.
    pub fn take_requests(&self) -> Vec<ServerRequestRecord> {
        std::mem::take(&mut *lock(&self.requests))
    }

    pub fn push_stderr(&self, line: String) {
        let mut stderr = lock(&self.stderr);
        if stderr.len() == STDERR_LINES {
            stderr.pop_front();
        }
        stderr.push_back(line);
    }

    pub fn stderr_tail(&self) -> Vec<String> {
        lock(&self.stderr).iter().cloned().collect()
    }

    /// The server broke the protocol on stdout; the first reason wins.
    pub fn mark_broken(&self, reason: String) {
        lock(&self.broken).get_or_insert(reason);
    }

    pub fn broken(&self) -> Option<String> {
        lock(&self.broken).clone()
    }
}
