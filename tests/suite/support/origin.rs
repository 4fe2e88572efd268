//! A plain-HTTP origin server on 127.0.0.1 for the network tests: what a
//! registry or web server is to a command that reaches it through
//! agentci's proxy. One request per connection; it counts the requests it
//! answered.
//!
//! As strict as a real HTTP/1.1 server where the proxy could get it wrong:
//! a request without a `Host` header is refused with 400 (RFC 9112 §3.2:
//! "A server MUST respond with a 400 (Bad Request) status code to any
//! HTTP/1.1 request message that lacks a Host header field"), a `Host`
//! naming another site with 421 (RFC 9110 §15.5.20, Misdirected Request),
//! and a request line still in absolute form or carrying `Proxy-*` headers
//! is refused too, since a proxy must send origin-form and drop its own
//! headers (RFC 9112 §3.2.1, RFC 9110 §7.6.1).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct Origin {
    pub port: u16,
    /// Requests received, refused ones included.
    heard: Arc<AtomicUsize>,
    /// Requests answered with a page.
    served: Arc<AtomicUsize>,
}

impl Origin {
    /// Serve `pages` (the body for a path, `None` for 404) as the site
    /// `host` (the name commands use).
    pub fn start(host: &str, pages: impl Fn(&str) -> Option<Vec<u8>> + Send + 'static) -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = Arc::new(AtomicUsize::new(0));
        let heard = Arc::new(AtomicUsize::new(0));
        let counted = served.clone();
        let received = heard.clone();
        let site = format!("{host}:{port}");
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut head = Vec::new();
                let mut byte = [0u8];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                received.fetch_add(1, Ordering::SeqCst);
                let head = String::from_utf8_lossy(&head).into_owned();
                let (status, body) = match answer(&head, &site, &pages) {
                    Ok(body) => {
                        counted.fetch_add(1, Ordering::SeqCst);
                        ("200 OK", body)
                    }
                    Err(status) => (status, Vec::new()),
                };
                let _ = stream
                    .write_all(
                        format!(
                            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .and_then(|()| stream.write_all(&body));
            }
        });
        Origin {
            port,
            heard,
            served,
        }
    }

    pub fn heard(&self) -> usize {
        self.heard.load(Ordering::SeqCst)
    }

    pub fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }
}

fn answer(
    head: &str,
    site: &str,
    pages: &impl Fn(&str) -> Option<Vec<u8>>,
) -> Result<Vec<u8>, &'static str> {
    let mut lines = head.lines();
    let target = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .ok_or("400 Bad Request")?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    if !target.starts_with('/') || headers.iter().any(|(k, _)| k.starts_with("proxy-")) {
        return Err("400 Bad Request");
    }
    match headers.iter().find(|(k, _)| k == "host") {
        None => return Err("400 Bad Request"),
        Some((_, host)) if !host.eq_ignore_ascii_case(site) => {
            return Err("421 Misdirected Request");
        }
        Some(_) => {}
    }
    pages(target).ok_or("404 Not Found")
}
