//! The system calls a sandboxed command may not make, as seccomp filters
//! compiled once per run (by `seccompiler`) and installed last in each child.
//!
//! The filters refuse with `EPERM` what no build or test needs and what
//! reaches past the sandbox: device nodes, mounts, tracing other processes,
//! loading kernel code, keyrings, swap, reboot, the hostname, new user
//! namespaces (where the kernel would hand the command every capability
//! again), personality flags that turn off address randomisation, and
//! set-user-ID or set-group-ID files. `clone3` and `openat2` get `ENOSYS`:
//! their flags and modes are in memory a filter cannot read, so libc falls
//! back to `clone` and `openat`, whose arguments the filter sees. So does
//! io_uring (`io_uring_setup`, `io_uring_enter`, `io_uring_register`): its
//! operations (`IORING_OP_OPENAT` with a set-user-ID mode, among others)
//! are read by the kernel from a ring in shared memory, past the filter;
//! programs that use it fall back to plain system calls. A system call of
//! another architecture (32-bit code on x86_64) ends the process: the
//! filter cannot judge its numbers. This module only builds the programs;
//! [`super::child`] installs them, and the capabilities, namespaces and
//! Landlock do the rest of the containing.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The compiled filters, in the order they are installed.
#[derive(Clone, Debug)]
pub(super) struct SyscallFilter {
    pub programs: Vec<BpfProgram>,
}

/// Why the filters could not be built (a bug in the rules, not the machine).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the sandbox's seccomp filter: {0}")]
pub struct FilterError(#[from] seccompiler::BackendError);

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

/// `personality` values left alone: the query, the default and 32-bit
/// `uname` (`linux32`), as container runtimes allow; anything else (notably
/// `ADDR_NO_RANDOMIZE`) is refused.
const PERSONALITIES: &[u64] = &[0, 0x0008, 0x20000, 0x20008, 0xffff_ffff];

/// System calls refused whatever their arguments.
const REFUSED: &[libc::c_long] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_userfaultfd,
    // Opens any file of a filesystem by its handle, past every mount and
    // folder permission (the "shocker" container escape).
    libc::SYS_open_by_handle_at,
    libc::SYS_acct,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

impl SyscallFilter {
    /// The filters for this machine's architecture.
    pub fn new() -> Result<SyscallFilter, FilterError> {
        let refused = SeccompFilter::new(
            refused_rules()?,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            ARCH,
        )?;
        let unreadable = UNREADABLE.iter().map(|&nr| (nr, Vec::new())).collect();
        let unreadable = SeccompFilter::new(
            unreadable,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            ARCH,
        )?;
        let mut programs = vec![refused.try_into()?, unreadable.try_into()?];
        #[cfg(target_arch = "x86_64")]
        programs.push(x32_refused());
        Ok(SyscallFilter { programs })
    }
}

/// System calls whose arguments lie in memory a filter cannot read,
/// answered `ENOSYS` as if the kernel lacked them: callers fall back to
/// calls the filter can judge. Docker's default seccomp profile has left
/// the three io_uring calls out of its allow list since Docker 25.0
/// (moby/moby#46762, `profiles/seccomp/default.json`; they get its default
/// `EPERM` there), so programs that use io_uring (libuv, tokio-uring,
/// liburing) already cope without it; `ENOSYS` is the answer they read as
/// "this kernel has none" and fall back on.
const UNREADABLE: &[libc::c_long] = &[
    libc::SYS_clone3,
    libc::SYS_openat2,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// Each refused system call and the rules under which it is (none: always).
fn refused_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, FilterError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|&nr| (nr, Vec::new())).collect();
    // Device nodes, by the file type in the mode; fifos and sockets stay.
    let device = |mode_arg: u8| -> Result<Vec<SeccompRule>, FilterError> {
        [libc::S_IFCHR, libc::S_IFBLK]
            .into_iter()
            .map(|kind| {
                let is = masked(mode_arg, u64::from(libc::S_IFMT), u64::from(kind))?;
                Ok(SeccompRule::new(vec![is])?)
            })
            .collect()
    };
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_mknod, device(1)?);
    rules.insert(libc::SYS_mknodat, device(2)?);
    // Set-user-ID and set-group-ID files, by the mode's bits: inside the
    // run's user namespace root is the host's root mapped, so such a file
    // would run as root for whoever starts it outside the sandbox later.
    for (nr, mode_arg) in MODE_ARGUMENTS {
        let entry = rules.entry(*nr).or_default();
        for bit in [libc::S_ISUID, libc::S_ISGID] {
            let bit = u64::from(bit);
            entry.push(SeccompRule::new(vec![masked(*mode_arg, bit, bit)?])?);
        }
    }
    // A new user namespace, by the flag (the first argument of both).
    let new_user = CLONE_NEWUSER;
    for nr in [libc::SYS_clone, libc::SYS_unshare] {
        let rule = SeccompRule::new(vec![masked(0, new_user, new_user)?])?;
        rules.insert(nr, vec![rule]);
    }
    // The kernel reads `personality`'s argument as 32 bits.
    let unusual = PERSONALITIES
        .iter()
        .map(|&value| SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, value))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_personality, vec![SeccompRule::new(unusual)?]);
    Ok(rules)
}

const CLONE_NEWUSER: u64 = libc::CLONE_NEWUSER as u64;

/// System calls that set a file's mode, and which argument holds it.
/// `openat2` keeps its mode in memory a filter cannot read: it answers
/// `ENOSYS`, as `clone3` does, and callers fall back to `openat`.
const MODE_ARGUMENTS: &[(libc::c_long, u8)] = &[
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_chmod, 1),
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (libc::SYS_fchmodat2, 2),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_creat, 1),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_open, 2),
    (libc::SYS_openat, 3),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_mknod, 1),
    (libc::SYS_mknodat, 2),
];

/// Argument `index`, masked by `mask`, equals `value` (its low 32 bits:
/// modes and clone flags are 32-bit for the kernel).
fn masked(index: u8, mask: u64, value: u64) -> Result<SeccompCondition, FilterError> {
    Ok(SeccompCondition::new(
        index,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(mask),
        value,
    )?)
}

/// The x32 system calls of x86_64 (numbers with bit 30 set) under the
/// x86_64 architecture: `seccompiler` matches exact numbers, so `mknod`
/// called by its x32 number would pass the filter above. Written by hand:
/// load the architecture, skip unless x86_64, load the number, refuse it
/// when bit 30 is set.
#[cfg(target_arch = "x86_64")]
fn x32_refused() -> BpfProgram {
    use seccompiler::sock_filter;
    const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let ld = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    let jeq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    let jset = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    let stmt = |code, k| sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code, k, jt, jf| sock_filter { code, jt, jf, k };
    // struct seccomp_data: nr at 0, arch at 4.
    vec![
        stmt(ld, 4),
        jump(jeq, AUDIT_ARCH_X86_64, 0, 2),
        stmt(ld, 0),
        jump(jset, X32_SYSCALL_BIT, 1, 0),
        stmt(ret, libc::SECCOMP_RET_ALLOW),
        stmt(ret, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_build_on_this_architecture() {
        let filter = SyscallFilter::new().unwrap();
        assert!(filter.programs.iter().all(|p| !p.is_empty()));
    }
}
