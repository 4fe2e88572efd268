//! Process and memory limits through a control group per call, where the
//! machine lets agentci make one.
//!
//! `setrlimit` (see [`super::resource_limits`]) is always applied, but two
//! of its limits are weak: the kernel does not apply `RLIMIT_NPROC` to the
//! host's root (and root inside the run's user namespace is the host's root
//! mapped), and `RLIMIT_AS` limits address space, not memory used. A
//! control group counts every process and every resident page of the call
//! whoever runs it, and tells afterwards whether a limit was reached, so
//! the call can be ended and reported as `RESOURCE_LIMIT`.
//!
//! Where a group can be made: cgroup v2, below agentci's own group when it
//! has the `pids` (and `memory`) controllers delegated for its children
//! (the root group of a container, a delegated systemd unit); else the
//! cgroup v1 `pids` and `memory` hierarchies, which root can write. A
//! machine with neither keeps `setrlimit` alone, and `doctor` says so.
//! Each run makes `agentci-<run id>` with a `call-N` group per command
//! below it; a call's child joins its group before anything else. Groups
//! of ended calls are removed as new ones are made, and the run's group
//! with the sandbox.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use super::config::ResourceLimits;

/// Which limit a call reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitReached {
    Processes,
    Memory,
}

/// Which kind of hierarchy a group lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V2,
    V1,
}

/// One hierarchy's folder for the run: where call groups are made.
#[derive(Debug)]
struct RunGroup {
    version: Version,
    /// The controllers this hierarchy limits (`pids`, `memory`).
    controllers: Vec<&'static str>,
    path: PathBuf,
}

/// The run's control groups, one folder per hierarchy used.
#[derive(Debug)]
pub struct CallGroups {
    runs: Vec<RunGroup>,
    limits: ResourceLimits,
    next: AtomicU64,
    /// Groups of calls made so far and not yet removed.
    made: Mutex<Vec<PathBuf>>,
}

/// The groups one call's child joins, and what to read afterwards.
#[derive(Clone, Debug, Default)]
pub struct CallGroup {
    /// The file of each group the child writes `0` to, to join it.
    pub(super) procs: Vec<CString>,
    /// The files that count limits reached: `pids.events`, or
    /// `memory.events` / `memory.oom_control`, and the limit each counts.
    events: Vec<(PathBuf, LimitReached)>,
}

impl CallGroups {
    /// The run's groups below where agentci runs, or `None` where no
    /// hierarchy with the `pids` controller can be written.
    pub fn make(run_id: &str, limits: ResourceLimits) -> Option<CallGroups> {
        let own = own_groups();
        let mut runs = Vec::new();
        if let Some(run) = v2_run_group(&own, run_id) {
            runs.push(run);
        } else {
            for controller in ["pids", "memory"] {
                if let Some(run) = v1_run_group(&own, controller, run_id) {
                    runs.push(run);
                }
            }
        }
        let limits_processes = runs.iter().any(|r| r.controllers.contains(&"pids"));
        if !limits_processes {
            for run in &runs {
                let _ = std::fs::remove_dir(&run.path);
            }
            return None;
        }
        Some(CallGroups {
            runs,
            limits,
            next: AtomicU64::new(0),
            made: Mutex::new(Vec::new()),
        })
    }

    /// Whether the groups limit resident memory (so `RLIMIT_AS`, which
    /// counts reserved address space, is not needed on top).
    pub fn limits_memory(&self) -> bool {
        self.runs.iter().any(|r| r.controllers.contains(&"memory"))
    }

    /// A new group for one call, with the limits written.
    pub fn call(&self) -> io::Result<CallGroup> {
        self.remove_ended();
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut group = CallGroup::default();
        for run in &self.runs {
            let path = run.path.join(format!("call-{n}"));
            std::fs::create_dir(&path)?;
            if let Ok(mut made) = self.made.lock() {
                made.push(path.clone());
            }
            for controller in &run.controllers {
                let (file, value, events, reached) = match (*controller, run.version) {
                    ("pids", _) => (
                        "pids.max",
                        self.limits.processes,
                        "pids.events",
                        LimitReached::Processes,
                    ),
                    (_, Version::V2) => (
                        "memory.max",
                        self.limits.memory,
                        "memory.events",
                        LimitReached::Memory,
                    ),
                    (_, Version::V1) => (
                        "memory.limit_in_bytes",
                        self.limits.memory,
                        "memory.oom_control",
                        LimitReached::Memory,
                    ),
                };
                std::fs::write(path.join(file), value.to_string())?;
                group.events.push((path.join(events), reached));
            }
            group
                .procs
                .push(c_path(&path.join(join_file(run.version)))?);
        }
        Ok(group)
    }

    /// Remove the groups of calls that have ended (an empty group can be
    /// removed; one with processes left cannot, and is tried again later).
    fn remove_ended(&self) {
        if let Ok(mut made) = self.made.lock() {
            made.retain(|path| std::fs::remove_dir(path).is_err());
        }
    }
}

impl Drop for CallGroups {
    fn drop(&mut self) {
        let made = self.made.get_mut().map(std::mem::take).unwrap_or_default();
        for path in made {
            // Anything still running in a group is the run's and ends with it.
            let _ = std::fs::write(path.join("cgroup.kill"), "1");
            for _ in 0..50 {
                if std::fs::remove_dir(&path).is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        for run in &self.runs {
            let _ = std::fs::remove_dir(&run.path);
        }
    }
}

impl CallGroup {
    /// The first limit the call reached, if any.
    pub fn reached(&self) -> Option<LimitReached> {
        self.events
            .iter()
            .find(|(file, reached)| counted(file, *reached))
            .map(|(_, reached)| *reached)
    }
}

/// Whether an events file counts the limit reached: `max N` in
/// `pids.events` (forks refused), `oom_kill N` in `memory.events` and v1's
/// `memory.oom_control` (a process killed for memory; `max` there only
/// counts reclaim at the limit, which a healthy build meets too).
fn counted(file: &Path, reached: LimitReached) -> bool {
    let wanted = match reached {
        LimitReached::Processes => "max",
        LimitReached::Memory => "oom_kill",
    };
    let Ok(text) = std::fs::read_to_string(file) else {
        return false;
    };
    text.lines().any(|line| {
        let mut words = line.split_whitespace();
        let key = words.next().unwrap_or_default();
        let count = words.next().and_then(|n| n.parse::<u64>().ok());
        key == wanted && count.is_some_and(|n| n > 0)
    })
}

/// agentci's own groups: (hierarchy id, controllers, path) from `/proc/self/cgroup`.
fn own_groups() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            Some((
                parts.next()?.to_string(),
                parts.next()?.to_string(),
                parts.next()?.to_string(),
            ))
        })
        .collect()
}

/// A whole control-group hierarchy's mount: whether it is cgroup2, its
/// super options (the v1 controllers), where it is mounted.
struct HierarchyMount {
    v2: bool,
    super_options: String,
    point: PathBuf,
}

/// Where a hierarchy is mounted: the cgroup2 mount, or the cgroup v1
/// mount whose options name `controller`. The mount table is read once per
/// process (a run asks for each hierarchy twice, in the probe and for its
/// groups, and the table can be long); the commands a run starts mount
/// only in namespaces of their own.
fn mount_point(v2: bool, controller: &str) -> Option<PathBuf> {
    static MOUNTS: OnceLock<Vec<HierarchyMount>> = OnceLock::new();
    MOUNTS
        .get_or_init(hierarchy_mounts)
        .iter()
        .find(|m| match v2 {
            true => m.v2,
            false => !m.v2 && m.super_options.split(',').any(|o| o == controller),
        })
        .map(|m| m.point.clone())
}

fn hierarchy_mounts() -> Vec<HierarchyMount> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS ... - FSTYPE SOURCE SUPER_OPTIONS
            let (left, right) = line.split_once(" - ")?;
            let mut right = right.split_whitespace();
            let fstype = right.next()?;
            let super_options = right.nth(1).unwrap_or_default();
            let mut fields = left.split_whitespace();
            let (root, point) = (fields.nth(3)?, fields.next()?);
            // A mount of a subtree (`root` other than `/`) would need the
            // group paths shifted; agentci uses only whole hierarchies.
            let v2 = match fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            (root == "/").then(|| HierarchyMount {
                v2,
                super_options: super_options.to_string(),
                point: PathBuf::from(point),
            })
        })
        .collect()
}

fn v2_run_group(own: &[(String, String, String)], run_id: &str) -> Option<RunGroup> {
    let (_, _, path) = own
        .iter()
        .find(|(id, controllers, _)| id == "0" && controllers.is_empty())?;
    let mount = mount_point(true, "")?;
    let ours = mount.join(path.trim_start_matches('/'));
    let available = std::fs::read_to_string(ours.join("cgroup.controllers")).ok()?;
    let has = |c: &str| available.split_whitespace().any(|a| a == c);
    if !has("pids") {
        return None;
    }
    let controllers: Vec<&'static str> =
        ["pids", "memory"].into_iter().filter(|c| has(c)).collect();
    // Our own group must hand the controllers to its children; that works
    // only where the kernel allows processes beside enabled controllers
    // (a namespace's root group) or they are enabled already.
    let enable: String = controllers.iter().map(|c| format!("+{c} ")).collect();
    let subtree = ours.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&subtree).unwrap_or_default();
    let all_enabled = controllers
        .iter()
        .all(|c| enabled.split_whitespace().any(|e| e == *c));
    if !all_enabled && std::fs::write(&subtree, enable.trim_end()).is_err() {
        return None;
    }
    let run = ours.join(format!("agentci-{run_id}"));
    std::fs::create_dir(&run).ok()?;
    if std::fs::write(run.join("cgroup.subtree_control"), enable.trim_end()).is_err() {
        let _ = std::fs::remove_dir(&run);
        return None;
    }
    Some(RunGroup {
        version: Version::V2,
        controllers,
        path: run,
    })
}

fn v1_run_group(
    own: &[(String, String, String)],
    controller: &'static str,
    run_id: &str,
) -> Option<RunGroup> {
    let (_, _, path) = own
        .iter()
        .find(|(_, controllers, _)| controllers.split(',').any(|c| c == controller))?;
    let mount = mount_point(false, controller)?;
    let run = mount
        .join(path.trim_start_matches('/'))
        .join(format!("agentci-{run_id}"));
    std::fs::create_dir(&run).ok()?;
    Some(RunGroup {
        version: Version::V1,
        controllers: vec![controller],
        path: run,
    })
}

/// The file a call's child writes `0` to, to join a group. Writing
/// `cgroup.procs` moves a whole thread group under a global lock whose
/// writer waits for an RCU grace period (6–19 ms on an idle machine, on
/// every call). v1's `tasks` moves only the writing thread, which the
/// kernel does without that lock (`cgroup_procs_write_start`: a single
/// thread that is `current`); the child between `fork` and `exec` has one
/// thread, so the whole process moves, and everything it starts follows.
/// v2 has no per-thread file outside threaded groups.
fn join_file(version: Version) -> &'static str {
    match version {
        Version::V2 => "cgroup.procs",
        Version::V1 => "tasks",
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_reached_are_read_from_the_events_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pids.events");
        let processes = LimitReached::Processes;
        let memory = LimitReached::Memory;
        std::fs::write(&file, "max 0\n").unwrap();
        assert!(!counted(&file, processes));
        std::fs::write(&file, "max 3\n").unwrap();
        assert!(counted(&file, processes));
        let oom = dir.path().join("memory.oom_control");
        std::fs::write(&oom, "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n").unwrap();
        assert!(counted(&oom, memory));
        let events = dir.path().join("memory.events");
        std::fs::write(&events, "low 0\nhigh 0\nmax 7\noom 0\noom_kill 0\n").unwrap();
        assert!(
            !counted(&events, memory),
            "reclaim at the limit is not a kill"
        );
        assert!(!counted(&dir.path().join("missing"), processes));
    }
}
