//! A TLS listener on 127.0.0.1 for the tests' HTTPS servers: the test CA
//! issued its certificate (`tests/data/tls/`), it runs on a thread of its
//! own, hands each connection that completed its handshake to the server's
//! code, and stops when dropped. A client that refuses the certificate ends
//! at the handshake, so the server's code never sees it.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::server_thread::serve_on_thread;

/// A file of the test CA's set (`ca.pem`, `other-ca.pem`, `server.pem`, ...).
pub fn tls_data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/tls")
        .join(name)
}

pub struct TlsServer {
    pub addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TlsServer {
    /// Listen, and run `serve` on each connection after its handshake.
    pub fn start<F, Fut>(serve: F) -> TlsServer
    where
        F: Fn(TlsStream<TcpStream>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let certs = CertificateDer::pem_file_iter(tls_data("server.pem"))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(tls_data("server.key")).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let serve = Arc::new(serve);
        let (shutdown_tx, mut shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let (addr, thread) = serve_on_thread("127.0.0.1:0", |listener| async move {
            loop {
                let (tcp, _) = tokio::select! {
                    accepted = listener.accept() => accepted.unwrap(),
                    _ = &mut shutdown_rx => return,
                };
                let (acceptor, serve) = (acceptor.clone(), Arc::clone(&serve));
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        serve(tls).await;
                    }
                });
            }
        });
        TlsServer {
            addr,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
