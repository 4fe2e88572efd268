//! A test server on a thread of its own: a one-thread runtime, a listener
//! bound before the caller goes on, and the address to reach it. The
//! servers differ only in what they do with the listener.

use std::future::Future;
use std::net::SocketAddr;
use std::thread::JoinHandle;

/// Binds `bind` (`127.0.0.1:0`, say) on a new thread with a one-thread
/// runtime and runs `serve` with the listener there; returns once bound,
/// with the bound address and the thread.
pub fn serve_on_thread<F, Fut>(bind: &str, serve: F) -> (SocketAddr, JoinHandle<()>)
where
    F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let bind = bind.to_string();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind(&bind).await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            serve(listener).await;
        });
    });
    (addr_rx.recv().unwrap(), thread)
}
