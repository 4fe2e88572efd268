//! A fake of the GitHub REST API endpoints the eval workflow uses, on
//! 127.0.0.1, with a second server standing for the blob storage artifact
//! downloads redirect to. It runs on its own thread and runtime and stops
//! when dropped; every request is recorded, so a test can see what was sent
//! where (and that the token never went to the second host).
//!
//! It refuses what GitHub refuses: a request without `Authorization: Bearer
//! TOKEN` gets 401 ("Requires authentication",
//! https://docs.github.com/en/rest/authentication/authenticating-to-the-rest-api),
//! and one without `Accept: application/vnd.github+json` or with an
//! `X-GitHub-Api-Version` other than `2022-11-28` gets 400
//! (https://docs.github.com/en/rest/about-the-rest-api/api-versions: "If you
//! specify an API version that is no longer supported, you will receive a 400
//! error"; the media type is the one the REST reference asks for). The
//! download link is signed: the storage host refuses a request that also
//! carries an `Authorization` header, as Azure Blob Storage does for a SAS
//! URL with a second credential.
//!
//! Endpoints (docs.github.com/en/rest/actions/workflow-runs,
//! /actions/artifacts, /issues/comments):
//! `GET /repos/{o}/{r}/actions/workflows/{file}/runs?branch=&status=success`,
//! `GET /repos/{o}/{r}/actions/runs/{id}/artifacts?name=`,
//! `GET /repos/{o}/{r}/actions/artifacts/{id}/zip` (302 to the storage host),
//! `GET|POST /repos/{o}/{r}/issues/{n}/comments`,
//! `PATCH /repos/{o}/{r}/issues/comments/{id}`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub const TOKEN: &str = "ghs_fakeToken0123456789abcdef";
pub const REPO: &str = "octo/skills";

/// A request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `api` or `storage`.
    pub server: &'static str,
    pub method: String,
    /// Path and query.
    pub target: String,
    pub authorization: Option<String>,
}

/// A successful run of a workflow on a branch.
#[derive(Debug, Clone)]
pub struct FakeRun {
    pub id: u64,
    pub workflow: String,
    pub branch: String,
    /// A fork's pull request (event `pull_request`, the fork as head
    /// repository) rather than a push to this repository.
    pub fork: bool,
    /// `(artifact id, name, zip bytes)`.
    pub artifacts: Vec<(u64, String, Vec<u8>)>,
}

#[derive(Default)]
struct Shared {
    runs: Vec<FakeRun>,
    /// Issue number → `(comment id, body)`.
    comments: BTreeMap<u64, Vec<(u64, String)>>,
    next_comment: u64,
    /// The storage host answers 500 to every download.
    storage_fails: bool,
    seen: Vec<Seen>,
    storage_addr: Option<SocketAddr>,
}

pub struct FakeGithub {
    api: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeGithub {
    pub fn start() -> FakeGithub {
        let shared = Arc::new(Mutex::new(Shared {
            next_comment: 1000,
            ..Shared::default()
        }));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("fake github runtime");
            runtime.block_on(async move {
                let api = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let storage = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let api_addr = api.local_addr().unwrap();
                state.lock().unwrap().storage_addr = Some(storage.local_addr().unwrap());
                addr_tx.send(api_addr).unwrap();
                let api_app = Router::new()
                    .fallback(api_handler)
                    .with_state(Arc::clone(&state));
                let storage_app = Router::new()
                    .fallback(storage_handler)
                    .with_state(Arc::clone(&state));
                tokio::select! {
                    _ = axum::serve(api, api_app) => {}
                    _ = axum::serve(storage, storage_app) => {}
                    _ = shutdown_rx => {}
                }
            });
        });
        let api = addr_rx.recv().expect("fake github address");
        FakeGithub {
            api,
            shared,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        }
    }

    /// `GITHUB_API_URL`.
    pub fn url(&self) -> String {
        format!("http://{}", self.api)
    }

    pub fn add_run(&self, run: FakeRun) {
        self.shared.lock().unwrap().runs.push(run);
    }

    pub fn add_comment(&self, issue: u64, body: &str) -> u64 {
        let mut shared = self.shared.lock().unwrap();
        shared.next_comment += 1;
        let id = shared.next_comment;
        shared
            .comments
            .entry(issue)
            .or_default()
            .push((id, body.to_string()));
        id
    }

    pub fn comments(&self, issue: u64) -> Vec<(u64, String)> {
        self.shared
            .lock()
            .unwrap()
            .comments
            .get(&issue)
            .cloned()
            .unwrap_or_default()
    }

    pub fn fail_downloads(&self) {
        self.shared.lock().unwrap().storage_fails = true;
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared.lock().unwrap().seen.clone()
    }

    /// The runner's variables that point agentci at this fake.
    pub fn env(&self, workflow: &str) -> Vec<(String, String)> {
        vec![
            ("GITHUB_API_URL".into(), self.url()),
            ("GITHUB_REPOSITORY".into(), REPO.into()),
            ("GITHUB_TOKEN".into(), TOKEN.into()),
            (
                "GITHUB_WORKFLOW_REF".into(),
                format!("{REPO}/.github/workflows/{workflow}@refs/pull/7/merge"),
            ),
        ]
    }
}

impl Drop for FakeGithub {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(json!({
            "message": message,
            "documentation_url": "https://docs.github.com/rest",
            "status": status.as_u16().to_string(),
        })),
    )
        .into_response()
}

fn query(uri: &Uri) -> BTreeMap<String, String> {
    uri.query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| {
            let v = percent_decode(v);
            (k.to_string(), v)
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&text[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

async fn api_handler(
    State(shared): State<Arc<Mutex<Shared>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let authorization = header("authorization");
    let mut shared = shared.lock().unwrap();
    shared.seen.push(Seen {
        server: "api",
        method: method.to_string(),
        target: uri.to_string(),
        authorization: authorization.clone(),
    });
    if authorization.as_deref() != Some(&format!("Bearer {TOKEN}")) {
        return error(StatusCode::UNAUTHORIZED, "Requires authentication");
    }
    if header("x-github-api-version").as_deref() != Some("2022-11-28") {
        return error(
            StatusCode::BAD_REQUEST,
            "Unsupported 'X-GitHub-Api-Version'",
        );
    }
    if header("accept").as_deref() != Some("application/vnd.github+json") {
        return error(StatusCode::BAD_REQUEST, "Unsupported media type");
    }
    let path = uri.path().to_string();
    let Some(rest) = path.strip_prefix(&format!("/repos/{REPO}/")) else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let q = query(&uri);
    match (method.as_str(), parts.as_slice()) {
        ("GET", ["actions", "workflows", file, "runs"]) => {
            if q.get("status").map(String::as_str) != Some("success") {
                return error(StatusCode::BAD_REQUEST, "the test expects status=success");
            }
            let known = shared.runs.iter().any(|r| r.workflow == *file);
            if !known {
                return error(StatusCode::NOT_FOUND, "Not Found");
            }
            let branch = q.get("branch").cloned().unwrap_or_default();
            // Newest first, as GitHub lists them.
            let runs: Vec<Value> = shared
                .runs
                .iter()
                .rev()
                .filter(|r| r.workflow == *file && r.branch == branch)
                // GitHub filters by the run's `event` when asked to.
                .filter(|r| match q.get("event").map(String::as_str) {
                    Some("push") => !r.fork,
                    Some("pull_request") => r.fork,
                    Some(_) => false,
                    None => true,
                })
                .map(|r| {
                    let (event, head) = match r.fork {
                        true => ("pull_request", "stranger/skills"),
                        false => ("push", REPO),
                    };
                    json!({
                        "id": r.id,
                        "event": event,
                        "head_repository": {"full_name": head},
                        "head_branch": r.branch,
                        "status": "completed",
                        "conclusion": "success",
                        "html_url": format!("https://github.com/{REPO}/actions/runs/{}", r.id),
                    })
                })
                .collect();
            axum::Json(json!({"total_count": runs.len(), "workflow_runs": runs})).into_response()
        }
        ("GET", ["actions", "runs", id, "artifacts"]) => {
            let Some(run) = shared.runs.iter().find(|r| r.id.to_string() == *id) else {
                return error(StatusCode::NOT_FOUND, "Not Found");
            };
            let artifacts: Vec<Value> = run
                .artifacts
                .iter()
                .filter(|a| q.get("name").is_none_or(|n| *n == a.1))
                .map(|(id, name, zip)| {
                    json!({
                        "id": id,
                        "name": name,
                        "size_in_bytes": zip.len(),
                        "expired": false,
                        "archive_download_url": format!("/repos/{REPO}/actions/artifacts/{id}/zip"),
                    })
                })
                .collect();
            axum::Json(json!({"total_count": artifacts.len(), "artifacts": artifacts}))
                .into_response()
        }
        ("GET", ["actions", "artifacts", id, "zip"]) => {
            let exists = shared
                .runs
                .iter()
                .flat_map(|r| &r.artifacts)
                .any(|a| a.0.to_string() == *id);
            if !exists {
                return error(StatusCode::NOT_FOUND, "Not Found");
            }
            // "localhost", not the API's 127.0.0.1: another host by name and port.
            let storage = shared.storage_addr.unwrap();
            let location = format!(
                "http://localhost:{}/artifacts/{id}.zip?sig=signed-{id}&se=soon",
                storage.port()
            );
            (StatusCode::FOUND, [("location", location)]).into_response()
        }
        ("GET", ["issues", number, "comments"]) => {
            let number: u64 = number.parse().unwrap_or(0);
            let page: usize = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
            let per_page: usize = q.get("per_page").and_then(|p| p.parse().ok()).unwrap_or(30);
            let list: Vec<Value> = shared
                .comments
                .get(&number)
                .cloned()
                .unwrap_or_default()
                .iter()
                .skip((page - 1) * per_page)
                .take(per_page)
                .map(|(id, body)| comment_json(*id, body))
                .collect();
            axum::Json(Value::Array(list)).into_response()
        }
        ("POST", ["issues", number, "comments"]) => {
            let number: u64 = number.parse().unwrap_or(0);
            let Some(text) = body_text(&body) else {
                return error(StatusCode::UNPROCESSABLE_ENTITY, "Invalid request: body");
            };
            shared.next_comment += 1;
            let id = shared.next_comment;
            shared
                .comments
                .entry(number)
                .or_default()
                .push((id, text.clone()));
            (StatusCode::CREATED, axum::Json(comment_json(id, &text))).into_response()
        }
        ("PATCH", ["issues", "comments", id]) => {
            let Some(text) = body_text(&body) else {
                return error(StatusCode::UNPROCESSABLE_ENTITY, "Invalid request: body");
            };
            let id: u64 = id.parse().unwrap_or(0);
            for comments in shared.comments.values_mut() {
                if let Some(c) = comments.iter_mut().find(|c| c.0 == id) {
                    c.1 = text.clone();
                    return axum::Json(comment_json(id, &text)).into_response();
                }
            }
            error(StatusCode::NOT_FOUND, "Not Found")
        }
        _ => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

fn body_text(body: &Bytes) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    value["body"].as_str().map(str::to_string)
}

fn comment_json(id: u64, body: &str) -> Value {
    json!({
        "id": id,
        "body": body,
        "html_url": format!("https://github.com/{REPO}/pull/7#issuecomment-{id}"),
        "user": {"login": "github-actions[bot]", "type": "Bot"},
    })
}

async fn storage_handler(
    State(shared): State<Arc<Mutex<Shared>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut shared = shared.lock().unwrap();
    shared.seen.push(Seen {
        server: "storage",
        method: method.to_string(),
        target: uri.to_string(),
        authorization: authorization.clone(),
    });
    if authorization.is_some() {
        return (
            StatusCode::FORBIDDEN,
            "a signed link takes no Authorization header",
        )
            .into_response();
    }
    if shared.storage_fails {
        return (StatusCode::INTERNAL_SERVER_ERROR, "storage is down").into_response();
    }
    let Some(id) = uri
        .path()
        .strip_prefix("/artifacts/")
        .and_then(|p| p.strip_suffix(".zip"))
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if query(&uri).get("sig") != Some(&format!("signed-{id}")) {
        return (StatusCode::FORBIDDEN, "bad signature").into_response();
    }
    match shared
        .runs
        .iter()
        .flat_map(|r| &r.artifacts)
        .find(|a| a.0.to_string() == id)
    {
        Some((_, _, zip)) => zip.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A zip holding `results.json` (and a summary beside it), as
/// actions/upload-artifact makes of a results folder.
pub fn results_zip(results_json: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    writer.start_file("results.json", options).unwrap();
    writer.write_all(results_json).unwrap();
    writer.start_file("summary.md", options).unwrap();
    writer.write_all(b"# summary\n").unwrap();
    writer.finish().unwrap().into_inner()
}
