//! The proxy server: where connections come from, and how it stops.
//!
//! The caller owns where connections come from. A listener may have been
//! made inside a sandbox's network namespace, so the proxy never binds one
//! itself: it takes a `std` TCP or Unix listener as it is
//! ([`NetworkProxy::serve_tcp`], [`NetworkProxy::serve_unix`]), or one
//! connection at a time from anything that reads and writes
//! ([`NetworkProxy::serve_connection`]). The accept loop bounds how many
//! connections are open at once and ends them all when its handle is
//! dropped or shut down. What happens on one connection is
//! [`super::connection`]'s business. Records go to a callback rather than a
//! channel so the caller decides how they reach the run (an event bus, a
//! channel, a test's vector) without the proxy knowing.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::{Semaphore, oneshot};
use tokio::task::{JoinHandle, JoinSet};

use super::allowlist::NetworkAllowlist;
use super::connection::{Shared, serve};
pub use super::record::RecordObserver;
use super::resolve::Resolver;

/// Waited after a failed `accept` that is not about one connection (out of
/// file descriptors): connections ending free them.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Bounds on what one client can make the proxy hold.
#[derive(Clone, Copy, Debug)]
pub struct ProxyLimits {
    /// A client must send its whole request head within this.
    pub head_timeout: Duration,
    /// Resolving the host, and connecting to each of its addresses, each
    /// within this.
    pub connect_timeout: Duration,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits {
            head_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            max_connections: 256,
        }
    }
}

/// Why the proxy could not start serving a listener.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("start the network proxy inside a tokio runtime")]
    NoRuntime,
    #[error("serve the network proxy on its listener: {0}")]
    Listener(#[source] io::Error),
}

/// The proxy, ready to serve; cheap to clone.
#[derive(Clone)]
pub struct NetworkProxy {
    shared: Arc<Shared>,
}

/// A running accept loop. Dropping it stops the loop and every open
/// connection (each still reports its record); [`ProxyHandle::shutdown`]
/// does the same and waits until they have reported.
pub struct ProxyHandle {
    local_addr: Option<SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl ProxyHandle {
    /// The TCP address served, for `HTTP_PROXY`; `None` for a Unix socket.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    /// Stop accepting, end open connections and wait for their records.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl NetworkProxy {
    /// A proxy that allows what `allowlist` lists, resolves with
    /// `resolver`, and hands every connection's record to `observer`.
    pub fn new(allowlist: NetworkAllowlist, resolver: Resolver, observer: RecordObserver) -> Self {
        NetworkProxy {
            shared: Arc::new(Shared {
                allowlist,
                resolver,
                observer,
                limits: ProxyLimits::default(),
            }),
        }
    }

    /// The same proxy with other limits.
    pub fn with_limits(mut self, limits: ProxyLimits) -> Self {
        Arc::make_mut(&mut self.shared).limits = limits;
        self
    }

    /// Serve connections accepted from `listener` (bound by the caller,
    /// perhaps in another network namespace) until the handle is dropped
    /// or shut down. Call inside a tokio runtime.
    pub fn serve_tcp(&self, listener: std::net::TcpListener) -> Result<ProxyHandle, ProxyError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ProxyError::NoRuntime)?;
        listener
            .set_nonblocking(true)
            .map_err(ProxyError::Listener)?;
        let local_addr = listener.local_addr().ok();
        let listener = tokio::net::TcpListener::from_std(listener).map_err(ProxyError::Listener)?;
        Ok(self.spawn(&runtime, listener, local_addr))
    }

    /// Serve connections accepted from a Unix socket `listener`, as
    /// [`NetworkProxy::serve_tcp`] does.
    pub fn serve_unix(
        &self,
        listener: std::os::unix::net::UnixListener,
    ) -> Result<ProxyHandle, ProxyError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ProxyError::NoRuntime)?;
        listener
            .set_nonblocking(true)
            .map_err(ProxyError::Listener)?;
        let listener =
            tokio::net::UnixListener::from_std(listener).map_err(ProxyError::Listener)?;
        Ok(self.spawn(&runtime, listener, None))
    }

    /// Serve one connection the caller accepted, to its end; its record
    /// has been reported when this returns.
    pub async fn serve_connection<S>(&self, client: S)
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        serve(&self.shared, client).await;
    }

    fn spawn<L: Accept>(
        &self,
        runtime: &tokio::runtime::Handle,
        listener: L,
        local_addr: Option<SocketAddr>,
    ) -> ProxyHandle {
        let (stop, stopped) = oneshot::channel();
        let task = runtime.spawn(accept_loop(self.shared.clone(), listener, stopped));
        ProxyHandle {
            local_addr,
            stop: Some(stop),
            task,
        }
    }
}

/// A listener the accept loop can take connections from.
trait Accept: Send + 'static {
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn accept(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send;
}

impl Accept for tokio::net::TcpListener {
    type Stream = TcpStream;
    async fn accept(&self) -> io::Result<TcpStream> {
        let (stream, _) = tokio::net::TcpListener::accept(self).await?;
        // Small writes (TLS handshakes) go out at once.
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

impl Accept for tokio::net::UnixListener {
    type Stream = UnixStream;
    async fn accept(&self) -> io::Result<UnixStream> {
        Ok(tokio::net::UnixListener::accept(self).await?.0)
    }
}

async fn accept_loop<L: Accept>(shared: Arc<Shared>, listener: L, mut stop: oneshot::Receiver<()>) {
    let permits = Arc::new(Semaphore::new(shared.limits.max_connections.max(1)));
    let mut connections = JoinSet::new();
    loop {
        let permit = tokio::select! {
            biased;
            _ = &mut stop => break,
            permit = permits.clone().acquire_owned() => permit,
        };
        let Ok(permit) = permit else { break };
        let accepted = tokio::select! {
            biased;
            _ = &mut stop => break,
            accepted = listener.accept() => accepted,
        };
        while connections.try_join_next().is_some() {}
        match accepted {
            Ok(stream) => {
                let shared = shared.clone();
                connections.spawn(async move {
                    serve(&shared, stream).await;
                    drop(permit);
                });
            }
            // A client that gave up before it was accepted.
            Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
            Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
        }
    }
    connections.shutdown().await;
}
