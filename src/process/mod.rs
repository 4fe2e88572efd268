//! [`ProcessRunner`], the one place agentci builds a child process: `exec`
//! calls, the job's checks, eval `run:` assertions and MCP servers
//! (`crate::mcp::server_command`).
//!
//! It is configured once per run — the [`Sandbox`], the scrubbed
//! environment plus the run's extra variables, the secrets to mask — and
//! every child gets exactly that: stdin from `/dev/null`, its own process
//! group, the sandbox applied just before `exec`, and a [`ProcessTree`]
//! guard that kills it and everything it started when the call ends or is
//! dropped. The one exception is a background session ([`sessions`]): its
//! stdin is a pipe and it lives until it is killed, its step ends or the
//! run ends. Whether a command may run at all is [`crate::policy`]'s
//! decision, not this module's.
//!
//! Children get a scrubbed environment: only the variables in
//! [`INHERITED_ENV`] (and the `LC_*` locale variables) come from agentci's
//! own environment, then `TMPDIR` pointing at the run's private temporary
//! folder, then the caller's extra variables (the job's `env:`, an eval
//! attempt's own folders). API keys, CI tokens and everything else a runner
//! exports stay out of reach of a command the model wrote. The inherited
//! variables come from the run's [`RunEnv`], the snapshot its secrets were
//! read from, not from the process environment at spawn time: the values
//! a child gets are the ones the withholding below was judged on.
//!
//! Where the sandbox has no PID namespace (user namespaces refused, as
//! Docker's default seccomp profile and hardened runners do), children
//! share agentci's view of the machine's processes, and nothing keeps what
//! they are given on the machine: UDP is open and Landlock covers TCP only.
//! There the runner gives no child a variable whose value holds one of the
//! run's secrets ([`ProcessRunner::withheld_secrets`] names them for the
//! run's warning): `exec`, the checks and eval assertions run without the
//! secrets the job's `env:` passes. MCP servers keep the `env:` of their
//! own entry, set on top of this environment by [`crate::mcp`]: a server is
//! the job's own configured program and needs its token to work, and it
//! is not a command the model wrote. `sandbox: off` gives children
//! everything the job passes, as asked.

mod capture;
pub mod environ_block;
pub mod hardening;
pub mod network;
pub mod sessions;

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::event::SandboxReport;
use crate::redact::Redactor;
use crate::run_env::RunEnv;
use crate::sandbox::writable::{self, CachePreset, KeptPaths};
use crate::sandbox::{CallGroup, LimitReached, Sandbox, SandboxPaths};
use crate::sandbox::{SandboxProfile, SandboxSpec, WritableError};

/// The shell `exec` runs its command with; the policy's parser
/// ([`crate::policy::shell`]) reads bash syntax, so this must be bash. An
/// absolute path for the reason given in `tools::exec`.
pub const SHELL: &str = "/bin/bash";

/// Variables a command inherits from agentci's environment. The cargo and
/// rustup ones are there so `cargo test` finds the same toolchain, registry
/// cache and target folder as the caller when they are not in the default
/// place. The package managers' cache folders
/// ([`CachePreset::VARIABLES`]) are inherited too, so that the tools write
/// where the `sandbox.writable` presets opened.
pub const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "TMPDIR",
    "CARGO_HOME",
    "CARGO_TARGET_DIR",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
];

/// Git configuration every child gets, through git's variables for
/// command-line settings (which outrank every config file): git takes a
/// folder for a bare repository only when told (`--git-dir`, `GIT_DIR`).
/// The file tools may write anything but `.git`, so a folder laid out as a
/// bare repository (`HEAD`, `config`, `objects/`, `refs/`) would otherwise
/// give git, run inside it, a configuration the model wrote: a `textconv`
/// or `fsmonitor` command that an allow rule such as `exec(git log*)` then
/// runs unseen. The job's `env:` may set these variables itself.
const GIT_ENV: &[(&str, &str)] = &[
    ("GIT_CONFIG_COUNT", "1"),
    ("GIT_CONFIG_KEY_0", "safe.bareRepository"),
    ("GIT_CONFIG_VALUE_0", "explicit"),
];

/// Prefixes of inherited variable names (the locale categories).
pub const INHERITED_ENV_PREFIXES: &[&str] = &["LC_"];

/// Variables whose (absolute) folder children may write under
/// `workspace-write`: the temporary and build folders the caller chose, and
/// those eval gives each attempt (`eval::isolation`).
const WRITABLE_ENV: &[&str] = &[
    "TMPDIR",
    "TMP",
    "TEMP",
    "GOTMPDIR",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_BUILD_BUILD_DIR",
    "PYTHONPYCACHEPREFIX",
    "MYPY_CACHE_DIR",
    "RUFF_CACHE_DIR",
];

/// Whether a command inherits the variable `name` from agentci's environment.
pub fn is_inherited(name: &str) -> bool {
    INHERITED_ENV.contains(&name)
        || CachePreset::VARIABLES.contains(&name)
        || INHERITED_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Why a run's process runner cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("cannot create the private temporary folder: {0}")]
    TempFolder(#[source] io::Error),
    /// An entry of `sandbox.writable` that names no usable folder.
    #[error(transparent)]
    Writable(#[from] WritableError),
    #[error("cannot start the proxy for `sandbox.network`: {0}")]
    Proxy(#[source] crate::netproxy::ProxyError),
}

/// Where a run's children start and what they may not touch: what the
/// caller decides, beside the job's sandbox and secrets.
#[derive(Clone, Debug, Default)]
pub struct RunnerExtra {
    /// The folder children start in (the job's workspace, or its copy).
    pub workspace: PathBuf,
    /// Names the private temporary folder (`agentci-<run id>` in the system's).
    pub run_id: String,
    /// agentci's own outputs, read-only for children.
    pub protected: Vec<PathBuf>,
    /// Files children must not read (the checkpoint key): they see them empty.
    pub masked: Vec<PathBuf>,
    /// Files and folders of the workspace that `read(...)` deny rules
    /// cover, found at the start: children see them empty.
    pub read_denied: Vec<PathBuf>,
    /// The workspace's repositories and skill folders, read-only for children.
    pub read_only: Vec<PathBuf>,
    /// Set on top of the scrubbed environment, later entries winning
    /// (`ProcessRunner::for_job` puts the job's `env:` first).
    pub extra_env: Vec<(String, String)>,
}

/// How one run starts processes.
#[derive(Clone, Debug)]
pub struct RunnerConfig {
    pub sandbox: SandboxSpec,
    pub children: RunnerExtra,
    pub secrets: Redactor,
}

/// Starts a run's child processes; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct ProcessRunner {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// `None`: no sandbox (profile `off`, or a runner for unit tests).
    sandbox: Option<Sandbox>,
    env: Vec<(OsString, OsString)>,
    secrets: Redactor,
    /// Removed with the runner, as is the empty file masking files.
    temp: Option<PathBuf>,
    empty_file: Option<PathBuf>,
    empty_folder: Option<PathBuf>,
    /// Background sessions; killed with the runner at the latest.
    sessions: sessions::Sessions,
    /// Variables left out of `env` for holding a secret, by name.
    withheld: Vec<String>,
    /// The proxy of `sandbox.network: [hosts]`, stopped with the runner.
    network: Option<network::NetworkBridge>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = std::fs::remove_dir_all(temp);
        }
        if let Some(empty) = &self.empty_file {
            let _ = std::fs::remove_file(empty);
        }
        if let Some(empty) = &self.empty_folder {
            let _ = std::fs::remove_dir(empty);
        }
    }
}

/// The empty, read-only file bound over masked files in the children:
/// beside the run's private temporary folder, not in it, so no child can
/// write it.
fn empty_file(run_id: &str) -> io::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = std::env::temp_dir().join(format!("agentci-{run_id}.empty"));
    let _ = std::fs::remove_file(&path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o444)
        .open(&path)?;
    Ok(path)
}

/// The empty, read-only folder bound over read-denied folders, beside the
/// empty file.
fn empty_folder(run_id: &str) -> io::Result<PathBuf> {
    let path = std::env::temp_dir().join(format!("agentci-{run_id}.empty-folder"));
    let _ = std::fs::remove_dir(&path);
    std::fs::DirBuilder::new().mode(0o555).create(&path)?;
    Ok(path)
}

impl ProcessRunner {
    /// The runner for one run; creates its private temporary folder and
    /// the job's `sandbox.writable` folders. Children inherit from
    /// `inherited`, the environment snapshot the run's secrets were read
    /// from, so what is withheld from them is judged on the values they
    /// would get. A run builds its runner with `ProcessRunner::for_job`
    /// (in `crate::runner`), which fills `config` from the job.
    pub fn new(config: RunnerConfig, inherited: &RunEnv) -> Result<ProcessRunner, RunnerError> {
        let temp = std::env::temp_dir().join(format!("agentci-{}", config.children.run_id));
        let mut env = inherited_env(inherited);
        env.retain(|(k, _)| k != "TMPDIR");
        env.push(("TMPDIR".into(), temp.clone().into()));
        env.extend(git_env());
        for (k, v) in &config.children.extra_env {
            env.retain(|(name, _)| name != k.as_str());
            env.push((k.into(), v.into()));
        }
        let writable: Vec<PathBuf> = env
            .iter()
            .filter(|(k, _)| WRITABLE_ENV.iter().any(|w| k == w))
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| p.is_absolute())
            .collect();
        // Landlock grants access beneath folders that exist when the rules
        // are made; a build folder outside the workspace that the first build
        // would create is made now (inside, the workspace rule covers it).
        for folder in writable
            .iter()
            .filter(|f| !f.starts_with(&config.children.workspace))
        {
            let _ = std::fs::create_dir_all(folder);
        }
        let job_writable = job_writable(&config, &env)?;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&temp)
            .map_err(RunnerError::TempFolder)?;
        let empty_file = match config.children.masked.is_empty()
            && config.children.read_denied.is_empty()
        {
            true => None,
            false => Some(empty_file(&config.children.run_id).map_err(RunnerError::TempFolder)?),
        };
        let empty_folder = match config.children.read_denied.iter().any(|p| p.is_dir()) {
            true => Some(empty_folder(&config.children.run_id).map_err(RunnerError::TempFolder)?),
            false => None,
        };
        let paths = SandboxPaths {
            run_id: config.children.run_id.clone(),
            workspace: config.children.workspace.clone(),
            temp: temp.clone(),
            writable,
            job_writable,
            protected: config.children.protected,
            masked: config.children.masked,
            empty_file: empty_file.clone().unwrap_or_default(),
            read_denied: config.children.read_denied,
            empty_folder: empty_folder.clone().unwrap_or_default(),
            read_only: config.children.read_only,
        };
        let mut written: Vec<&Path> = vec![&paths.workspace, &paths.temp];
        written.extend(paths.writable.iter().map(PathBuf::as_path));
        written.extend(paths.job_writable.iter().map(|r| r.folder.as_path()));
        crate::tls::pin_roots_written_in(
            inherited.var_os("SSL_CERT_FILE"),
            inherited.var_os("SSL_CERT_DIR"),
            &written,
        );
        let hosts = config.sandbox.hosts.clone();
        let sandbox = Sandbox::new(config.sandbox, &paths);
        let network = match (hosts, sandbox.take_proxy_listener()) {
            (Some(hosts), Some(listener)) => Some(
                network::NetworkBridge::start(hosts.allowlist, listener)
                    .map_err(RunnerError::Proxy)?,
            ),
            _ => None,
        };
        if let Some(bridge) = &network {
            for (name, value) in bridge.env() {
                // The job's own `env:` wins (a corporate proxy chained in).
                if !config.children.extra_env.iter().any(|(k, _)| *k == name) {
                    env.push((name.into(), value.into()));
                }
            }
        }
        let withheld = match crate::sandbox::children_reach_agentci(sandbox.report()) {
            true => withhold_secrets(&mut env, &config.secrets),
            false => Vec::new(),
        };
        Ok(ProcessRunner {
            inner: Arc::new(Inner {
                sandbox: Some(sandbox),
                env,
                secrets: config.secrets,
                temp: Some(temp),
                empty_file,
                empty_folder,
                sessions: sessions::Sessions::default(),
                withheld,
                network,
            }),
        })
    }

    /// Hand every connection the network proxy reports to `observer`
    /// (those made so far first); nothing without a `sandbox.network` list.
    pub fn observe_network(&self, observer: crate::netproxy::RecordObserver) {
        if let Some(bridge) = &self.inner.network {
            bridge.observe(observer);
        }
    }

    /// The proxy's address in agentci's own network, when the job lists
    /// the hosts the run may reach (`web_fetch` goes through it).
    pub fn network_proxy_url(&self) -> Option<&str> {
        self.inner.network.as_ref().map(|b| b.outside_url.as_str())
    }

    /// No sandbox, the scrubbed environment plus `extra_env`: for tools
    /// called outside a run (unit tests, benchmarks, an MCP server started
    /// with no runner). Outside a run there is no snapshot: the variables
    /// are agentci's environment as it is now.
    pub fn unsandboxed(extra_env: &[(String, String)], secrets: Redactor) -> ProcessRunner {
        let mut env = inherited_env(&RunEnv::new(std::env::vars_os()));
        env.extend(git_env());
        env.extend(extra_env.iter().map(|(k, v)| (k.into(), v.into())));
        ProcessRunner {
            inner: Arc::new(Inner {
                sandbox: None,
                env,
                secrets,
                temp: None,
                empty_file: None,
                empty_folder: None,
                sessions: sessions::Sessions::default(),
                withheld: Vec::new(),
                network: None,
            }),
        }
    }

    /// The profile children run under (`off` without a sandbox).
    pub fn profile(&self) -> SandboxProfile {
        self.inner
            .sandbox
            .as_ref()
            .map_or(SandboxProfile::Off, Sandbox::profile)
    }

    pub fn sandbox_report(&self) -> SandboxReport {
        match &self.inner.sandbox {
            Some(sandbox) => sandbox.report().clone(),
            None => SandboxReport {
                profile: SandboxProfile::Off.as_str().to_string(),
                ..SandboxReport::default()
            },
        }
    }

    pub fn secrets(&self) -> &Redactor {
        &self.inner.secrets
    }

    /// The variables children do not get because their value holds one of
    /// the run's secrets and the sandbox cannot hide agentci from them
    /// (see the module's documentation); empty otherwise.
    pub fn withheld_secrets(&self) -> &[String] {
        &self.inner.withheld
    }

    /// `program` configured to run in `cwd` as this run's child: scrubbed
    /// environment, stdin empty, stdout and stderr piped, its own process
    /// group, the sandbox. Start it with [`ProcessTree::spawn`].
    pub fn command(&self, program: impl AsRef<Path>, cwd: &Path) -> io::Result<Command> {
        let mut command = Command::new(program.as_ref());
        self.configure(&mut command, cwd)?;
        Ok(command)
    }

    /// Makes `command` this run's child as [`ProcessRunner::command`] does,
    /// for a caller that set up the command first (an MCP server adds its
    /// own `pre_exec` step before the sandbox's). The call's control group,
    /// where the sandbox makes one, says afterwards which limit it reached.
    pub fn configure(&self, command: &mut Command, cwd: &Path) -> io::Result<Option<CallGroup>> {
        command
            .current_dir(cwd)
            .env_clear()
            .envs(self.inner.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        match &self.inner.sandbox {
            Some(sandbox) => sandbox.install(command),
            None => Ok(None),
        }
    }

    /// Run `command_line` with `bash -c` ([`crate::process::SHELL`], the
    /// shell whose grammar exec rules are judged by) to completion or timeout; `Err`
    /// only when it could not be started. Output is masked and cut to
    /// `max_output_chars`.
    pub async fn run_shell(
        &self,
        command_line: &str,
        cwd: &Path,
        timeout: Duration,
        max_output_chars: usize,
    ) -> io::Result<ShellOutput> {
        let started = Instant::now();
        // A path, not `bash`: it spares the child a PATH search.
        let mut command = Command::new(crate::process::SHELL);
        let group = self.configure(&mut command, cwd)?;
        command.arg("-c").arg(command_line);
        let (mut child, mut tree) = ProcessTree::spawn(&mut command)?;
        let stdout = child
            .stdout
            .take()
            .map(|p| capture::capture(p, max_output_chars));
        let stderr = child
            .stderr
            .take()
            .map(|p| capture::capture(p, max_output_chars));

        let ended = tokio::time::timeout(timeout, until_ended(&mut child, group.as_ref())).await;
        tree.kill();
        let (status, timed_out, limit_reached) = match ended {
            Ok((status, reached)) => (status?, false, reached),
            Err(_) => (child.wait().await?, true, None),
        };
        // A limit reached as the command ended (a fork refused at the end).
        let limit_reached = limit_reached.or_else(|| group.as_ref().and_then(CallGroup::reached));
        let stdout = capture::finish_capture(stdout).await;
        let stderr = capture::finish_capture(stderr).await;
        let (output, cut_bytes) =
            capture::render(&stdout, &stderr, max_output_chars, &self.inner.secrets);
        Ok(ShellOutput {
            limit_reached,
            exit_code: status.code(),
            signal: status.signal(),
            timed_out,
            output,
            stdout_bytes: stdout.total,
            stderr_bytes: stderr.total,
            cut_bytes,
            duration: started.elapsed(),
        })
    }
}

use std::os::unix::fs::DirBuilderExt;

/// The job's `sandbox.writable` folders, resolved in the environment the
/// children get (`env`), checked and created; none unless the profile is
/// `workspace-write`.
fn job_writable(
    config: &RunnerConfig,
    env: &[(OsString, OsString)],
) -> Result<Vec<crate::sandbox::ResolvedRoot>, WritableError> {
    if config.sandbox.profile != SandboxProfile::WorkspaceWrite
        || config.sandbox.writable.is_empty()
    {
        return Ok(Vec::new());
    }
    let lookup = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let env = writable::Env::new(&lookup);
    let resolved = writable::resolve(&config.sandbox.writable, &env)?;
    let kept = KeptPaths {
        workspace: config.children.workspace.clone(),
        own: [&config.children.protected, &config.children.masked]
            .into_iter()
            .flatten()
            .cloned()
            .collect(),
        read_only: config.children.read_only.clone(),
        home: lookup("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute()),
    };
    writable::prepare(resolved, &kept)
}

/// The inherited part of a command's environment, from agentci's own.
fn inherited_env(env: &RunEnv) -> Vec<(OsString, OsString)> {
    env.vars_os()
        .filter(|(name, _)| name.to_str().is_some_and(is_inherited))
        .map(|(name, value)| (name.to_os_string(), value.to_os_string()))
        .collect()
}

/// Leave out of `env` every variable whose value holds one of `secrets`
/// (or an encoding of one, as the masking sees them); their names, sorted.
fn withhold_secrets(env: &mut Vec<(OsString, OsString)>, secrets: &Redactor) -> Vec<String> {
    let mut withheld = Vec::new();
    env.retain(|(name, value)| {
        // Masking changes exactly the text that holds a secret.
        let text = value.to_string_lossy();
        let holds = secrets.redact(&text) != text;
        if holds {
            withheld.push(name.to_string_lossy().into_owned());
        }
        !holds
    });
    withheld.sort();
    withheld.dedup();
    withheld
}

/// [`GIT_ENV`] as environment pairs.
fn git_env() -> impl Iterator<Item = (OsString, OsString)> {
    GIT_ENV.iter().map(|(k, v)| (k.into(), v.into()))
}

/// Wait for `child` to end; with a control group, end it early when it
/// reaches a limit there (a fork bomb would otherwise spin against the
/// process limit until the call's timeout), and say which.
async fn until_ended(
    child: &mut Child,
    group: Option<&CallGroup>,
) -> (io::Result<std::process::ExitStatus>, Option<LimitReached>) {
    let Some(group) = group else {
        return (child.wait().await, None);
    };
    let mut every = tokio::time::interval(LIMIT_POLL);
    loop {
        tokio::select! {
            status = child.wait() => return (status, None),
            _ = every.tick() => {
                if let Some(reached) = group.reached() {
                    let _ = child.start_kill();
                    return (child.wait().await, Some(reached));
                }
            }
        }
    }
}

/// How often a running call's control group is checked for a limit reached.
const LIMIT_POLL: Duration = Duration::from_millis(100);

/// What a command did.
#[derive(Clone, Debug, PartialEq)]
pub struct ShellOutput {
    /// The sandbox limit the command reached, where a control group counts
    /// it; the command was ended then.
    pub limit_reached: Option<LimitReached>,
    /// `None` when it was killed by a signal (including on timeout).
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// stdout then stderr (under a `[stderr]` line when both are present),
    /// masked, cut in the middle of each stream to fit the limit.
    pub output: String,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// Bytes of output not shown in `output`.
    pub cut_bytes: u64,
    pub duration: Duration,
}

/// A started child and everything it starts: killed with SIGKILL when
/// [`ProcessTree::kill`] is called or the guard is dropped, so a cancelled
/// call leaves nothing running either. In the sandbox the child's PID
/// namespace dies with it, taking `setsid` and double-forked descendants
/// along; without one, the process group is all there is to kill.
#[derive(Debug)]
pub struct ProcessTree(Option<i32>);

impl ProcessTree {
    /// Spawn a command made by [`ProcessRunner::command`].
    pub fn spawn(command: &mut Command) -> io::Result<(Child, ProcessTree)> {
        let child = command.spawn()?;
        // The child leads its own group, so the group id is its pid.
        let tree = ProcessTree(child.id().and_then(|id| i32::try_from(id).ok()));
        Ok((child, tree))
    }

    /// Kill the tree once; afterwards the id may belong to someone else.
    pub fn kill(&mut self) {
        if let Some(pgid) = self.0.take().filter(|&p| p > 1) {
            // SAFETY: killpg only sends a signal; pgid is our child's own group
            // (process_group(0)), never 0 or 1, so it cannot hit our own group or init.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for ProcessTree {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_holding_a_secret_are_withheld_by_name() {
        let secrets = Redactor::new(["sk-live-0123456789", "npm_ABCDEFGH"]);
        let mut env: Vec<(OsString, OsString)> = [
            ("PATH", "/usr/bin:/bin"),
            ("OPENAI_API_KEY", "sk-live-0123456789"),
            ("NPM_CONFIG", "//registry/:_authToken=npm_ABCDEFGH"),
            ("GREETING", "hello"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let withheld = withhold_secrets(&mut env, &secrets);
        assert_eq!(withheld, ["NPM_CONFIG", "OPENAI_API_KEY"]);
        let names: Vec<&OsString> = env.iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["PATH", "GREETING"]);
    }

    #[test]
    fn only_a_sandbox_without_its_pid_namespace_reaches_agentci() {
        let report = |missing: &[&str]| SandboxReport {
            missing: missing.iter().map(|m| m.to_string()).collect(),
            ..SandboxReport::default()
        };
        use crate::sandbox::children_reach_agentci;
        assert!(children_reach_agentci(&report(&["processes", "network"])));
        assert!(!children_reach_agentci(&report(&["filesystem"])));
        // `sandbox: off` reports nothing missing: the job asked for no sandbox.
        assert!(!children_reach_agentci(&report(&[])));
    }
}
