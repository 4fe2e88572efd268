//! The kernel sandbox around every process a run starts (`exec` calls,
//! checks, eval `run:` assertions, MCP servers): what the job's `sandbox:`
//! asks for, what this machine can enforce of it ([`probe`]), and the setup
//! installed in each child before it runs (`child`).
//!
//! Under `workspace-write` a child:
//! - writes only in the workspace, the run's private temporary folder, the
//!   build folder agentci passes (`CARGO_TARGET_DIR`) and the job's
//!   `sandbox.writable` folders ([`writable`]): Landlock;
//! - cannot write agentci's run folder, trace or JUnit even where they lie
//!   in the workspace: a private mount namespace with read-only bind mounts
//!   over them (Landlock cannot make a read-only hole in a writable tree);
//! - cannot read the files agentci keeps to itself (the checkpoint key):
//!   in the same mount namespace an empty read-only file is bound over each
//!   (Landlock limits writes, not reads, and the key is the user's own);
//! - cannot write the workspace's repositories (`.git`, where git keeps the
//!   hooks and configuration that agentci's git step and the workflow's own
//!   git commands run unsandboxed) nor its skill folders: read-only bind
//!   mounts too, with the folders between the workspace and each bound onto
//!   themselves so they cannot be renamed away and replaced;
//! - sees only its own processes: a private PID namespace with a fresh
//!   `/proc`, so agentci's environment and memory are out of reach; the
//!   command is the first process of that namespace, so when it ends (or is
//!   killed) the kernel kills everything it started, `setsid` or not;
//! - has no network unless `sandbox.network: true`: a private network
//!   namespace with only its own loopback (a test server the command starts
//!   works; the host's, including its 127.0.0.1, is unreachable);
//! - cannot read the workspace's files that `read(...)` deny rules cover:
//!   an empty file or folder bound over each found at the start;
//! - has no power over the machine, even as root: its own UTS and IPC
//!   namespaces, every mount but the writable roots read-only (Landlock
//!   does not govern mode, owner, extended attributes or times), no new
//!   privileges, an empty capability bounding set and only the capabilities
//!   that write a workspace another user owns (`kept_capabilities`), and
//!   a seccomp filter (`seccomp`).
//!
//! Every child joins the run's user namespace (`run_namespaces`), root
//! included: there its capabilities reach only what the namespace owns, and
//! it can give files only to the users mapped (itself and the workspace's
//! owner); a seccomp rule keeps it from making set-user-ID or set-group-ID
//! files, which would run as their owner on the host. What the kernel cannot do is reported once per run
//! ([`SandboxReport::missing`]), never silently skipped, and stops the run
//! before it starts unless the job accepts it with `sandbox.require: false`
//! ([`fail_closed`]). This module does
//! not decide which commands may run: that is [`crate::policy`].

mod cgroup;
mod child;
mod config;
mod fail_closed;
pub mod probe;
mod run_namespaces;
mod seccomp;
pub mod startup_files;
pub mod test_switch;
pub mod writable;

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope, path_beneath_rules,
};
use nix::mount::MsFlags;
use nix::sched::CloneFlags;
use std::os::unix::fs::MetadataExt;

pub use cgroup::{CallGroup, LimitReached};
pub use config::{HostList, ResourceLimits, SandboxProfile, SandboxSpec};
pub use fail_closed::{how_to_enforce, refusal, refuses};
pub use probe::{Support, support};
pub use writable::{ResolvedRoot, WritableError, WritableRoot};

use crate::event::SandboxReport;
use child::{ChildSetup, ReadOnlyBind, ResourceLimit};
use run_namespaces::{IdMaps, RunNamespaces, RunNetwork};
pub use seccomp::FilterError;
use seccomp::SyscallFilter;

/// Device files every profile may write (shells redirect to `/dev/null`).
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// One run's sandbox, frozen: built once, installed in every child.
#[derive(Debug)]
pub struct Sandbox {
    spec: SandboxSpec,
    support: Support,
    /// Folders the profile lets children write, besides the devices.
    writable: Vec<PathBuf>,
    /// agentci's own files and folders, and the workspace's repositories
    /// and skill folders, read-only for children.
    protected: Vec<PathBuf>,
    /// Files children see empty, and the empty file bound over them.
    masked: Vec<PathBuf>,
    empty_file: PathBuf,
    /// Read-denied files and folders, masked by `empty_file` or `empty_folder`.
    read_denied: Vec<PathBuf>,
    empty_folder: PathBuf,
    /// The seccomp filters, compiled once for every child.
    syscalls: Option<Arc<SyscallFilter>>,
    /// The folders above the repositories and skill folders, pinned in place.
    pinned: Vec<PathBuf>,
    report: SandboxReport,
    /// The run's user and network namespaces, joined by every child.
    namespaces: RunNamespaces,
    /// The listener in the run's network namespace for the proxy, until
    /// the process runner takes it to serve.
    proxy: std::sync::Mutex<Option<std::net::TcpListener>>,
    /// A control group per call, where the machine allows one.
    groups: Option<cgroup::CallGroups>,
}

/// Where a sandbox applies: the folders a run writes and owns.
#[derive(Clone, Debug, Default)]
pub struct SandboxPaths {
    /// Names the run's control group (`agentci-<run id>`).
    pub run_id: String,
    pub workspace: PathBuf,
    /// The run's private temporary folder (the children's `TMPDIR`).
    pub temp: PathBuf,
    /// More folders children may write under `workspace-write` (a build folder).
    pub writable: Vec<PathBuf>,
    /// The job's `sandbox.writable`, resolved and created
    /// ([`writable::prepare`]): writable under `workspace-write`, and reported.
    pub job_writable: Vec<ResolvedRoot>,
    /// agentci's own outputs: the run folder, trace, JUnit.
    pub protected: Vec<PathBuf>,
    /// Files children must not read (the checkpoint key): each is masked by
    /// `empty_file`, bound read-only over it in the child's mount namespace.
    pub masked: Vec<PathBuf>,
    /// An empty file, outside every folder children may write.
    pub empty_file: PathBuf,
    /// Files and folders in the workspace that a `read(...)` deny rule
    /// covers, found at the start of the run: children see them empty.
    pub read_denied: Vec<PathBuf>,
    /// An empty folder, outside every folder children may write, bound
    /// over read-denied folders.
    pub empty_folder: PathBuf,
    /// Paths in the workspace children may read and not write, as they are
    /// (not their top entry, as for `protected`): the workspace's `.git`
    /// entries and skill folders found at the start of the run.
    pub read_only: Vec<PathBuf>,
}

impl Sandbox {
    /// The sandbox for `spec` on this machine.
    pub fn new(spec: SandboxSpec, paths: &SandboxPaths) -> Sandbox {
        // `off` enforces nothing, so the machine is not probed: the probe
        // forks and makes namespaces, a third of a short run's kernel time.
        let support = match spec.profile {
            SandboxProfile::Off => Support::default(),
            _ => support(),
        };
        Sandbox::with_support(spec, paths, support)
    }

    pub fn with_support(spec: SandboxSpec, paths: &SandboxPaths, support: Support) -> Sandbox {
        let mut writable = vec![paths.temp.clone()];
        if spec.profile == SandboxProfile::WorkspaceWrite {
            writable.push(paths.workspace.clone());
            writable.extend(paths.writable.iter().cloned());
            writable.extend(paths.job_writable.iter().map(|r| r.folder.clone()));
        }
        let mut protected = protected_paths(&paths.workspace, &paths.protected);
        protected.extend(paths.read_only.iter().cloned());
        let pinned = folders_above(&paths.workspace, &paths.read_only);
        let (mut namespaces, support) = run_namespaces(&spec, paths, support);
        // Built before any fork: the child only installs it. A filter that
        // does not build is a bug; the run goes on without it, and says so.
        let syscalls = (support.seccomp && spec.profile != SandboxProfile::Off)
            .then(SyscallFilter::new)
            .and_then(Result::ok)
            .map(Arc::new);
        let mut support = support;
        support.seccomp &= syscalls.is_some();
        let groups = (support.control_groups && spec.profile != SandboxProfile::Off)
            .then(|| cgroup::CallGroups::make(&paths.run_id, spec.limits))
            .flatten();
        support.control_groups = groups.is_some();
        let hides = Hides {
            checkpoint_key: !paths.masked.is_empty(),
            read_denied: !paths.read_denied.is_empty(),
        };
        let mut report = report(&spec, &support, hides);
        if spec.profile == SandboxProfile::WorkspaceWrite {
            report.writable = paths.job_writable.iter().map(Into::into).collect();
        }
        if spec.profile != SandboxProfile::Off
            && let Some(hosts) = &spec.hosts
        {
            report.hosts = hosts.written.clone();
        }
        Sandbox {
            report,
            spec,
            support,
            writable,
            protected,
            masked: paths.masked.clone(),
            empty_file: paths.empty_file.clone(),
            read_denied: paths.read_denied.clone(),
            empty_folder: paths.empty_folder.clone(),
            syscalls,
            pinned,
            proxy: std::sync::Mutex::new(namespaces.proxy.take()),
            namespaces,
            groups,
        }
    }

    /// The listener inside the run's network namespace on which the proxy
    /// for `sandbox.network: [hosts]` is to be served; once.
    pub fn take_proxy_listener(&self) -> Option<std::net::TcpListener> {
        self.proxy.lock().ok().and_then(|mut p| p.take())
    }

    pub fn profile(&self) -> SandboxProfile {
        self.spec.profile
    }

    /// What is enforced and what is missing, for `run.started` and warnings.
    pub fn report(&self) -> &SandboxReport {
        &self.report
    }

    /// Install the sandbox in `command`: the child applies it just before
    /// `exec`. The call's control group, where there is one, tells
    /// afterwards which limit the call reached.
    pub fn install(&self, command: &mut tokio::process::Command) -> io::Result<Option<CallGroup>> {
        if self.spec.profile == SandboxProfile::Off {
            return Ok(None);
        }
        let group = self
            .groups
            .as_ref()
            .map(cgroup::CallGroups::call)
            .transpose()?;
        let mut setup = self.child_setup(group.as_ref())?;
        // SAFETY: `apply` only makes system calls on data prepared here.
        unsafe { command.pre_exec(move || setup.apply()) };
        Ok(group)
    }

    fn child_setup(&self, group: Option<&CallGroup>) -> io::Result<ChildSetup> {
        let s = &self.support;
        let mut namespaces = CloneFlags::empty();
        if s.mount_namespace {
            namespaces |= CloneFlags::CLONE_NEWNS;
        }
        if s.pid_namespace {
            namespaces |= CloneFlags::CLONE_NEWPID;
        }
        let isolate_network = !self.spec.network && s.network_namespace;
        let join_network = self.namespaces.network_fd();
        if isolate_network && join_network.is_none() {
            namespaces |= CloneFlags::CLONE_NEWNET;
        }
        if s.uts_ipc_namespaces {
            namespaces |= CloneFlags::CLONE_NEWUTS | CloneFlags::CLONE_NEWIPC;
        }
        let pinned = match s.mount_namespace {
            true => self.pinned.iter().map(|p| c_path(p)).collect(),
            false => Ok(Vec::new()),
        }?;
        let read_only = match s.mount_namespace {
            true => self.read_only_binds()?,
            false => Vec::new(),
        };
        let read_only_view = s.mount_namespace && s.read_only_view;
        let writable = match read_only_view {
            true => self
                .writable
                .iter()
                .filter(|p| p.is_dir())
                .map(|p| c_path(p))
                .collect::<io::Result<Vec<_>>>()?,
            false => Vec::new(),
        };
        Ok(ChildSetup {
            join_groups: group.map(|g| g.procs.clone()).unwrap_or_default(),
            join_user: self.namespaces.user_fd(),
            namespaces,
            mount_proc: s.pid_namespace,
            read_only_view,
            writable,
            pinned,
            read_only,
            loopback_up: isolate_network && join_network.is_none(),
            join_network: join_network.filter(|_| isolate_network),
            landlock: self.landlock(!self.spec.network && !isolate_network)?,
            // Outside a user namespace a user who is not root has none to drop.
            capabilities: (s.capabilities && (s.root || self.namespaces.user.is_some()))
                .then(|| kept_capabilities(s.root)),
            limits: resource_limits(
                &self.spec.limits,
                self.groups
                    .as_ref()
                    .is_some_and(cgroup::CallGroups::limits_memory),
            ),
            syscalls: self.syscalls.clone(),
            probe: None,
        })
    }

    /// The read-only binds: agentci's own paths, the repositories and skill
    /// folders, then the masks (a masked file may lie below one of those).
    fn read_only_binds(&self) -> io::Result<Vec<ReadOnlyBind>> {
        let protected = self.protected.iter().map(|p| (p, p));
        let masked = self.masked.iter().map(|p| (&self.empty_file, p));
        let denied = self.read_denied.iter().map(|p| match p.is_dir() {
            true => (&self.empty_folder, p),
            false => (&self.empty_file, p),
        });
        protected
            .chain(masked)
            .chain(denied)
            .filter(|(source, target)| source.exists() && target.exists())
            .map(|(source, target)| read_only_bind(source, target))
            .collect()
    }

    /// The Landlock ruleset: read and run everything, write only in
    /// `writable`; with `deny_tcp`, no TCP connect or bind at all (the
    /// fallback when there is no network namespace).
    fn landlock(&self, deny_tcp: bool) -> io::Result<Option<RulesetCreated>> {
        if self.support.landlock_abi == 0 {
            return Ok(None);
        }
        let abi = ABI::V5;
        let err = |e: landlock::RulesetError| io::Error::other(e.to_string());
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))
            .map_err(err)?;
        if deny_tcp && self.support.landlock_tcp() {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(err)?;
        }
        if self.support.landlock_abi >= 6 {
            // Signals only within the sandbox: agentci and the rest of the
            // machine cannot be stopped by what the agent runs.
            ruleset = ruleset.scope(Scope::Signal).map_err(err)?;
        }
        let created = ruleset
            .create()
            .map_err(err)?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
            .map_err(err)?
            .add_rules(path_beneath_rules(
                WRITABLE_DEVICES,
                AccessFs::from_all(abi),
            ))
            .map_err(err)?
            .add_rules(path_beneath_rules(&self.writable, AccessFs::from_all(abi)))
            .map_err(err)?;
        Ok(Some(created))
    }
}

/// The `setrlimit` calls for `limits`, each capped at the hard limit
/// agentci already has (an unprivileged process cannot raise it). Where a
/// control group limits resident memory, address space is left alone:
/// runtimes reserve far more than they use (the JVM, V8), and the group
/// ends a call that really uses too much with `RESOURCE_LIMIT`.
fn resource_limits(limits: &ResourceLimits, group_limits_memory: bool) -> Vec<ResourceLimit> {
    [
        (libc::RLIMIT_NPROC, limits.processes),
        (libc::RLIMIT_AS, limits.memory),
        (libc::RLIMIT_FSIZE, limits.file_size),
        (libc::RLIMIT_NOFILE, limits.open_files),
    ]
    .into_iter()
    .filter(|(resource, _)| !(group_limits_memory && *resource == libc::RLIMIT_AS))
    .map(|(resource, wanted)| {
        let mut current = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: getrlimit writes into the struct it is given.
        unsafe { libc::getrlimit(resource, &mut current) };
        let value = wanted.min(current.rlim_max);
        ResourceLimit {
            resource,
            value: libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            },
        }
    })
    .collect()
}

/// The run's shared namespaces for `spec` on a machine with `support`,
/// and the support that holds once they are made: a user namespace
/// whenever the sandbox is on (root included: it is what keeps root inside
/// from being root on the host), a network namespace when the network is
/// off. Should making them fail where the probe succeeded, the protections
/// that need them are reported missing rather than breaking every command.
fn run_namespaces(
    spec: &SandboxSpec,
    paths: &SandboxPaths,
    mut support: Support,
) -> (RunNamespaces, Support) {
    if spec.profile == SandboxProfile::Off {
        return (RunNamespaces::default(), support);
    }
    let network = match (spec.network, &spec.hosts, support.network_namespace) {
        (true, _, _) | (false, _, false) => RunNetwork::Host,
        (false, None, true) => RunNetwork::Isolated,
        (false, Some(_), true) => RunNetwork::Proxied,
    };
    let maps = support.user_namespaces.then(|| {
        // SAFETY: getuid and getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let owner = std::fs::metadata(&paths.workspace)
            .ok()
            .map(|m| (m.uid(), m.gid()));
        IdMaps::for_caller(uid, gid, owner)
    });
    if let Some(namespaces) = probe::take_spare(maps.as_ref(), network) {
        return (namespaces, support);
    }
    if let Ok(namespaces) = RunNamespaces::make(maps.as_ref(), network) {
        return (namespaces, support);
    }
    support.network_namespace = false;
    if let Ok(namespaces) = RunNamespaces::make(maps.as_ref(), RunNetwork::Host) {
        return (namespaces, support);
    }
    support.user_namespaces = false;
    if !support.root {
        // Without the user namespace nothing else can be made.
        support = probe::without_namespaces(support);
    }
    (RunNamespaces::default(), support)
}

/// What a run has to hide from children, besides agentci's own files.
#[derive(Clone, Copy, Debug, Default)]
struct Hides {
    /// The checkpoint key.
    checkpoint_key: bool,
    /// Files a `read(...)` deny rule covers.
    read_denied: bool,
}

/// The capabilities a root child keeps, each for writing a workspace that
/// another user owns (a checkout made by the runner's user, a volume
/// mounted into a container): `CAP_DAC_OVERRIDE` to open, create and
/// remove its files, `CAP_FOWNER` to change their mode and times (`chmod
/// +x`, `touch`, `cp -p`, git setting the executable bit), `CAP_CHOWN` for
/// the tools that give a file its owner back (`tar -x`, `cp -a`, npm as
/// root); and `CAP_SETUID`/`CAP_SETGID` for those that drop to another user
/// (npm runs scripts as the folder's owner, apt as `_apt`), `CAP_KILL` to
/// stop such a child (the PID namespace and Landlock's signal scope keep
/// signals inside). Every other capability is gone: no device nodes, raw
/// sockets, mounts, modules, kernel log, ptrace, clock or resource limits;
/// what these five still reach outside the writable roots, the read-only
/// view and Landlock stop. A child that is not root keeps none.
fn kept_capabilities(root: bool) -> u64 {
    if !root {
        return 0;
    }
    // Their numbers, from <linux/capability.h>.
    const CAP_CHOWN: u32 = 0;
    const CAP_DAC_OVERRIDE: u32 = 1;
    const CAP_FOWNER: u32 = 3;
    const CAP_KILL: u32 = 5;
    const CAP_SETGID: u32 = 6;
    const CAP_SETUID: u32 = 7;
    [
        CAP_CHOWN,
        CAP_DAC_OVERRIDE,
        CAP_FOWNER,
        CAP_KILL,
        CAP_SETGID,
        CAP_SETUID,
    ]
    .iter()
    .fold(0, |mask, &cap| mask | 1u64 << cap)
}

/// What `spec` gets on a machine with `support`, for a run that has
/// `hides` to hide from children.
fn report(spec: &SandboxSpec, support: &Support, hides: Hides) -> SandboxReport {
    let mut report = SandboxReport {
        profile: spec.profile.as_str().to_string(),
        network: spec.network,
        require: spec.require,
        enforced: Vec::new(),
        missing: Vec::new(),
        writable: Vec::new(),
        hosts: Vec::new(),
    };
    if spec.profile == SandboxProfile::Off {
        return report;
    }
    let mut note = |enforced: bool, name: &str| {
        if enforced {
            report.enforced.push(name.to_string());
        } else {
            report.missing.push(name.to_string());
        }
    };
    note(support.landlock_abi > 0, "filesystem");
    note(support.user_namespaces, "user_namespace");
    note(support.pid_namespace, "processes");
    note(support.mount_namespace, "run_folder");
    if hides.checkpoint_key {
        note(support.mount_namespace, "checkpoint_key");
    }
    if hides.read_denied {
        note(support.mount_namespace, "read_denied");
    }
    note(
        support.mount_namespace && support.read_only_view,
        "outside_read_only",
    );
    // Root is exempt from `RLIMIT_NPROC`; only a control group limits its processes.
    note(support.control_groups || !support.root, "process_limit");
    note(support.capabilities, "capabilities");
    note(support.seccomp, "seccomp");
    note(support.uts_ipc_namespaces, "hostname_ipc");
    if !spec.network {
        note(support.network_namespace, "network");
    }
    report
}

/// What a run of a job with `spec` would report on a machine with
/// `support`, before any run: for `agentci doctor`, which says whether the
/// job would start. A run may find less (namespaces that the probe made
/// and a second try does not), never more.
pub fn expected_report(spec: &SandboxSpec, support: &Support) -> SandboxReport {
    report(spec, support, Hides::default())
}

/// The `source` of the warning a run gives for a degraded sandbox (the
/// GitHub Actions sink shows it as its own annotation instead).
pub const DEGRADED_WARNING_SOURCE: &str = "sandbox";

/// The warning line for a degraded sandbox, naming what is not enforced
/// and what commands can still reach; `None` when everything asked for is.
pub fn degraded_message(report: &crate::event::SandboxReport) -> Option<String> {
    if report.missing.is_empty() {
        return None;
    }
    let what: Vec<String> = report
        .missing
        .iter()
        .map(|m| format!("{m}: {}", missing_reason(m)))
        .collect();
    let exposed: Vec<&str> = still_exposed(&report.missing)
        .iter()
        .map(|e| e.what)
        .collect();
    let exposed = match exposed.is_empty() {
        true => String::new(),
        false => format!("; still exposed to commands: {}", exposed.join("; ")),
    };
    Some(format!(
        "the sandbox `{}` is degraded on this machine; not enforced: {}{exposed} (see `agentci doctor`)",
        report.profile,
        what.join("; ")
    ))
}

/// Whether children of a run with `report` can reach agentci's process:
/// its sandbox has no PID namespace. `sandbox: off` is not that case (the
/// job asked for no sandbox, and nothing is reported missing).
pub fn children_reach_agentci(report: &crate::event::SandboxReport) -> bool {
    report.missing.iter().any(|m| m == "processes")
}

/// How to get the namespaces a machine refused, for a run whose children
/// reach agentci ([`children_reach_agentci`]).
pub const FULL_SANDBOX: &str = "for the full sandbox, allow unprivileged user namespaces \
     (Ubuntu 23.10 and later restrict them: `sysctl kernel.apparmor_restrict_unprivileged_userns=0`) \
     or, in a Docker container, start it with `--privileged` (or `--security-opt seccomp=unconfined \
     --security-opt apparmor=unconfined`, plus `--cap-add SYS_ADMIN` when agentci runs as root)";

/// What a command can still reach because a protection is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exposure {
    pub name: &'static str,
    pub what: &'static str,
}

/// What commands can still reach with `missing` protections, for the
/// degraded warning and `agentci doctor`.
pub fn still_exposed(missing: &[String]) -> Vec<Exposure> {
    // Each exposure, and the protections whose absence together opens it.
    let exposures: [(&[&str], &str, &str); 4] = [
        (
            &["processes"],
            "parent_environment",
            "the environment of the process that started agentci (`/proc/<ppid>/environ`) \
             and of the user's other processes",
        ),
        // Landlock alone keeps a command from opening another domain's
        // memory; root keeps `CAP_SYS_PTRACE` without the capability drop.
        (
            &["capabilities", "filesystem"],
            "agentci_memory",
            "as root, agentci's memory (`/proc/<pid>/mem`)",
        ),
        (&["network"], "udp", "UDP (Landlock covers TCP only)"),
        (&["run_folder"], "run_folder", "the run folder"),
    ];
    exposures
        .into_iter()
        .filter(|(protections, ..)| protections.iter().all(|p| missing.iter().any(|m| m == p)))
        .map(|(_, name, what)| Exposure { name, what })
        .collect()
}

/// What each missing protection means, for the warning line.
pub fn missing_reason(name: &str) -> &'static str {
    match name {
        "filesystem" => "writes outside the workspace are not blocked (no Landlock)",
        "processes" => {
            "no private PID namespace: children see every process and may outlive their call \
             (agentci empties its own environment block and gives commands no secrets)"
        }
        "run_folder" => {
            "no mount namespace: children can write the run folder, the trace, `.git` and skill folders"
        }
        "checkpoint_key" => {
            "no mount namespace: children can read the checkpoint key, so a command the model \
             runs could forge a checkpoint that `agentci run --resume` accepts"
        }
        "read_denied" => {
            "no mount namespace: children can read the files `read(...)` deny rules cover"
        }
        "outside_read_only" => {
            "no read-only view (mount_setattr, Linux 5.12+): children can change the mode, owner, \
             extended attributes and times of files outside the workspace that they own (as root: any)"
        }
        "user_namespace" => {
            "no user namespace: children run as agentci's own user, as root the host's root: \
             they can give files to any user and the process limit does not bind them"
        }
        "process_limit" => {
            "no control group can be made (cgroup v2 with the pids controller delegated, or \
             cgroup v1 as root): the kernel does not apply `sandbox.limits.processes` to root, \
             so a fork bomb is stopped only by the call's timeout"
        }
        "capabilities" => "children run as root keep every capability, `CAP_SYS_PTRACE` included",
        "seccomp" => {
            "no seccomp filter: children can make device nodes, mount, trace processes, load \
             kernel code and make user namespaces as far as their capabilities let them"
        }
        "hostname_ipc" => {
            "no UTS and IPC namespaces: children share the host's hostname and System V IPC"
        }
        "network" => {
            "no network namespace: UDP reaches the network, TCP too unless Landlock ABI 4+ blocks it"
        }
        _ => "not enforced",
    }
}

/// What children may not write: for each of agentci's own paths inside the
/// workspace, its top-level entry there (`.agentci`), so that neither the
/// path nor a folder above it can be renamed away and replaced by a forged
/// one; paths outside the workspace are beyond Landlock's writable set already.
fn protected_paths(workspace: &Path, own: &[PathBuf]) -> Vec<PathBuf> {
    let mut protected: Vec<PathBuf> = Vec::new();
    for path in own {
        let top = match path.strip_prefix(workspace) {
            Ok(rel) => match rel.components().next() {
                Some(first) => workspace.join(first),
                None => continue,
            },
            Err(_) => path.clone(),
        };
        if !protected.contains(&top) {
            protected.push(top);
        }
    }
    protected
}

/// The folders strictly between `workspace` and each of `paths`, shallowest
/// first, without repeats: bound onto themselves, they cannot be renamed,
/// so a path below them stays where it was found.
fn folders_above(workspace: &Path, paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = Vec::new();
    for path in paths {
        let Ok(rel) = path.strip_prefix(workspace) else {
            continue;
        };
        let mut folder = workspace.to_path_buf();
        let parents = rel.parent().map(Path::components).into_iter().flatten();
        for part in parents {
            folder.push(part);
            if !folders.contains(&folder) {
                folders.push(folder.clone());
            }
        }
    }
    folders.sort_by_key(|f| f.components().count());
    folders
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

/// A read-only bind of `source` on `target` (the same path, or an empty
/// file over a masked one), keeping the flags the source's mount has.
fn read_only_bind(source: &Path, target: &Path) -> io::Result<ReadOnlyBind> {
    let stat = nix::sys::statvfs::statvfs(source).map_err(io::Error::from)?;
    use nix::sys::statvfs::FsFlags;
    let flags = stat.flags();
    let mut keep = MsFlags::empty();
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if flags.contains(fs) {
            keep |= ms;
        }
    }
    Ok(ReadOnlyBind {
        source: c_path(source)?,
        path: c_path(target)?,
        keep,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_of_own_paths_in_the_workspace_is_protected() {
        let ws = Path::new("/ws");
        let own = [
            PathBuf::from("/ws/.agentci/runs/r"),
            PathBuf::from("/ws/.agentci/runs/r/trace.jsonl"),
            PathBuf::from("/out/junit.xml"),
        ];
        assert_eq!(
            protected_paths(ws, &own),
            [
                PathBuf::from("/ws/.agentci"),
                PathBuf::from("/out/junit.xml")
            ]
        );
    }

    #[test]
    fn the_folders_above_read_only_paths_are_pinned_shallowest_first() {
        let ws = Path::new("/ws");
        let read_only = [
            PathBuf::from("/ws/.git"),
            PathBuf::from("/ws/vendor/lib/.git"),
            PathBuf::from("/ws/.agents/skills/fixer"),
            PathBuf::from("/ws/vendor/other/.git"),
            PathBuf::from("/elsewhere/.git"),
        ];
        assert_eq!(
            folders_above(ws, &read_only),
            [
                PathBuf::from("/ws/vendor"),
                PathBuf::from("/ws/.agents"),
                PathBuf::from("/ws/vendor/lib"),
                PathBuf::from("/ws/.agents/skills"),
                PathBuf::from("/ws/vendor/other"),
            ]
        );
    }

    #[test]
    fn root_keeps_only_the_capabilities_that_write_a_workspace() {
        // CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_KILL, CAP_SETGID, CAP_SETUID.
        assert_eq!(kept_capabilities(true), 0b1110_1011);
        // Not CAP_SYS_ADMIN (21), CAP_MKNOD (27), CAP_SYS_PTRACE (19), CAP_NET_RAW (13).
        for dangerous in [21, 27, 19, 13] {
            assert_eq!(kept_capabilities(true) & 1 << dangerous, 0);
        }
        assert_eq!(kept_capabilities(false), 0);
    }

    #[test]
    fn off_is_not_degraded_and_missing_features_are_named() {
        let none = Support::default();
        let off = SandboxSpec {
            profile: SandboxProfile::Off,
            ..SandboxSpec::default()
        };
        let all = Hides {
            checkpoint_key: true,
            read_denied: true,
        };
        assert!(report(&off, &none, all).missing.is_empty());
        let r = report(&SandboxSpec::default(), &none, Hides::default());
        assert_eq!(
            r.missing,
            [
                "filesystem",
                "user_namespace",
                "processes",
                "run_folder",
                "outside_read_only",
                "capabilities",
                "seccomp",
                "hostname_ipc",
                "network"
            ]
        );
        // Without a mount namespace the checkpoint key and the read-denied
        // files are readable, and said so.
        let r = report(&SandboxSpec::default(), &none, all);
        assert!(r.missing.contains(&"read_denied".to_string()));
        assert!(r.missing.contains(&"checkpoint_key".to_string()));
        let message = degraded_message(&r).unwrap();
        assert!(
            message.contains("children can read the checkpoint key"),
            "{message}"
        );
        let with_net = SandboxSpec {
            network: true,
            ..SandboxSpec::default()
        };
        assert!(
            !report(&with_net, &none, Hides::default())
                .missing
                .contains(&"network".to_string())
        );
    }
}
