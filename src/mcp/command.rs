//! How a stdio MCP server's process is built: [`server_command`] is the one
//! place a server's `Command` is made, so the process runner that puts
//! servers under the job's sandbox profile plugs in here.
//!
//! A server gets the same scrubbed environment as `exec` (only
//! [`is_inherited`] variables from agentci's own) plus its `env:` entries,
//! whose `${{ env.NAME }}` references are read through the caller's lookup,
//! never from the process environment directly.

use std::path::Path;
use std::process::Stdio;

use tokio::process::Command;

use crate::spec::EnvTemplate;
use crate::tools::exec::is_inherited;

/// What starting a stdio server needs, with references already resolved.
#[derive(Clone, Debug)]
pub struct StdioLaunch {
    pub command: String,
    pub args: Vec<String>,
    /// Set on top of the scrubbed environment.
    pub env: Vec<(String, String)>,
    /// Absolute directory to start in.
    pub cwd: std::path::PathBuf,
}

impl StdioLaunch {
    /// Resolves the `env` templates of a server; `Err` names the variable
    /// that is not set.
    pub fn resolve(
        command: &str,
        args: &[String],
        env: &[(String, EnvTemplate)],
        cwd: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let mut resolved = Vec::new();
        for (name, template) in env {
            let value = template.resolve(lookup).map_err(|missing| {
                format!("environment variable `{missing}` (for `env.{name}`) is not set")
            })?;
            resolved.push((name.clone(), value));
        }
        Ok(StdioLaunch {
            command: command.to_string(),
            args: args.to_vec(),
            env: resolved,
            cwd: cwd.to_path_buf(),
        })
    }
}

/// The child process of a stdio server: piped stdin/stdout/stderr, a
/// scrubbed environment, its own process group (so a kill reaches what it
/// started), killed when the handle is dropped.
pub fn server_command(launch: &StdioLaunch) -> Command {
    let mut command = Command::new(&launch.command);
    command
        .args(&launch.args)
        .current_dir(&launch.cwd)
        .env_clear()
        .envs(std::env::vars_os().filter(|(name, _)| name.to_str().is_some_and(is_inherited)))
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    command
}
