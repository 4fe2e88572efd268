//! Real HTTP clients pointed at the proxy the way a sandboxed command's
//! `HTTP_PROXY`/`HTTPS_PROXY` point them: reqwest, and curl (which speaks
//! to proxies the way cargo, npm and pip do) when it is installed.

use super::*;

fn reqwest_through(proxy: SocketAddr) -> reqwest::Client {
    crate::tls::client_builder()
        .proxy(reqwest::Proxy::all(format!("http://{proxy}")).unwrap())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

#[tokio::test]
async fn reqwest_gets_a_plain_http_page_through_the_proxy() {
    let (origin, mut heads) = http_origin("crate index").await;
    let port = origin.port();
    let mut proxy = start(&[format!("registry.test:{port}")]);
    let client = reqwest_through(proxy.addr());
    let response = client
        .get(format!("http://registry.test:{port}/config.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "crate index");
    let head = heads.recv().await.unwrap();
    assert!(head.starts_with("GET /config.json HTTP/1.1\r\n"), "{head}");
    let record = proxy.record().await;
    assert_eq!(record.outcome, Outcome::Closed);
    assert_eq!(record.method, "GET");

    let refused = client.get("http://evil.example/").send().await.unwrap();
    assert_eq!(refused.status(), 403);
    let text = refused.text().await.unwrap();
    assert!(
        text.contains("`evil.example:80` is not in sandbox.network"),
        "{text}"
    );
    assert_eq!(proxy.record().await.outcome, Outcome::NotListed);
}

// reqwest tunnels https with CONNECT; the origin here speaks no TLS, so the
// handshake fails, but what it received is the client's TLS hello for the
// name asked for: the tunnel is a raw byte pipe.
#[tokio::test]
async fn reqwest_opens_a_connect_tunnel_for_https() {
    let (port, hello) = tls_hello_catcher().await;
    let mut proxy = start(&[format!("registry.test:{port}")]);
    let client = reqwest_through(proxy.addr());
    let failed = client
        .get(format!("https://registry.test:{port}/"))
        .send()
        .await;
    assert!(failed.is_err());
    let hello = hello.await.unwrap();
    assert_eq!(hello.first(), Some(&0x16), "a TLS handshake record");
    assert!(
        hello.windows(13).any(|w| w == b"registry.test"),
        "the server name is in the hello"
    );
    let record = proxy.record().await;
    assert_eq!(record.method, "CONNECT");
    assert_eq!(record.host, "registry.test");
    assert!(record.allowed);
    // The hello, and perhaps the alert the client sends on giving up.
    assert!(record.bytes_sent >= hello.len() as u64, "{record:?}");
}

/// An origin on 127.0.0.1 that reads one TLS record (the client's hello),
/// answers with text that is not TLS and closes; the task gives the record.
async fn tls_hello_catcher() -> (u16, tokio::task::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut header = [0u8; 5];
        stream.read_exact(&mut header).await.unwrap();
        let mut body = vec![0u8; usize::from(u16::from_be_bytes([header[3], header[4]]))];
        stream.read_exact(&mut body).await.unwrap();
        stream.write_all(b"not tls\r\n").await.unwrap();
        [header.as_slice(), &body].concat()
    });
    (port, task)
}

/// Run curl with `args` through `proxy`; `None` when curl is not installed.
async fn curl(proxy: SocketAddr, args: &[&str]) -> Option<std::process::Output> {
    let output = tokio::process::Command::new("curl")
        .args(["-sS", "--max-time", "10", "--noproxy", ""])
        .arg("-x")
        .arg(format!("http://{proxy}"))
        .args(args)
        .env_remove("CURL_HOME")
        .output()
        .await;
    match output {
        Ok(output) => Some(output),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("skipped: curl is not installed");
            None
        }
        Err(e) => panic!("curl did not start: {e}"),
    }
}

#[tokio::test]
async fn curl_forwards_tunnels_and_is_refused_like_a_package_manager() {
    let (origin, mut heads) = http_origin("index").await;
    let port = origin.port();
    let mut proxy = start(&[format!("registry.test:{port}")]);
    let url = format!("http://registry.test:{port}/index");

    let Some(plain) = curl(proxy.addr(), &["-U", "user:secret", &url]).await else {
        return;
    };
    assert!(plain.status.success(), "{plain:?}");
    assert_eq!(plain.stdout, b"index");
    let head = heads.recv().await.unwrap();
    assert!(!head.to_ascii_lowercase().contains("proxy-"), "{head}");
    assert_eq!(proxy.record().await.outcome, Outcome::Closed);

    // `-p`: curl tunnels even a plain http URL with CONNECT.
    let tunnelled = curl(proxy.addr(), &["-p", &url]).await.unwrap();
    assert!(tunnelled.status.success(), "{tunnelled:?}");
    assert_eq!(tunnelled.stdout, b"index");
    let record = proxy.record().await;
    assert_eq!(record.method, "CONNECT");
    assert_eq!(record.outcome, Outcome::Closed);
    assert!(
        record.bytes_sent > 0 && record.bytes_received > 0,
        "{record:?}"
    );

    let refused = curl(proxy.addr(), &["https://evil.example/"])
        .await
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("403"), "{stderr}");
    assert_eq!(proxy.record().await.outcome, Outcome::NotListed);
}
