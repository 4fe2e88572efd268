//! What this machine's kernel lets agentci enforce, found once per process
//! by trying it: the Landlock ABI from the kernel, and namespaces by
//! starting `/bin/true` in a trial sandbox that reports which steps failed.
//!
//! `AGENTCI_TEST_SANDBOX_UNSUPPORTED` (a comma-separated list of `landlock`,
//! `namespaces`, `network`, `seccomp`) pretends features are missing; it exists for
//! tests of the degraded path, and can only take protection away.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::sync::OnceLock;

use nix::sched::CloneFlags;
use serde::Serialize;

use super::child::{
    ChildSetup, FAIL_BIND, FAIL_CAPABILITIES, FAIL_FORK, FAIL_LOOPBACK, FAIL_PRIVATE, FAIL_PROC,
    FAIL_SECCOMP, FAIL_UNSHARE, FAIL_USER_MAP, FAIL_VIEW,
};
use super::seccomp::SyscallFilter;

/// The test switch that pretends features are missing.
pub const PRETEND_UNSUPPORTED_ENV: &str = "AGENTCI_TEST_SANDBOX_UNSUPPORTED";

/// What the kernel can enforce here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Support {
    /// Landlock ABI version; 0 when Landlock is absent or disabled.
    pub landlock_abi: u32,
    /// agentci runs as root: namespaces need no user namespace.
    pub root: bool,
    /// Unprivileged user namespaces work (needed for the rest when not root).
    pub user_namespaces: bool,
    /// A private PID namespace with its own `/proc`.
    pub pid_namespace: bool,
    /// A private mount namespace with read-only bind mounts.
    pub mount_namespace: bool,
    /// A private network namespace with its own loopback.
    pub network_namespace: bool,
    /// Private UTS and IPC namespaces (hostname, System V IPC).
    pub uts_ipc_namespaces: bool,
    /// Everything but the writable roots read-only (`mount_setattr`).
    pub read_only_view: bool,
    /// The capability bounding set can be emptied.
    pub capabilities: bool,
    /// The sandbox's seccomp filters can be installed.
    pub seccomp: bool,
}

impl Support {
    /// Whether Landlock can restrict TCP (ABI 4 and later).
    pub fn landlock_tcp(&self) -> bool {
        self.landlock_abi >= 4
    }
}

/// This machine's support, probed on first use.
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(probe)
}

fn probe() -> Support {
    let pretend = std::env::var(PRETEND_UNSUPPORTED_ENV).unwrap_or_default();
    let missing = |name: &str| pretend.split(',').any(|p| p.trim() == name);
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut support = Support {
        landlock_abi: if missing("landlock") {
            0
        } else {
            landlock_abi()
        },
        root,
        seccomp: seccomp_available() && !missing("seccomp"),
        capabilities: true,
        ..Support::default()
    };
    let syscalls = support
        .seccomp
        .then(SyscallFilter::new)
        .and_then(Result::ok);
    if missing("namespaces") {
        let failed = trial(CloneFlags::empty(), syscalls);
        support.capabilities = failed & FAIL_CAPABILITIES == 0;
        support.seccomp &= failed & FAIL_SECCOMP == 0;
        return support;
    }
    let user = if root {
        CloneFlags::empty()
    } else {
        CloneFlags::CLONE_NEWUSER
    };
    let all = user | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    let host = CloneFlags::CLONE_NEWUTS | CloneFlags::CLONE_NEWIPC;
    let mut failed = trial(all | host | CloneFlags::CLONE_NEWNET, syscalls.clone());
    let network = failed & (FAIL_UNSHARE | FAIL_USER_MAP | FAIL_LOOPBACK) == 0;
    if failed & FAIL_UNSHARE != 0 {
        failed = trial(all | host, syscalls.clone());
    }
    support.uts_ipc_namespaces = failed & FAIL_UNSHARE == 0;
    if failed & FAIL_UNSHARE != 0 {
        failed = trial(all, syscalls);
    }
    let namespaces = failed & (FAIL_UNSHARE | FAIL_USER_MAP) == 0;
    support.uts_ipc_namespaces &= namespaces;
    support.user_namespaces = !root && namespaces;
    support.mount_namespace = namespaces && failed & (FAIL_PRIVATE | FAIL_BIND) == 0;
    support.pid_namespace = support.mount_namespace && failed & (FAIL_FORK | FAIL_PROC) == 0;
    support.read_only_view = support.mount_namespace && failed & FAIL_VIEW == 0;
    support.network_namespace = network && !missing("network");
    // Steps after the namespaces: known only if the trial got that far.
    let reached = failed & (FAIL_UNSHARE | FAIL_USER_MAP | FAIL_FORK) == 0;
    support.capabilities = reached && failed & FAIL_CAPABILITIES == 0;
    support.seccomp &= reached && failed & (FAIL_CAPABILITIES | FAIL_SECCOMP) == 0;
    support
}

/// Run `/bin/true` in a trial sandbox with `namespaces`; the steps that failed.
fn trial(namespaces: CloneFlags, syscalls: Option<SyscallFilter>) -> i32 {
    let Ok(bind) = super::read_only_bind(&std::env::temp_dir(), &std::env::temp_dir()) else {
        return FAIL_BIND;
    };
    let mut setup = ChildSetup {
        namespaces,
        id_maps: namespaces
            .contains(CloneFlags::CLONE_NEWUSER)
            .then(super::id_maps),
        mount_proc: true,
        read_only_view: true,
        writable: Vec::new(),
        pinned: Vec::new(),
        read_only: vec![bind],
        loopback_up: namespaces.contains(CloneFlags::CLONE_NEWNET),
        join_network: None,
        landlock: None,
        capabilities: Some(0),
        syscalls: syscalls.map(std::sync::Arc::new),
        limits: Vec::new(),
        probe: true,
    };
    let mut command = std::process::Command::new("/bin/true");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: `apply` makes only system calls (see `child`).
    unsafe { command.pre_exec(move || setup.apply()) };
    match command.status() {
        Ok(status) => match status.code() {
            Some(code) => code,
            None => status.signal().map_or(FAIL_UNSHARE, |_| FAIL_FORK),
        },
        Err(_) => FAIL_UNSHARE,
    }
}

/// The kernel's Landlock ABI version, 0 without Landlock.
fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call
    // only returns the ABI version (or an error).
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).unwrap_or(0)
}

/// Whether the kernel has seccomp filters (`Seccomp:` in `/proc/self/status`).
fn seccomp_available() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Seccomp:")))
        .unwrap_or(false)
}
