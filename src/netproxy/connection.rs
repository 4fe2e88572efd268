//! One connection through the proxy: read, judged, connected, relayed.
//!
//! Each connection carries one request. It is judged by the allowlist, its
//! host resolved once and every address checked, and then tunnelled or
//! forwarded to exactly the address that was checked. Whatever happens, the
//! connection's [`ConnectionLog`] reports it once. Refusals are answered in
//! words that say what to add to `sandbox.network`; a client that left or
//! stalled is closed without a word.

use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::allowlist::NetworkAllowlist;
use super::head::{Head, HeadError, Message, read_head};
use super::record::{ConnectionLog, Outcome, RecordObserver};
use super::relay::{self, ForwardError};
use super::request::{Request, RequestKind};
use super::resolve::{AddressError, Resolver};
use super::server::ProxyLimits;

/// How long a refused client's leftover request is read and dropped after
/// the answer, so closing does not reset the connection before the client
/// has read why.
const LINGER: Duration = Duration::from_secs(2);

/// What every connection of one proxy is judged and bounded by.
#[derive(Clone)]
pub struct Shared {
    pub allowlist: NetworkAllowlist,
    pub resolver: Resolver,
    pub observer: RecordObserver,
    pub limits: ProxyLimits,
}

/// The proxy's own answer to a request it does not relay.
struct Refusal {
    outcome: Outcome,
    /// The status to answer with; `None`: close without a word (the
    /// client left or stalled).
    status: Option<&'static str>,
    reason: String,
}

impl Refusal {
    fn new(outcome: Outcome, reason: impl Into<String>) -> Self {
        let status = match outcome {
            Outcome::BadRequest => Some("400 Bad Request"),
            Outcome::NotListed | Outcome::NotPublic => Some("403 Forbidden"),
            Outcome::Unresolved | Outcome::Unreachable => Some("502 Bad Gateway"),
            _ => None,
        };
        Refusal {
            outcome,
            status,
            reason: reason.into(),
        }
    }
}

/// Serve one connection to its end and report it.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(shared: &Shared, mut client: S) {
    let mut log = ConnectionLog::new(shared.observer.clone());
    let relayed = match open(shared, &mut client, &mut log).await {
        Ok(opened) => relay(&mut client, opened, &log).await,
        Err(refusal) => Err(refusal),
    };
    match relayed {
        Ok(()) => log.end(Outcome::Closed, None),
        Err(refusal) => {
            if let Some(status) = refusal.status {
                answer(&mut client, status, &refusal.reason, shared).await;
            }
            log.end(refusal.outcome, Some(refusal.reason));
        }
    }
}

/// A request judged and connected; what is left is to relay it.
struct Opened {
    origin: TcpStream,
    tunnel: bool,
    /// What goes to the origin first: the forwarded head, and whatever the
    /// client sent after its head.
    first: Vec<u8>,
}

/// Read the request, judge it and connect to its origin.
async fn open<S>(
    shared: &Shared,
    client: &mut S,
    log: &mut ConnectionLog,
) -> Result<Opened, Refusal>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let limits = &shared.limits;
    let raw = match timeout(limits.head_timeout, read_head(client, Vec::new())).await {
        Err(_) => {
            let why = format!(
                "no complete request head within {}s",
                limits.head_timeout.as_secs_f32()
            );
            return Err(Refusal::new(Outcome::Stalled, why));
        }
        Ok(Err(e @ (HeadError::Closed | HeadError::Io(_)))) => {
            return Err(Refusal::new(Outcome::Abandoned, e.to_string()));
        }
        Ok(Err(e)) => return Err(Refusal::new(Outcome::BadRequest, e.to_string())),
        Ok(Ok(raw)) => raw,
    };
    let bad = |why: &str| Refusal::new(Outcome::BadRequest, why);
    let head = Head::parse(&raw.head, Message::Request).map_err(|e| bad(&e.to_string()))?;
    if let Some(method) = head.start.first() {
        log.method = method.clone();
    }
    let request = Request::from_head(&head).map_err(bad)?;
    log.host = request.host.clone();
    log.port = request.port;
    let decision = shared.allowlist.decide(&request.host, request.port);
    if !decision.allowed {
        return Err(Refusal::new(Outcome::NotListed, not_listed(&request)));
    }
    log.rule = decision.rule;
    log.allowed = true;
    let origin = connect(shared, &request, decision.named_literally, log).await?;
    let (tunnel, first) = match request.kind {
        RequestKind::Tunnel => {
            client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await
                .map_err(relay_failed)?;
            (true, raw.rest)
        }
        RequestKind::Forward { start, authority } => {
            let mut out = head.rewrite(&start, &["host"], &[("Host", &authority)]);
            out.extend_from_slice(&raw.rest);
            (false, out)
        }
    };
    Ok(Opened {
        origin,
        tunnel,
        first,
    })
}

/// Relay an opened request between the client and its origin.
async fn relay<S>(client: &mut S, mut opened: Opened, log: &ConnectionLog) -> Result<(), Refusal>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut origin_r, mut origin_w) = opened.origin.split();
    origin_w
        .write_all(&opened.first)
        .await
        .map_err(relay_failed)?;
    log.sent
        .fetch_add(opened.first.len() as u64, Ordering::Relaxed);
    let (mut client_r, mut client_w) = tokio::io::split(client);
    let client = (&mut client_r, &mut client_w);
    let origin = (&mut origin_r, &mut origin_w);
    let (sent, received) = (&log.sent, &log.received);
    let relayed = if opened.tunnel {
        relay::tunnel(client, origin, sent, received).await
    } else {
        match relay::forward(client, origin, sent, received).await {
            Err(e @ ForwardError::BadResponse(_)) => {
                return Err(Refusal::new(Outcome::Unreachable, e.to_string()));
            }
            Err(ForwardError::Io(io)) => Err(io),
            Ok(()) => Ok(()),
        }
    };
    match relayed {
        Err(e) if !closed_after_the_answer(&e, log) => Err(relay_failed(e)),
        _ => Ok(()),
    }
}

/// A peer that resets the connection once the answer has come (a TLS
/// client that closes without `close_notify`, a command that exits with
/// its socket open, an origin dropping a finished keep-alive) has closed
/// it, no more. Recorded as a failure, every such connection of a command
/// that succeeded read `relaying failed: Connection reset by peer` in the
/// run's log. A reset before any byte came back is still a failure.
fn closed_after_the_answer(e: &io::Error, log: &ConnectionLog) -> bool {
    use io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset};
    matches!(e.kind(), ConnectionReset | BrokenPipe | ConnectionAborted)
        && log.received.load(Ordering::Relaxed) > 0
}

fn relay_failed(e: io::Error) -> Refusal {
    Refusal::new(Outcome::RelayFailed, format!("relaying failed: {e}"))
}

/// Resolve the request's host once, check its addresses, and connect to
/// the first of them that answers.
async fn connect(
    shared: &Shared,
    request: &Request,
    named_literally: bool,
    log: &mut ConnectionLog,
) -> Result<TcpStream, Refusal> {
    let within = shared.limits.connect_timeout;
    let (host, port) = (&request.host, request.port);
    let resolving = shared.resolver.resolve_checked(host, port, named_literally);
    let addresses = match timeout(within, resolving).await {
        Err(_) => {
            let why = format!(
                "resolving `{host}` took longer than {}s",
                within.as_secs_f32()
            );
            return Err(Refusal::new(Outcome::Unresolved, why));
        }
        Ok(Err(e @ AddressError::NotPublic { address, .. })) => {
            log.allowed = false;
            log.address = Some(address);
            return Err(Refusal::new(Outcome::NotPublic, not_public(&e, request)));
        }
        Ok(Err(e)) => return Err(Refusal::new(Outcome::Unresolved, e.to_string())),
        Ok(Ok(addresses)) => addresses,
    };
    let mut last = String::new();
    for address in addresses {
        match timeout(within, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                log.address = Some(address.ip());
                return Ok(stream);
            }
            Ok(Err(e)) => last = format!("connecting to {address} failed: {e}"),
            Err(_) => {
                last = format!(
                    "connecting to {address} took longer than {}s",
                    within.as_secs_f32()
                );
            }
        }
    }
    Err(Refusal::new(
        Outcome::Unreachable,
        format!("cannot reach `{host}:{port}`: {last}"),
    ))
}

/// The entry that would allow the request's host and port.
fn entry_for(request: &Request) -> String {
    if request.port == 80 || request.port == 443 {
        request.host.clone()
    } else {
        format!("{}:{}", request.host, request.port)
    }
}

fn not_listed(request: &Request) -> String {
    let target = format!("{}:{}", request.host, request.port);
    let entry = entry_for(request);
    match NetworkAllowlist::preset_for(&request.host, request.port) {
        Some(preset) => format!(
            "`{target}` is not in sandbox.network; add `preset:{preset}` (or `{entry}`) to allow it"
        ),
        None => {
            format!("`{target}` is not in sandbox.network; add `{entry}` (or a preset) to allow it")
        }
    }
}

fn not_public(error: &AddressError, request: &Request) -> String {
    format!(
        "{error}, which sandbox.network reaches only when an entry names the host itself, not a \
         glob or a preset: add `{}` to allow it",
        entry_for(request)
    )
}

/// Answer with `status` and `reason` as text, then read and drop what the
/// client still sends for a moment, so it gets to read the answer.
async fn answer<S>(client: &mut S, status: &str, reason: &str, shared: &Shared)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let body = format!("agentci: {reason}\n");
    let message = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let written = timeout(shared.limits.head_timeout, async {
        client.write_all(message.as_bytes()).await?;
        client.shutdown().await
    })
    .await;
    if !matches!(written, Ok(Ok(()))) {
        return;
    }
    let mut sink = [0u8; 8192];
    let _ = timeout(LINGER, async {
        let mut drained = 0usize;
        while drained < 1 << 20 {
            match client.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(read) => drained += read,
            }
        }
    })
    .await;
}
