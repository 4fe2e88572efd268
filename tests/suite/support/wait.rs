//! Waiting on a signal the code under test gives (a trace line, a process
//! that appears or is gone, a connection), never on a fixed sleep: a sleep
//! is too short on a loaded machine and wasted time on an idle one. Every
//! wait has a generous limit and fails naming what it waited for; every
//! bound on a duration prints the figure it measured.

use std::path::Path;
use std::time::{Duration, Instant};

/// How long a wait may take before it counts as a hang: far beyond what any
/// of them takes on a loaded two-core machine.
pub const HANG: Duration = Duration::from_secs(30);

/// Wait until `ready` holds, for at most `limit`; whether it did.
pub fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if ready() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait until `ready` holds, for at most [`HANG`]; panics naming `what`
/// was awaited when it never does.
pub fn wait_for(what: &str, ready: impl FnMut() -> bool) {
    let start = Instant::now();
    assert!(
        wait_until(HANG, ready),
        "waited {:?} for {what}, in vain",
        start.elapsed()
    );
}

/// Asserts that `took` is under `limit`, a bound that only a hang exceeds,
/// and prints the figure measured either way (`cargo test -- --nocapture`
/// shows it).
pub fn assert_took_less(took: Duration, limit: Duration, what: &str) {
    eprintln!("{what}: took {took:?} (a hang is {limit:?} or more)");
    assert!(
        took < limit,
        "{what} took {took:?}, at least the {limit:?} that means it hung"
    );
}

/// Whether the file at `path` holds `needle` (a trace line being awaited).
pub fn file_has(path: &Path, needle: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle))
}

/// The pid and command line (arguments joined by spaces) of every process
/// this machine shows, zombies excepted (their command line is empty).
fn command_lines() -> Vec<(i32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            Some((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")))
        })
        .filter(|(_, line)| !line.is_empty())
        .collect()
}

/// Processes whose command line holds `marker` (a `sleep` with an unusual duration).
pub fn processes_with(marker: &str) -> usize {
    command_lines()
        .iter()
        .filter(|(_, line)| line.starts_with("sleep ") && line.contains(marker))
        .count()
}

/// The pids of processes whose command line holds `marker` anywhere (an
/// absolute path under a test's own temporary folder).
pub fn pids_with(marker: &str) -> Vec<i32> {
    command_lines()
        .into_iter()
        .filter(|(_, line)| line.contains(marker))
        .map(|(pid, _)| pid)
        .collect()
}

/// The pids of `parent`'s children.
pub fn children_of(parent: u32) -> Vec<i32> {
    command_lines()
        .into_iter()
        .filter(|(pid, _)| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .map(|(pid, _)| pid)
        .collect()
}

/// SIGKILL every process whose command line holds `marker`: what a test
/// started and the code under test could not stop (the report said so).
pub fn kill_all_with(marker: &str) {
    for pid in pids_with(marker) {
        // SAFETY: kill only sends a signal; `marker` is a path under the
        // calling test's own temporary folder, so only its processes match.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}
