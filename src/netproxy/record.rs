//! What the proxy reports about each connection.
//!
//! Every connection a client opens ends in exactly one [`NetworkRecord`],
//! whether it was relayed, refused, malformed or cut off when the proxy
//! stopped. The [`ConnectionLog`] guarantees that by reporting from `Drop`:
//! a connection task that is aborted mid-transfer still reports what it
//! had relayed. The record is data for the run's `network.request` event;
//! turning it into one is the caller's business.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One connection through the proxy, reported when it ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetworkRecord {
    /// The host asked for, canonical (`crates.io`, `127.0.0.1`, `[::1]`);
    /// empty when the request could not be read.
    pub host: String,
    /// 0 when the request could not be read.
    pub port: u16,
    /// `CONNECT` or the HTTP method forwarded; empty when unread.
    pub method: String,
    /// The allowlist and the address check let the connection through.
    pub allowed: bool,
    /// How the connection ended.
    pub outcome: Outcome,
    /// The `sandbox.network` entry that allowed the host, as written.
    pub rule: Option<String>,
    /// Why it was refused or failed, in words.
    pub reason: Option<String>,
    /// The address connected to (or refused).
    pub address: Option<IpAddr>,
    /// Bytes from the client to the origin (a forwarded request's head
    /// included).
    pub bytes_sent: u64,
    /// Bytes from the origin to the client (a forwarded response's head
    /// included, the proxy's own answers not).
    pub bytes_received: u64,
    pub duration_ms: u64,
}

/// How a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Relayed until the origin or the client closed.
    Closed,
    /// No `sandbox.network` entry matches the host and port (403).
    NotListed,
    /// The host is, or resolves to, a loopback, private, link-local or
    /// metadata address, and only a glob or preset allows it (403).
    NotPublic,
    /// The host could not be resolved (502).
    Unresolved,
    /// No address of the host accepted a connection in time (502).
    Unreachable,
    /// The request was not one the proxy serves (400).
    BadRequest,
    /// The client sent no complete request head in time; dropped.
    Stalled,
    /// The client closed before sending a complete request head.
    Abandoned,
    /// Reading or writing failed while relaying.
    RelayFailed,
    /// The proxy stopped while the connection was open.
    Stopped,
}

/// Receives every [`NetworkRecord`]. It runs on the connection's task, so
/// it must not block: hand the record to a channel or the event bus.
pub type RecordObserver = Arc<dyn Fn(NetworkRecord) + Send + Sync>;

/// The record of one connection being filled in; reports itself when
/// dropped.
pub struct ConnectionLog {
    observer: RecordObserver,
    started: Instant,
    pub host: String,
    pub port: u16,
    pub method: String,
    pub allowed: bool,
    pub outcome: Outcome,
    pub rule: Option<String>,
    pub reason: Option<String>,
    pub address: Option<IpAddr>,
    /// Counters the two directions of a relay add to as bytes pass.
    pub sent: AtomicU64,
    pub received: AtomicU64,
}

impl ConnectionLog {
    /// A connection that has just been accepted. Until the server says
    /// otherwise it ends as [`Outcome::Stopped`]: only an aborted task
    /// leaves it so.
    pub fn new(observer: RecordObserver) -> Self {
        ConnectionLog {
            observer,
            started: Instant::now(),
            host: String::new(),
            port: 0,
            method: String::new(),
            allowed: false,
            outcome: Outcome::Stopped,
            rule: None,
            reason: Some("the proxy stopped while the connection was open".into()),
            address: None,
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
        }
    }

    /// The connection ends with `outcome`, for `reason` when it failed.
    pub fn end(&mut self, outcome: Outcome, reason: Option<String>) {
        self.outcome = outcome;
        self.reason = reason;
    }
}

impl Drop for ConnectionLog {
    fn drop(&mut self) {
        let record = NetworkRecord {
            host: std::mem::take(&mut self.host),
            port: self.port,
            method: std::mem::take(&mut self.method),
            allowed: self.allowed,
            outcome: self.outcome,
            rule: self.rule.take(),
            reason: self.reason.take(),
            address: self.address,
            bytes_sent: self.sent.load(Ordering::Relaxed),
            bytes_received: self.received.load(Ordering::Relaxed),
            duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        (self.observer)(record);
    }
}
