//! The MCP servers of one job, managed together: started concurrently
//! (each within its own `startup_timeout`), called by name from concurrent
//! tool calls, watched for tool-list changes and servers going down, and
//! shut down together.
//!
//! [`McpSet`] reports what happened — servers that failed to start (and
//! whether a `required` one did), servers whose tools were refreshed,
//! servers newly down with their stderr — for the caller to turn into
//! events and decisions. It knows nothing of the agent loop, the permission
//! policy or the trace.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::result::{McpResource, McpTool, ToolOutput};
use super::server::{McpServer, SHUTDOWN_GRACE, ServerDown, StartContext};
use super::start_limit::{RunDeadline, StartLimit};
use super::state::ServerRequestRecord;
use crate::job::McpServerSpec;

/// A job's servers. Cheap to share: handles are `Arc<McpServer>`, whose
/// methods take `&self`, so calls to one server may run concurrently.
pub struct McpSet {
    /// The servers that started, in the job's order.
    up: Vec<Arc<McpServer>>,
    /// The servers that did not start, in the job's order.
    failed: Vec<ServerDown>,
    /// The first `required: true` server that did not start.
    required_failed: Option<ServerDown>,
    /// How each server's start went, in the job's order.
    startups: Vec<ServerStartup>,
    /// Servers already returned by [`McpSet::take_down`].
    reported_down: Mutex<BTreeSet<String>>,
}

/// How long one server took to start, and whether it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerStartup {
    pub server: String,
    pub duration: Duration,
    pub started: bool,
    /// The run's `budget.timeout` ran out before the server was ready.
    pub out_of_run_time: bool,
}

/// A server whose tool list changed and was listed again.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RefreshedTools {
    pub server: String,
    /// The tools the job may use now.
    pub tools: Vec<McpTool>,
}

/// Why the resources of a server named explicitly cannot be listed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ListResourcesError {
    /// No server of that name; `known` names those there are.
    #[error("there is no MCP server `{name}`; {known}")]
    UnknownServer { name: String, known: String },
    /// The server is down.
    #[error("{0}")]
    Down(ServerDown),
}

/// What [`McpSet::list_resources`] found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ResourceListing {
    /// `(server, resource)`, in the job's server order.
    pub resources: Vec<(String, McpResource)>,
    /// `(server, template)`; a template's `uri` is its `uriTemplate`.
    pub templates: Vec<(String, McpResource)>,
    /// Servers that went down while listing (also in [`McpSet::take_down`]).
    pub down: Vec<ServerDown>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl McpSet {
    /// A set with no servers (a job without `mcp:`).
    pub fn empty() -> McpSet {
        McpSet {
            up: Vec::new(),
            failed: Vec::new(),
            required_failed: None,
            startups: Vec::new(),
            reported_down: Mutex::new(BTreeSet::new()),
        }
    }

    /// Starts every server at once; each is initialized, its tools listed
    /// and one `ping` answered (so a `list_changed` sent right after the
    /// listing is seen by [`McpSet::take_refreshed`]) within its
    /// `startup_timeout`. Never fails as a whole: see [`McpSet::failed`] and
    /// [`McpSet::required_failure`].
    pub async fn start(specs: &[McpServerSpec], cx: &StartContext<'_>) -> McpSet {
        McpSet::start_within(specs, cx, None).await
    }

    /// [`McpSet::start`], every start also ending when `run` does (the
    /// run's `budget.timeout`): see [`McpSet::startups`].
    pub async fn start_within(
        specs: &[McpServerSpec],
        cx: &StartContext<'_>,
        run: Option<RunDeadline>,
    ) -> McpSet {
        let started = futures_util::future::join_all(
            specs
                .iter()
                .map(|spec| timed_start(spec, cx, StartLimit::new(spec, run))),
        )
        .await;
        let mut set = McpSet::empty();
        for (spec, (outcome, startup)) in specs.iter().zip(started) {
            set.startups.push(startup);
            match outcome {
                Ok(server) => set.up.push(Arc::new(server)),
                Err(down) => {
                    if spec.required && set.required_failed.is_none() {
                        set.required_failed = Some(down.clone());
                    }
                    lock(&set.reported_down).insert(down.server.clone());
                    set.failed.push(down);
                }
            }
        }
        set
    }

    /// How long each server took to start, in the job's order.
    pub fn startups(&self) -> &[ServerStartup] {
        &self.startups
    }

    /// The servers that did not start, each with its reason and stderr tail.
    pub fn failed(&self) -> &[ServerDown] {
        &self.failed
    }

    /// A `required: true` server that did not start: the run cannot go on.
    pub fn required_failure(&self) -> Option<&ServerDown> {
        self.required_failed.as_ref()
    }

    /// The servers that started (some may have gone down since).
    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.up
    }

    /// The handle of a started server.
    pub fn server(&self, name: &str) -> Option<&Arc<McpServer>> {
        self.up.iter().find(|s| s.name() == name)
    }

    /// `(server, tool)` for every tool the job may use, of servers not down.
    pub fn tools(&self) -> Vec<(String, McpTool)> {
        self.up
            .iter()
            .filter(|s| s.down().is_none())
            .flat_map(|s| s.tools().into_iter().map(|t| (s.name().to_string(), t)))
            .collect()
    }

    /// Calls `tool` of `server`, bounded by the server's `timeout`. An
    /// unknown server or tool is an error result for the model; `Err` means
    /// the server is down (or went down during the call).
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<ToolOutput, ServerDown> {
        match self.find(server)? {
            Some(handle) => handle.call_tool(tool, arguments).await,
            None => Ok(self.unknown_server(server)),
        }
    }

    /// Resources and resource templates of one server, or of all that are
    /// up when `server` is `None`, listed concurrently. A server going down
    /// while listing is reported in [`ResourceListing::down`]; an unknown
    /// or failed server named explicitly is `Err` with a message.
    pub async fn list_resources(
        &self,
        server: Option<&str>,
    ) -> Result<ResourceListing, ListResourcesError> {
        let servers: Vec<&Arc<McpServer>> = match server {
            Some(name) => match self.find(name) {
                Ok(Some(handle)) => vec![handle],
                Ok(None) => {
                    return Err(ListResourcesError::UnknownServer {
                        name: name.to_string(),
                        known: self.known_servers(),
                    });
                }
                Err(down) => return Err(ListResourcesError::Down(down)),
            },
            None => self.up.iter().filter(|s| s.down().is_none()).collect(),
        };
        let listed = futures_util::future::join_all(servers.iter().map(|s| async move {
            let resources = s.list_resources().await;
            let templates = match &resources {
                Ok(_) => s.list_resource_templates().await,
                Err(down) => Err(down.clone()),
            };
            (s.name().to_string(), resources, templates)
        }))
        .await;
        let mut listing = ResourceListing::default();
        for (name, resources, templates) in listed {
            match (resources, templates) {
                (Ok(resources), Ok(templates)) => {
                    listing
                        .resources
                        .extend(resources.into_iter().map(|r| (name.clone(), r)));
                    listing
                        .templates
                        .extend(templates.into_iter().map(|t| (name.clone(), t)));
                }
                (Err(down), _) | (_, Err(down)) => listing.down.push(down),
            }
        }
        Ok(listing)
    }

    /// Reads `uri` from `server` (a resource's URI, or a template filled in).
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<ToolOutput, ServerDown> {
        match self.find(server)? {
            Some(handle) => handle.read_resource(uri).await,
            None => Ok(self.unknown_server(server)),
        }
    }

    /// Lists again the tools of every server that announced
    /// `notifications/tools/list_changed` since its last listing (call it
    /// before each model turn). A server that fails to answer goes down
    /// and shows in [`McpSet::take_down`] instead.
    pub async fn take_refreshed(&self) -> Vec<RefreshedTools> {
        let stale: Vec<&Arc<McpServer>> = self
            .up
            .iter()
            .filter(|s| s.down().is_none() && s.tools_stale())
            .collect();
        let refreshed =
            futures_util::future::join_all(stale.iter().map(|s| s.refresh_tools())).await;
        stale
            .iter()
            .zip(refreshed)
            .filter(|(_, outcome)| outcome.is_ok())
            .map(|(s, _)| RefreshedTools {
                server: s.name().to_string(),
                tools: s.tools(),
            })
            .collect()
    }

    /// Servers that went down since the last call (crashed, hung past
    /// their timeout, broke the protocol), each once, with its stderr tail.
    /// Servers that failed to start are in [`McpSet::failed`] instead.
    pub fn take_down(&self) -> Vec<ServerDown> {
        let mut reported = lock(&self.reported_down);
        self.up
            .iter()
            .filter_map(|s| s.down())
            .filter(|down| reported.insert(down.server.clone()))
            .collect()
    }

    /// The requests servers sent to agentci since the last call, as
    /// `(server, request)`.
    pub fn take_requests(&self) -> Vec<(String, ServerRequestRecord)> {
        self.up
            .iter()
            .flat_map(|s| {
                let name = s.name().to_string();
                s.take_requests()
                    .into_iter()
                    .map(move |r| (name.clone(), r))
            })
            .collect()
    }

    /// Asks every server to exit by closing its stdin, and kills those
    /// still running (and everything they started) after
    /// [`SHUTDOWN_GRACE`]; all at once, so it takes one grace period at
    /// most. Calls afterwards fail with a [`ServerDown`]; shutting down
    /// twice is harmless.
    pub async fn shutdown_all(&self) {
        self.shutdown_all_within(SHUTDOWN_GRACE).await;
    }

    /// [`McpSet::shutdown_all`] with another grace period.
    pub async fn shutdown_all_within(&self, grace: Duration) {
        // Servers stopped here are not "newly down" for the caller; those
        // that went down before and were not taken yet still are.
        let running: Vec<String> = self
            .up
            .iter()
            .filter(|s| s.down().is_none())
            .map(|s| s.name().to_string())
            .collect();
        futures_util::future::join_all(self.up.iter().map(|s| s.shutdown_within(grace))).await;
        lock(&self.reported_down).extend(running);
    }

    /// The handle of `name`; `Ok(None)` when the job has no such server,
    /// `Err` when it failed to start.
    fn find(&self, name: &str) -> Result<Option<&Arc<McpServer>>, ServerDown> {
        if let Some(down) = self.failed.iter().find(|d| d.server == name) {
            return Err(down.clone());
        }
        Ok(self.server(name))
    }

    /// The servers the job has, as the answer to an unknown name says it.
    fn known_servers(&self) -> String {
        let known: Vec<&str> = self
            .up
            .iter()
            .map(|s| s.name())
            .chain(self.failed.iter().map(|d| d.server.as_str()))
            .collect();
        if known.is_empty() {
            "the job has no MCP servers".to_string()
        } else {
            format!("the job's servers are: {}", known.join(", "))
        }
    }

    fn unknown_server(&self, name: &str) -> ToolOutput {
        let known = self.known_servers();
        ToolOutput {
            is_error: true,
            text: format!("there is no MCP server `{name}`; {known}"),
            structured: None,
            content: Vec::new(),
        }
    }
}

/// [`start_one`], timed.
async fn timed_start(
    spec: &McpServerSpec,
    cx: &StartContext<'_>,
    limit: StartLimit,
) -> (Result<McpServer, ServerDown>, ServerStartup) {
    let began = tokio::time::Instant::now();
    let outcome = start_one(spec, cx, &limit).await;
    let startup = ServerStartup {
        server: spec.name.clone(),
        duration: began.elapsed(),
        started: outcome.is_ok(),
        out_of_run_time: outcome.is_err() && limit.ran_out_of_run_time(),
    };
    (outcome, startup)
}

/// Starts one server and waits for its answer to a `ping`, all before `limit`.
async fn start_one(
    spec: &McpServerSpec,
    cx: &StartContext<'_>,
    limit: &StartLimit,
) -> Result<McpServer, ServerDown> {
    let server = McpServer::start_before(spec, cx, limit).await?;
    match tokio::time::timeout_at(limit.at(), server.settle()).await {
        Ok(Ok(())) => Ok(server),
        Ok(Err(down)) => Err(down),
        Err(_) => {
            server.shutdown_within(Duration::from_millis(200)).await;
            Err(ServerDown {
                server: spec.name.clone(),
                reason: limit.missed("answer a ping"),
                stderr: server.stderr_tail(),
            })
        }
    }
}
