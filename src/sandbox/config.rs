//! The sandbox's configuration: which profile a process runs under and
//! whether it may use the network. The sandbox owns these types; the job's
//! `sandbox:` is validated into them by `spec`.

/// What a process the run starts may do, enforced by the kernel (`sandbox:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
        match self {
            SandboxProfile::WorkspaceWrite => "workspace-write",
            SandboxProfile::ReadOnly => "read-only",
            SandboxProfile::Off => "off",
        }
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

/// `sandbox:` validated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SandboxSpec {
    pub profile: SandboxProfile,
    /// Outgoing network allowed (`sandbox.network`, default false).
    pub network: bool,
    /// A sandbox the kernel cannot fully enforce is an error, not a warning.
    pub require: bool,
}
