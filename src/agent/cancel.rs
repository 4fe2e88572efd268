//! Stopping a run from outside: the caller keeps a [`CancelTrigger`] and the
//! run watches the matching [`CancelSignal`].
//!
//! The agent does not know what triggered it (a signal, an evaluation that
//! gives up); it stops the model call and tools in flight by dropping them,
//! records the run as interrupted with the trigger's reason (and the signal,
//! as data, when a signal fired it), and returns.

use tokio::sync::watch;

/// Fires [`CancelSignal`]s with a reason, such as "interrupted by SIGTERM";
/// clones fire the same signals (a signal handler and a cost limit).
#[derive(Clone, Debug)]
pub struct CancelTrigger(watch::Sender<Option<Fired>>);

/// Why a trigger fired: the reason shown, and the signal that fired it, if one did.
#[derive(Clone, Debug)]
struct Fired {
    reason: String,
    signal: Option<i32>,
}

/// What a run watches; the default never fires.
#[derive(Clone, Debug, Default)]
pub struct CancelSignal(Option<watch::Receiver<Option<Fired>>>);

/// A connected trigger and signal.
pub fn cancel_pair() -> (CancelTrigger, CancelSignal) {
    let (tx, rx) = watch::channel(None);
    (CancelTrigger(tx), CancelSignal(Some(rx)))
}

impl CancelTrigger {
    /// Stop the runs watching this trigger; the first reason wins.
    pub fn cancel(&self, reason: impl Into<String>) {
        self.fire(reason.into(), None);
    }

    /// Stop the runs because the process received `signal` (its number,
    /// such as `libc::SIGTERM`); the first trigger wins.
    pub fn cancel_by_signal(&self, signal: i32, reason: impl Into<String>) {
        self.fire(reason.into(), Some(signal));
    }

    fn fire(&self, reason: String, signal: Option<i32>) {
        self.0.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(Fired { reason, signal });
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
            if let Ok(fired) = rx.wait_for(Option::is_some).await
                && let Some(fired) = fired.clone()
            {
                return fired.reason;
            }
        }
        std::future::pending().await
    }

    /// The reason, when the trigger has fired.
    pub fn reason(&self) -> Option<String> {
        self.fired().map(|fired| fired.reason)
    }

    /// The signal that fired the trigger, when one did.
    pub fn signal(&self) -> Option<i32> {
        self.fired().and_then(|fired| fired.signal)
    }

    fn fired(&self) -> Option<Fired> {
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
        assert_eq!(signal.signal(), None);
    }

    #[tokio::test]
    async fn a_signal_is_kept_as_data_and_the_first_trigger_wins() {
        let (trigger, signal) = cancel_pair();
        trigger.cancel_by_signal(libc::SIGTERM, "interrupted by SIGTERM");
        trigger.cancel("the cost limit");
        assert_eq!(signal.signal(), Some(libc::SIGTERM));
        assert_eq!(signal.cancelled().await, "interrupted by SIGTERM");

        let (trigger, signal) = cancel_pair();
        trigger.cancel("the cost limit");
        trigger.cancel_by_signal(libc::SIGINT, "interrupted by SIGINT");
        assert_eq!(signal.signal(), None);
        assert_eq!(signal.reason().as_deref(), Some("the cost limit"));
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
