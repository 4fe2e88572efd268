//! Hardening of agentci's own process, done once at start.
//!
//! agentci holds the model's API key and the job's secrets in its
//! environment and memory. A process of the same user can read
//! `/proc/<pid>/environ` and `/proc/<pid>/mem` of a dumpable process; the
//! sandbox's PID namespace hides agentci from what it starts, but a kernel
//! or runner without user namespaces (GitHub's Ubuntu 24.04 runners restrict
//! them) degrades the sandbox. Marking agentci non-dumpable closes that
//! path on every kernel: `/proc/<pid>/environ`, `mem` and ptrace then need
//! `CAP_SYS_PTRACE`, which the agent's commands of the same unprivileged
//! user lack. Children are unaffected: `execve` makes each new program
//! dumpable again. (Codex CLI hardens its process the same way.)

/// Why agentci's process could not be hardened.
#[derive(Debug, thiserror::Error)]
pub enum HardeningError {
    /// `prctl(PR_SET_DUMPABLE, 0)` failed.
    #[error("cannot mark agentci's process non-dumpable: {0}")]
    NotDumpable(#[source] nix::errno::Errno),
}

/// Make agentci's process non-dumpable; `Err` says why it could not.
pub fn harden_self() -> Result<(), HardeningError> {
    nix::sys::prctl::set_dumpable(false).map_err(HardeningError::NotDumpable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agentci_is_not_dumpable_after_hardening() {
        harden_self().unwrap();
        assert!(!nix::sys::prctl::get_dumpable().unwrap());
    }
}
