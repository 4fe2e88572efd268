//! SIGINT and SIGTERM during `agentci run`. The first one cancels the run,
//! which stops the model call and tools, finishes the trace and JUnit file
//! with status `interrupted`, and returns; the exit code is then 128 plus
//! the signal's number (130, 143). A second signal exits at once, for a
//! user who will not wait for that.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use tokio::signal::unix::{SignalKind, signal};

use super::Exit;
use crate::agent::CancelTrigger;

/// Which signal stopped the run, if one did.
#[derive(Clone, Default)]
pub struct Received(Arc<AtomicI32>);

impl Received {
    /// The signal received, if one was.
    pub fn signal(&self) -> Option<i32> {
        Some(self.0.load(Ordering::SeqCst)).filter(|n| *n != 0)
    }

    /// How an interrupted run ends: by the signal received, if one was.
    pub fn exit(&self) -> Exit {
        match self.0.load(Ordering::SeqCst) {
            0 => Exit::Interrupted(None),
            signal => Exit::Interrupted(Some(signal)),
        }
    }
}

/// Start listening; must be called inside the tokio runtime.
pub fn install(trigger: CancelTrigger) -> std::io::Result<Received> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let received = Received::default();
    let seen = received.0.clone();
    tokio::spawn(async move {
        let (number, name) = tokio::select! {
            _ = interrupt.recv() => (libc::SIGINT, "SIGINT"),
            _ = terminate.recv() => (libc::SIGTERM, "SIGTERM"),
        };
        seen.store(number, Ordering::SeqCst);
        trigger.cancel(format!("interrupted by {name}"));
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        std::process::exit(128 + number);
    });
    Ok(received)
}
