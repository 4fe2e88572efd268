//! A hand-written client, byte for byte, so every answer can be checked.

use super::*;

/// Send `request` to the proxy, end the sending side, and read everything
/// it answers until it closes.
async fn exchange(proxy: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    stream.write_all(request).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_tunnel_to_a_listed_address_relays_both_ways_and_counts() {
    let (origin, mut received) = echo_origin(b"world!!").await;
    let rule = format!("127.0.0.1:{}", origin.port());
    let mut proxy = start(std::slice::from_ref(&rule));
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let connect = format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n");
    stream.write_all(connect.as_bytes()).await.unwrap();
    let head = read_until_blank_line(&mut stream).await;
    assert_eq!(head, "HTTP/1.1 200 Connection Established\r\n\r\n");
    stream.write_all(b"hello").await.unwrap();
    // The client's end reaches the origin, which answers after it.
    stream.shutdown().await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    assert_eq!(answer, b"world!!");
    assert_eq!(received.recv().await.unwrap(), b"hello");
    let record = proxy.record().await;
    assert_eq!(
        (record.host.as_str(), record.port, record.method.as_str()),
        ("127.0.0.1", origin.port(), "CONNECT")
    );
    assert!(record.allowed);
    assert_eq!(record.outcome, Outcome::Closed);
    assert_eq!(record.rule, Some(rule));
    assert_eq!(record.reason, None);
    assert_eq!(record.address, Some(origin.ip()));
    assert_eq!((record.bytes_sent, record.bytes_received), (5, 7));
}

#[tokio::test]
async fn a_large_download_arrives_whole_and_is_counted() {
    let body: &'static [u8] = Box::leak(
        (0..5_000_000u32)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<u8>>()
            .into_boxed_slice(),
    );
    let (origin, _) = echo_origin(body).await;
    let mut proxy = start(&[origin.to_string()]);
    let request = format!("CONNECT {origin} HTTP/1.1\r\n\r\n");
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    read_until_blank_line(&mut stream).await;
    stream.shutdown().await.unwrap();
    let mut got = Vec::new();
    stream.read_to_end(&mut got).await.unwrap();
    assert!(
        got == body,
        "{} bytes arrived, not the {} sent",
        got.len(),
        body.len()
    );
    assert_eq!(proxy.record().await.bytes_received, body.len() as u64);
}

#[tokio::test]
async fn bytes_sent_with_the_connect_head_reach_the_origin() {
    let (origin, mut received) = echo_origin(b"").await;
    let mut proxy = start(&[format!("registry.test:{}", origin.port())]);
    let request = format!(
        "CONNECT registry.test:{} HTTP/1.1\r\n\r\nearly bytes",
        origin.port()
    );
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert_eq!(answer, "HTTP/1.1 200 Connection Established\r\n\r\n");
    assert_eq!(received.recv().await.unwrap(), b"early bytes");
    let record = proxy.record().await;
    assert_eq!(record.bytes_sent, 11);
    assert_eq!(record.host, "registry.test");
}

#[tokio::test]
async fn an_unlisted_host_is_refused_with_what_to_add() {
    let mut proxy = start(&["crates.io".into()]);
    let answer = exchange(proxy.addr(), b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n").await;
    let reason = "`evil.example:443` is not in sandbox.network; add `evil.example` (or a preset) \
                  to allow it";
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    assert!(
        answer.ends_with(&format!("\r\n\r\nagentci: {reason}\n")),
        "{answer}"
    );
    let record = proxy.record().await;
    assert_eq!(record.host, "evil.example");
    assert!(!record.allowed);
    assert_eq!(record.outcome, Outcome::NotListed);
    assert_eq!(record.rule, None);
    assert_eq!(record.reason.as_deref(), Some(reason));
    assert_eq!(record.address, None);

    let answer = exchange(
        proxy.addr(),
        b"GET http://static.crates.io:8080/x HTTP/1.1\r\n\r\n",
    )
    .await;
    assert!(
        answer.ends_with(
            "agentci: `static.crates.io:8080` is not in sandbox.network; add \
             `static.crates.io:8080` (or a preset) to allow it\n"
        ),
        "{answer}"
    );
    assert_eq!(proxy.record().await.method, "GET");
    let answer = exchange(
        proxy.addr(),
        b"CONNECT index.crates.io:443 HTTP/1.1\r\n\r\n",
    )
    .await;
    assert!(
        answer.ends_with("add `preset:cargo` (or `index.crates.io`) to allow it\n"),
        "{answer}"
    );
}

// A glob or preset must not open the machine's own services: DNS for a
// name it matches could answer 127.0.0.1 (rebinding).
#[tokio::test]
async fn a_glob_host_on_loopback_is_refused_but_a_literal_rule_reaches_it() {
    let (origin, _) = echo_origin(b"ok").await;
    let port = origin.port();
    let glob = format!("*.test:{port}");
    let mut proxy = start(std::slice::from_ref(&glob));
    let request = format!("CONNECT registry.test:{port} HTTP/1.1\r\n\r\n");
    let answer = exchange(proxy.addr(), request.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    let reason = format!(
        "`registry.test` is a loopback address (127.0.0.1), which sandbox.network reaches only \
         when an entry names the host itself, not a glob or a preset: add \
         `registry.test:{port}` to allow it"
    );
    assert!(
        answer.ends_with(&format!("agentci: {reason}\n")),
        "{answer}"
    );
    let record = proxy.record().await;
    assert!(!record.allowed);
    assert_eq!(record.outcome, Outcome::NotPublic);
    assert_eq!(record.rule, Some(glob.clone()));
    assert_eq!(record.address, Some([127, 0, 0, 1].into()));
    assert_eq!(record.reason, Some(reason));

    let literal = format!("registry.test:{port}");
    let mut proxy = start(&[glob, literal.clone()]);
    let answer = exchange(proxy.addr(), request.as_bytes()).await;
    assert_eq!(answer, "HTTP/1.1 200 Connection Established\r\n\r\nok");
    let record = proxy.record().await;
    assert!(record.allowed);
    assert_eq!(record.rule, Some(literal));
    assert_eq!(record.bytes_received, 2);
}

#[tokio::test]
async fn a_plain_http_request_is_forwarded_in_origin_form_without_proxy_headers() {
    let (origin, mut heads) = http_origin("hello").await;
    let port = origin.port();
    let mut proxy = start(&[format!("registry.test:{port}")]);
    let request = format!(
        "GET http://registry.test:{port}/path?q=1 HTTP/1.1\r\nHost: elsewhere.example\r\n\
         Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n\
         Accept: text/plain\r\n\r\n"
    );
    let answer = exchange(proxy.addr(), request.as_bytes()).await;
    assert_eq!(
        answer,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\
         Connection: close\r\n\r\nhello"
    );
    let head = heads.recv().await.unwrap();
    assert_eq!(
        head,
        format!(
            "GET /path?q=1 HTTP/1.1\r\nAccept: text/plain\r\nHost: registry.test:{port}\r\n\
             Connection: close\r\n\r\n"
        )
    );
    let record = proxy.record().await;
    assert_eq!(record.method, "GET");
    assert_eq!(record.outcome, Outcome::Closed);
    assert_eq!(record.bytes_sent, head.len() as u64);
    assert_eq!(record.bytes_received, answer.len() as u64);
}

#[tokio::test]
async fn a_request_body_streams_to_the_origin() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let origin = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 1024];
        while !got.ends_with(b"\r\n\r\nbody") {
            let read = stream.read(&mut chunk).await.unwrap();
            assert!(read > 0, "the request ended early: {got:?}");
            got.extend_from_slice(&chunk[..read]);
        }
        stream
            .write_all(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
            .await
            .unwrap();
        String::from_utf8(got).unwrap()
    });
    let mut proxy = start(&[format!("127.0.0.1:{port}")]);
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let head = format!("POST http://127.0.0.1:{port}/upload HTTP/1.1\r\nContent-Length: 4\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    // The body comes after the head, in a write of its own.
    tokio::time::sleep(Duration::from_millis(50)).await;
    stream.write_all(b"body").await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert_eq!(
        answer,
        "HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let sent = origin.await.unwrap();
    assert!(sent.starts_with("POST /upload HTTP/1.1\r\n"), "{sent}");
    let record = proxy.record().await;
    assert_eq!(record.outcome, Outcome::Closed);
    assert_eq!(record.bytes_sent, sent.len() as u64);
}

#[tokio::test]
async fn malformed_requests_get_400_and_a_record() {
    let mut proxy = start(&["crates.io".into()]);
    let too_long = [
        b"GET http://crates.io/ HTTP/1.1\r\nX: ".as_slice(),
        &[b'a'; 70 * 1024],
    ]
    .concat();
    for request in [
        b"GET / HTTP/1.1\r\nHost: crates.io\r\n\r\n".as_slice(),
        b"hello\r\n\r\n",
        b"CONNECT crates.io HTTP/1.1\r\n\r\n",
        b"GET https://crates.io/ HTTP/1.1\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
        &too_long,
    ] {
        let answer = exchange(proxy.addr(), request).await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        let record = proxy.record().await;
        assert_eq!(record.outcome, Outcome::BadRequest);
        assert!(!record.allowed);
        assert!(record.reason.is_some());
    }
}

#[tokio::test]
async fn a_client_that_stalls_in_the_head_is_dropped() {
    let limits = ProxyLimits {
        head_timeout: Duration::from_millis(200),
        ..ProxyLimits::default()
    };
    let mut proxy = start_with(&["crates.io".into()], limits);
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    stream.write_all(b"CONNECT crat").await.unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
    assert!(matches!(read, Ok(Ok(0))), "{read:?}");
    let record = proxy.record().await;
    assert_eq!(record.outcome, Outcome::Stalled);

    // A client that leaves at once is recorded too.
    drop(TcpStream::connect(proxy.addr()).await.unwrap());
    assert_eq!(proxy.record().await.outcome, Outcome::Abandoned);
}

#[tokio::test]
async fn an_unreachable_origin_gets_502() {
    // A port nothing listens on: bind one, then free it.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut proxy = start(&[format!("127.0.0.1:{port}")]);
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n");
    let answer = exchange(proxy.addr(), request.as_bytes()).await;
    assert!(
        answer.starts_with("HTTP/1.1 502 Bad Gateway\r\n"),
        "{answer}"
    );
    let record = proxy.record().await;
    assert_eq!(record.outcome, Outcome::Unreachable);
    assert!(record.allowed);
    assert!(
        record
            .reason
            .as_deref()
            .unwrap()
            .starts_with(&format!("cannot reach `127.0.0.1:{port}`")),
        "{record:?}"
    );
}

#[tokio::test]
async fn any_stream_can_be_served_and_shutdown_reports_open_tunnels() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        stream.write_all(b"abc").await.unwrap();
        // Hold the tunnel open.
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink).await;
    });
    let (proxy, mut records) = proxy(&[origin.to_string()], Resolver::system());
    let (mut client, served) = tokio::io::duplex(1024);
    let serving = tokio::spawn(async move { proxy.serve_connection(served).await });
    let request = format!("CONNECT {origin} HTTP/1.1\r\n\r\n");
    client.write_all(request.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 42];
    client.read_exact(&mut answer).await.unwrap();
    assert_eq!(answer, b"HTTP/1.1 200 Connection Established\r\n\r\nabc");
    serving.abort();
    let record = records.recv().await.unwrap();
    assert_eq!(record.outcome, Outcome::Stopped);
    assert_eq!(record.bytes_received, 3);

    // The same through a listener's handle.
    let (origin, _) = echo_origin(b"").await;
    let mut proxy = start(&[origin.to_string()]);
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let request = format!("CONNECT {origin} HTTP/1.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    read_until_blank_line(&mut stream).await;
    proxy.handle.shutdown().await;
    let record = proxy.records.recv().await.unwrap();
    assert_eq!(record.outcome, Outcome::Stopped);
    let mut rest = Vec::new();
    assert_eq!(stream.read_to_end(&mut rest).await.unwrap(), 0);
}

#[tokio::test]
async fn a_unix_socket_is_served() {
    let (origin, _) = echo_origin(b"pong").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let (proxy, mut records) = proxy(&[origin.to_string()], Resolver::system());
    let _handle = proxy.serve_unix(listener).unwrap();
    let mut stream = tokio::net::UnixStream::connect(&path).await.unwrap();
    let request = format!("CONNECT {origin} HTTP/1.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert_eq!(answer, "HTTP/1.1 200 Connection Established\r\n\r\npong");
    assert_eq!(records.recv().await.unwrap().outcome, Outcome::Closed);
}

#[test]
fn a_record_serialises_with_snake_case_outcomes() {
    let record = NetworkRecord {
        host: "crates.io".into(),
        port: 443,
        method: "CONNECT".into(),
        allowed: false,
        outcome: Outcome::NotListed,
        rule: None,
        reason: Some("why".into()),
        address: Some([127, 0, 0, 1].into()),
        bytes_sent: 1,
        bytes_received: 2,
        duration_ms: 3,
    };
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "host": "crates.io", "port": 443, "method": "CONNECT", "allowed": false,
            "outcome": "not_listed", "rule": null, "reason": "why", "address": "127.0.0.1",
            "bytes_sent": 1, "bytes_received": 2, "duration_ms": 3
        })
    );
    let back: NetworkRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back, record);
}

#[test]
fn serving_outside_a_runtime_is_an_error_not_a_panic() {
    let (proxy, _records) = proxy(&[], Resolver::system());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    assert!(matches!(
        proxy.serve_tcp(listener),
        Err(ProxyError::NoRuntime)
    ));
}

/// An origin that sends `greeting` as soon as a client connects and then
/// waits for the client to go.
async fn greeting_origin(greeting: &'static [u8]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                stream.write_all(greeting).await.unwrap();
                let mut rest = Vec::new();
                let _ = stream.read_to_end(&mut rest).await;
            });
        }
    });
    addr
}

/// A tunnel client that resets the connection (SO_LINGER 0, then close)
/// after `wait_for` bytes came back through it.
async fn tunnel_then_reset(proxy: SocketAddr, origin: SocketAddr, wait_for: usize) {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    let connect = format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n");
    stream.write_all(connect.as_bytes()).await.unwrap();
    read_until_blank_line(&mut stream).await;
    let mut answer = vec![0u8; wait_for];
    stream.read_exact(&mut answer).await.unwrap();
    // Closing with a zero linger sends RST instead of FIN.
    stream.set_zero_linger().unwrap();
    drop(stream);
}

/// Regression: a client that resets its tunnel once the answer has come
/// (as TLS clients and exiting commands do) was recorded as
/// `relaying failed: Connection reset by peer`, a warning in the log of a
/// command that succeeded. It is a close; a reset before any answer is
/// still a failure.
#[tokio::test]
async fn a_reset_after_the_answer_is_a_close_not_a_failure() {
    let origin = greeting_origin(b"hello").await;
    let rule = format!("127.0.0.1:{}", origin.port());
    let mut proxy = start(std::slice::from_ref(&rule));
    tunnel_then_reset(proxy.addr(), origin, 5).await;
    let record = proxy.record().await;
    assert_eq!(record.outcome, Outcome::Closed, "{:?}", record.reason);
    assert_eq!(record.reason, None);
    assert_eq!(record.bytes_received, 5);

    let silent = echo_origin(b"never sent").await.0;
    let rule = format!("127.0.0.1:{}", silent.port());
    let mut proxy = start(std::slice::from_ref(&rule));
    tunnel_then_reset(proxy.addr(), silent, 0).await;
    let record = proxy.record().await;
    assert_eq!(record.bytes_received, 0);
    assert_eq!(record.outcome, Outcome::RelayFailed, "{record:?}");
}
