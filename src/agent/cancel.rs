//! Stopping a run from outside: the caller keeps a [`CancelTrigger`] and the
//! run watches the matching [`CancelSignal`].
//!
//! The agent does not know what triggered it (a signal, an evaluation that
//! gives up); it stops the model call and tools in flight by dropping them,
//! records the run as interrupted with the trigger's reason, and returns.

use tokio::sync::watch;

/// Fires [`CancelSignal`]s with a reason, such as "interrupted by SIGTERM";
/// clones fire the same signals (a signal handler and a cost limit).
#[derive(Clone, Debug)]
pub struct CancelTrigger(watch::Sender<Option<String>>);

/// What a run watches; the default never fires.
#[derive(Clone, Debug, Default)]
pub struct CancelSignal(Option<watch::Receiver<Option<String>>>);

/// A connected trigger and signal.
pub fn cancel_pair() -> (CancelTrigger, CancelSignal) {
    let (tx, rx) = watch::channel(None);
    (CancelTrigger(tx), CancelSignal(Some(rx)))
}

impl CancelTrigger {
    /// Stop the runs watching this trigger; the first reason wins.
    pub fn cancel(&self, reason: impl Into<String>) {
        let reason = reason.into();
        self.0.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(reason);
            true
        });
    }
}

impl CancelSignal {
    /// A signal that never fires.
    pub fn never() -> Self {
        CancelSignal(None)
    }

    /// Waits until the trigger fires and returns its reason; never returns
    /// when there is no trigger or it was dropped without firing.
    pub async fn cancelled(&self) -> String {
        if let Some(rx) = &self.0 {
            let mut rx = rx.clone();
            if let Ok(reason) = rx.wait_for(Option::is_some).await
                && let Some(reason) = reason.clone()
            {
                return reason;
            }
        }
        std::future::pending().await
    }

    /// The reason, when the trigger has fired.
    pub fn reason(&self) -> Option<String> {
        self.0.as_ref().and_then(|rx| rx.borrow().clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn fires_with_the_first_reason() {
        let (trigger, signal) = cancel_pair();
        assert_eq!(signal.reason(), None);
        trigger.cancel("interrupted by SIGTERM");
        trigger.cancel("interrupted by SIGINT");
        assert_eq!(signal.cancelled().await, "interrupted by SIGTERM");
        assert_eq!(signal.reason().as_deref(), Some("interrupted by SIGTERM"));
    }

    #[tokio::test]
    async fn never_fires_without_a_trigger() {
        let waited =
            tokio::time::timeout(Duration::from_millis(20), CancelSignal::never().cancelled())
                .await;
        assert!(waited.is_err());
        let (trigger, signal) = cancel_pair();
        drop(trigger);
        let waited = tokio::time::timeout(Duration::from_millis(20), signal.cancelled()).await;
        assert!(waited.is_err());
    }
}
