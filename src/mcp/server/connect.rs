//! Reaching one MCP server and initializing the connection: a stdio
//! server is spawned through the run's [`ProcessRunner`] and served over its
//! pipes, a remote one is reached over Streamable HTTP with the job's
//! headers. A failure becomes the reason the user reads (the server's exit
//! code, a protocol break, the innermost transport error).
//!
//! It does not list tools, time the start out or keep the server: that is
//! [`super::McpServer::start`]'s.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rmcp::service::{RoleClient, RunningService, serve_client};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::{EXIT_WAIT, StartContext};
use crate::mcp::command::StdioLaunch;
use crate::mcp::handler::AgentciClient;
use crate::mcp::state::ServerState;
use crate::mcp::stdio::{self, StdioChild, shorten};
use crate::process::ProcessRunner;
use crate::redact::Redactor;
use crate::spec::{EnvTemplate, McpServerSpec, McpTransport};

type Service = RunningService<RoleClient, AgentciClient>;

/// Spawns or connects, and initializes. `child` is filled as soon as a
/// process exists, so a timeout can still stop it.
pub(super) async fn connect(
    spec: &McpServerSpec,
    cx: &StartContext<'_>,
    state: &Arc<ServerState>,
    child: &mut Option<StdioChild>,
) -> Result<Service, String> {
    let root = spec.roots.then(|| file_uri(cx.workspace));
    let sampler = cx.sampler.clone().filter(|_| spec.sampling);
    let client = |counts_list_changed| AgentciClient {
        state: Arc::clone(state),
        root: root.clone(),
        counts_list_changed,
        server: spec.name.clone(),
        sampler: sampler.clone(),
        sampling_allowed: spec.sampling,
    };
    match &spec.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let cwd = cwd.as_deref().unwrap_or(cx.workspace);
            let launch =
                StdioLaunch::resolve(command, args, env, cwd, cx.env).map_err(|e| e.to_string())?;
            connect_stdio(&launch, cx.runner, state, child, client(false)).await
        }
        McpTransport::Http { url, headers } => {
            let headers = http_headers(headers, cx.env)?;
            connect_http(url, headers, client(true)).await
        }
    }
}

/// Spawns `launch` with `runner` (or unsandboxed without one) and
/// initializes it over its pipes; on failure, the reason the server gave:
/// a protocol break on stdout, else its exit code.
async fn connect_stdio(
    launch: &StdioLaunch,
    runner: Option<&ProcessRunner>,
    state: &Arc<ServerState>,
    child: &mut Option<StdioChild>,
    client: AgentciClient,
) -> Result<Service, String> {
    let unsandboxed;
    let runner = match runner {
        Some(runner) => runner,
        None => {
            unsandboxed = ProcessRunner::unsandboxed(&[], Redactor::default());
            &unsandboxed
        }
    };
    let (process, pipes) = stdio::spawn(launch, runner, state).map_err(|e| e.to_string())?;
    *child = Some(process);
    match serve_client(client, pipes).await {
        Ok(service) => Ok(service),
        Err(e) => {
            let exit = match child.as_mut() {
                Some(process) => process.exit_within(EXIT_WAIT).await,
                None => None,
            };
            Err(match (state.broken(), exit) {
                (Some(broken), _) => broken,
                (None, Some(exit)) => format!("{exit} before it was initialized"),
                (None, None) => format!("could not be initialized: {e}"),
            })
        }
    }
}

/// The job's `headers:` with their `${{ env.NAME }}` references resolved.
fn http_headers(
    headers: &[(String, EnvTemplate)],
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, String> {
    let mut map = HashMap::new();
    for (name, template) in headers {
        let value = template.resolve(env).map_err(|missing| {
            format!("environment variable `{missing}` (for header `{name}`) is not set")
        })?;
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header `{name}`: {e}"))?;
        let value = reqwest::header::HeaderValue::from_str(&value)
            .map_err(|_| format!("header `{name}` has a value that is not allowed in HTTP"))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Initializes the remote server at `url` over Streamable HTTP.
async fn connect_http(
    url: &str,
    headers: HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>,
    client: AgentciClient,
) -> Result<Service, String> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    let transport = StreamableHttpClientTransport::from_config(config);
    serve_client(client, transport).await.map_err(|e| {
        format!(
            "could not be reached at {url}: {}",
            shorten(&root_cause(&e), 300)
        )
    })
}

/// The innermost error: rmcp's outer messages name its internal types
/// (`Transport [rmcp::transport::worker::…] error: …`); the cause is what
/// users need.
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    let text = current.to_string();
    match text.rfind("] error: ") {
        Some(at) => text[at + "] error: ".len()..].to_string(),
        None => text,
    }
}

/// `file://` URI of a folder, with the characters URIs reserve escaped.
fn file_uri(path: &Path) -> String {
    match reqwest::Url::from_directory_path(path) {
        Ok(url) => url.to_string(),
        Err(()) => format!("file://{}", path.display()),
    }
}
