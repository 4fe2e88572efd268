//! `sandbox.limits`: what one command may use of the machine, tried as root
//! and as an unprivileged user and judged by the side effect (the size of
//! the file written, whether the allocation happened, how many processes
//! started).
//!
//! What got through before: a command could fill the disk with one file,
//! allocate all the machine's memory and fork without bound; nothing but
//! the call's timeout stopped it. Now each command runs under `setrlimit`
//! limits from the job (with defaults), and a file cut at the limit ends
//! the call with `RESOURCE_LIMIT` while the run goes on.

use super::sandbox::enforced;
use super::sandbox_root::attack;
use super::support::harness::{Sandbox, stderr};
use super::support::users::RunAs;

const ALLOW_ALL: &str = "permissions: {default: allow}";

/// Attack: a 2 GiB file; with `file_size: 1MiB` the write stops at 1 MiB,
/// the call says RESOURCE_LIMIT, and the next call still runs.
#[test]
fn a_file_past_the_size_limit_ends_the_call_and_the_run_goes_on() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        let permissions = format!("{ALLOW_ALL}\nsandbox: {{limits: {{file_size: 1MiB}}}}");
        let (_, _, outputs) = attack(
            &sb,
            user,
            &["head -c 2G /dev/zero > big", "echo next > next.txt"],
            &permissions,
            &[],
        );
        let big = std::fs::metadata(sb.workspace().join("big")).unwrap().len();
        assert_eq!(big, 1 << 20, "{}", outputs[0]);
        assert!(
            outputs[0].starts_with("ERROR RESOURCE_LIMIT:")
                && outputs[0].contains("sandbox.limits.file_size"),
            "{}",
            outputs[0]
        );
        assert!(sb.workspace().join("next.txt").exists(), "{}", outputs[1]);
    }
}

/// Attack: 512 MiB allocated and used under `memory: 256MiB`. Where a
/// control group counts the call's resident memory, the kernel kills the
/// process at the limit and the call says RESOURCE_LIMIT; elsewhere
/// `RLIMIT_AS` makes the allocation fail inside the call. Either way the
/// next call still runs.
#[test]
fn an_allocation_past_the_memory_limit_ends_in_the_call() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        let permissions = format!("{ALLOW_ALL}\nsandbox: {{limits: {{memory: 256MiB}}}}");
        let allocate = "python3 -c 'b = bytearray(512*1024*1024); open(\"allocated\", \"w\")'";
        let (_, _, outputs) = attack(
            &sb,
            user,
            &[allocate, "echo next > next.txt"],
            &permissions,
            &[],
        );
        assert!(!sb.workspace().join("allocated").exists(), "{}", outputs[0]);
        let doctor = super::support::harness::agentci_in(sb.path(), &["doctor", "--json"], &[]);
        let doctor: serde_json::Value = serde_json::from_slice(&doctor.stdout).unwrap();
        let grouped = user == RunAs::Current && doctor["support"]["control_groups"] == true;
        if grouped {
            eprintln!("  control group path: the process was killed at the limit");
            assert!(
                outputs[0].starts_with("ERROR RESOURCE_LIMIT:")
                    && outputs[0].contains("sandbox.limits.memory"),
                "{}",
                outputs[0]
            );
        } else {
            eprintln!("  setrlimit path: the allocation failed");
            assert!(outputs[0].contains("MemoryError"), "{}", outputs[0]);
        }
        assert!(sb.workspace().join("next.txt").exists(), "{}", outputs[1]);
    }
}

/// Forks 200 children that each live two seconds and keeps in `forked`
/// how many forks succeeded so far (the call may be ended midway).
const FORK_200: &str = "python3 -c '
import os, time
n = 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    n += 1
    open(\"forked\", \"w\").write(str(n))
'";

/// Attack: a bounded fork bomb under `processes: 64`. For a user who is
/// not root the kernel's RLIMIT_NPROC binds inside the run's user
/// namespace; root is exempt from it (root inside is the host's root
/// mapped), so for root the limit is a control group per call, which also
/// ends the call and says RESOURCE_LIMIT. Where no control group can be
/// made, root's forks are not limited, and the run says so.
#[test]
fn forks_past_the_process_limit_fail_and_the_run_goes_on() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        let permissions = format!("{ALLOW_ALL}\nsandbox: {{limits: {{processes: 64}}}}");
        let (_, trace, outputs) = attack(
            &sb,
            user,
            &[FORK_200, "echo next > next.txt"],
            &permissions,
            &[],
        );
        let forked: u32 = std::fs::read_to_string(sb.workspace().join("forked"))
            .unwrap_or_else(|_| panic!("{}", outputs[0]))
            .parse()
            .unwrap();
        eprintln!("  {forked} of 200 forks succeeded");
        let root = user == RunAs::Current && super::support::users::is_root();
        if !enforced(&trace, "process_limit") {
            assert!(root, "only root can lack a process limit");
            assert_eq!(forked, 200);
            continue;
        }
        assert!(forked < 64, "{forked} forks: {}", outputs[0]);
        if root {
            eprintln!("  control group path: the call was ended");
            assert!(
                outputs[0].starts_with("ERROR RESOURCE_LIMIT:")
                    && outputs[0].contains("sandbox.limits.processes"),
                "{}",
                outputs[0]
            );
        }
        assert!(sb.workspace().join("next.txt").exists(), "{}", outputs[1]);
    }
}

/// A bad size and an unknown key under `sandbox.limits` are errors at
/// their line, saying what to write.
#[test]
fn bad_limits_are_reported_at_their_line() {
    let sb = Sandbox::new();
    sb.skill("runner", None);
    let job = |limits: &str| {
        format!(
            "version: 1\nname: limits\nskill: runner\ngoal: Run.\n\
             model: {{provider: openai, name: fake-model, base_url: http://127.0.0.1:9/v1}}\n\
             workspace: ws\nskills_path: [skills]\nsandbox:\n  limits:\n{limits}"
        )
    };
    sb.write("size.yaml", &job("    processes: 64\n    memory: lots\n"));
    sb.write("count.yaml", &job("    processes: 0\n"));
    sb.write("unknown.yaml", &job("    cpu: 2\n"));
    for (name, file) in [
        ("bad_memory_size", "size.yaml"),
        ("bad_process_count", "count.yaml"),
        ("unknown_limit", "unknown.yaml"),
    ] {
        let out = sb.agentci(&["validate", file]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        insta::assert_snapshot!(name, format!("{stdout}{}", stderr(&out)));
    }
}

/// Attack: leave the call's control group (write its own pid into a parent
/// group's `cgroup.procs`, or its thread into v1's `tasks`) before forking, or forge the group's events
/// file that agentci reads after the call, or remove the group. The
/// control-group hierarchy is read-only inside the sandbox, so the forks
/// still stop at the limit and the call still says RESOURCE_LIMIT.
#[test]
fn a_command_cannot_leave_or_forge_its_control_group() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        let permissions = format!("{ALLOW_ALL}\nsandbox: {{limits: {{processes: 64}}}}");
        let escape = "for f in /sys/fs/cgroup/pids/cgroup.procs /sys/fs/cgroup/pids/tasks \
                      /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/unified/cgroup.procs; \
                      do echo 0 > $f; done; \
                      g=$(grep pids /proc/self/cgroup | cut -d: -f3); \
                      echo 'max 0' > /sys/fs/cgroup/pids$g/pids.events; \
                      echo 100000 > /sys/fs/cgroup/pids$g/pids.max; \
                      rmdir /sys/fs/cgroup/pids$g; cat /proc/self/cgroup";
        let command = format!("{escape}; {FORK_200}");
        let (_, trace, outputs) = attack(
            &sb,
            user,
            &[&command, "echo next > next.txt"],
            &permissions,
            &[],
        );
        let forked: u32 = std::fs::read_to_string(sb.workspace().join("forked"))
            .unwrap_or_else(|_| panic!("{}", outputs[0]))
            .parse()
            .unwrap();
        eprintln!("  {forked} of 200 forks succeeded");
        if !enforced(&trace, "process_limit") {
            continue;
        }
        assert!(forked < 64, "{forked} forks: {}", outputs[0]);
        let root = user == RunAs::Current && super::support::users::is_root();
        if root {
            assert!(
                outputs[0].starts_with("ERROR RESOURCE_LIMIT:"),
                "{}",
                outputs[0]
            );
        }
        assert!(sb.workspace().join("next.txt").exists(), "{}", outputs[1]);
    }
}
