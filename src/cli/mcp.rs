//! `agentci mcp list` and `agentci mcp call`: start a job's MCP servers (or
//! one server given by `--url` or `-- COMMAND ARGS...`) and show their tools
//! and resources, or call one tool — what a user reaches for when a job's
//! tools misbehave.
//!
//! Exit codes: 0 when everything worked, 1 when the tool answered with an
//! error, 2 for bad input (flags, job file, JSON arguments), 4 when a server
//! could not be reached or went down. Output: text for people, or one JSON
//! document with `--json` (see `super::mcp_print`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::mcp_print::{self, CallReport, ServerReport};
use super::{CliError, Exit};
use crate::job::duration::parse_duration;
use crate::job::mcp::{DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, check_server_name};
use crate::job::{EnvTemplate, LoadOptions, McpServerSpec, McpTransport, load_job};
use crate::mcp::{McpSet, StartContext};
use crate::process::{ProcessRunner, RunnerError};
use crate::redact::Redactor;
use crate::run_env::RunEnv;
use crate::runner::RunnerExtra;

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start MCP servers and print their tools and resources.
    ///
    /// `agentci mcp list JOB.yaml [SERVER]`, `agentci mcp list --url URL`,
    /// or `agentci mcp list -- COMMAND ARGS...`.
    List(ListArgs),
    /// Call one tool of an MCP server and print its result.
    ///
    /// `agentci mcp call JOB.yaml SERVER TOOL ['JSON']`,
    /// `agentci mcp call --url URL TOOL ['JSON']`, or
    /// `agentci mcp call TOOL ['JSON'] -- COMMAND ARGS...`.
    /// Exit 0 when the call succeeded, 1 when the tool returned an error,
    /// 4 when the server could not be reached.
    Call(CallArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// `JOB.yaml [SERVER]`, or nothing with `--url` or `-- COMMAND`.
    #[arg(value_name = "JOB.yaml [SERVER]")]
    pub words: Vec<String>,
    #[command(flatten)]
    pub source: SourceArgs,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// `JOB.yaml SERVER TOOL ['JSON']`, or `TOOL ['JSON']` with `--url` or `-- COMMAND`.
    #[arg(value_name = "[JOB.yaml SERVER] TOOL ['JSON']", required = true)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub source: SourceArgs,
}

/// Where the servers come from, and how to show the outcome.
#[derive(Debug, Args)]
pub struct SourceArgs {
    /// A remote server reached over Streamable HTTP.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// An HTTP header for `--url`, as `NAME=VALUE` (repeatable).
    #[arg(long = "header", value_name = "NAME=VALUE", requires = "url")]
    pub headers: Vec<String>,
    /// Time allowed for one call, for `--url` and `--` servers (default 60s).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Time allowed to start and list tools, for `--url` and `--` servers (default 30s).
    #[arg(long, value_name = "DURATION")]
    pub startup_timeout: Option<String>,
    /// Set a job variable (repeatable), as `agentci run --var` does.
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
    /// The workspace (overrides the job's `workspace`; default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// A local server to start: `-- COMMAND ARGS...`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `env` is agentci's environment, snapshotted once in `main`.
pub fn mcp(args: McpArgs, env: &RunEnv) -> Result<Exit, CliError> {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return Err(CliError::Runtime(e)),
    };
    let code = runtime.block_on(async {
        let started = Started::default();
        let work = async {
            match args.command {
                McpCommand::List(list) => run_list(list, env, &started).await,
                McpCommand::Call(call) => run_call(call, env, &started).await,
            }
        };
        let stop = match stop_signal() {
            Ok(stop) => stop,
            Err(e) => return Err(CliError::Signals(e)),
        };
        tokio::select! {
            code = work => code,
            (number, name) = stop => {
                // The call in flight is dropped; the servers are asked to
                // exit (stdin closed) and killed after the grace period.
                let _ = writeln!(std::io::stderr(), "interrupted by {name}: stopping the MCP servers");
                let set = started.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Some(set) = set {
                    set.shutdown_all().await;
                }
                Ok(Exit::Interrupted(Some(number)))
            }
        }
    });
    // A server task still finishing its shutdown must not hold up the exit.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

/// The servers started so far, for shutting them down on a signal.
type Started = Mutex<Option<Arc<McpSet>>>;

/// The first SIGINT or SIGTERM, as its number and name.
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = (i32, &'static str)>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => (libc::SIGINT, "SIGINT"),
            _ = terminate.recv() => (libc::SIGTERM, "SIGTERM"),
        }
    })
}

/// Starts `servers` as a run would, all at once, and keeps the set for
/// [`mcp`]'s signal handling.
async fn start_set(
    servers: &[McpServerSpec],
    selection: &Selection,
    env: &RunEnv,
    started: &Started,
) -> Arc<McpSet> {
    let lookup = |name: &str| env.var(name);
    let cx = StartContext {
        workspace: &selection.workspace,
        env: &lookup,
        runner: selection.runner.as_ref(),
        sampler: None,
    };
    let set = Arc::new(McpSet::start(servers, &cx).await);
    *started.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&set));
    set
}

fn fail(message: &str) -> Result<Exit, CliError> {
    Err(CliError::input(message))
}

/// The servers to start and the workspace they run in.
struct Selection {
    servers: Vec<McpServerSpec>,
    workspace: PathBuf,
    /// A job's servers run under its sandbox profile and `env:`, as in a
    /// run; a `--` command runs with the scrubbed environment only.
    runner: Option<ProcessRunner>,
    /// Masked in everything printed: a job's secrets, as a run masks them
    /// in its trace (those of its MCP servers too); none for `--url` and `--`.
    secrets: Redactor,
}

async fn run_list(args: ListArgs, env: &RunEnv, started: &Started) -> Result<Exit, CliError> {
    let (mut selection, rest) = match select(&args.source, &args.words, env) {
        Ok(found) => found,
        Err(message) => return fail(&message),
    };
    let mut servers = std::mem::take(&mut selection.servers);
    if let Some(name) = rest.first() {
        servers.retain(|s| &s.name == name);
        if servers.is_empty() {
            return fail(&format!("the job has no MCP server `{name}`"));
        }
    }
    if rest.len() > 1 {
        return fail("`agentci mcp list` takes a job file and at most one server name");
    }
    let set = start_set(&servers, &selection, env, started).await;
    let mut reports = Vec::new();
    for spec in &servers {
        let report = match set.server(&spec.name) {
            Some(server) => ServerReport::describe(server).await,
            None => match set.failed().iter().find(|d| d.server == spec.name) {
                Some(down) => ServerReport::Down(down.clone()),
                None => continue,
            },
        };
        reports.push(report);
    }
    set.shutdown_all().await;
    let any_down = reports.iter().any(|r| matches!(r, ServerReport::Down(_)));
    mcp_print::print_list(&reports, args.source.json, &selection.secrets);
    Ok(if any_down {
        Exit::Unavailable
    } else {
        Exit::Success
    })
}

async fn run_call(args: CallArgs, env: &RunEnv, started: &Started) -> Result<Exit, CliError> {
    let (mut selection, rest) = match select(&args.source, &args.words, env) {
        Ok(found) => found,
        Err(message) => return fail(&message),
    };
    let from_job = args.source.url.is_none() && args.source.command.is_empty();
    let (spec, rest) = if from_job {
        let Some((name, rest)) = rest.split_first() else {
            return fail("expected `agentci mcp call JOB.yaml SERVER TOOL ['JSON']`");
        };
        match std::mem::take(&mut selection.servers)
            .into_iter()
            .find(|s| &s.name == name)
        {
            Some(spec) => (spec, rest.to_vec()),
            None => return fail(&format!("the job has no MCP server `{name}`")),
        }
    } else {
        match std::mem::take(&mut selection.servers).into_iter().next() {
            Some(spec) => (spec, rest),
            None => return fail("no server given"),
        }
    };
    let (tool, arguments) = match rest.as_slice() {
        [tool] => (tool.clone(), Value::Object(serde_json::Map::new())),
        [tool, json] => match serde_json::from_str::<Value>(json) {
            Ok(value @ Value::Object(_)) => (tool.clone(), value),
            Ok(other) => {
                return fail(&format!(
                    "the arguments must be a JSON object such as '{{\"a\": 1}}', found `{other}`"
                ));
            }
            Err(e) => return fail(&format!("the arguments are not valid JSON: {e}")),
        },
        [] => return fail("expected the name of the tool to call"),
        _ => return fail("too many arguments; expected TOOL and one JSON object"),
    };
    let set = start_set(std::slice::from_ref(&spec), &selection, env, started).await;
    if let Some(down) = set.failed().first() {
        mcp_print::print_call(
            &CallReport::down(&spec.name, &tool, down.clone()),
            args.source.json,
            &selection.secrets,
        );
        return Ok(Exit::Unavailable);
    }
    let outcome = set.call(&spec.name, &tool, arguments).await;
    let requests = set.take_requests().into_iter().map(|(_, r)| r).collect();
    let report = CallReport::new(&spec.name, &tool, outcome, requests);
    set.shutdown_all().await;
    mcp_print::print_call(&report, args.source.json, &selection.secrets);
    Ok(match &report.down {
        Some(_) => Exit::Unavailable,
        None if report.output.as_ref().is_some_and(|o| o.is_error) => Exit::Failed,
        None => Exit::Success,
    })
}

/// The servers named by the flags or the job file, and the words left over.
fn select(
    source: &SourceArgs,
    words: &[String],
    env: &RunEnv,
) -> Result<(Selection, Vec<String>), String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    if let Some(selection) = flag_server(source, &cwd)? {
        return Ok((selection, words.to_vec()));
    }
    let Some((job_file, rest)) = words.split_first() else {
        return Err(
            "expected a job file, --url URL, or -- COMMAND ARGS... (see `agentci mcp --help`)"
                .to_string(),
        );
    };
    Ok((job_servers(source, &cwd, job_file, env)?, rest.to_vec()))
}

/// The one server `--url` or `-- COMMAND ARGS...` names, with the flags'
/// timeouts; `None` when neither is given.
fn flag_server(source: &SourceArgs, cwd: &Path) -> Result<Option<Selection>, String> {
    let given = [source.url.is_some(), !source.command.is_empty()];
    if given.iter().all(|g| *g) {
        return Err("give either --url URL or -- COMMAND ARGS..., not both".to_string());
    }
    let timeout = flag_duration(source.timeout.as_deref(), "--timeout", DEFAULT_CALL_TIMEOUT)?;
    let startup_timeout = flag_duration(
        source.startup_timeout.as_deref(),
        "--startup-timeout",
        DEFAULT_STARTUP_TIMEOUT,
    )?;
    let workspace = source
        .workspace
        .as_ref()
        .map_or_else(|| cwd.to_path_buf(), |w| cwd.join(w));
    let one = |name: String, transport: McpTransport| McpServerSpec {
        name,
        transport,
        timeout,
        startup_timeout,
        tools: None,
        required: false,
        roots: false,
        sampling: false,
    };
    if let Some(url) = &source.url {
        let mut headers = Vec::new();
        for header in &source.headers {
            let Some((name, value)) = header.split_once('=') else {
                return Err(format!("--header `{header}`: expected NAME=VALUE"));
            };
            headers.push((name.trim().to_string(), EnvTemplate::text(value)));
        }
        let transport = McpTransport::Http {
            url: url.clone(),
            headers,
        };
        let servers = vec![one("remote".to_string(), transport)];
        return Ok(Some(Selection {
            servers,
            workspace,
            runner: None,
            secrets: Redactor::default(),
        }));
    }
    if let Some((program, args)) = source.command.split_first() {
        let transport = McpTransport::Stdio {
            command: program.clone(),
            args: args.to_vec(),
            env: Vec::new(),
            cwd: None,
        };
        let servers = vec![one(name_for_command(program), transport)];
        return Ok(Some(Selection {
            servers,
            workspace,
            runner: None,
            secrets: Redactor::default(),
        }));
    }
    Ok(None)
}

/// The servers of a job file's `mcp.servers`, run as the job would run them.
fn job_servers(
    source: &SourceArgs,
    cwd: &Path,
    job_file: &str,
    env: &RunEnv,
) -> Result<Selection, String> {
    if source.timeout.is_some() || source.startup_timeout.is_some() {
        return Err(
            "--timeout and --startup-timeout are for --url and -- servers; a job sets \
                    them per server"
                .to_string(),
        );
    }
    let options = LoadOptions {
        cwd: cwd.to_path_buf(),
        vars: source.vars.clone(),
        workspace: source.workspace.clone(),
        ..LoadOptions::default()
    };
    let (job, _warnings) = load_job(Path::new(job_file), &options).map_err(|problems| {
        problems
            .iter()
            .map(|d| d.with_severity().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    if job.mcp.servers.is_empty() {
        return Err(format!("{job_file} has no `mcp.servers`"));
    }
    let runner = job_runner(&job, env)?;
    Ok(Selection {
        servers: job.mcp.servers,
        workspace: job.workspace,
        secrets: runner.secrets().clone(),
        runner: Some(runner),
    })
}

/// The process runner a run of `job` would have: its sandbox profile, its
/// `env:`, its secrets. What the sandbox cannot enforce here is said on
/// stderr, as a run says it at start; a job that requires its sandbox (the
/// default) stops when part of it cannot be enforced here.
fn job_runner(job: &crate::job::JobSpec, env: &RunEnv) -> Result<ProcessRunner, String> {
    let extra = RunnerExtra {
        workspace: job.workspace.clone(),
        run_id: format!("mcp-{}", std::process::id()),
        ..RunnerExtra::default()
    };
    let runner = ProcessRunner::for_job(job, env, extra).map_err(|e| match e {
        RunnerError::TempFolder(e) => format!("cannot create the private temporary folder: {e}"),
        RunnerError::Writable(e) => e.in_file(&job.path),
        RunnerError::Proxy(e) => e.to_string(),
    })?;
    let report = runner.sandbox_report();
    if let Some(refusal) = crate::sandbox::refusal(&report) {
        return Err(format!("{}: {refusal}", job.path.display()));
    }
    if let Some(message) = crate::sandbox::degraded_message(&report) {
        let _ = writeln!(std::io::stderr(), "warning: {message}");
    }
    Ok(runner)
}

fn flag_duration(text: Option<&str>, flag: &str, default: Duration) -> Result<Duration, String> {
    match text {
        None => Ok(default),
        Some(text) => match parse_duration(text) {
            Ok(d) if !d.is_zero() => Ok(d),
            Ok(_) => Err(format!("{flag} must be more than zero")),
            Err(e) => Err(format!("{flag}: {e}")),
        },
    }
}

/// A server name for `-- COMMAND`: the program's file name, made valid.
fn name_for_command(program: &str) -> String {
    let base = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let mut name: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(crate::job::mcp::MAX_SERVER_NAME)
        .collect();
    name = name.trim_matches('-').to_string();
    if check_server_name(&name).is_ok() {
        name
    } else {
        "server".to_string()
    }
}
