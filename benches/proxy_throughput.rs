//! What the `sandbox.network` allowlist proxy costs a download: a local
//! origin on 127.0.0.1 serves a 100 MB body over HTTP/1.1; the same client
//! downloads it directly, through a CONNECT tunnel (how https, and so every
//! registry, goes through the proxy) and as a forwarded plain-HTTP request.
//! The ways take turns for several rounds; the median MB/s, the ratio to
//! the direct download (target: the proxy within 20% of direct) and the
//! process's CPU time per download are reported.
//!
//! Two origins: one that sends as fast as loopback takes it, where the
//! figure is bounded by CPU (origin, proxy and client share this process
//! and the machine's cores, and the proxy's second TCP connection costs the
//! kernel about as much as the first), and one paced at 250 MB/s (a 2
//! Gbit/s link, faster than a CI runner's usual network), where a download
//! through the proxy should take as long as a direct one.
//!
//! Run with `cargo bench --bench proxy_throughput`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentci::netproxy::{NetworkAllowlist, NetworkProxy, RecordObserver, Resolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BODY_BYTES: usize = 100 * 1000 * 1000;
const ROUNDS: usize = 7;
/// What the client reads at a time, as an HTTP client's buffer would.
const READ_BUFFER: usize = 256 * 1024;
/// The paced origin's rate, bytes per second.
const PACED_RATE: f64 = 250e6;
/// What the origin writes at a time.
const CHUNK: usize = 1 << 20;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    Direct,
    Tunnel,
    Forward,
}

const WAYS: [Way; 3] = [Way::Direct, Way::Tunnel, Way::Forward];

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Direct => "direct            ",
            Way::Tunnel => "CONNECT tunnel    ",
            Way::Forward => "plain-HTTP forward",
        }
    }
}

/// Wall time and the process's CPU time (all threads: origin, proxy and
/// client) of one download.
struct Cost {
    wall: Duration,
    cpu: Duration,
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let origin = origin().await;
        let allowlist = NetworkAllowlist::parse(&[origin.to_string()]).expect("allowlist");
        let observer: RecordObserver = Arc::new(|_| {});
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("proxy listener");
        let handle = NetworkProxy::new(allowlist, Resolver::system(), observer)
            .serve_tcp(listener)
            .expect("proxy");
        let proxy = handle.local_addr().expect("proxy address");
        println!(
            "download of {} MB from an origin on 127.0.0.1, {ROUNDS} rounds, median \
             (slowest–fastest); CPU is the whole process's (origin, proxy, client):",
            BODY_BYTES / 1_000_000
        );
        for (path, title) in [
            (
                "/fast",
                "origin sending as fast as loopback takes it (CPU-bound):",
            ),
            ("/paced", "origin paced at 250 MB/s:"),
        ] {
            println!("{title}");
            // One round to warm up, not counted; then the ways take turns,
            // so a busy moment on the machine does not fall on one way only.
            for way in WAYS {
                download(way, origin, proxy, path).await;
            }
            let mut costs: [Vec<Cost>; 3] = Default::default();
            for _ in 0..ROUNDS {
                for (i, way) in WAYS.into_iter().enumerate() {
                    costs[i].push(download(way, origin, proxy, path).await);
                }
            }
            report(&costs);
        }
        handle.shutdown().await;
    });
}

fn report(costs: &[Vec<Cost>; 3]) {
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        (
            values[values.len() / 2],
            values[0],
            values[values.len() - 1],
        )
    };
    let mut direct = (0.0, 0.0);
    for (way, costs) in WAYS.into_iter().zip(costs) {
        let (rate, low, high) = median(costs.iter().map(|c| mb_per_s(c.wall)).collect());
        let (cpu, _, _) = median(costs.iter().map(|c| c.cpu.as_secs_f64() * 1e3).collect());
        if way == Way::Direct {
            direct = (rate, cpu);
            println!(
                "  {} {rate:>6.0} MB/s ({low:.0}–{high:.0})                CPU {cpu:>4.0} ms",
                way.name()
            );
        } else {
            println!(
                "  {} {rate:>6.0} MB/s ({low:.0}–{high:.0}) = {:.2}× direct   CPU {cpu:>4.0} ms \
                 (+{:.0} ms in the proxy)",
                way.name(),
                rate / direct.0,
                cpu - direct.1
            );
        }
    }
}

fn mb_per_s(elapsed: Duration) -> f64 {
    BODY_BYTES as f64 / 1e6 / elapsed.as_secs_f64()
}

/// CPU time this process has used, all threads, user and system.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only fills the struct it is given, which is plain
    // integers (all zero is a valid value).
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.unsigned_abs())
            + Duration::from_micros(t.tv_usec.unsigned_abs())
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// An HTTP origin that answers every request with the body and closes;
/// a request for `/paced` gets it at [`PACED_RATE`].
async fn origin() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("origin");
    let addr = listener.local_addr().expect("origin address");
    let chunk: Arc<[u8]> = vec![b'x'; CHUNK].into();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let chunk = chunk.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).await.expect("request") == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let paced = head.windows(6).any(|w| w == b"/paced");
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\
                     Content-Length: {BODY_BYTES}\r\n\r\n"
                );
                stream.write_all(response.as_bytes()).await.expect("head");
                let started = tokio::time::Instant::now();
                let mut sent = 0;
                while sent < BODY_BYTES {
                    let n = (BODY_BYTES - sent).min(chunk.len());
                    stream.write_all(&chunk[..n]).await.expect("body");
                    sent += n;
                    if paced {
                        let due = Duration::from_secs_f64(sent as f64 / PACED_RATE);
                        tokio::time::sleep_until(started + due).await;
                    }
                }
            });
        }
    });
    addr
}

/// Download `path` one way; the time from connecting to the last byte.
async fn download(way: Way, origin: SocketAddr, proxy: SocketAddr, path: &str) -> Cost {
    let (started, cpu) = (Instant::now(), cpu_time());
    let at = if way == Way::Direct { origin } else { proxy };
    let mut stream = TcpStream::connect(at).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let target = match way {
        Way::Direct => path.to_string(),
        Way::Tunnel => {
            let connect = format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n");
            stream.write_all(connect.as_bytes()).await.expect("connect");
            let established = b"HTTP/1.1 200 Connection Established\r\n\r\n";
            let mut answer = vec![0u8; established.len()];
            stream.read_exact(&mut answer).await.expect("established");
            assert_eq!(answer, established, "the tunnel opens");
            path.to_string()
        }
        Way::Forward => format!("http://{origin}{path}"),
    };
    let get = format!("GET {target} HTTP/1.1\r\nHost: {origin}\r\n\r\n");
    stream.write_all(get.as_bytes()).await.expect("request");
    let mut buffer = vec![0u8; READ_BUFFER];
    let mut head: Vec<u8> = Vec::new();
    let mut body: Option<usize> = None;
    // The head, then the body until Content-Length bytes have come.
    while body.is_none_or(|got| got < BODY_BYTES) {
        let n = stream.read(&mut buffer).await.expect("read");
        assert!(n > 0, "the download ended early ({body:?} bytes of body)");
        match &mut body {
            Some(got) => *got += n,
            None => {
                head.extend_from_slice(&buffer[..n]);
                if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                    assert!(head.starts_with(b"HTTP/1.1 200 OK"), "the origin answers");
                    body = Some(head.len() - end - 4);
                }
            }
        }
    }
    Cost {
        wall: started.elapsed(),
        cpu: cpu_time().saturating_sub(cpu),
    }
}
