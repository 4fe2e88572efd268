//! A git server over real TLS for the tests of git over `https://`: the
//! installed git's `git http-backend` (the CGI program git's own smart HTTP
//! servers run) behind a rustls listener on 127.0.0.1 whose certificate the
//! test CA (`tests/data/tls/ca.pem`) issued. It records every request: the
//! method, the path with its query, and the basic-auth user, if any.
//!
//! Like a git host it answers `401` with `WWW-Authenticate: Basic` when it
//! wants credentials it did not get (or got wrong), and passes the checked
//! user to the backend as `REMOTE_USER`
//! (<https://git-scm.com/docs/git-http-backend#_authentication>). It can
//! also stand in for a server that is not git (an HTML page) or one that
//! redirects elsewhere.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::tls_server::{TlsServer, tls_data};

/// The test CA's bundle, and one that did not issue the server's certificate.
pub fn ca_bundle(trusted: bool) -> String {
    let name = if trusted { "ca.pem" } else { "other-ca.pem" };
    tls_data(name).display().to_string()
}

/// How the server answers.
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// `git http-backend` on the bare repositories under the root; with
    /// `Some((user, password))`, only for requests carrying them.
    Git(Option<(String, String)>),
    /// `200 OK` with an HTML page, for every request.
    Html,
    /// `302 Found` to this URL, for every request.
    Redirect(String),
}

/// One request as the server saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    /// The path and query.
    pub target: String,
    /// The basic-auth user name, when an `Authorization: Basic` came.
    pub user: Option<String>,
    /// The whole `Authorization` header value, to look for a token in.
    pub authorization: Option<String>,
}

pub struct GitHttps {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    _server: TlsServer,
}

impl GitHttps {
    /// Serve the repositories under `root` (`https://127.0.0.1:PORT/NAME.git`).
    pub fn start(root: &Path, behaviour: Behaviour) -> GitHttps {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let root = root.to_path_buf();
        let server = TlsServer::start(move |mut tls| {
            let (log, root, behaviour) = (Arc::clone(&log), root.clone(), behaviour.clone());
            async move {
                // One request per connection (`Connection: close`).
                if let Some(request) = read_request(&mut tls).await {
                    let answer = answer(&request, &root, &behaviour).await;
                    log.lock().unwrap().push(request.seen);
                    let _ = tls.write_all(&answer).await;
                    let _ = tls.shutdown().await;
                }
            }
        });
        GitHttps {
            addr: server.addr,
            seen,
            _server: server,
        }
    }

    /// `https://127.0.0.1:PORT/name`.
    pub fn url(&self, name: &str) -> String {
        format!("https://127.0.0.1:{}/{name}", self.addr.port())
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

struct Request {
    seen: Seen,
    password: Option<String>,
    content_type: Option<String>,
    body: Vec<u8>,
}

/// One HTTP/1.1 request with a `Content-Length` body (what the client
/// under test sends), or `None` when the connection ends first.
async fn read_request<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> Option<Request> {
    let mut data = Vec::new();
    let mut buf = [0u8; 16384];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let mut length = 0;
    let (mut authorization, mut content_type) = (None, None);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().to_string();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().ok()?,
            "authorization" => authorization = Some(value),
            "content-type" => content_type = Some(value),
            _ => {}
        }
    }
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    let (user, password) = match authorization
        .as_deref()
        .and_then(|value| value.strip_prefix("Basic "))
        .and_then(|b64| data_encoding::BASE64.decode(b64.as_bytes()).ok())
        .and_then(|pair| String::from_utf8(pair).ok())
        .and_then(|pair| {
            pair.split_once(':')
                .map(|(u, p)| (u.to_string(), p.to_string()))
        }) {
        Some((user, password)) => (Some(user), Some(password)),
        None => (None, None),
    };
    Some(Request {
        seen: Seen {
            method,
            target,
            user,
            authorization,
        },
        password,
        content_type,
        body,
    })
}

fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

async fn answer(request: &Request, root: &Path, behaviour: &Behaviour) -> Vec<u8> {
    let wanted = match behaviour {
        Behaviour::Html => {
            return response(
                "200 OK",
                &[("Content-Type", "text/html; charset=utf-8")],
                b"<html><body>Sign in</body></html>",
            );
        }
        Behaviour::Redirect(to) => return response("302 Found", &[("Location", to)], b""),
        Behaviour::Git(wanted) => wanted,
    };
    let remote_user = match wanted {
        None => None,
        Some((user, password))
            if request.seen.user.as_ref() == Some(user)
                && request.password.as_ref() == Some(password) =>
        {
            Some(user.clone())
        }
        Some(_) => {
            return response(
                "401 Unauthorized",
                &[("WWW-Authenticate", "Basic realm=\"git\"")],
                b"",
            );
        }
    };
    let (path, query) = request
        .seen
        .target
        .split_once('?')
        .unwrap_or((&request.seen.target, ""));
    let mut backend = tokio::process::Command::new("git");
    backend
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        // Pushes without a checked user are refused unless this is on.
        .env("GIT_CONFIG_COUNT", "2")
        .env("GIT_CONFIG_KEY_0", "http.receivepack")
        .env("GIT_CONFIG_VALUE_0", "true")
        .env("GIT_CONFIG_KEY_1", "safe.directory")
        .env("GIT_CONFIG_VALUE_1", "*")
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("REQUEST_METHOD", &request.seen.method)
        .env(
            "CONTENT_TYPE",
            request.content_type.as_deref().unwrap_or(""),
        )
        .env("CONTENT_LENGTH", request.body.len().to_string())
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(user) = remote_user {
        backend.env("REMOTE_USER", user);
    }
    let mut child = backend.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let body = request.body.clone();
    let feed = tokio::spawn(async move {
        let _ = stdin.write_all(&body).await;
    });
    let output = child.wait_with_output().await.unwrap();
    let _ = feed.await;
    cgi_to_http(&output.stdout)
}

/// A CGI answer (headers, `Status:` among them, a blank line, the body) as
/// an HTTP/1.1 response.
fn cgi_to_http(cgi: &[u8]) -> Vec<u8> {
    let (head, body) = match cgi.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(at) => (&cgi[..at], &cgi[at + 4..]),
        None => match cgi.windows(2).position(|w| w == b"\n\n") {
            Some(at) => (&cgi[..at], &cgi[at + 2..]),
            None => (cgi, &[][..]),
        },
    };
    let head = String::from_utf8_lossy(head);
    let mut status = "200 OK".to_string();
    let mut headers = Vec::new();
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().to_string();
        if name.eq_ignore_ascii_case("status") {
            status = value;
        } else if !name.eq_ignore_ascii_case("content-length") {
            headers.push((name.to_string(), value));
        }
    }
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    response(&status, &headers, body)
}
