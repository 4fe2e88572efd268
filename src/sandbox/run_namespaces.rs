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
//! With a `sandbox.network` host list the holder also opens the one way
//! out: a TCP listener on the namespace's own 127.0.0.1, handed back over
//! a Unix socket, on which agentci serves its proxy (`crate::netproxy`).
//! A socket belongs to the namespace it was made in, so the proxy running
//! in agentci's process answers connections made inside.
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
    /// The listener inside the network namespace that the proxy serves.
    pub proxy: Option<std::net::TcpListener>,
}

/// The network namespace a run wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RunNetwork {
    /// None of its own: the host's network.
    Host,
    /// Its own, with only a loopback.
    Isolated,
    /// Its own, and a listener in it for the proxy.
    Proxied,
}

/// What the holder reports through its socket.
const READY: u8 = 0;
const FAILED_UNSHARE: u8 = 1;
const FAILED_LOOPBACK: u8 = 2;
const FAILED_LISTENER: u8 = 3;

impl RunNamespaces {
    /// Make a user namespace with `maps` (when given) and a network
    /// namespace with only its loopback up (unless `network` is the host's).
    pub fn make(maps: Option<&IdMaps>, network: RunNetwork) -> io::Result<RunNamespaces> {
        let mut flags = CloneFlags::empty();
        if maps.is_some() {
            flags |= CloneFlags::CLONE_NEWUSER;
        }
        if network != RunNetwork::Host {
            flags |= CloneFlags::CLONE_NEWNET;
        }
        if flags.is_empty() {
            return Ok(RunNamespaces::default());
        }
        let holder = Holder::start(flags, network == RunNetwork::Proxied)?;
        let result = holder.ready().and_then(|proxy| {
            if let Some(maps) = maps {
                write_maps(holder.pid, maps)?;
            }
            let open = |name: &str| open_namespace(holder.pid, name);
            Ok(RunNamespaces {
                user: maps.map(|_| open("user")).transpose()?,
                network: (network != RunNetwork::Host)
                    .then(|| open("net"))
                    .transpose()?,
                proxy: proxy.map(std::net::TcpListener::from),
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
    fn start(flags: CloneFlags, listen: bool) -> io::Result<Holder> {
        let (report_read, report_write) = socket_pair()?;
        let (release_read, release_write) = pipe()?;
        // SAFETY: the child makes only async-signal-safe system calls on
        // data prepared before the fork (see `hold`), then `_exit`s.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: in the forked child, as `hold` requires.
            unsafe {
                hold(
                    flags,
                    listen,
                    report_write.as_raw_fd(),
                    release_read.as_raw_fd(),
                )
            }
        }
        drop(report_write);
        drop(release_read);
        Ok(Holder {
            pid,
            report: report_read,
            release: Some(release_write),
        })
    }

    /// Wait for the holder's report: the proxy's listener, when asked for.
    fn ready(&self) -> io::Result<Option<OwnedFd>> {
        let (byte, fd) = receive(self.report.as_raw_fd())?;
        match byte {
            READY => Ok(fd),
            FAILED_UNSHARE => Err(io::Error::other("cannot make the run's namespaces")),
            FAILED_LOOPBACK => Err(io::Error::other(
                "cannot bring up the loopback of the run's network namespace",
            )),
            FAILED_LISTENER => Err(io::Error::other(
                "cannot open the proxy's listener in the run's network namespace",
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

/// The holder's life: make the namespaces (and the proxy's listener, with
/// `listen`), report, wait for the parent to close `release`, exit.
///
/// # Safety
/// Only in a freshly forked child of a possibly multi-threaded process.
unsafe fn hold(flags: CloneFlags, listen: bool, report: RawFd, release: RawFd) -> ! {
    // SAFETY: plain system calls; `_exit` never returns.
    unsafe {
        // Keep only our two ends: a copy of another holder's release end
        // (forked from a thread making another run's sandbox at the same
        // time) would keep that holder waiting, and it ours.
        close_all_but(report, release);
        if libc::unshare(flags.bits()) != 0 {
            send(report, FAILED_UNSHARE, None);
            libc::_exit(1);
        }
        // agentci is not dumpable (process/hardening.rs), so its forks'
        // /proc files belong to root; the parent opens and writes ours.
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        if flags.contains(CloneFlags::CLONE_NEWNET) && !super::child::loopback_up() {
            send(report, FAILED_LOOPBACK, None);
            libc::_exit(1);
        }
        let listener = match listen {
            true => match loopback_listener() {
                Some(fd) => Some(fd),
                None => {
                    send(report, FAILED_LISTENER, None);
                    libc::_exit(1);
                }
            },
            false => None,
        };
        send(report, READY, listener);
        let mut byte = [0u8];
        while libc::read(release, byte.as_mut_ptr().cast(), 1) > 0 {}
        libc::_exit(0)
    }
}

/// A TCP listener on 127.0.0.1 (any port) of the calling process's network
/// namespace; no allocation, for the holder.
fn loopback_listener() -> Option<RawFd> {
    // SAFETY: socket, bind and listen on a zeroed, correctly sized sockaddr_in.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let mut address: libc::sockaddr_in = std::mem::zeroed();
        address.sin_family = libc::AF_INET as libc::sa_family_t;
        address.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let bound = libc::bind(fd, (&raw const address).cast(), size) == 0;
        if !bound || libc::listen(fd, 128) != 0 {
            libc::close(fd);
            return None;
        }
        Some(fd)
    }
}

/// Room for one descriptor's control message, aligned for `cmsghdr`.
type ControlBuffer = [u64; 4];

/// Send `byte`, and `fd` with it, over the Unix socket `socket`; no
/// allocation, for the holder.
fn send(socket: RawFd, byte: u8, fd: Option<RawFd>) {
    let mut data = [byte];
    let mut control: ControlBuffer = [0; 4];
    // SAFETY: the message points at buffers that outlive the call; the
    // control message is written within `control` by the CMSG macros.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        if let Some(fd) = fd {
            message.msg_control = control.as_mut_ptr().cast();
            message.msg_controllen = libc::CMSG_SPACE(4) as usize;
            let header = libc::CMSG_FIRSTHDR(&message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(4) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>(), fd);
        }
        libc::sendmsg(socket, &message, 0);
    }
}

/// Receive the holder's report byte and the descriptor sent with it.
fn receive(socket: RawFd) -> io::Result<(u8, Option<OwnedFd>)> {
    let mut data = [0xffu8];
    let mut control: ControlBuffer = [0; 4];
    // SAFETY: recvmsg into buffers that outlive the call; a descriptor is
    // taken only from an SCM_RIGHTS message the kernel filled in.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = std::mem::size_of::<ControlBuffer>();
        let received = loop {
            let n = libc::recvmsg(socket, &mut message, libc::MSG_CMSG_CLOEXEC);
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break n;
        };
        if received <= 0 {
            return Ok((0xff, None));
        }
        let header = libc::CMSG_FIRSTHDR(&message);
        let fd = (!header.is_null()
            && (*header).cmsg_level == libc::SOL_SOCKET
            && (*header).cmsg_type == libc::SCM_RIGHTS)
            .then(|| {
                let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>());
                OwnedFd::from_raw_fd(fd)
            });
        Ok((data[0], fd))
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

/// A connected pair of Unix sockets for the holder's report.
fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills the two-element array.
    let made = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if made != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
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
                    .filter(|_| RunNamespaces::make(Some(&maps), RunNetwork::Proxied).is_ok())
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
