//! A job's MCP servers in a run: started before the agent (through the
//! run's process runner, so under its sandbox, and within the run's
//! `budget.timeout`: their start-up is the run's time, reported as
//! `mcp.startup` right after the run's start), their tools handed to the
//! tool set, what happened to them (and the requests they sent) turned
//! into trace events before each model turn and before `run.completed`,
//! and shut down when the run ends. Servers the job lets sample get their
//! `sampling/createMessage` answered by the job's model ([`sampling`]).
//!
//! A server that fails or goes down costs only its own tools, unless it
//! is `required: true`: then the run stops before the next model turn.
//! Talking to servers is [`crate::mcp`]'s; deciding and recording calls is
//! the agent's.

mod sampling;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::run::McpStart;
use crate::agent::toolset::{LiveTools, LiveUpdate};
use crate::event::bus::EventBus;
use crate::event::{EventKind, McpServerStartup, McpStartOutcome, McpStartup};
use crate::job::{JobSpec, McpTransport};
use crate::mcp::tool::{resource_tools, server_tools};
use crate::mcp::{
    McpSet, RunDeadline, Sampler, ServerDown, ServerStartup, StartContext, model_tool_name,
};
use crate::process::ProcessRunner;
use crate::run_env::RunEnv;
use crate::tools::{BoxFuture, Tool};

/// The servers of one run.
pub struct RunServers {
    set: Arc<McpSet>,
    bus: EventBus,
    /// The names of the `required: true` servers.
    required: Vec<String>,
    /// How long the servers took to start, all together.
    startup: Duration,
    /// Events about the start, emitted after `run.started` (so every trace
    /// begins with it): see [`RunServers::start_report`].
    pending: Mutex<Vec<EventKind>>,
}

/// The values `${{ env.NAME }}` references of the job's servers resolve
/// to: secrets for the run's masking, like the job's `secrets`.
pub fn secret_values(job: &JobSpec, lookup: impl Fn(&str) -> Option<String>) -> Vec<String> {
    job.mcp
        .servers
        .iter()
        .flat_map(|s| match &s.transport {
            McpTransport::Stdio { env, .. } => env.iter().collect::<Vec<_>>(),
            McpTransport::Http { headers, .. } => headers.iter().collect(),
        })
        .flat_map(|(_, template)| template.env_names().collect::<Vec<_>>())
        .filter_map(lookup)
        .collect()
}

impl RunServers {
    /// Starts the job's servers together (none: nothing to do), each
    /// given up when `deadline` (the run's `budget.timeout`) comes first.
    pub async fn start(
        job: &JobSpec,
        workspace: &std::path::Path,
        processes: &ProcessRunner,
        env: &RunEnv,
        deadline: Option<RunDeadline>,
        bus: EventBus,
    ) -> RunServers {
        let began = tokio::time::Instant::now();
        let set = Arc::new(start_set(job, workspace, processes, env, deadline).await);
        let startup = began.elapsed();
        let required: Vec<String> = job
            .mcp
            .servers
            .iter()
            .filter(|s| s.required)
            .map(|s| s.name.clone())
            .collect();
        let mut pending: Vec<EventKind> = set
            .failed()
            .iter()
            .map(|down| down_event(down, &required))
            .collect();
        for server in set.servers() {
            let missing = server.missing_allowed_tools();
            if !missing.is_empty() {
                pending.push(warning(format!(
                    "MCP server `{}` offers no tool named {} (in its `tools` list)",
                    server.name(),
                    missing.join(", ")
                )));
            }
        }
        RunServers {
            set,
            bus,
            required,
            startup,
            pending: Mutex::new(pending),
        }
    }

    /// The events of the requests sent during the last tool calls, which
    /// have no next turn to report them: the run delivers them just
    /// before `run.completed`.
    pub fn last_requests(&self) -> crate::event::CompletionHook {
        let set = Arc::clone(&self.set);
        Box::new(move || request_events(&set))
    }

    /// What the run says about the start right after its own start: the
    /// `mcp.startup` event, then the servers that failed and the warnings
    /// so far (call it after [`RunServers::tools`]).
    pub fn start_report(&self) -> McpStart {
        let startup = McpStartup {
            duration_ms: self.startup.as_millis() as u64,
            servers: self.set.startups().iter().map(server_startup).collect(),
        };
        let timed_out = startup.timed_out().map(str::to_string).collect();
        let mut events = vec![EventKind::McpStartup(startup)];
        events.extend(std::mem::take(&mut *self.lock_pending()));
        McpStart {
            duration: self.startup,
            timed_out,
            events,
        }
    }

    /// The tools the run starts with: every server tool and, when the job
    /// has servers, the resource tools.
    pub fn tools(&self) -> Vec<Box<dyn Tool>> {
        if self.set.servers().is_empty() && self.set.failed().is_empty() {
            return Vec::new();
        }
        let (mut tools, warnings) = server_tools(&self.set);
        self.lock_pending()
            .extend(warnings.into_iter().map(warning));
        tools.extend(resource_tools(&self.set));
        tools
    }

    /// What the tool set asks before each model turn.
    pub fn live(self: &Arc<Self>) -> Arc<dyn LiveTools> {
        Arc::clone(self) as Arc<dyn LiveTools>
    }

    /// Asks every server to exit, and kills those that do not.
    pub async fn shutdown(&self) {
        self.set.shutdown_all().await;
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Vec<EventKind>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stop_reason(&self, down: &ServerDown) -> String {
        let mut reason = format!("the required {down}");
        if let Some(last) = down.stderr.last() {
            reason.push_str(&format!(" (its stderr ends: {last})"));
        }
        reason
    }
}

impl LiveTools for RunServers {
    fn before_turn(&self) -> BoxFuture<'_, LiveUpdate> {
        Box::pin(async move {
            for event in std::mem::take(&mut *self.lock_pending()) {
                self.bus.emit(event);
            }
            for event in request_events(&self.set) {
                self.bus.emit(event);
            }
            if let Some(down) = self.set.required_failure() {
                return Err(self.stop_reason(down));
            }
            let refreshed = self.set.take_refreshed().await;
            let mut stop = None;
            for down in self.set.take_down() {
                self.bus.emit(down_event(&down, &self.required));
                if stop.is_none() && self.required.contains(&down.server) {
                    stop = Some(self.stop_reason(&down));
                }
            }
            if let Some(reason) = stop {
                return Err(reason);
            }
            if refreshed.is_empty() {
                return Ok(None);
            }
            for r in &refreshed {
                self.bus.emit(EventKind::McpToolsRefreshed {
                    server: r.server.clone(),
                    tools: r
                        .tools
                        .iter()
                        .map(|t| model_tool_name(&r.server, &t.name))
                        .collect(),
                });
            }
            let (mut tools, warnings) = server_tools(&self.set);
            for message in warnings {
                self.bus.emit(warning(message));
            }
            tools.extend(resource_tools(&self.set));
            Ok(Some(tools))
        })
    }
}

/// Starts the set on the run's own task. Not on a blocking thread: a
/// server gets `PR_SET_PDEATHSIG`, which fires when the *thread* that
/// started it ends, and an idle blocking thread ends after a few seconds,
/// killing the servers mid-run.
async fn start_set(
    job: &JobSpec,
    workspace: &std::path::Path,
    processes: &ProcessRunner,
    env: &RunEnv,
    deadline: Option<RunDeadline>,
) -> McpSet {
    let sampler = job
        .mcp
        .servers
        .iter()
        .any(|s| s.sampling)
        .then(|| Arc::new(sampling::RunSampler::new(&job.model, env)) as Arc<dyn Sampler>);
    let lookup = |name: &str| env.var(name);
    let cx = StartContext {
        workspace,
        env: &lookup,
        runner: Some(processes),
        sampler,
    };
    McpSet::start_within(&job.mcp.servers, &cx, deadline).await
}

fn server_startup(s: &ServerStartup) -> McpServerStartup {
    McpServerStartup {
        server: s.server.clone(),
        duration_ms: s.duration.as_millis() as u64,
        outcome: match (s.started, s.out_of_run_time) {
            (true, _) => McpStartOutcome::Started,
            (false, true) => McpStartOutcome::TimedOut,
            (false, false) => McpStartOutcome::Failed,
        },
    }
}

/// The requests servers sent since the last call, as events.
fn request_events(set: &McpSet) -> Vec<EventKind> {
    set.take_requests()
        .into_iter()
        .map(|(server, r)| EventKind::McpServerRequest {
            server,
            method: r.method,
            outcome: r.outcome.to_string(),
            detail: r.detail,
            params: r.params,
        })
        .collect()
}

fn down_event(down: &ServerDown, required: &[String]) -> EventKind {
    EventKind::McpServerDown {
        server: down.server.clone(),
        reason: down.reason.clone(),
        stderr: down.stderr.clone(),
        required: required.contains(&down.server),
    }
}

fn warning(message: String) -> EventKind {
    EventKind::Warning {
        source: "mcp".into(),
        message,
    }
}
