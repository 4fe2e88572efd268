//! The user and network namespaces every child of a run joins, made once
//! when the run's sandbox is built.
//!
//! Why shared and made ahead: a user namespace is what makes root inside
//! the sandbox not root on the host (its capabilities then reach only what
//! the namespace owns, and it can give files only to the users it maps);
//! and a user namespace that maps more than the caller's own uid must have
//! its maps written from *outside* it, by a process with `CAP_SETUID` in
//! the parent namespace — something a child cannot do for itself between
//! `fork` and `exec`. So agentci forks one short-lived holder that makes
//! the namespaces, writes its maps from here, keeps descriptors to them,
//! and lets the holder go; each child then only `setns`es into them, which
//! is also cheaper than making them per call. The network namespace (only
//! its loopback, brought up once) is owned by the user namespace, so
//! joining the user namespace first gives a child the right to join it.
//!
//! This module only makes the namespaces; [`super::child`] joins them.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use nix::sched::CloneFlags;

/// Who the run's user namespace maps: `inside host 1` lines for
/// `/proc/PID/uid_map` and `gid_map`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct IdMaps {
    pub uid_map: String,
    pub gid_map: String,
    /// Write `deny` to `setgroups` first: needed when the writer has no
    /// `CAP_SETGID` over the parent namespace (agentci is not root).
    pub deny_setgroups: bool,
}

impl IdMaps {
    /// The maps for a process with `uid`/`gid` whose children write a
    /// workspace owned by `owner`: the caller's own ids unchanged; as root,
    /// also the workspace owner's, so a checkout made by another user (a
    /// volume mounted into a container) stays writable. Root is mapped to
    /// itself so files the children make belong to root as before.
    pub fn for_caller(uid: u32, gid: u32, owner: Option<(u32, u32)>) -> IdMaps {
        let mut uid_map = format!("{uid} {uid} 1\n");
        let mut gid_map = format!("{gid} {gid} 1\n");
        let root = uid == 0;
        if root && let Some((owner_uid, owner_gid)) = owner {
            if owner_uid != uid {
                uid_map.push_str(&format!("{owner_uid} {owner_uid} 1\n"));
            }
            if owner_gid != gid {
                gid_map.push_str(&format!("{owner_gid} {owner_gid} 1\n"));
            }
        }
        IdMaps {
            uid_map,
            gid_map,
            deny_setgroups: !root,
        }
    }
}

/// Descriptors of the run's namespaces; the namespaces live as long as these.
#[derive(Debug, Default)]
pub(super) struct RunNamespaces {
    pub user: Option<OwnedFd>,
    pub network: Option<OwnedFd>,
}

/// What the holder reports through its pipe.
const READY: u8 = 0;
const FAILED_UNSHARE: u8 = 1;
const FAILED_LOOPBACK: u8 = 2;

impl RunNamespaces {
    /// Make a user namespace with `maps` (when given) and a network
    /// namespace with only its loopback up (when `network`).
    pub fn make(maps: Option<&IdMaps>, network: bool) -> io::Result<RunNamespaces> {
        let mut flags = CloneFlags::empty();
        if maps.is_some() {
            flags |= CloneFlags::CLONE_NEWUSER;
        }
        if network {
            flags |= CloneFlags::CLONE_NEWNET;
        }
        if flags.is_empty() {
            return Ok(RunNamespaces::default());
        }
        let holder = Holder::start(flags)?;
        let result = holder.ready().and_then(|()| {
            if let Some(maps) = maps {
                write_maps(holder.pid, maps)?;
            }
            let open = |name: &str| open_namespace(holder.pid, name);
            Ok(RunNamespaces {
                user: maps.map(|_| open("user")).transpose()?,
                network: network.then(|| open("net")).transpose()?,
            })
        });
        holder.release();
        result
    }

    pub fn user_fd(&self) -> Option<RawFd> {
        self.user.as_ref().map(AsRawFd::as_raw_fd)
    }

    pub fn network_fd(&self) -> Option<RawFd> {
        self.network.as_ref().map(AsRawFd::as_raw_fd)
    }
}

/// The forked process that makes the namespaces and waits until the
/// parent has written the maps and opened its namespace files.
struct Holder {
    pid: libc::pid_t,
    /// Read end of the holder's report.
    report: OwnedFd,
    /// Write end the holder waits on; closing it lets the holder exit.
    release: Option<OwnedFd>,
}

impl Holder {
    fn start(flags: CloneFlags) -> io::Result<Holder> {
        let (report_read, report_write) = pipe()?;
        let (release_read, release_write) = pipe()?;
        // SAFETY: the child makes only async-signal-safe system calls on
        // data prepared before the fork (see `hold`), then `_exit`s.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: in the forked child, as `hold` requires.
            unsafe { hold(flags, report_write.as_raw_fd(), release_read.as_raw_fd()) }
        }
        drop(report_write);
        drop(release_read);
        Ok(Holder {
            pid,
            report: report_read,
            release: Some(release_write),
        })
    }

    /// Wait for the holder's report.
    fn ready(&self) -> io::Result<()> {
        let mut byte = [0xffu8];
        loop {
            // SAFETY: read into a one-byte buffer from our own pipe.
            let n = unsafe { libc::read(self.report.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        match byte[0] {
            READY => Ok(()),
            FAILED_UNSHARE => Err(io::Error::other("cannot make the run's namespaces")),
            FAILED_LOOPBACK => Err(io::Error::other(
                "cannot bring up the loopback of the run's network namespace",
            )),
            _ => Err(io::Error::other(
                "the process making the run's namespaces ended early",
            )),
        }
    }

    /// Let the holder exit, and reap it.
    fn release(mut self) {
        drop(self.release.take());
        let mut status = 0;
        // SAFETY: waitpid on our own child.
        while unsafe { libc::waitpid(self.pid, &mut status, 0) } < 0
            && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
        {}
    }
}

/// The holder's life: make the namespaces, report, wait for the parent to
/// close `release`, exit.
///
/// # Safety
/// Only in a freshly forked child of a possibly multi-threaded process.
unsafe fn hold(flags: CloneFlags, report: RawFd, release: RawFd) -> ! {
    let send = |byte: u8| {
        // SAFETY: a one-byte write to a pipe this process holds.
        unsafe { libc::write(report, [byte].as_ptr().cast(), 1) };
    };
    // SAFETY: plain system calls; `_exit` never returns.
    unsafe {
        // Keep only our two ends: a copy of another holder's release end
        // (forked from a thread making another run's sandbox at the same
        // time) would keep that holder waiting, and it ours.
        close_all_but(report, release);
        if libc::unshare(flags.bits()) != 0 {
            send(FAILED_UNSHARE);
            libc::_exit(1);
        }
        // agentci is not dumpable (process/hardening.rs), so its forks'
        // /proc files belong to root; the parent opens and writes ours.
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        if flags.contains(CloneFlags::CLONE_NEWNET) && !super::child::loopback_up() {
            send(FAILED_LOOPBACK);
            libc::_exit(1);
        }
        send(READY);
        let mut byte = [0u8];
        while libc::read(release, byte.as_mut_ptr().cast(), 1) > 0 {}
        libc::_exit(0)
    }
}

/// Close every descriptor but `a` and `b`.
///
/// # Safety
/// Only in a forked child that owns nothing else it still needs.
unsafe fn close_all_but(a: RawFd, b: RawFd) {
    let (low, high) = (a.min(b) as u32, a.max(b) as u32);
    let close = |first: u32, last: u32| {
        if first <= last {
            // SAFETY: closes only this process's own descriptors.
            unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
        }
    };
    if low > 0 {
        close(0, low - 1);
    }
    if high > low + 1 {
        close(low + 1, high - 1);
    }
    close(high + 1, u32::MAX);
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn write_maps(pid: libc::pid_t, maps: &IdMaps) -> io::Result<()> {
    let proc_file = |name: &str| format!("/proc/{pid}/{name}");
    let write = |name: &str, text: &str| {
        std::fs::write(proc_file(name), text).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot write the run's user namespace {name}: {e}"),
            )
        })
    };
    if maps.deny_setgroups {
        write("setgroups", "deny")?;
    }
    write("uid_map", &maps.uid_map)?;
    write("gid_map", &maps.gid_map)
}

fn open_namespace(pid: libc::pid_t, name: &str) -> io::Result<OwnedFd> {
    let path = CString::new(format!("/proc/{pid}/ns/{name}"))
        .map_err(|_| io::Error::other("a path with a NUL byte"))?;
    // SAFETY: open with a valid C string; the descriptor is owned below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_maps_itself_and_the_workspace_owner() {
        let maps = IdMaps::for_caller(0, 0, Some((1001, 121)));
        assert_eq!(maps.uid_map, "0 0 1\n1001 1001 1\n");
        assert_eq!(maps.gid_map, "0 0 1\n121 121 1\n");
        assert!(!maps.deny_setgroups);
        let same = IdMaps::for_caller(0, 0, Some((0, 0)));
        assert_eq!(same.uid_map, "0 0 1\n");
    }

    // Regression: two runs' sandboxes made at once (eval attempts in
    // parallel) hung, each holder keeping a copy of the other's release end.
    #[test]
    fn namespaces_made_from_many_threads_at_once_never_hang() {
        let (done, finished) = std::sync::mpsc::channel();
        for _ in 0..6 {
            let done = done.clone();
            std::thread::spawn(move || {
                // SAFETY: getuid and getgid have no preconditions.
                let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
                let maps = IdMaps::for_caller(uid, gid, None);
                let made = (0..5)
                    .filter(|_| RunNamespaces::make(Some(&maps), true).is_ok())
                    .count();
                let _ = done.send(made);
            });
        }
        for _ in 0..6 {
            let made = finished
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("making namespaces hung");
            eprintln!("{made} of 5 made (0 where user namespaces are not allowed)");
        }
    }

    #[test]
    fn a_user_who_is_not_root_maps_only_itself() {
        let maps = IdMaps::for_caller(1000, 1000, Some((1001, 1001)));
        assert_eq!(maps.uid_map, "1000 1000 1\n");
        assert_eq!(maps.gid_map, "1000 1000 1\n");
        assert!(maps.deny_setgroups);
    }
}
