//! How a stdio MCP server's process is built: [`server_command`] is the one
//! place a server's `Command` is made, so the process runner that puts
//! servers under the job's sandbox profile plugs in here.
//!
//! A server gets the same scrubbed environment as `exec` (only the
//! inherited basics from agentci's own, the run's private `TMPDIR`, the
//! job's `env:`) plus its own `env:` entries,
//! whose `${{ env.NAME }}` references are read through the caller's lookup,
//! never from the process environment directly.

use std::path::Path;
use std::process::Stdio;

use tokio::process::Command;

use crate::job::EnvTemplate;
use crate::process::ProcessRunner;

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

/// Why a stdio server's process could not be started; each names the
/// command (or the `env:` entry) and what to fix.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("environment variable `{variable}` (for `env.{name}`) is not set")]
    MissingEnv { variable: String, name: String },
    #[error("cannot start `{command}`: command not found (is it installed and on PATH?)")]
    NotFound { command: String },
    #[error("cannot start `{command}`: {source}")]
    Start {
        command: String,
        source: std::io::Error,
    },
    #[error("cannot start `{command}`: its pipes are missing")]
    NoPipes { command: String },
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
    ) -> Result<Self, LaunchError> {
        let mut resolved = Vec::new();
        for (name, template) in env {
            let value = template
                .resolve(lookup)
                .map_err(|missing| LaunchError::MissingEnv {
                    variable: missing.to_string(),
                    name: name.clone(),
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

/// The child process of a stdio server, made by the run's
/// [`ProcessRunner`] as `exec`'s are: the job's sandbox profile, the
/// scrubbed environment (plus the server's `env:` on top), its own process
/// group (and, in the sandbox, its own PID namespace, so a kill reaches
/// what it started); stdin, stdout and stderr piped, killed when the handle
/// is dropped.
///
/// The process agentci starts also gets `PR_SET_PDEATHSIG`: a server must
/// not outlive agentci even when agentci is killed or exits at once on a
/// second SIGINT, without running its shutdown. The signal fires when the
/// spawning thread ends; servers are spawned from the runtime's worker
/// threads, which live as long as the run.
pub fn server_command(launch: &StdioLaunch, runner: &ProcessRunner) -> std::io::Result<Command> {
    let mut command = Command::new(&launch.command);
    // Set before the sandbox's own setup: in the sandbox this is the
    // process that waits for the namespace's first one, which has its own.
    // SAFETY: prctl only sets an attribute of the forked child.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    runner.configure(&mut command, &launch.cwd)?;
    command
        .args(&launch.args)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped());
    Ok(command)
}
