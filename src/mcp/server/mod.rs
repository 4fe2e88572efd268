//! One connected MCP server: started (a child process over stdio, or a
//! remote URL over Streamable HTTP), initialized, its tools listed; then
//! tool calls with a per-call timeout, resources, and shutdown.
//!
//! Failure isolation is the rule: whatever the server does (fails to start,
//! crashes mid-call, hangs past its timeout, breaks the protocol on stdout)
//! becomes a [`ServerDown`] for that server only, with its last stderr
//! lines; a JSON-RPC error or `isError: true` answered to a call is a
//! [`ToolOutput`] with `is_error`, not a failure. Nothing here panics on
//! what a server sends.
//!
//! This module is the handle to a started server ([`McpServer`]) and what
//! is done through it; spawning or reaching the server and initializing the
//! connection are [`connect`]'s.

mod connect;
mod http_client;

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::service::{ClientCacheConfig, Peer, RoleClient, RunningService, ServiceError};
use serde::Serialize;
use serde_json::Value;

use super::handler::AgentciClient;
use super::result::{McpResource, McpTool, ToolOutput};
use super::sampling::Sampler;
use super::start_limit::{StartLimit, human};
use super::state::{ServerRequestRecord, ServerState};
use super::stdio::StdioChild;
use crate::job::McpServerSpec;
use crate::process::ProcessRunner;
use connect::connect;

/// How long a server may take to exit after its stdin is closed before it is killed.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How long to wait for a server's exit code after its connection closed.
/// Only a server that is gone waits, and its exit code is what the user is
/// told: on a loaded CI machine the sandbox's init process can take more
/// than half a second to report it.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// What starting a server needs from the caller.
pub struct StartContext<'a> {
    /// The workspace: a stdio server's default folder, and its root when allowed.
    pub workspace: &'a Path,
    /// Reads `${{ env.NAME }}` references (agentci's environment, in the CLI).
    pub env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// Starts stdio servers: the run's runner, so they get the job's
    /// sandbox profile and scrubbed environment as `exec` does. `None`:
    /// no sandbox, the scrubbed environment only (tools used outside a run).
    pub runner: Option<&'a ProcessRunner>,
    /// Answers `sampling/createMessage` of the servers with `sampling: true`;
    /// `None`: they are declined (tools used outside a run).
    pub sampler: Option<Arc<dyn Sampler>>,
}

/// A server that cannot be used any more (or never could), and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServerDown {
    pub server: String,
    pub reason: String,
    /// The last lines the server wrote to stderr.
    pub stderr: Vec<String>,
}

impl fmt::Display for ServerDown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MCP server `{}` is down: {}", self.server, self.reason)
    }
}

/// Who the server said it is in `initialize`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ServerIdentity {
    pub name: Option<String>,
    pub version: Option<String>,
    pub protocol_version: String,
}

impl ServerIdentity {
    /// What the server said, with an empty name or version taken as not
    /// said (a server reporting `version: ""` printed as `name , protocol`).
    pub fn said(name: Option<&str>, version: Option<&str>, protocol_version: String) -> Self {
        let given = |v: Option<&str>| v.map(str::trim).filter(|v| !v.is_empty()).map(String::from);
        ServerIdentity {
            name: given(name),
            version: given(version),
            protocol_version,
        }
    }
}

/// A started, initialized server. Every method takes `&self`: calls to
/// the same server may run concurrently (rmcp matches answers to requests
/// by id), so a run can share one server behind an `Arc`.
pub struct McpServer {
    name: String,
    timeout: Duration,
    allow: Option<Vec<String>>,
    state: Arc<ServerState>,
    /// Sends requests; a clone of the service's, usable concurrently.
    peer: Option<Peer<RoleClient>>,
    /// Taken when the server is closed.
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, AgentciClient>>>,
    child: tokio::sync::Mutex<Option<StdioChild>>,
    identity: ServerIdentity,
    has_resources: bool,
    tools: Mutex<Vec<McpTool>>,
    /// The tool-list change count when the tools were last listed.
    listed_at: AtomicU64,
    down: Mutex<Option<ServerDown>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl McpServer {
    /// Starts `spec`, initializes it and lists its tools, all within its
    /// `startup_timeout`.
    pub async fn start(
        spec: &McpServerSpec,
        cx: &StartContext<'_>,
    ) -> Result<McpServer, ServerDown> {
        McpServer::start_before(spec, cx, &StartLimit::new(spec, None)).await
    }

    /// [`McpServer::start`], all before `limit` (its `startup_timeout`, or
    /// the run's timeout when sooner).
    pub(crate) async fn start_before(
        spec: &McpServerSpec,
        cx: &StartContext<'_>,
        limit: &StartLimit,
    ) -> Result<McpServer, ServerDown> {
        let state = Arc::new(ServerState::default());
        let mut child = None;
        let started =
            tokio::time::timeout_at(limit.at(), connect(spec, cx, &state, &mut child)).await;
        let mut server = McpServer {
            name: spec.name.clone(),
            timeout: spec.timeout,
            allow: spec.tools.clone(),
            state,
            peer: None,
            service: tokio::sync::Mutex::new(None),
            child: tokio::sync::Mutex::new(child),
            identity: ServerIdentity::default(),
            has_resources: false,
            tools: Mutex::new(Vec::new()),
            listed_at: AtomicU64::new(0),
            down: Mutex::new(None),
        };
        let service = match started {
            Ok(Ok(service)) => service,
            Ok(Err(reason)) => return Err(server.fail(reason).await),
            Err(_) => {
                let reason = limit.missed("start, initialize and list its tools");
                return Err(server.fail(reason).await);
            }
        };
        if let Some(info) = service.peer_info() {
            server.identity = ServerIdentity::said(
                info.server_info.as_ref().map(|i| i.name.as_str()),
                info.server_info.as_ref().map(|i| i.version.as_str()),
                info.protocol_version.to_string(),
            );
            server.has_resources = info.capabilities.resources.is_some();
        }
        // rmcp caches list answers and serves a stale one when a re-fetch
        // fails; a dead server must show as down, and a refresh after
        // list_changed must reach the server, so every list asks it.
        service
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        server.peer = Some(service.peer().clone());
        *server.service.get_mut() = Some(service);
        match tokio::time::timeout_at(limit.at(), server.list_tools()).await {
            Ok(Ok(())) => Ok(server),
            Ok(Err(down)) => Err(down),
            Err(_) => Err(server.fail(limit.missed("list its tools")).await),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn identity(&self) -> &ServerIdentity {
        &self.identity
    }

    /// The tools the job may use: all the server lists, or those in its `tools` allow-list.
    pub fn tools(&self) -> Vec<McpTool> {
        lock(&self.tools)
            .iter()
            .filter(|t| self.allows(&t.name))
            .cloned()
            .collect()
    }

    /// The per-call `timeout`.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Names in the `tools` allow-list that the server does not offer.
    pub fn missing_allowed_tools(&self) -> Vec<&str> {
        let Some(allow) = &self.allow else {
            return Vec::new();
        };
        let tools = lock(&self.tools);
        allow
            .iter()
            .filter(|name| !tools.iter().any(|t| &t.name == *name))
            .map(String::as_str)
            .collect()
    }

    fn allows(&self, tool: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|a| a == tool))
    }

    /// The server announced `notifications/tools/list_changed` since its tools were listed.
    pub fn tools_stale(&self) -> bool {
        self.state.tool_changes() > self.listed_at.load(Ordering::SeqCst)
    }

    /// One `ping` round trip: a server answers in order, so every
    /// notification it sent before the answer (a `list_changed` right after
    /// the first listing) has been seen when this returns.
    pub async fn settle(&self) -> Result<(), ServerDown> {
        let peer = self.peer()?;
        let ping = rmcp::model::ClientRequest::PingRequest(Default::default());
        match tokio::time::timeout(self.timeout, peer.send_request(ping)).await {
            // An error answer still comes in order, which is all this is for.
            Ok(Ok(_) | Err(ServiceError::McpError(_))) => Ok(()),
            Ok(Err(e)) => Err(self.fail_call("ping", e).await),
            Err(_) => Err(self
                .fail_call(
                    "ping",
                    rmcp::ServiceError::Timeout {
                        timeout: self.timeout,
                    },
                )
                .await),
        }
    }

    /// Lists the tools again (after a list_changed); `Err` when the server is down.
    pub async fn refresh_tools(&self) -> Result<(), ServerDown> {
        match tokio::time::timeout(self.timeout, self.list_tools()).await {
            Ok(result) => result,
            Err(_) => {
                let reason = format!("did not list its tools within {}", human(self.timeout));
                Err(self.fail(reason).await)
            }
        }
    }

    /// Whether the server is down, and why.
    pub fn down(&self) -> Option<ServerDown> {
        lock(&self.down).clone()
    }

    /// The requests the server sent since the last call, for the trace.
    pub fn take_requests(&self) -> Vec<ServerRequestRecord> {
        self.state.take_requests()
    }

    /// The server's last stderr lines.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.state.stderr_tail()
    }

    async fn list_tools(&self) -> Result<(), ServerDown> {
        let peer = self.peer()?;
        let changes = self.state.tool_changes();
        let listed = peer.list_all_tools().await;
        match listed {
            Ok(tools) => {
                *lock(&self.tools) = tools
                    .iter()
                    .filter_map(|t| serde_json::to_value(t).ok())
                    .filter_map(|t| McpTool::from_json(&t))
                    .collect();
                self.listed_at.store(changes, Ordering::SeqCst);
                Ok(())
            }
            Err(e) => Err(self.fail_call("tools/list", e).await),
        }
    }

    /// Calls `tool` with `arguments` (a JSON object) within the server's `timeout`.
    pub async fn call_tool(&self, tool: &str, arguments: Value) -> Result<ToolOutput, ServerDown> {
        if !self.allows(tool) {
            return Ok(ToolOutput::from_rpc_error(
                -32602,
                &format!(
                    "tool `{tool}` is not in the `tools` allow-list of server `{}`",
                    self.name
                ),
            ));
        }
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return Ok(ToolOutput::from_rpc_error(
                    -32602,
                    &format!("tool arguments must be a JSON object, found `{other}`"),
                ));
            }
        };
        let peer = self.peer()?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let called = tokio::time::timeout(self.timeout, peer.call_tool(params)).await;
        match called {
            Ok(Ok(result)) => Ok(ToolOutput::from_result(
                &serde_json::to_value(&result).unwrap_or_default(),
            )),
            Ok(Err(ServiceError::McpError(e))) => {
                Ok(ToolOutput::from_rpc_error(e.code.0, &e.message))
            }
            Ok(Err(e)) => Err(self.fail_call("tools/call", e).await),
            Err(_) => {
                let reason = format!(
                    "did not answer a call of `{tool}` within its timeout of {}",
                    human(self.timeout)
                );
                Err(self.fail(reason).await)
            }
        }
    }

    /// Every resource the server lists (following `nextCursor`).
    pub async fn list_resources(&self) -> Result<Vec<McpResource>, ServerDown> {
        let peer = self.peer()?;
        self.listed("resources/list", peer.list_all_resources())
            .await
    }

    /// Every resource template the server lists.
    pub async fn list_resource_templates(&self) -> Result<Vec<McpResource>, ServerDown> {
        let peer = self.peer()?;
        self.listed(
            "resources/templates/list",
            peer.list_all_resource_templates(),
        )
        .await
    }

    /// The items of one resource listing, within the server's timeout. A
    /// server without resources lists none; one that answers the listing
    /// with an MCP error lists none; one that breaks or hangs is down.
    async fn listed<T: serde::Serialize>(
        &self,
        method: &str,
        listing: impl std::future::Future<Output = Result<Vec<T>, ServiceError>>,
    ) -> Result<Vec<McpResource>, ServerDown> {
        if !self.has_resources {
            return Ok(Vec::new());
        }
        let values = match tokio::time::timeout(self.timeout, listing).await {
            Ok(Ok(items)) => items
                .iter()
                .filter_map(|r| serde_json::to_value(r).ok())
                .collect(),
            Ok(Err(ServiceError::McpError(_))) => Vec::new(),
            Ok(Err(e)) => return Err(self.fail_call(method, e).await),
            Err(_) => return Err(self.timed_out(method).await),
        };
        Ok(resources(values))
    }

    /// Reads one resource; its text contents for the model, blobs summarised.
    pub async fn read_resource(&self, uri: &str) -> Result<ToolOutput, ServerDown> {
        let peer = self.peer()?;
        let read = tokio::time::timeout(
            self.timeout,
            peer.read_resource(ReadResourceRequestParams::new(uri)),
        )
        .await;
        match read {
            Ok(Ok(result)) => {
                let value = serde_json::to_value(&result).unwrap_or_default();
                let contents = value.get("contents").cloned().unwrap_or_default();
                let as_blocks: Vec<Value> = contents
                    .as_array()
                    .map(|items| {
                        items
                            .iter()
                            .map(|c| serde_json::json!({"type": "resource", "resource": c}))
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(ToolOutput::from_result(
                    &serde_json::json!({"content": as_blocks}),
                ))
            }
            Ok(Err(ServiceError::McpError(e))) => {
                Ok(ToolOutput::from_rpc_error(e.code.0, &e.message))
            }
            Ok(Err(e)) => Err(self.fail_call("resources/read", e).await),
            Err(_) => Err(self.timed_out("resources/read").await),
        }
    }

    /// Closes the connection (stdin, for a stdio server) and kills the
    /// server and everything it started if it has not exited after
    /// [`SHUTDOWN_GRACE`]. Calls made afterwards fail with a [`ServerDown`].
    pub async fn shutdown(&self) {
        self.shutdown_within(SHUTDOWN_GRACE).await;
    }

    /// [`McpServer::shutdown`] with another grace period.
    pub async fn shutdown_within(&self, grace: Duration) {
        lock(&self.down).get_or_insert_with(|| ServerDown {
            server: self.name.clone(),
            reason: "was shut down".to_string(),
            stderr: Vec::new(),
        });
        self.close(grace).await;
    }

    async fn close(&self, grace: Duration) {
        // Dropping the service closes the transport, which closes the
        // server's stdin; `cancel` waits for that.
        let service = self.service.lock().await.take();
        if let Some(service) = service {
            let _ = tokio::time::timeout(grace, service.cancel()).await;
        }
        if let Some(child) = self.child.lock().await.as_mut() {
            child.stop(grace).await;
        }
    }

    fn peer(&self) -> Result<&Peer<RoleClient>, ServerDown> {
        if let Some(down) = &*lock(&self.down) {
            return Err(down.clone());
        }
        self.peer.as_ref().ok_or_else(|| ServerDown {
            server: self.name.clone(),
            reason: "is not connected".to_string(),
            stderr: Vec::new(),
        })
    }

    async fn timed_out(&self, method: &str) -> ServerDown {
        let reason = format!("did not answer `{method}` within {}", human(self.timeout));
        self.fail(reason).await
    }

    /// A request failed below the protocol (connection closed, process gone).
    async fn fail_call(&self, method: &str, error: ServiceError) -> ServerDown {
        if let Some(down) = self.down() {
            return down;
        }
        // A closed connection usually means the process is exiting; wait a
        // moment so the reason names its exit code.
        let exit = match self.child.lock().await.as_mut() {
            Some(child) => child.exit_within(EXIT_WAIT).await,
            None => None,
        };
        let reason = match (self.state.broken(), exit) {
            (Some(broken), _) => broken,
            (None, Some(exit)) => format!("{exit} during `{method}`"),
            (None, None) => format!("failed during `{method}`: {error}"),
        };
        self.fail(reason).await
    }

    /// Marks the server down, stops it, and returns the record; the first
    /// failure wins when concurrent calls fail together.
    async fn fail(&self, reason: String) -> ServerDown {
        let reason = self.state.broken().unwrap_or(reason);
        let mut record = ServerDown {
            server: self.name.clone(),
            reason,
            stderr: Vec::new(),
        };
        {
            let mut down = lock(&self.down);
            if let Some(down) = &*down {
                return down.clone();
            }
            *down = Some(record.clone());
        }
        self.close(Duration::from_millis(200)).await;
        record.stderr = self.state.stderr_tail();
        *lock(&self.down) = Some(record.clone());
        record
    }
}

fn resources(values: Vec<Value>) -> Vec<McpResource> {
    values.iter().filter_map(McpResource::from_json).collect()
}
