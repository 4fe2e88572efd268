//! SIGINT and SIGTERM during `agentci run` and `agentci eval`. The first one
//! cancels the run, which stops the model call and tools, finishes the trace
//! and JUnit file with status `interrupted` and the signal's number, and
//! returns; the exit code is then 128 plus that number (130, 143). A second
//! signal drops the work at once, for a user who will not wait for that, and
//! the command returns the same [`Exit`] through the normal path.

use std::future::Future;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use super::Exit;
use crate::agent::CancelTrigger;

/// The signals received so far: the first one's number, and whether another came.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Heard {
    first: Option<i32>,
    again: bool,
}

/// Which signal stopped the run, if one did, and whether a second one asks
/// to stop waiting.
#[derive(Clone)]
pub struct Received(watch::Receiver<Heard>);

impl Received {
    /// The signal received, if one was.
    pub fn signal(&self) -> Option<i32> {
        self.0.borrow().first
    }

    /// How an interrupted run ends: by the signal received, if one was.
    pub fn exit(&self) -> Exit {
        Exit::Interrupted(self.signal())
    }

    /// `work`'s output, or, when a second signal comes first, the exit of
    /// an interrupted run (by the first signal), with `work` dropped.
    pub async fn unless_signalled_again<T>(
        &self,
        work: impl Future<Output = T>,
    ) -> Result<T, Exit> {
        let mut heard = self.0.clone();
        tokio::select! {
            done = work => Ok(done),
            Ok(_) = heard.wait_for(|h| h.again) => Err(self.exit()),
        }
    }
}

/// Start listening; must be called inside the tokio runtime.
pub fn install(trigger: CancelTrigger) -> std::io::Result<Received> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (tell, received) = watch::channel(Heard::default());
    tokio::spawn(async move {
        let (number, name) = tokio::select! {
            _ = interrupt.recv() => (libc::SIGINT, "SIGINT"),
            _ = terminate.recv() => (libc::SIGTERM, "SIGTERM"),
        };
        tell.send_modify(|h| h.first = Some(number));
        trigger.cancel_by_signal(number, format!("interrupted by {name}"));
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        tell.send_modify(|h| h.again = true);
    });
    Ok(Received(received))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    // A second signal does not wait for the work to wind down: the command
    // returns the first signal's exit through the normal path.
    #[tokio::test]
    async fn a_second_signal_drops_the_work_and_exits_by_the_first() {
        let (tell, heard) = watch::channel(Heard::default());
        let received = Received(heard);
        let never = std::future::pending::<()>();
        let waiting = tokio::spawn({
            let received = received.clone();
            async move { received.unless_signalled_again(never).await }
        });
        tell.send_modify(|h| h.first = Some(libc::SIGTERM));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "one signal lets the run wind down");
        tell.send_modify(|h| h.again = true);
        let ended = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ended, Err(Exit::Interrupted(Some(libc::SIGTERM))));
        assert_eq!(Exit::Interrupted(Some(libc::SIGTERM)).code(), 143);
    }

    #[tokio::test]
    async fn work_that_ends_is_returned() {
        let (_tell, heard) = watch::channel(Heard::default());
        let got = Received(heard).unless_signalled_again(async { 7 }).await;
        assert_eq!(got, Ok(7));
    }
}
