//! The sandbox's configuration: which profile a process runs under, whether
//! it may use the network, which folders beyond the workspace it may write
//! and what resources a command may use. The sandbox owns these types; the
//! job's `sandbox:` is validated into them by `spec`.

use super::writable::WritableRoot;
use crate::netproxy::NetworkAllowlist;

/// What a process the run starts may do, enforced by the kernel (`sandbox:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum SandboxProfile {
    /// Write only in the workspace and a private temporary folder.
    #[default]
    WorkspaceWrite,
    /// Write nowhere but the private temporary folder.
    ReadOnly,
    /// No sandbox: the process can do what agentci can.
    Off,
}

impl SandboxProfile {
    pub const NAMES: &[&str] = &["workspace-write", "read-only", "off"];

    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(name: &str) -> Option<SandboxProfile> {
        match name {
            "workspace-write" => Some(SandboxProfile::WorkspaceWrite),
            "read-only" => Some(SandboxProfile::ReadOnly),
            "off" => Some(SandboxProfile::Off),
            _ => None,
        }
    }
}

/// `sandbox.limits`: what one command (and everything it starts) may use,
/// applied with `setrlimit` in the child before `exec`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceLimits {
    /// Processes of the command's user (`RLIMIT_NPROC`). The kernel counts
    /// them per user, and does not apply the limit to root: it binds when
    /// agentci runs unprivileged (the command's user namespace then counts
    /// only its own processes).
    pub processes: u64,
    /// Bytes of address space (`RLIMIT_AS`): virtual memory, not resident.
    pub memory: u64,
    /// Bytes of the largest file the command may write (`RLIMIT_FSIZE`).
    pub file_size: u64,
    /// Open file descriptors (`RLIMIT_NOFILE`).
    pub open_files: u64,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            processes: 512,
            memory: 4 << 30,
            file_size: 1 << 30,
            open_files: 4096,
        }
    }
}

/// `sandbox.network` as a list: the entries as written, and parsed.
#[derive(Clone, Debug)]
pub struct HostList {
    pub written: Vec<String>,
    pub allowlist: NetworkAllowlist,
}

impl PartialEq for HostList {
    fn eq(&self, other: &Self) -> bool {
        self.written == other.written
    }
}

impl Eq for HostList {}

/// `sandbox:` validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxSpec {
    pub profile: SandboxProfile,
    /// Outgoing network allowed (`sandbox.network: true`, default false).
    pub network: bool,
    /// The hosts commands may reach through agentci's proxy
    /// (`sandbox.network: [hosts]`); `network` is false then.
    pub hosts: Option<HostList>,
    /// `sandbox.require` (default true): a profile the kernel cannot fully
    /// enforce here stops the run before any child starts (fail closed);
    /// false accepts the degraded sandbox, with a warning.
    pub require: bool,
    /// Resource limits of every command (`sandbox.limits`); not applied
    /// under `sandbox: off`.
    pub limits: ResourceLimits,
    /// More folders children may write (`sandbox.writable`), as the job
    /// names them; only under `workspace-write`. Resolved at run start
    /// ([`super::writable::resolve`]).
    pub writable: Vec<WritableRoot>,
}

impl Default for SandboxSpec {
    /// `workspace-write`, no network, required, the default limits.
    fn default() -> Self {
        SandboxSpec {
            profile: SandboxProfile::default(),
            network: false,
            hosts: None,
            require: true,
            limits: ResourceLimits::default(),
            writable: Vec::new(),
        }
    }
}
