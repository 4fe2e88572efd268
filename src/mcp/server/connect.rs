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
use crate::inert::clip;
use crate::job::{EnvTemplate, McpServerSpec, McpTransport};
use crate::mcp::command::StdioLaunch;
use crate::mcp::handler::AgentciClient;
use crate::mcp::state::ServerState;
use crate::mcp::stdio::{self, StdioChild};
use crate::process::ProcessRunner;
use crate::redact::Redactor;

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
            let sent = !headers.is_empty();
            let headers = http_headers(headers, cx.env)?;
            connect_http(url, headers, client(true))
                .await
                .map_err(|failure| failure.reason(&spec.name, url, sent))
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

/// Initializes the remote server at `url` over Streamable HTTP. Requests
/// say who sends them (`User-Agent: agentci/<version>`, as model requests
/// do) unless the job's `headers:` name one, as a custom header (the
/// client is [`super::http_client`]'s, with rmcp's redirect policy).
async fn connect_http(
    url: &str,
    mut headers: HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>,
    client: AgentciClient,
) -> Result<Service, HttpFailure> {
    headers.entry(reqwest::header::USER_AGENT).or_insert(
        reqwest::header::HeaderValue::from_static(concat!("agentci/", env!("CARGO_PKG_VERSION"))),
    );
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    let http = super::http_client::build().map_err(HttpFailure::Other)?;
    let transport = StreamableHttpClientTransport::with_client(http, config);
    serve_client(client, transport)
        .await
        .map_err(|e| HttpFailure::of(&e))
}

/// Why a remote server could not be initialized.
enum HttpFailure {
    /// HTTP 401 with a `WWW-Authenticate` challenge: the server wants
    /// credentials (MCP authorization, 2025-11-25, "Authorization Server
    /// Discovery": a server answers 401 with `WWW-Authenticate`).
    AuthRequired(String),
    /// HTTP 403 with a challenge: the credentials lack a scope.
    InsufficientScope(String),
    Other(String),
}

impl HttpFailure {
    fn of(error: &rmcp::service::ClientInitializeError) -> HttpFailure {
        match error.auth_challenge() {
            Some(challenge) if error.is_authorization_required() => {
                HttpFailure::AuthRequired(challenge.to_string())
            }
            Some(challenge) => HttpFailure::InsufficientScope(challenge.to_string()),
            None => HttpFailure::Other(root_cause(error)),
        }
    }

    /// What the user reads: for an authentication failure, what the
    /// server asked and how a job sends credentials (agentci runs no
    /// interactive OAuth flow: nobody is there to log in).
    fn reason(self, server: &str, url: &str, sent_headers: bool) -> String {
        let how = format!(
            "send a token with the job's `headers:` for this server, read from agentci's \
             environment, e.g. `mcp.servers.{server}.headers: {{Authorization: \"Bearer ${{{{ \
             env.{} }}}}\"}}` (by hand: `agentci mcp list --url URL --header \
             \"Authorization=Bearer …\"`)",
            token_variable(server)
        );
        match self {
            HttpFailure::AuthRequired(challenge) if sent_headers => format!(
                "the server asked for authentication at {url} (HTTP 401, `WWW-Authenticate: {}`) and \
                 refused the job's `headers:`: check that they carry a valid token; {how}",
                clip(&challenge, 200)
            ),
            HttpFailure::AuthRequired(challenge) => format!(
                "the server asked for authentication at {url} (HTTP 401, `WWW-Authenticate: {}`): {how}",
                clip(&challenge, 200)
            ),
            HttpFailure::InsufficientScope(challenge) => format!(
                "the server refused the credentials sent at {url} as lacking a scope (HTTP 403, \
                 `WWW-Authenticate: {}`): give the job's `headers:` a token with that scope",
                clip(&challenge, 200)
            ),
            HttpFailure::Other(cause) => {
                format!("could not be reached at {url}: {}", clip(&cause, 300))
            }
        }
    }
}

/// A variable name for the example in the message: `API_TOKEN` for server `api`.
fn token_variable(server: &str) -> String {
    let name: String = server
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' => c.to_ascii_uppercase(),
            _ => '_',
        })
        .collect();
    format!("{name}_TOKEN")
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
