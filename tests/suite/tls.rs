//! TLS of the HTTP clients, end to end: the real binary against the fake
//! model behind a local TLS server whose certificate a test CA issued
//! (`tests/data/tls/`). The system's CA bundle (here `SSL_CERT_FILE`) is
//! read only when a certificate is to be checked: a run against an
//! `http://` model starts even when the bundle cannot be read, and a run
//! against `https://` trusts what the bundle trusts and nothing else.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, read_jsonl, stderr};
use super::support::tls_server::{TlsServer, tls_data};
use super::support::trace_schema::assert_valid_trace;

/// A TLS server on 127.0.0.1 that forwards each connection, decrypted, to
/// `backend`, and counts the handshakes that completed.
struct TlsFront {
    addr: SocketAddr,
    handshakes: Arc<AtomicUsize>,
    _server: TlsServer,
}

impl TlsFront {
    fn start(backend: SocketAddr) -> TlsFront {
        let handshakes = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&handshakes);
        let server = TlsServer::start(move |mut tls| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move {
                let mut plain = tokio::net::TcpStream::connect(backend).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            }
        });
        TlsFront {
            addr: server.addr,
            handshakes,
            _server: server,
        }
    }

    fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }
}

/// A short successful session: plan, read the file, step done, summary.
fn session() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Read the greeting", "its text is known")]),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))]),
        Reply::step_done("read it"),
        Reply::text("The greeting says hello world."),
    ]
}

fn sandbox(base_url: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.write("ws/greeting.txt", "hello world\n");
    sb.skill("reader", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: tls-check\nskill: reader\ngoal: Read greeting.txt.\n\
             model:\n  provider: openai\n  name: gpt-test\n  base_url: {base_url}\n  \
             request_timeout: 5s\n  \
             retry: {{max_attempts_connect: 1, initial_backoff: 10ms, max_backoff: 40ms}}\n\
             tools: [read]\nworkspace: ws\nskills_path: [skills]\n\
             permissions:\n  default: deny\n  allow: [read]\n"
        ),
    );
    sb
}

/// Runs the job with `SSL_CERT_FILE` set to `bundle` (and no `SSL_CERT_DIR`).
fn run(sb: &Sandbox, bundle: &str) -> Output {
    agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--progress",
            "none",
        ],
        &[("SSL_CERT_FILE", bundle), ("SSL_CERT_DIR", "")],
    )
}

/// A model on `http://` is reached without the CA bundle: the run passes
/// with `SSL_CERT_FILE` naming no file. (Before the bundle was read lazily
/// this passed too, but only because libgit2's start-up had already
/// replaced the variable with the system's bundle; the read itself is what
/// `benches/run_floor.rs` and callgrind show gone.)
#[test]
fn an_http_model_is_reached_without_reading_the_ca_bundle() {
    let model = FakeModel::start(session());
    let sb = sandbox(&model.base_url());
    let out = run(&sb, "/nonexistent/agentci-test/ca-bundle.pem");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(model.requests().len(), 4);
    assert_valid_trace(&sb.path().join("out/trace.jsonl"));
}

#[test]
fn an_https_model_is_reached_when_the_bundle_trusts_its_certificate() {
    let model = FakeModel::start(session());
    let front = TlsFront::start(model.addr());
    let sb = sandbox(&format!("https://127.0.0.1:{}/v1", front.addr.port()));
    let out = run(&sb, tls_data("ca.pem").to_str().unwrap());
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(model.requests().len(), 4, "every request went through TLS");
    assert!(front.handshakes() >= 1);
    let path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&path);
    let trace = read_jsonl(&path);
    assert_eq!(events(&trace, "model.response").len(), 4);
}

#[test]
fn an_https_model_whose_certificate_the_bundle_does_not_trust_is_refused() {
    let model = FakeModel::start(session());
    let front = TlsFront::start(model.addr());
    let sb = sandbox(&format!("https://127.0.0.1:{}/v1", front.addr.port()));
    let out = run(&sb, tls_data("other-ca.pem").to_str().unwrap());
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "stderr: {err}");
    assert!(model.requests().is_empty(), "nothing reached the model");
    assert_eq!(front.handshakes(), 0);
    assert!(
        err.contains("certificate") || err.contains("UnknownIssuer"),
        "the refusal says why: {err}"
    );
    assert_valid_trace(&sb.path().join("out/trace.jsonl"));
}

/// Every HTTP client goes through `agentci::tls::client_builder`: reqwest
/// is built without a crypto provider of its own, and a client built
/// beside it would not share the lazily read roots.
#[test]
fn no_module_builds_an_http_client_of_its_own() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && path != src.join("tls.rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or("");
                    if code.contains("Client::builder()")
                        || code.contains("Client::new()")
                        || code.contains("Client::default()")
                    {
                        found.push(format!("{}:{}", path.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "build HTTP clients with agentci::tls::client_builder(): {found:?}"
    );
}
