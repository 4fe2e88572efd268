//! The proxy against real sockets on 127.0.0.1: a raw client, reqwest and
//! curl, and small origin servers written here. Nothing leaves the machine:
//! every host a test names is either refused before any lookup or resolved
//! by a fixed answer to 127.0.0.1.

mod clients;
mod raw;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::*;

/// A proxy on 127.0.0.1 and the records it reports.
struct Running {
    handle: ProxyHandle,
    records: mpsc::UnboundedReceiver<NetworkRecord>,
}

impl Running {
    fn addr(&self) -> SocketAddr {
        self.handle.local_addr().unwrap()
    }

    /// The next record, within a few seconds.
    async fn record(&mut self) -> NetworkRecord {
        tokio::time::timeout(Duration::from_secs(10), self.records.recv())
            .await
            .expect("a record within 10s")
            .expect("the proxy is running")
    }
}

/// An observer that sends records into a channel.
fn channel() -> (RecordObserver, mpsc::UnboundedReceiver<NetworkRecord>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let observer: RecordObserver = Arc::new(move |record| {
        let _ = tx.send(record);
    });
    (observer, rx)
}

fn proxy(
    entries: &[String],
    resolver: Resolver,
) -> (NetworkProxy, mpsc::UnboundedReceiver<NetworkRecord>) {
    let allowlist = NetworkAllowlist::parse(entries).unwrap();
    let (observer, records) = channel();
    (NetworkProxy::new(allowlist, resolver, observer), records)
}

/// `entries` served on a fresh 127.0.0.1 listener; `registry.test`
/// resolves to 127.0.0.1.
fn start(entries: &[String]) -> Running {
    start_with(entries, ProxyLimits::default())
}

fn start_with(entries: &[String], limits: ProxyLimits) -> Running {
    let resolver = Resolver::system().with_override("registry.test", [127, 0, 0, 1].into());
    let (proxy, records) = proxy(entries, resolver);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let handle = proxy.with_limits(limits).serve_tcp(listener).unwrap();
    Running { handle, records }
}

/// An origin on 127.0.0.1 that, per connection, reads until the client
/// stops sending and answers `reply`, then closes.
async fn echo_origin(reply: &'static [u8]) -> (SocketAddr, mpsc::UnboundedReceiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                stream.read_to_end(&mut got).await.unwrap();
                let _ = tx.send(got);
                stream.write_all(reply).await.unwrap();
            });
        }
    });
    (addr, rx)
}

/// An HTTP origin on 127.0.0.1 that answers every request head with
/// `body` (and a `Connection: keep-alive` it does not mean), reporting the
/// head it got, then closes.
async fn http_origin(body: &'static str) -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let head = read_until_blank_line(&mut stream).await;
                let _ = tx.send(head);
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n{body}",
                    body.len()
                );
                stream.write_all(response.as_bytes()).await.unwrap();
            });
        }
    });
    (addr, rx)
}

/// Bytes up to and including the first blank line, as text.
async fn read_until_blank_line(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}
