//! What happens in a child process between `fork` and `exec` to put it in
//! the sandbox: new namespaces, a second fork so the command is the first
//! process (init) of its own PID namespace, a fresh `/proc`, read-only bind
//! mounts over agentci's own files and the workspace's repositories and
//! skill folders (and the folders above those pinned), an empty file over
//! each masked one (the checkpoint key, read-denied files; an empty folder
//! over read-denied folders), everything but the writable roots read-only,
//! the loopback interface of a private network namespace, the Landlock
//! ruleset, the resource limits, the capabilities dropped and, last, the
//! seccomp filters.
//!
//! Everything here runs in the forked child of a multi-threaded process, so
//! it only makes system calls: every path, map and ruleset is built before
//! the fork by [`super::Sandbox`]. Nothing here decides *what* to enforce.

use std::ffi::CString;
use std::io;

use std::sync::Arc;

use landlock::{RulesetCreated, RulesetStatus};
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};

use super::seccomp::SyscallFilter;

/// Bits of a probe's report: which steps failed (written to the probe's
/// pipe: an exit status keeps only 8 bits, and there are more steps).
pub(super) const FAIL_UNSHARE: i32 = 1;
pub(super) const FAIL_JOIN_USER: i32 = 2;
pub(super) const FAIL_PRIVATE: i32 = 4;
pub(super) const FAIL_PROC: i32 = 8;
pub(super) const FAIL_BIND: i32 = 16;
pub(super) const FAIL_LOOPBACK: i32 = 32;
pub(super) const FAIL_FORK: i32 = 64;
pub(super) const FAIL_VIEW: i32 = 128;
pub(super) const FAIL_CAPABILITIES: i32 = 256;
pub(super) const FAIL_SECCOMP: i32 = 512;
pub(super) const FAIL_LIMITS: i32 = 1024;

/// A path made read-only for the child: `source` bound over `path` (itself,
/// or an empty file over a masked one), with the flags the source's mount
/// already has (a user namespace may not drop `nosuid`, `nodev`, … when
/// remounting).
pub(super) struct ReadOnlyBind {
    pub source: CString,
    pub path: CString,
    pub keep: MsFlags,
}

/// One `setrlimit` call: soft and hard limit both, so the command cannot
/// raise it again.
pub(super) struct ResourceLimit {
    pub resource: libc::__rlimit_resource_t,
    pub value: libc::rlimit,
}

/// Everything the child does, prepared before the fork.
pub(super) struct ChildSetup {
    /// The join file of the call's control groups, written first of all so
    /// that every process the command starts is counted.
    pub join_groups: Vec<CString>,
    /// The run's user namespace ([`super::run_namespaces`]), joined first:
    /// inside it the child's capabilities reach only what it owns.
    pub join_user: Option<std::os::fd::RawFd>,
    /// The namespaces made for this child alone (mount, PID, UTS, IPC).
    pub namespaces: CloneFlags,
    pub mount_proc: bool,
    /// Everything outside `writable` read-only (`mount_setattr`), so
    /// `chmod`, `chown`, extended attributes and times of files outside
    /// fail too (Landlock governs only contents and names).
    pub read_only_view: bool,
    /// The writable roots, bound onto themselves and kept writable.
    pub writable: Vec<CString>,
    /// Folders bound onto themselves, writable as before: a mount point
    /// cannot be renamed or removed, so the read-only paths below them
    /// cannot be moved aside and replaced. Bound before `read_only`.
    pub pinned: Vec<CString>,
    pub read_only: Vec<ReadOnlyBind>,
    pub loopback_up: bool,
    /// The run's network namespace, made once and joined instead of making
    /// one per call (making one costs milliseconds); joined after the user
    /// namespace that owns it.
    pub join_network: Option<std::os::fd::RawFd>,
    pub landlock: Option<RulesetCreated>,
    /// The capabilities the command keeps (a bit per capability); `None`:
    /// leave them as they are.
    pub capabilities: Option<u64>,
    /// The resource limits (`setrlimit`), set after the namespaces are made
    /// so that the process limit counts only the command's own processes.
    pub limits: Vec<ResourceLimit>,
    /// The seccomp filters, installed last.
    pub syscalls: Option<Arc<SyscallFilter>>,
    /// Probe: write the failed steps to this pipe and exit instead of
    /// running the command.
    pub probe: Option<std::os::fd::RawFd>,
}

impl ChildSetup {
    /// Apply the sandbox to the calling (forked, single-threaded) process.
    /// Returns only in the process that goes on to `exec` the command.
    ///
    /// # Safety
    /// Must be called only between `fork` and `exec` (a `pre_exec` hook).
    pub(super) unsafe fn apply(&mut self) -> io::Result<()> {
        let mut failed = 0;
        for procs in &self.join_groups {
            // `0` moves the writing process itself.
            if !write_file(procs, b"0") {
                return self.fail(FAIL_LIMITS);
            }
        }
        // SAFETY: setns on descriptors the parent opened for this; the
        // user namespace first, since it owns the network namespace.
        if let Some(fd) = self.join_user
            && unsafe { libc::setns(fd, libc::CLONE_NEWUSER) } != 0
        {
            return self.fail(FAIL_JOIN_USER);
        }
        // SAFETY: as above.
        if let Some(fd) = self.join_network
            && unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0
        {
            return self.fail(FAIL_UNSHARE);
        }
        if !self.namespaces.is_empty() {
            if unshare(self.namespaces).is_err() {
                return self.fail(FAIL_UNSHARE);
            }
            if self.namespaces.contains(CloneFlags::CLONE_NEWPID) {
                // SAFETY: we are between fork and exec; see `become_init`.
                if let Err(e) = unsafe { become_init() } {
                    return if self.probe.is_some() {
                        self.fail(FAIL_FORK)
                    } else {
                        Err(e)
                    };
                }
            }
            if self.namespaces.contains(CloneFlags::CLONE_NEWNS) {
                failed |= self.mounts();
                reenter_working_folder();
            }
            if self.loopback_up && !loopback_up() {
                failed |= FAIL_LOOPBACK;
            }
        }
        // A probe goes on, to find every step that fails.
        if failed != 0 && self.probe.is_none() {
            return self.fail(failed);
        }
        for limit in &self.limits {
            // SAFETY: setrlimit on this process with a value built before the fork.
            if unsafe { libc::setrlimit(limit.resource, &limit.value) } != 0 {
                return self.fail(failed | FAIL_LIMITS);
            }
        }
        if let Some(ruleset) = self.landlock.take() {
            match ruleset.restrict_self() {
                Ok(status) if status.ruleset != RulesetStatus::NotEnforced => {}
                _ => return Err(io::Error::from_raw_os_error(libc::EPERM)),
            }
        }
        if let Some(keep) = self.capabilities
            && !drop_capabilities(keep)
        {
            failed |= FAIL_CAPABILITIES;
        }
        // SAFETY: prctl with constant arguments.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            failed |= FAIL_CAPABILITIES;
        }
        // A probe goes on past the capabilities, to learn about seccomp too.
        if failed != 0 && self.probe.is_none() {
            return self.fail(failed);
        }
        if let Some(filter) = &self.syscalls {
            for program in &filter.programs {
                if seccompiler::apply_filter(program).is_err() {
                    return self.fail(failed | FAIL_SECCOMP);
                }
            }
        }
        if self.probe.is_some() {
            return self.fail(failed);
        }
        Ok(())
    }

    /// Stop: a probe reports the failed steps and exits; a real command
    /// does not run.
    fn fail(&self, failed: i32) -> io::Result<()> {
        if let Some(report) = self.probe {
            // SAFETY: a write of four bytes to the probe's pipe, then
            // _exit, which is async-signal-safe and ends only this child.
            unsafe {
                let bytes = failed.to_ne_bytes();
                libc::write(report, bytes.as_ptr().cast(), bytes.len());
                libc::_exit(0)
            }
        }
        Err(io::Error::from_raw_os_error(libc::EPERM))
    }

    fn mounts(&self) -> i32 {
        // First of all: nothing mounted below may propagate back to the
        // host's mount namespace (as root, `/` is usually shared).
        let none: Option<&std::ffi::CStr> = None;
        if mount(
            none,
            c"/",
            none,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            none,
        )
        .is_err()
        {
            // Without this no mount is safe to make.
            return FAIL_PRIVATE;
        }
        let mut failed = 0;
        if self.mount_proc {
            let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
            if mount(Some(c"proc"), c"/proc", Some(c"proc"), flags, none).is_err() {
                failed |= FAIL_PROC;
            }
        }
        if self.read_only_view {
            failed |= self.read_only_view();
        }
        for path in &self.pinned {
            let path = path.as_c_str();
            if mount(
                Some(path),
                path,
                none,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                none,
            )
            .is_err()
            {
                failed |= FAIL_BIND;
            }
        }
        for bind in &self.read_only {
            let path = bind.path.as_c_str();
            let remount = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | bind.keep;
            let done = mount(
                Some(bind.source.as_c_str()),
                path,
                none,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                none,
            )
            .is_ok()
                && mount(none, path, none, remount, none).is_ok();
            if !done {
                failed |= FAIL_BIND;
            }
        }
        failed
    }
}

impl ChildSetup {
    /// Bind each writable root onto itself, make every mount read-only,
    /// then the writable roots writable again.
    fn read_only_view(&self) -> i32 {
        let none: Option<&std::ffi::CStr> = None;
        for root in &self.writable {
            let root = root.as_c_str();
            let flags = MsFlags::MS_BIND | MsFlags::MS_REC;
            if mount(Some(root), root, none, flags, none).is_err() {
                return FAIL_VIEW;
            }
        }
        if !set_read_only(c"/", true, true) {
            return FAIL_VIEW;
        }
        for root in &self.writable {
            // A read-only mount inside a writable root that a user
            // namespace locked cannot be cleared; then the root alone.
            if !set_read_only(root, false, true) && !set_read_only(root, false, false) {
                return FAIL_VIEW;
            }
        }
        0
    }
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// Make the mount at `path` (and with `recursive` every one below it)
/// read-only, or writable again.
fn set_read_only(path: &std::ffi::CStr, read_only: bool, recursive: bool) -> bool {
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: a valid C string and a correctly sized, initialised struct.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ) == 0
    }
}

/// The working folder was entered (by `spawn`) before the mounts: enter it
/// again by its path, so it is the one on top (a writable root's own bind,
/// not the read-only mount beneath it). No allocation: a stack buffer.
fn reenter_working_folder() {
    let mut buffer = [0u8; libc::PATH_MAX as usize];
    // SAFETY: getcwd writes at most the buffer's length, NUL-terminated;
    // chdir reads that string.
    unsafe {
        if !libc::getcwd(buffer.as_mut_ptr().cast(), buffer.len()).is_null() {
            libc::chdir(buffer.as_ptr().cast());
        }
    }
}

/// `_LINUX_CAPABILITY_VERSION_3` and its structures (`capget(2)`).
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapabilityHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapabilityData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Keep only the capabilities in `keep` (a bit each): the inheritable set
/// first (as root, what survives `exec` is the inheritable set and the
/// bounding set), then every capability out of the bounding set and the
/// ambient set, then effective and permitted down to `keep`.
fn drop_capabilities(keep: u64) -> bool {
    let mut header = CapabilityHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapabilityData::default(); 2];
    // SAFETY: capget/capset with a version-3 header and two data entries;
    // prctl with plain integers.
    unsafe {
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) != 0 {
            return false;
        }
        let halves = [keep as u32, (keep >> 32) as u32];
        for (entry, half) in data.iter_mut().zip(halves) {
            entry.inheritable = half & entry.permitted;
        }
        if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
            return false;
        }
        for capability in 0..64 {
            let done = libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) == 0;
            if !done && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
                return false;
            }
        }
        let ambient = libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong;
        libc::prctl(libc::PR_CAP_AMBIENT, ambient, 0, 0, 0);
        for entry in &mut data {
            entry.effective = entry.inheritable;
            entry.permitted = entry.inheritable;
        }
        libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) == 0
    }
}

/// Fork once more: the new process is the first one of the PID namespace
/// made by `unshare`, the one that runs the command. When it ends, the
/// kernel kills every process left in the namespace (`setsid` or not); when
/// the process in between is killed, the first one gets SIGKILL too
/// (`PR_SET_PDEATHSIG`). The process in between only waits and passes the
/// exit status on, so the caller sees the command's status.
///
/// # Safety
/// Must be called only between `fork` and `exec`.
unsafe fn become_init() -> io::Result<()> {
    // SAFETY: the caller is a single-threaded forked child.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: prctl only sets an attribute of this process.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        return Ok(());
    }
    // The waiter: hold no descriptor (the output pipes, spawn's error pipe),
    // so the caller's reads end when the namespace is gone.
    // SAFETY: plain system calls on this process's own descriptors and child.
    unsafe {
        libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 {
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(125);
            }
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// Write `bytes` to the file at `path` in one `write`.
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    // SAFETY: open/write/close with a valid C string and buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        written == bytes.len() as isize
    }
}

/// Bring up `lo` in a new network namespace, where it starts down, so the
/// command's own servers on 127.0.0.1 work.
pub(super) fn loopback_up() -> bool {
    // SAFETY: a socket and two ioctls on a zeroed, correctly sized ifreq.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return false;
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        request.ifr_name[0] = b'l' as libc::c_char;
        request.ifr_name[1] = b'o' as libc::c_char;
        let mut ok = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut request) == 0;
        if ok {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            ok = libc::ioctl(fd, libc::SIOCSIFFLAGS, &request) == 0;
        }
        libc::close(fd);
        ok
    }
}
