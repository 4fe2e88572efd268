//! A remote MCP server that wants credentials: what the user reads.
//!
//! Regression: a server answering HTTP 401 showed `Auth required, when send
//! initialize request` (or rmcp's `Transport [rmcp::transport::worker::…]
//! error: Auth required`), with no word of the server asking for
//! authentication nor of the job's `headers:`, the way to send a token.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, stderr};

/// A Streamable HTTP endpoint on 127.0.0.1 that refuses every request as
/// a protected MCP server does: the MCP authorization spec (2025-11-25,
/// basic/authorization, "Protected Resource Metadata Discovery
/// Requirements") says a server MUST answer an unauthorized request with
/// HTTP 401 and a `WWW-Authenticate` header naming its resource metadata.
struct ProtectedServer {
    url: String,
    stop: Arc<AtomicBool>,
    /// The `User-Agent` of every request, in order.
    agents: Arc<std::sync::Mutex<Vec<String>>>,
}

impl ProtectedServer {
    fn start() -> ProtectedServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let agents = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&agents);
        std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let seen = Arc::clone(&seen);
                        std::thread::spawn(move || refuse(stream, port, &seen));
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
                }
            }
        });
        ProtectedServer {
            url: format!("http://127.0.0.1:{port}/mcp"),
            stop,
            agents,
        }
    }
}

impl Drop for ProtectedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Reads one request (head and body) and answers 401 with the challenge.
fn refuse(stream: TcpStream, port: u16, agents: &std::sync::Mutex<Vec<String>>) {
    stream.set_nonblocking(false).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            } else if name.eq_ignore_ascii_case("user-agent") {
                agents.lock().unwrap().push(value.trim().to_string());
            }
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let answer = format!(
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata=\
         \"http://127.0.0.1:{port}/.well-known/oauth-protected-resource\"\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let mut stream = stream;
    let _ = stream.write_all(answer.as_bytes());
}

/// A job whose server `api` is the protected one, with `headers` (YAML
/// flow map, or none).
fn job(sb: &Sandbox, base_url: &str, url: &str, headers: Option<&str>) {
    sb.skill("user", None);
    let headers = headers
        .map(|h| format!("      headers: {h}\n"))
        .unwrap_or_default();
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: mcp-auth\nskill: user\ngoal: Use the tools.\nmodel:\n  provider: \
             openai\n  name: fake-model\n  base_url: {base_url}\ntools: [read]\nworkspace: \
             ws\nskills_path: [skills]\nallow_dirty: true\npermissions:\n  default: allow\nmcp:\n  \
             servers:\n    api:\n      url: {url}\n{headers}"
        ),
    );
}

fn replies() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Look", "looked")]),
        Reply::step_done("looked"),
        Reply::text("done"),
    ]
}

#[test]
fn a_server_asking_for_authentication_says_how_to_send_a_token() {
    let server = ProtectedServer::start();
    let sb = Sandbox::new();
    let model = FakeModel::start(replies());
    job(&sb, &model.base_url(), &server.url, None);
    let out = agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--progress",
            "plain",
        ],
        &[],
    );
    // The server is not required: the run goes on without its tools.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Requests say who sends them, as model requests do.
    let agents = server.agents.lock().unwrap().clone();
    assert!(
        !agents.is_empty()
            && agents
                .iter()
                .all(|a| a == concat!("agentci/", env!("CARGO_PKG_VERSION"))),
        "{agents:?}"
    );
    let trace = sb.trace("out/trace.jsonl");
    let down = events(&trace, "mcp.server.down");
    assert_eq!(down.len(), 1, "{down:?}");
    assert_eq!(down[0]["server"], "api");
    let reason = down[0]["reason"]
        .as_str()
        .unwrap()
        .replace(&server.url, "URL");
    let port = server
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches("/mcp");
    let reason = reason.replace(port, "PORT");
    insta::assert_snapshot!("mcp_auth_required_reason", reason);
    assert!(!reason.contains("rmcp"), "{reason}");

    // `mcp list` on the job says the same, naming the server.
    let listed = agentci_in(sb.path(), &["mcp", "list", "job.yaml"], &[]);
    assert_eq!(listed.status.code(), Some(4), "{}", stderr(&listed));
    let err = stderr(&listed);
    assert!(
        err.contains("MCP server `api` is down: the server asked for authentication"),
        "{err}"
    );
    assert!(err.contains("mcp.servers.api.headers"), "{err}");
}

#[test]
fn a_server_refusing_the_jobs_headers_says_they_were_refused() {
    let server = ProtectedServer::start();
    let sb = Sandbox::new();
    let model = FakeModel::start(replies());
    job(
        &sb,
        &model.base_url(),
        &server.url,
        Some("{Authorization: \"Bearer ${{ env.API_TOKEN }}\"}"),
    );
    let out = agentci_in(
        sb.path(),
        &["mcp", "list", "job.yaml"],
        &[("API_TOKEN", "expired-token")],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("refused the job's `headers:`"), "{err}");
    // The token is a secret: never in what agentci prints.
    assert!(!err.contains("expired-token"), "{err}");
}
