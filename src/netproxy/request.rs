//! What a client asks the proxy for, read from its request head.
//!
//! The proxy serves two kinds of request, the two that HTTP clients send
//! when `HTTP_PROXY`/`HTTPS_PROXY` point at a proxy: `CONNECT host:port`
//! (a tunnel, for https and anything else over TCP) and a request whose
//! target is an absolute `http://` URL (forwarded to the origin in origin
//! form). Everything else is refused here with a reason the client is
//! shown. The host is put in its one canonical spelling before anything
//! judges it.

use reqwest::Url;

use super::address::canonical_host;
use super::head::Head;

/// A request the proxy serves.
pub struct Request {
    /// Canonical (see [`canonical_host`]).
    pub host: String,
    pub port: u16,
    pub kind: RequestKind,
}

pub enum RequestKind {
    /// `CONNECT host:port`: a tunnel once the origin answers.
    Tunnel,
    /// An absolute-form request, to send on as `start` (origin form) with
    /// `Host: authority`.
    Forward { start: String, authority: String },
}

impl Request {
    /// The request `head` asks for, or why the proxy does not serve it.
    pub fn from_head(head: &Head) -> Result<Request, &'static str> {
        let [method, target, version] = &head.start;
        if method == "CONNECT" {
            let (host, port) = authority(target)
                .ok_or("CONNECT takes `host:port`, for example `CONNECT crates.io:443`")?;
            return Ok(Request {
                host,
                port,
                kind: RequestKind::Tunnel,
            });
        }
        let scheme = target
            .split_once("://")
            .map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("http") => {}
            Some("https") => {
                return Err("an https:// URL goes through this proxy as `CONNECT host:443`");
            }
            _ => {
                return Err(
                    "this is agentci's network proxy: it serves `CONNECT host:port` and \
                            requests for an absolute `http://` URL (point HTTP_PROXY and \
                            HTTPS_PROXY at it)",
                );
            }
        }
        let url = Url::parse(target).map_err(|_| "the request's target is not a URL")?;
        let host = url
            .host_str()
            .and_then(canonical_host)
            .ok_or("the request's URL has no host")?;
        let port = url.port_or_known_default().unwrap_or(80);
        let mut path = url.path().to_string();
        if let Some(query) = url.query() {
            path.push('?');
            path.push_str(query);
        }
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.clone(),
        };
        Ok(Request {
            host,
            port,
            kind: RequestKind::Forward {
                start: format!("{method} {path} {version}"),
                authority,
            },
        })
    }
}

/// `host:port` or `[v6]:port` with a port from 1 to 65535.
fn authority(target: &str) -> Option<(String, u16)> {
    let (host, port) = target.rsplit_once(':')?;
    if host.contains(':') && !host.starts_with('[') {
        return None;
    }
    let port = port.parse::<u16>().ok().filter(|p| *p > 0)?;
    Some((canonical_host(host)?, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netproxy::head::Message;

    fn request(head: &str) -> Result<Request, &'static str> {
        Request::from_head(&Head::parse(head.as_bytes(), Message::Request).unwrap())
    }

    #[test]
    fn connect_and_absolute_requests_are_read_others_refused() {
        let tunnel = request("CONNECT Crates.IO.:443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((tunnel.host.as_str(), tunnel.port), ("crates.io", 443));
        let tunnel = request("CONNECT [::1]:9000 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((tunnel.host.as_str(), tunnel.port), ("[::1]", 9000));
        let forward = request("POST http://Registry.test:8080/a/b?c=d HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(
            (forward.host.as_str(), forward.port),
            ("registry.test", 8080)
        );
        let RequestKind::Forward { start, authority } = forward.kind else {
            panic!("not a forward")
        };
        assert_eq!(start, "POST /a/b?c=d HTTP/1.1");
        assert_eq!(authority, "registry.test:8080");
        let forward = request("GET http://a.test HTTP/1.0\r\n\r\n").unwrap();
        let RequestKind::Forward { start, authority } = forward.kind else {
            panic!("not a forward")
        };
        assert_eq!(
            (start.as_str(), authority.as_str()),
            ("GET / HTTP/1.0", "a.test")
        );
        for bad in [
            "GET / HTTP/1.1\r\n\r\n",
            "GET https://a.test/ HTTP/1.1\r\n\r\n",
            "GET ftp://a.test/ HTTP/1.1\r\n\r\n",
            "GET http:// HTTP/1.1\r\n\r\n",
            "CONNECT a.test HTTP/1.1\r\n\r\n",
            "CONNECT a.test:0 HTTP/1.1\r\n\r\n",
            "CONNECT a.test:99999 HTTP/1.1\r\n\r\n",
            "CONNECT ::1:443 HTTP/1.1\r\n\r\n",
            "CONNECT a/b:443 HTTP/1.1\r\n\r\n",
            "CONNECT *.a.test:443 HTTP/1.1\r\n\r\n",
        ] {
            assert!(request(bad).is_err(), "{bad:?}");
        }
    }
}
