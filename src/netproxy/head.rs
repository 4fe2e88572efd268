//! HTTP/1 message heads, as far as a forwarding proxy needs them.
//!
//! The proxy reads one request head from a client it does not trust: the
//! head is bounded ([`MAX_HEAD`]), parsed strictly (a request line of three
//! parts, `name: value` headers, no line folding), and anything else is a
//! [`HeadError`] the server answers with `400`. Bodies are never parsed:
//! they are relayed as bytes between one client and one origin, so framing
//! disagreements cannot reach a second origin. The proxy also rewrites heads
//! on the way through: the request into origin form without its hop-by-hop
//! and `Proxy-*` headers, the response with `Connection: close`.

use tokio::io::{AsyncRead, AsyncReadExt};

/// The most bytes a head may have.
pub const MAX_HEAD: usize = 64 * 1024;

/// Why a head could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    #[error("the connection closed before a complete request head")]
    Closed,
    #[error("the head is longer than {MAX_HEAD} bytes")]
    TooLong,
    #[error("{0}")]
    Malformed(&'static str),
    #[error("reading the head failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A head as read: its bytes (through the blank line) and what followed it
/// in the same reads (the start of a body, or of a TLS handshake).
pub struct RawHead {
    pub head: Vec<u8>,
    pub rest: Vec<u8>,
}

/// Read from `stream` through the first blank line, starting with the
/// bytes `buffer` already holds (what followed a previous head).
pub async fn read_head<R: AsyncRead + Unpin + ?Sized>(
    stream: &mut R,
    mut buffer: Vec<u8>,
) -> Result<RawHead, HeadError> {
    let mut chunk = [0u8; 4096];
    let mut searched_from = 0;
    loop {
        if let Some(end) = head_end(&buffer, searched_from).filter(|end| *end <= MAX_HEAD) {
            let rest = buffer.split_off(end);
            return Ok(RawHead { head: buffer, rest });
        }
        if buffer.len() > MAX_HEAD {
            return Err(HeadError::TooLong);
        }
        searched_from = buffer.len().saturating_sub(3);
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(HeadError::Closed);
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

/// The index just past the blank line ending a head (`\r\n\r\n`, or `\n\n`
/// from lenient clients), searching from `from`.
fn head_end(buffer: &[u8], from: usize) -> Option<usize> {
    (from..buffer.len()).find_map(|i| {
        if buffer[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if buffer[i..].starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        }
    })
}

/// A parsed head: the start line's three parts and the headers in order.
pub struct Head {
    /// Request: method, target, version. Response: version, status, reason.
    pub start: [String; 3],
    pub headers: Vec<(String, Vec<u8>)>,
}

impl Head {
    /// Parse the bytes [`read_head`] returned.
    pub fn parse(raw: &[u8], what: Message) -> Result<Head, HeadError> {
        let mut lines = raw
            .split(|b| *b == b'\n')
            .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
        let first = lines.next().unwrap_or_default();
        let start = start_line(first, what)?;
        let mut headers = Vec::new();
        for line in lines.take_while(|l| !l.is_empty()) {
            if line[0] == b' ' || line[0] == b'\t' {
                return Err(HeadError::Malformed("folded header lines are not accepted"));
            }
            let colon = line
                .iter()
                .position(|b| *b == b':')
                .ok_or(HeadError::Malformed("a header line has no `:`"))?;
            let name = &line[..colon];
            if name.is_empty() || !name.iter().all(|b| is_token(*b)) {
                return Err(HeadError::Malformed("a header name is not a token"));
            }
            let value = line[colon + 1..].trim_ascii();
            // Names are ASCII tokens, checked above.
            headers.push((String::from_utf8_lossy(name).into_owned(), value.to_vec()));
        }
        Ok(Head { start, headers })
    }

    /// The head's bytes with `start` as its first line, without the
    /// hop-by-hop headers (those `Connection` names, `Connection`,
    /// `Keep-Alive`, `TE`, `Upgrade`, `Proxy-*`) and without any header in
    /// `replaced`, then `extra` headers and `Connection: close`.
    pub fn rewrite(&self, start: &str, replaced: &[&str], extra: &[(&str, &str)]) -> Vec<u8> {
        let listed: Vec<String> = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
            .flat_map(|(_, v)| {
                String::from_utf8_lossy(v)
                    .split(',')
                    .map(|token| token.trim().to_ascii_lowercase())
                    .collect::<Vec<_>>()
            })
            .collect();
        let dropped = |name: &str| {
            let lower = name.to_ascii_lowercase();
            lower.starts_with("proxy-")
                || ["connection", "keep-alive", "te", "upgrade"].contains(&lower.as_str())
                || listed.contains(&lower)
                || replaced.iter().any(|r| r.eq_ignore_ascii_case(name))
        };
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(start.as_bytes());
        out.extend_from_slice(b"\r\n");
        for (name, value) in self.headers.iter().filter(|(n, _)| !dropped(n)) {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        for (name, value) in extra {
            out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        out.extend_from_slice(b"Connection: close\r\n\r\n");
        out
    }
}

/// Which kind of message a head starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    Request,
    Response,
}

fn start_line(line: &[u8], what: Message) -> Result<[String; 3], HeadError> {
    let text = std::str::from_utf8(line)
        .ok()
        .filter(|t| t.is_ascii())
        .ok_or(HeadError::Malformed("the first line is not ASCII"))?;
    match what {
        Message::Request => {
            let mut parts = text.split(' ');
            let (Some(method), Some(target), Some(version), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(HeadError::Malformed(
                    "the request line is not `METHOD target HTTP/1.1`",
                ));
            };
            if method.is_empty() || !method.bytes().all(is_token) || target.is_empty() {
                return Err(HeadError::Malformed(
                    "the request line is not `METHOD target HTTP/1.1`",
                ));
            }
            if !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
                return Err(HeadError::Malformed(
                    "only HTTP/1.0 and HTTP/1.1 are spoken",
                ));
            }
            Ok([method.into(), target.into(), version.into()])
        }
        Message::Response => {
            let mut parts = text.splitn(3, ' ');
            let (Some(version), Some(status)) = (parts.next(), parts.next()) else {
                return Err(HeadError::Malformed(
                    "the status line is not `HTTP/1.1 200 OK`",
                ));
            };
            let reason = parts.next().unwrap_or_default();
            if !version.starts_with("HTTP/1.")
                || status.len() != 3
                || !status.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(HeadError::Malformed(
                    "the status line is not `HTTP/1.1 200 OK`",
                ));
            }
            Ok([version.into(), status.into(), reason.into()])
        }
    }
}

/// A character of an HTTP token (method, header name).
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(bytes: &[u8]) -> Result<RawHead, HeadError> {
        let mut reader = bytes;
        read_head(&mut reader, Vec::new()).await
    }

    #[tokio::test]
    async fn a_head_ends_at_the_blank_line_and_keeps_what_follows() {
        let raw = read(b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n\x16\x03hello")
            .await
            .unwrap();
        assert_eq!(raw.rest, b"\x16\x03hello");
        let head = Head::parse(&raw.head, Message::Request).unwrap();
        assert_eq!(head.start, ["CONNECT", "a:443", "HTTP/1.1"]);
        assert_eq!(head.headers, [("Host".to_string(), b"a:443".to_vec())]);
        let raw = read(b"GET http://a/ HTTP/1.0\nX: y\n\nbody").await.unwrap();
        assert_eq!(raw.rest, b"body");
    }

    #[tokio::test]
    async fn bad_heads_are_errors_not_panics() {
        assert!(matches!(
            read(b"GET / HTTP/1.1\r\n").await,
            Err(HeadError::Closed)
        ));
        let long = [
            b"GET / HTTP/1.1\r\nX: ".as_slice(),
            &vec![b'a'; MAX_HEAD + 10],
        ]
        .concat();
        assert!(matches!(read(&long).await, Err(HeadError::TooLong)));
        for bad in [
            "\r\n\r\n",
            "GET\r\n\r\n",
            "GET  / HTTP/1.1\r\n\r\n",
            "GET / HTTP/2\r\n\r\n",
            "G(T / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1 extra\r\n\r\n",
            "GET / HTTP/1.1\r\nno colon\r\n\r\n",
            "GET / HTTP/1.1\r\n: empty\r\n\r\n",
            "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
            "GÉT / HTTP/1.1\r\n\r\n",
        ] {
            assert!(
                Head::parse(bad.as_bytes(), Message::Request).is_err(),
                "{bad:?}"
            );
        }
        assert!(Head::parse(b"HTTP/1.1 2x0 OK\r\n\r\n", Message::Response).is_err());
        assert!(Head::parse(b"HTTP/1.1 204\r\n\r\n", Message::Response).is_ok());
    }

    #[test]
    fn a_rewrite_drops_hop_by_hop_and_proxy_headers() {
        let head = Head::parse(
            b"GET http://a/x HTTP/1.1\r\nHost: evil\r\nProxy-Authorization: Basic eA==\r\n\
              Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n\
              Keep-Alive: 5\r\nAccept: */*\r\n\r\n",
            Message::Request,
        )
        .unwrap();
        let out = head.rewrite("GET /x HTTP/1.1", &["host"], &[("Host", "a")]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET /x HTTP/1.1\r\nAccept: */*\r\nHost: a\r\nConnection: close\r\n\r\n"
        );
    }
}
