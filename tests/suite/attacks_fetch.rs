//! A hostile model against `web_fetch`, end to end: the real binary, a
//! scripted model calling `web_fetch`, and a web server on this machine
//! that logs every request. `web_fetch` runs in agentci's own process,
//! outside the sandbox, so each attack is judged by the request log: the
//! server must never see the request.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;

use super::support::fake_model::{FakeModel, Reply, tool_result_in};
use super::support::harness::{Sandbox, stderr};
use super::support::server_thread::serve_on_thread;
use super::support::users::RunAs;

/// The server's port and every path it was asked for.
#[derive(Clone, Default)]
struct Log {
    port: Arc<Mutex<u16>>,
    paths: Arc<Mutex<Vec<String>>>,
}

async fn answer(State(log): State<Log>, uri: Uri) -> impl IntoResponse {
    let path = uri.path().to_string();
    log.paths.lock().unwrap().push(path.clone());
    let port = *log.port.lock().unwrap();
    let target = match path.as_str() {
        "/start/to-loopback" => Some(format!("http://127.0.0.1:{port}/secret-redirected")),
        "/start/to-metadata" => Some("http://169.254.169.254/latest/meta-data/".to_string()),
        "/start/to-mapped" => Some(format!("http://[::ffff:127.0.0.1]:{port}/secret-mapped")),
        _ => None,
    };
    match target {
        Some(location) => {
            let mut headers = HeaderMap::new();
            headers.insert(header::LOCATION, location.parse().unwrap());
            (StatusCode::FOUND, headers, "").into_response()
        }
        None => (StatusCode::OK, "the machine's own secret page").into_response(),
    }
}

/// A web server on every local address (so `127.0.0.2` and `0.0.0.0`
/// reach it too), in its own thread; dropped with the test.
struct LocalServer {
    port: u16,
    log: Log,
    _thread: std::thread::JoinHandle<()>,
}

impl LocalServer {
    fn start() -> LocalServer {
        let log = Log::default();
        let state = log.clone();
        let (addr, thread) = serve_on_thread("0.0.0.0:0", |listener| async move {
            // Known before the first request: serving starts after this.
            *state.port.lock().unwrap() = listener.local_addr().unwrap().port();
            let app = Router::new().fallback(get(answer)).with_state(state);
            let _ = axum::serve(listener, app).await;
        });
        LocalServer {
            port: addr.port(),
            log,
            _thread: thread,
        }
    }

    fn paths(&self) -> Vec<String> {
        self.log.paths.lock().unwrap().clone()
    }
}

/// Run a job whose model fetches `urls` (one call each, one turn) under
/// `permissions` and `sandbox`, as `user`; the tool results by call id.
fn fetch_all(
    user: RunAs,
    permissions: &str,
    sandbox: &str,
    urls: &[String],
) -> Vec<(String, String)> {
    let calls = urls
        .iter()
        .enumerate()
        .map(|(i, url)| (format!("fetch{i}"), "web_fetch", json!({ "url": url })))
        .collect::<Vec<_>>();
    let model = FakeModel::start(vec![
        Reply::plan(&[("Fetch", "pages fetched")]),
        Reply::tool_calls(
            calls
                .iter()
                .map(|(id, tool, args)| (id.as_str(), *tool, args.clone()))
                .collect(),
        ),
        Reply::step_done("fetched"),
        Reply::text("done"),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/README", "a workspace\n");
    sb.skill("fetcher", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: fetch-attacks
goal: Fetch things.
skill: fetcher
skills_path: [skills]
model:
  provider: openai
  name: fake-model
  base_url: {}
tools: [read, web_fetch]
workspace: ws
sandbox: {sandbox}
permissions:
{permissions}
"#,
            model.base_url()
        ),
    );
    let out = sb.agentci_as(
        user,
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--progress",
            "none",
        ],
        &[],
    );
    // The run finishes either way; it fails when every call was denied
    // (nothing could happen, and the job has no checks).
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "as {}: {}",
        user.label(),
        stderr(&out)
    );
    let requests = model.requests();
    calls
        .iter()
        .map(|(id, _, _)| (id.clone(), tool_result_in(&requests, id)))
        .collect()
}

const NETWORK_ON: &str = "{profile: workspace-write, network: true}";

// Regression: in URL rules `*` crossed `/`, so
// `web_fetch(http://*.example.com/*)` allowed
// `http://127.0.0.1:P/.example.com/x`.
#[test]
fn a_host_glob_never_matches_inside_the_path() {
    for user in RunAs::each() {
        let server = LocalServer::start();
        let url = format!("http://127.0.0.1:{}/.example.com/x", server.port);
        let results = fetch_all(
            user,
            "  default: deny\n  allow: [read, \"web_fetch(http://*.example.com/*)\"]",
            NETWORK_ON,
            &[url],
        );
        assert!(
            results[0].1.starts_with("ERROR PERMISSION_DENIED"),
            "{results:?}"
        );
        assert!(
            server.paths().is_empty(),
            "as {}: {:?}",
            user.label(),
            server.paths()
        );
    }
}

// Regression: a path deny rule was matched against the path as written,
// so `//secret/a`, `/se%63ret/a` and `/public/..%2fsecret/a` (which web
// servers serve as `/secret/a`) got past `web_fetch(…/secret/**)`.
#[test]
fn a_path_deny_rule_holds_however_the_path_is_spelled() {
    for user in RunAs::each() {
        let server = LocalServer::start();
        let base = format!("http://127.0.0.1:{}", server.port);
        let urls: Vec<String> = [
            "//secret/a",
            "/se%63ret/a",
            "/public/..%2fsecret/a",
            "/public%2f..%2f..%2fsecret/a",
            "/public/%2e%2e/secret/a",
            "/public/page",
        ]
        .iter()
        .map(|path| format!("{base}{path}"))
        .collect();
        let results = fetch_all(
            user,
            &format!(
                "  default: deny\n  allow: [read, \"web_fetch({base}/**)\"]\n  deny: [\"web_fetch({base}/secret/**)\"]"
            ),
            NETWORK_ON,
            &urls,
        );
        let label = user.label();
        assert_eq!(server.paths(), ["/public/page"], "as {label}: {results:?}");
        for (id, message) in &results[..urls.len() - 1] {
            assert!(
                message.starts_with("ERROR PERMISSION_DENIED"),
                "as {label}, {id}: {message}"
            );
        }
    }
}

// Regression: a deny rule for loopback was stepped around by other
// spellings of a local address, and a bare rule reached anything.
#[test]
fn local_addresses_are_refused_however_they_are_spelled() {
    for user in RunAs::each() {
        let server = LocalServer::start();
        let port = server.port;
        let urls: Vec<String> = [
            "0.0.0.0",
            "[::ffff:127.0.0.1]",
            "127.0.0.2",
            "2130706433",
            "0x7f.1",
            "017700000001",
            "127.1",
            "localhost",
        ]
        .iter()
        .enumerate()
        .map(|(i, host)| format!("http://{host}:{port}/secret-{i}"))
        .chain(["http://169.254.169.254/latest/meta-data/".to_string()])
        .collect();
        let results = fetch_all(
            user,
            "  default: deny\n  allow: [read, web_fetch]\n  deny: [\"web_fetch(http://127.0.0.1:*/**)\"]",
            NETWORK_ON,
            &urls,
        );
        for ((id, text), url) in results.iter().zip(&urls) {
            assert!(
                text.starts_with("ERROR PERMISSION_DENIED"),
                "as {}: {id} {url}: {text}",
                user.label()
            );
        }
        let metadata = &results.last().unwrap().1;
        assert!(metadata.contains("link-local"), "{metadata}");
        assert!(
            server.paths().is_empty(),
            "as {}: the local server was reached: {:?}",
            user.label(),
            server.paths()
        );
    }
}

// Regression: a redirect from an allowed page was judged by the rules
// only, so a bare rule let it bounce to loopback or the metadata service.
#[test]
fn a_redirect_to_a_local_or_metadata_address_is_refused() {
    for user in RunAs::each() {
        let server = LocalServer::start();
        let port = server.port;
        let urls: Vec<String> = ["to-loopback", "to-metadata", "to-mapped"]
            .iter()
            .map(|to| format!("http://localhost:{port}/start/{to}"))
            .collect();
        let results = fetch_all(
            user,
            &format!(
                "  default: deny\n  allow: [read, web_fetch, \"web_fetch(http://localhost:{port}/start/*)\"]"
            ),
            NETWORK_ON,
            &urls,
        );
        for (id, text) in &results {
            assert!(text.starts_with("ERROR PERMISSION_DENIED"), "{id}: {text}");
        }
        let mut paths = server.paths();
        paths.sort();
        assert_eq!(
            paths,
            [
                "/start/to-loopback",
                "/start/to-mapped",
                "/start/to-metadata"
            ],
            "as {}: only the allowed pages were requested",
            user.label()
        );
    }
}

// `web_fetch` runs outside the sandbox: with `sandbox.network` false only a
// rule naming a URL opens it; a bare rule or `default: allow` does not.
#[test]
fn without_the_network_only_rules_naming_a_url_open_web_fetch() {
    let server = LocalServer::start();
    let port = server.port;
    let results = fetch_all(
        RunAs::Current,
        &format!(
            "  default: allow\n  allow: [web_fetch, \"web_fetch(http://127.0.0.1:{port}/named/*)\"]"
        ),
        "{profile: workspace-write, network: false}",
        &[
            format!("http://127.0.0.1:{port}/bare"),
            format!("http://127.0.0.1:{port}/named/page"),
        ],
    );
    assert!(
        results[0].1.starts_with("ERROR PERMISSION_DENIED"),
        "{results:?}"
    );
    assert!(results[0].1.contains("sandbox.network"), "{}", results[0].1);
    assert!(results[1].1.contains("secret page"), "{}", results[1].1);
    assert_eq!(server.paths(), ["/named/page"]);
    insta::assert_snapshot!(results[0].1.replace(&port.to_string(), "[PORT]"));
}
