//! The small Tokio runtimes export runs on, apart from the run's own: one
//! that drives the HTTP client's requests from the exporter's thread, one
//! worker for the gRPC exporter's connection. Either may be dropped last on
//! the run's async workers (a sink goes when the run ends), where dropping
//! a runtime the usual way panics; these stop without waiting instead, as
//! a collector that hangs must not hold the run either.

use std::future::Future;
use std::sync::Arc;

use tokio::runtime::{EnterGuard, Handle, Runtime};

pub(super) struct OwnRuntime(Option<Runtime>);

impl OwnRuntime {
    /// A runtime whose work runs on the thread that blocks on it.
    pub(super) fn current_thread() -> std::io::Result<Arc<OwnRuntime>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Arc::new(OwnRuntime(Some(runtime))))
    }

    /// A runtime with one worker thread of its own.
    pub(super) fn one_worker(name: &str) -> std::io::Result<Arc<OwnRuntime>> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(name)
            .enable_all()
            .build()?;
        Ok(Arc::new(OwnRuntime(Some(runtime))))
    }

    /// Makes the runtime current while the guard lives.
    pub(super) fn enter(&self) -> Option<EnterGuard<'_>> {
        self.0.as_ref().map(Runtime::enter)
    }

    pub(super) fn handle(&self) -> Option<Handle> {
        self.0.as_ref().map(|r| r.handle().clone())
    }

    /// Runs `future` to its end on this runtime; `None` once it is stopped.
    pub(super) fn block_on<F: Future>(&self, future: F) -> Option<F::Output> {
        self.0.as_ref().map(|r| r.block_on(future))
    }
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for OwnRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OwnRuntime")
    }
}
