//! git over `https://` on agentci's own TLS: a smart-HTTP subtransport for
//! libgit2 that moves its bytes with reqwest and the rustls configuration
//! of [`crate::tls`], so git and the model share one TLS stack, one CA
//! bundle (`SSL_CERT_FILE` / `SSL_CERT_DIR`, read on the first handshake)
//! and libgit2 links no OpenSSL (whose start-up parsed the whole bundle on
//! libgit2's first call, even for a local repository).
//!
//! The protocol is git's stateless smart HTTP: `GET <url>/info/refs?
//! service=git-<service>` for the refs, then one `POST <url>/git-<service>`
//! per exchange whose body is what libgit2 wrote before its first read.
//! Each answer's content type is checked as git checks it, so a server that
//! is not git says so. No redirect is followed, so credentials never leave
//! the server named.
//!
//! libgit2 does not call the credential callback for a custom transport:
//! a push lends its token to the transport with [`with_token`], on the
//! push's own thread (libgit2 creates the transport on the thread that
//! pushes), and the transport sends it as basic auth only to the pinned
//! URL's scheme, host and port. Nothing global holds it, so pushes and
//! fetches on other threads (eval runs several) never see it.
//!
//! libgit2 reads and writes synchronously on the caller's thread, which
//! may be a plain thread, a `spawn_blocking` thread or a Tokio worker (an
//! eval attempt loading its skill): the requests run on a small runtime of
//! the transport's own, and the caller waits on a std channel, which never
//! enters a Tokio runtime.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use reqwest::{StatusCode, Url};

use super::{CONNECT_TIMEOUT_MS, SERVER_TIMEOUT_MS};

/// Make libgit2 send `https://` remotes through this transport. Called
/// once, under the `Once` of [`super::ensure_network_setup`].
pub(super) fn register() {
    // SAFETY: `git_transport_register` appends to libgit2's global list of
    // custom transports without a lock, and every connect to a remote reads
    // that list. This runs under the `Once` that every network operation of
    // agentci (a push, a skill clone or fetch) passes before it connects,
    // so the write happens before any read; local operations (status,
    // commit, checkout) never read the list, and nothing else registers a
    // transport. It fails only for a prefix already registered, which the
    // `Once` rules out; then libgit2's own `https` (without TLS) would say
    // that it cannot connect.
    unsafe {
        let _ = git2::transport::register("https", factory);
    }
}

/// What a push lends the transport for its duration on this thread.
struct Lent {
    /// The pinned URL: the token goes only to its scheme, host and port.
    pinned: String,
    token: Option<String>,
    /// Whether the server answered 401 (it wants credentials).
    asked: AtomicBool,
}

thread_local! {
    static LENT: RefCell<Option<Arc<Lent>>> = const { RefCell::new(None) };
}

/// Run `push` with `token` lent to the https transport of this thread, for
/// the server of `pinned` only; also returns whether the server asked for
/// credentials (answered 401).
pub(super) fn with_token<R>(
    pinned: &str,
    token: Option<&str>,
    push: impl FnOnce() -> R,
) -> (R, bool) {
    /// Takes the token back even when `push` unwinds.
    struct Return;
    impl Drop for Return {
        fn drop(&mut self) {
            LENT.with(|lent| lent.borrow_mut().take());
        }
    }
    let lent = Arc::new(Lent {
        pinned: pinned.to_string(),
        token: token.map(str::to_string),
        asked: AtomicBool::new(false),
    });
    LENT.with(|slot| *slot.borrow_mut() = Some(Arc::clone(&lent)));
    let returned = Return;
    let result = push();
    drop(returned);
    (result, lent.asked.load(Ordering::SeqCst))
}

/// Whether a server at `asked` is the pinned URL's (same scheme, host and
/// port): anything else gets no token.
pub(super) fn same_server(asked: &str, pinned: &str) -> bool {
    match (Url::parse(asked), Url::parse(pinned)) {
        (Ok(a), Ok(p)) => {
            a.scheme() == p.scheme()
                && a.host_str() == p.host_str()
                && a.port_or_known_default() == p.port_or_known_default()
        }
        _ => asked == pinned,
    }
}

fn factory(remote: &git2::Remote<'_>) -> Result<Transport, git2::Error> {
    let lent = LENT.with(|lent| lent.borrow().clone());
    let client = client(millis(CONNECT_TIMEOUT_MS), millis(SERVER_TIMEOUT_MS))
        .map_err(|e| git2::Error::from_str(&format!("cannot set up the HTTPS client: {e}")))?;
    Transport::smart(remote, true, Https { client, lent })
}

/// The client of one remote connection: the shared TLS and proxy rules,
/// a connect and a read timeout, no redirects.
fn client(connect: Duration, read: Duration) -> reqwest::Result<reqwest::Client> {
    crate::tls::client_builder()
        .user_agent(concat!("git/2.0 (agentci ", env!("CARGO_PKG_VERSION"), ")"))
        .connect_timeout(connect)
        .read_timeout(read)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

fn millis(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// The subtransport of one remote connection.
struct Https {
    client: reqwest::Client,
    lent: Option<Arc<Lent>>,
}

impl SmartSubtransport for Https {
    fn action(
        &self,
        url: &str,
        action: Service,
    ) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let remote = Url::parse(url).map_err(|e| {
            git2::Error::from_str(&format!("the remote's URL is not a valid URL: {e}"))
        })?;
        // Credentials in the URL, as libgit2 used them; else the lent token
        // for the pinned server only.
        let auth = url_credentials(&remote).or_else(|| {
            let lent = self.lent.as_ref()?;
            let token = lent.token.as_ref()?;
            same_server(url, &lent.pinned).then(|| ("x-access-token".to_string(), token.clone()))
        });
        Ok(Box::new(Exchange::new(
            self.client.clone(),
            &remote,
            action,
            auth,
            self.lent.clone(),
        )))
    }

    fn close(&self) -> Result<(), git2::Error> {
        Ok(())
    }
}

/// The user name and password written in `url`, percent-decoded.
fn url_credentials(url: &Url) -> Option<(String, String)> {
    let password = url.password()?;
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .into_owned()
    };
    Some((decode(url.username()), decode(password)))
}

/// `scheme://host:port` of `url`, for messages: never its credentials,
/// path or query.
fn origin(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

/// Where an exchange goes: `<remote>/info/refs?service=git-<service>` for
/// the advertisement, else `<remote>/git-<service>`; without the URL's
/// credentials (sent as a header, when at all) and fragment.
fn endpoint(remote: &Url, service: &str, advertisement: bool) -> Url {
    let mut url = remote.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_fragment(None);
    let base = remote.path().trim_end_matches('/').to_string();
    if advertisement {
        url.set_path(&format!("{base}/info/refs"));
        url.set_query(Some(&format!("service=git-{service}")));
    } else {
        url.set_path(&format!("{base}/git-{service}"));
        url.set_query(None);
    }
    url
}

/// Whether `content_type` (as a server sent it, parameters and case
/// aside) is `expected`.
fn content_type_is(content_type: Option<&str>, expected: &str) -> bool {
    content_type.is_some_and(|value| {
        value
            .split(';')
            .next()
            .is_some_and(|mime| mime.trim().eq_ignore_ascii_case(expected))
    })
}

/// One request and its answer: what libgit2 writes is the body, sent on
/// its first read; what it reads is the answer's body.
struct Exchange {
    client: reqwest::Client,
    url: Url,
    origin: String,
    service: &'static str,
    advertisement: bool,
    auth: Option<(String, String)>,
    lent: Option<Arc<Lent>>,
    body: Vec<u8>,
    response: Option<reqwest::Response>,
    pending: Bytes,
    sent: bool,
}

impl Exchange {
    fn new(
        client: reqwest::Client,
        remote: &Url,
        action: Service,
        auth: Option<(String, String)>,
        lent: Option<Arc<Lent>>,
    ) -> Exchange {
        let service = match action {
            Service::UploadPackLs | Service::UploadPack => "upload-pack",
            Service::ReceivePackLs | Service::ReceivePack => "receive-pack",
        };
        let advertisement = matches!(action, Service::UploadPackLs | Service::ReceivePackLs);
        Exchange {
            client,
            url: endpoint(remote, service, advertisement),
            origin: origin(remote),
            service,
            advertisement,
            auth,
            lent,
            body: Vec::new(),
            response: None,
            pending: Bytes::new(),
            sent: false,
        }
    }

    fn send(&mut self) -> io::Result<()> {
        self.sent = true;
        let service = self.service;
        let request = if self.advertisement {
            self.client.get(self.url.clone())
        } else {
            self.client
                .post(self.url.clone())
                .header(CONTENT_TYPE, format!("application/x-git-{service}-request"))
                .header(ACCEPT, format!("application/x-git-{service}-result"))
                .body(std::mem::take(&mut self.body))
        };
        let request = match &self.auth {
            Some((user, password)) => request.basic_auth(user, Some(password)),
            None => request,
        };
        // Sent inside the runtime: reqwest arms its timers when the request
        // starts, which needs a runtime's timer.
        let response = wait(async move { request.send().await })?.map_err(|e| self.failed(e))?;
        self.check(&response)?;
        self.response = Some(response);
        Ok(())
    }

    /// The answer is git's: a success with the content type git expects.
    fn check(&self, response: &reqwest::Response) -> io::Result<()> {
        let origin = &self.origin;
        let status = response.status();
        if status.is_redirection() {
            let to = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|location| self.url.join(location).ok())
                .map(|target| origin_and_path(&target))
                .unwrap_or_else(|| "another URL".to_string());
            return Err(refused(format!(
                "{origin} redirected to {to} ({}); agentci follows no redirects for git, so \
                 credentials stay with the server named: set the remote to the URL it \
                 redirects to",
                status_text(status)
            )));
        }
        if status == StatusCode::UNAUTHORIZED
            && let Some(lent) = &self.lent
        {
            lent.asked.store(true, Ordering::SeqCst);
        }
        if !status.is_success() {
            let fix = match status {
                StatusCode::UNAUTHORIZED => "",
                StatusCode::FORBIDDEN => "; the credentials lack access to the repository",
                StatusCode::NOT_FOUND => {
                    "; check the remote's URL (a private repository also answers 404 without \
                     credentials)"
                }
                _ => "",
            };
            return Err(refused(format!(
                "{origin} answered {}{fix}",
                status_text(status)
            )));
        }
        let kind = if self.advertisement {
            "advertisement"
        } else {
            "result"
        };
        let expected = format!("application/x-git-{}-{kind}", self.service);
        let got = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if !content_type_is(got.as_deref(), &expected) {
            let what = if self.advertisement {
                "info/refs".to_string()
            } else {
                format!("git-{}", self.service)
            };
            let got = got.map_or_else(|| "no content type".to_string(), |got| format!("`{got}`"));
            return Err(refused(format!(
                "{origin} is not a git server: its {what} answered with {got}, not `{expected}` \
                 (git's smart HTTP protocol); check the remote's URL"
            )));
        }
        Ok(())
    }

    /// A request that got no answer, named by what the user can change.
    fn failed(&self, error: reqwest::Error) -> io::Error {
        let origin = &self.origin;
        let timeout = error.is_timeout();
        let connect = error.is_connect();
        let error = error.without_url();
        let mut root = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            root = cause.to_string();
            source = cause.source();
        }
        let message = if root.contains("certificate") {
            format!(
                "cannot trust {origin}'s certificate ({root}); if a private CA signed it, set \
                 SSL_CERT_FILE (or SSL_CERT_DIR) to a bundle that holds that CA"
            )
        } else if timeout {
            format!(
                "{origin} did not answer in time (connect {} s, then {} s between reads); \
                 check that the server is up and reachable from here",
                CONNECT_TIMEOUT_MS / 1000,
                SERVER_TIMEOUT_MS / 1000
            )
        } else if connect {
            format!(
                "cannot connect to {origin} ({root}); check the remote's URL and that the \
                 server is up"
            )
        } else {
            format!("the request to {origin} failed ({root})")
        };
        io::Error::other(message)
    }
}

fn refused(message: String) -> io::Error {
    io::Error::other(message)
}

fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// `scheme://host:port/path` of a redirect's target: no credentials or query.
fn origin_and_path(url: &Url) -> String {
    format!("{}{}", origin(url), url.path())
}

impl Read for Exchange {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.sent {
            self.send()?;
        }
        while self.pending.is_empty() {
            let Some(mut response) = self.response.take() else {
                return Ok(0);
            };
            let (response, chunk) = wait(async move {
                let chunk = response.chunk().await;
                (response, chunk)
            })?;
            match chunk.map_err(|e| self.failed(e))? {
                Some(chunk) => {
                    self.pending = chunk;
                    self.response = Some(response);
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending.split_to(n));
        Ok(n)
    }
}

impl Write for Exchange {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.sent {
            return Err(io::Error::other(
                "libgit2 wrote to an https request already sent",
            ));
        }
        self.body.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Run `work` on the transport's runtime and wait for it on this thread
/// with a std channel: safe on any thread, inside a Tokio runtime or not.
fn wait<F>(work: F) -> io::Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let runtime = runtime()?;
    let (done, result) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = done.send(work.await);
    });
    // The client's timeouts bound the wait; a task that ended without an
    // answer (the runtime going away) drops `done`.
    result
        .recv()
        .map_err(|_| io::Error::other("the HTTPS request was dropped before it finished"))
}

/// The runtime https requests of git run on, made on the first one: one
/// worker thread, which drives every request while their callers wait.
fn runtime() -> io::Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("agentci-git-https")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| io::Error::other(format!("cannot start the HTTPS client for git: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_only_to_the_pinned_server() {
        let pinned = "https://github.com/o/r.git";
        assert!(same_server("https://github.com/o/renamed.git", pinned));
        assert!(same_server("https://github.com:443/o/r.git", pinned));
        assert!(!same_server("https://evil.example/o/r.git", pinned));
        assert!(!same_server("http://github.com/o/r.git", pinned));
        assert!(!same_server("https://github.com:8443/o/r.git", pinned));
        assert!(same_server("/srv/r.git", "/srv/r.git"));
        assert!(!same_server("/srv/other.git", "/srv/r.git"));
    }

    #[test]
    fn endpoints_follow_the_remote_without_its_credentials() {
        let remote = Url::parse("https://me:secret@git.example:8443/o/r.git/#frag").unwrap();
        assert_eq!(
            endpoint(&remote, "upload-pack", true).as_str(),
            "https://git.example:8443/o/r.git/info/refs?service=git-upload-pack"
        );
        assert_eq!(
            endpoint(&remote, "receive-pack", false).as_str(),
            "https://git.example:8443/o/r.git/git-receive-pack"
        );
        let plain = Url::parse("https://git.example/r").unwrap();
        assert_eq!(
            endpoint(&plain, "receive-pack", true).as_str(),
            "https://git.example/r/info/refs?service=git-receive-pack"
        );
        assert_eq!(origin(&remote), "https://git.example:8443");
        assert_eq!(origin(&plain), "https://git.example");
        assert_eq!(
            url_credentials(&Url::parse("https://a%40b:p%2Fw@h/r").unwrap()),
            Some(("a@b".to_string(), "p/w".to_string()))
        );
        assert_eq!(url_credentials(&plain), None);
    }

    #[test]
    fn content_types_are_compared_as_git_compares_them() {
        let expected = "application/x-git-upload-pack-advertisement";
        assert!(content_type_is(Some(expected), expected));
        assert!(content_type_is(
            Some("Application/X-Git-Upload-Pack-Advertisement; charset=utf-8"),
            expected
        ));
        assert!(!content_type_is(Some("text/html"), expected));
        assert!(!content_type_is(
            Some("application/x-git-receive-pack-advertisement"),
            expected
        ));
        assert!(!content_type_is(None, expected));
    }

    /// The token lent to a push is seen on its thread only, and taken back.
    #[test]
    fn a_lent_token_stays_on_its_thread() {
        let seen = |_: ()| LENT.with(|lent| lent.borrow().as_ref().and_then(|l| l.token.clone()));
        let ((here, there), asked) = with_token("https://h/r", Some("tok"), || {
            let there = std::thread::spawn(move || seen(())).join().unwrap();
            (seen(()), there)
        });
        assert_eq!(here.as_deref(), Some("tok"));
        assert_eq!(there, None);
        assert!(!asked);
        assert_eq!(seen(()), None);
    }

    /// A server that accepts and then says nothing is given up on after the
    /// read timeout, and the message names the server and what to check.
    #[test]
    fn a_server_that_never_answers_is_given_up_on() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let held = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_secs(2));
            drop(stream);
        });
        let client = client(Duration::from_secs(5), Duration::from_millis(300)).unwrap();
        let remote = Url::parse(&format!("http://127.0.0.1:{port}/r.git")).unwrap();
        let mut exchange = Exchange::new(client, &remote, Service::UploadPackLs, None, None);
        let started = std::time::Instant::now();
        let error = exchange.read(&mut [0; 64]).unwrap_err().to_string();
        assert!(started.elapsed() < Duration::from_secs(2), "{error}");
        assert_eq!(
            error,
            format!(
                "http://127.0.0.1:{port} did not answer in time (connect 30 s, then 60 s \
                 between reads); check that the server is up and reachable from here"
            )
        );
        held.join().unwrap();
    }

    /// A transport call made on a Tokio worker (an eval attempt loading its
    /// skill) waits without entering a runtime of its own.
    #[test]
    fn waiting_works_inside_and_outside_a_runtime() {
        assert_eq!(wait(async { 1 }).unwrap(), 1);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(runtime.block_on(async { wait(async { 2 }).unwrap() }), 2);
    }
}
