//! What this machine's kernel lets agentci enforce, found once per process
//! by trying it: the Landlock ABI from the kernel, and namespaces by
//! starting `/bin/true` in a trial sandbox that reports which steps failed.
//!
//! `AGENTCI_TEST_SANDBOX_UNSUPPORTED` (a comma-separated list of `landlock`,
//! `namespaces`, `network`, `seccomp`, `cgroups`) pretends features are missing; it exists for
//! tests of the degraded path, and can only take protection away.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::sync::{Mutex, OnceLock, PoisonError};

use nix::sched::CloneFlags;
use serde::Serialize;

use super::child::{
    ChildSetup, FAIL_BIND, FAIL_CAPABILITIES, FAIL_FORK, FAIL_JOIN_USER, FAIL_PRIVATE, FAIL_PROC,
    FAIL_SECCOMP, FAIL_UNSHARE, FAIL_VIEW,
};
use super::run_namespaces::{IdMaps, RunNamespaces, RunNetwork};
use super::seccomp::SyscallFilter;

/// The test switch that pretends features are missing (`landlock`,
/// `namespaces`, `seccomp`, `cgroups`, comma-separated). Read only by
/// builds with `debug_assertions` ([`super::test_switch`]): a release
/// binary never lets its environment weaken the sandbox.
pub const PRETEND_UNSUPPORTED_ENV: &str = "AGENTCI_TEST_SANDBOX_UNSUPPORTED";

/// What the kernel can enforce here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Support {
    /// Landlock ABI version; 0 when Landlock is absent or disabled.
    pub landlock_abi: u32,
    /// agentci runs as root.
    pub root: bool,
    /// The run's user namespace can be made: as root, what makes root
    /// inside not root on the host; otherwise needed for every other namespace.
    pub user_namespaces: bool,
    /// A private PID namespace with its own `/proc`.
    pub pid_namespace: bool,
    /// A private mount namespace with read-only bind mounts.
    pub mount_namespace: bool,
    /// A private network namespace with its own loopback, and in it the
    /// listener for the proxy of `sandbox.network: [hosts]` (the probe
    /// makes both together).
    pub network_namespace: bool,
    /// Private UTS and IPC namespaces (hostname, System V IPC).
    pub uts_ipc_namespaces: bool,
    /// Everything but the writable roots read-only (`mount_setattr`).
    pub read_only_view: bool,
    /// The capability bounding set can be emptied.
    pub capabilities: bool,
    /// The sandbox's seccomp filters can be installed.
    pub seccomp: bool,
    /// A control group per call can be made (cgroup v2 delegated, or v1 as
    /// root): the process limit then binds root too.
    pub control_groups: bool,
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
    let pretend = super::test_switch::read(PRETEND_UNSUPPORTED_ENV).unwrap_or_default();
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
        control_groups: !missing("cgroups") && control_groups_available(),
        ..Support::default()
    };
    let syscalls = support
        .seccomp
        .then(SyscallFilter::new)
        .and_then(Result::ok);
    if missing("namespaces") {
        let failed = trial(CloneFlags::empty(), &RunNamespaces::default(), syscalls);
        support.capabilities = failed & FAIL_CAPABILITIES == 0;
        support.seccomp &= failed & FAIL_SECCOMP == 0;
        return support;
    }
    // The run's shared namespaces first, as `Sandbox` makes them: a user
    // namespace (root too) owning a network namespace.
    // SAFETY: getuid and getgid have no preconditions.
    let maps = IdMaps::for_caller(unsafe { libc::getuid() }, unsafe { libc::getgid() }, None);
    let (shared, user, network) =
        if let Ok(ns) = RunNamespaces::make(Some(&maps), RunNetwork::Proxied) {
            (ns, true, true)
        } else if let Ok(ns) = RunNamespaces::make(Some(&maps), RunNetwork::Host) {
            (ns, true, false)
        } else if let (true, Ok(ns)) = (root, RunNamespaces::make(None, RunNetwork::Proxied)) {
            (ns, false, true)
        } else {
            (RunNamespaces::default(), false, false)
        };
    let support = try_namespaces(support, &shared, user, network, syscalls, &missing);
    Spare::keep(shared, user.then_some(maps), network);
    support
}

/// The probe's trials in the run's shared namespaces (`user`: a user
/// namespace is among them; `network`: a network namespace).
fn try_namespaces(
    mut support: Support,
    shared: &RunNamespaces,
    user: bool,
    network: bool,
    syscalls: Option<SyscallFilter>,
    missing: &dyn Fn(&str) -> bool,
) -> Support {
    if !user && !support.root {
        // Without a user namespace a user who is not root can make none.
        let failed = trial(CloneFlags::empty(), shared, syscalls);
        support.capabilities = failed & FAIL_CAPABILITIES == 0;
        support.seccomp &= failed & FAIL_SECCOMP == 0;
        return support;
    }
    support.user_namespaces = user;
    let all = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    let host = CloneFlags::CLONE_NEWUTS | CloneFlags::CLONE_NEWIPC;
    let mut failed = trial(all | host, shared, syscalls.clone());
    support.uts_ipc_namespaces = failed & FAIL_UNSHARE == 0;
    if failed & FAIL_UNSHARE != 0 {
        failed = trial(all, shared, syscalls.clone());
    }
    let namespaces = failed & (FAIL_UNSHARE | FAIL_JOIN_USER) == 0;
    support.uts_ipc_namespaces &= namespaces;
    support.mount_namespace = namespaces && failed & (FAIL_PRIVATE | FAIL_BIND) == 0;
    support.pid_namespace = support.mount_namespace && failed & (FAIL_FORK | FAIL_PROC) == 0;
    support.read_only_view = support.mount_namespace && failed & FAIL_VIEW == 0;
    support.network_namespace = network && namespaces && !missing("network");
    // Steps after the namespaces: known only if the trial got that far;
    // if it did not, a trial without namespaces tells (a machine that
    // refuses namespaces can still drop capabilities and filter calls).
    let reached = failed & (FAIL_UNSHARE | FAIL_JOIN_USER | FAIL_FORK) == 0;
    if !reached {
        failed = trial(CloneFlags::empty(), &RunNamespaces::default(), syscalls);
    }
    support.capabilities = failed & FAIL_CAPABILITIES == 0;
    support.seccomp &= failed & (FAIL_CAPABILITIES | FAIL_SECCOMP) == 0;
    support
}

/// The namespaces the probe made and tried, kept for the process's first
/// sandboxed run: making them again costs a fork and a network namespace
/// (a millisecond or more), and nothing but agentci's own trial has been
/// in them. Taken once; a later run makes its own.
struct Spare {
    maps: Option<IdMaps>,
    network: bool,
    namespaces: RunNamespaces,
}

static SPARE: Mutex<Option<Spare>> = Mutex::new(None);

impl Spare {
    /// Keep `namespaces` (made with `maps`, with a network namespace and
    /// its proxy listener when `network`) for [`take_spare`].
    fn keep(namespaces: RunNamespaces, maps: Option<IdMaps>, network: bool) {
        if namespaces.user.is_none() && namespaces.network.is_none() {
            return;
        }
        *SPARE.lock().unwrap_or_else(PoisonError::into_inner) = Some(Spare {
            maps,
            network,
            namespaces,
        });
    }
}

/// The probe's namespaces, when they are what a run with `maps` and
/// `network` would make: the same maps, and a network namespace when one
/// is wanted (one not wanted is let go, as is a proxy listener not
/// wanted). `None` after the first call.
pub(super) fn take_spare(maps: Option<&IdMaps>, network: RunNetwork) -> Option<RunNamespaces> {
    let spare = SPARE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()?;
    spare.fit(maps, network)
}

impl Spare {
    /// These namespaces cut to what a run with `maps` and `network` makes,
    /// or `None` when they cannot serve it.
    fn fit(self, maps: Option<&IdMaps>, network: RunNetwork) -> Option<RunNamespaces> {
        let wants_network = network != RunNetwork::Host;
        if self.maps.as_ref() != maps || (wants_network && !self.network) {
            return None;
        }
        let mut namespaces = self.namespaces;
        if !wants_network {
            namespaces.network = None;
        }
        if network != RunNetwork::Proxied {
            namespaces.proxy = None;
        }
        Some(namespaces)
    }
}

/// `support` with every namespace marked missing: what holds when the
/// run's user namespace cannot be made for a user who is not root.
pub(super) fn without_namespaces(support: Support) -> Support {
    Support {
        user_namespaces: false,
        pid_namespace: false,
        mount_namespace: false,
        network_namespace: false,
        uts_ipc_namespaces: false,
        read_only_view: false,
        ..support
    }
}

/// Run `/bin/true` in a trial sandbox that joins `shared` and makes
/// `namespaces`; the steps that failed.
fn trial(namespaces: CloneFlags, shared: &RunNamespaces, syscalls: Option<SyscallFilter>) -> i32 {
    let Ok(bind) = super::read_only_bind(&std::env::temp_dir(), &std::env::temp_dir()) else {
        return FAIL_BIND;
    };
    let mut setup = ChildSetup {
        join_groups: Vec::new(),
        join_user: shared.user_fd(),
        namespaces,
        mount_proc: true,
        read_only_view: true,
        writable: Vec::new(),
        pinned: Vec::new(),
        read_only: vec![bind],
        loopback_up: false,
        join_network: shared.network_fd(),
        landlock: None,
        // A user who is not root has capabilities only inside a user namespace.
        // SAFETY: geteuid has no preconditions.
        capabilities: (unsafe { libc::geteuid() } == 0 || shared.user.is_some()).then_some(0),
        syscalls: syscalls.map(std::sync::Arc::new),
        limits: Vec::new(),
        probe: None,
    };
    let Ok((report, report_write)) = std::io::pipe() else {
        return FAIL_UNSHARE;
    };
    setup.probe = Some(report_write.as_raw_fd());
    let mut command = std::process::Command::new("/bin/true");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: `apply` makes only system calls (see `child`).
    unsafe { command.pre_exec(move || setup.apply()) };
    let status = command.status();
    drop(report_write);
    let mut bytes = [0u8; 4];
    match (status, (&report).read_exact(&mut bytes)) {
        // Every step the trial reached wrote its failures, or none.
        (Ok(_), Ok(())) => i32::from_ne_bytes(bytes),
        // It died before reporting: a step failed that does not return.
        (Ok(status), Err(_)) => status.signal().map_or(FAIL_UNSHARE, |_| FAIL_FORK),
        (Err(_), _) => FAIL_UNSHARE,
    }
}

/// Whether a run could make its control groups here: made and removed.
fn control_groups_available() -> bool {
    let trial = format!("probe-{}", std::process::id());
    super::cgroup::CallGroups::make(&trial, super::ResourceLimits::default()).is_some()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Descriptors standing in for namespaces: only which are kept matters.
    fn spare(maps: Option<IdMaps>, network: bool) -> Spare {
        let fd = || Some(std::fs::File::open("/dev/null").unwrap().into());
        let proxy = network.then(|| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
        Spare {
            maps,
            network,
            namespaces: RunNamespaces {
                user: fd(),
                network: if network { fd() } else { None },
                proxy,
            },
        }
    }

    #[test]
    fn the_probes_namespaces_serve_only_a_run_that_would_make_the_same() {
        let ours = IdMaps::for_caller(1000, 1000, None);
        let root_for_owner = IdMaps::for_caller(0, 0, Some((1000, 1000)));
        let root = IdMaps::for_caller(0, 0, None);
        assert_ne!(root_for_owner, root, "the workspace owner is mapped too");

        let proxied = spare(Some(ours.clone()), true).fit(Some(&ours), RunNetwork::Proxied);
        let proxied = proxied.expect("the same maps and network");
        assert!(proxied.user.is_some() && proxied.network.is_some() && proxied.proxy.is_some());

        let isolated = spare(Some(ours.clone()), true).fit(Some(&ours), RunNetwork::Isolated);
        let isolated = isolated.expect("a network namespace without its listener");
        assert!(isolated.network.is_some() && isolated.proxy.is_none());

        let host = spare(Some(ours.clone()), true).fit(Some(&ours), RunNetwork::Host);
        let host = host.expect("the user namespace alone");
        assert!(host.user.is_some() && host.network.is_none() && host.proxy.is_none());

        let no_network = spare(Some(ours.clone()), false);
        assert!(no_network.fit(Some(&ours), RunNetwork::Isolated).is_none());
        let other_maps = spare(Some(root.clone()), true);
        assert!(
            other_maps
                .fit(Some(&root_for_owner), RunNetwork::Host)
                .is_none()
        );
        let no_user = spare(Some(ours.clone()), true);
        assert!(no_user.fit(None, RunNetwork::Host).is_none());
    }
}
