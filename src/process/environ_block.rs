//! agentci's own environment block, emptied once at start.
//!
//! `/proc/<pid>/environ` does not show a process's environment as it is
//! now: the kernel copies out the bytes between `env_start` and `env_end`
//! of the process's memory (fields 50 and 51 of `/proc/<pid>/stat`), the
//! `NAME=value` strings `execve` laid out on the new stack. `setenv` and
//! `unsetenv` never touch those bytes, so the API key would stay readable
//! there for the whole run to whoever may open that file: the same user
//! cannot once agentci is non-dumpable ([`super::hardening`]), but root
//! with `CAP_SYS_PTRACE` can, and where the sandbox has no PID namespace a
//! command run as root may be such a reader.
//!
//! [`wipe`] moves every variable to the heap and then overwrites the block
//! with NULs: the file then shows only NULs, and `std::env::var` keeps
//! working for agentci itself. Moving goes through `std::env::set_var`,
//! that is libc's `setenv` with `replace` set. glibc (`__add_to_environ` in
//! `stdlib/setenv.c`) builds a fresh `NAME=value` string with `malloc` (or
//! reuses one it built before) for every replacement and points the
//! `environ` slot at it; it never writes into, or keeps, the old string.
//! musl's `setenv` likewise hands `__putenv` a string it `malloc`ed. The
//! unit test below checks the result on this libc: every value reads back
//! after the block is gone.
//!
//! What is not moved: an entry `std` cannot name (a name holding `=`) and a
//! second entry of a name already seen (libc reads the first). They stay
//! where they were and read as empty strings afterwards; `std` never showed
//! them. Children are unaffected: every child agentci starts gets an
//! environment built from the CLI's snapshot of `std::env::vars_os`
//! ([`crate::run_env::RunEnv`], taken right after [`wipe`]), which reads
//! the moved copies. This module works on the process's own environment,
//! not on the snapshot: it is what makes the snapshot's source safe to keep. The environment of agentci's parent (the
//! shell that started it) is that process's own, out of agentci's reach.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io;

/// Why the block was left as it is.
#[derive(Debug, thiserror::Error)]
pub enum WipeError {
    /// `set_var` is only sound while no other thread can read the
    /// environment, so [`wipe`] refuses to run later than the first lines of `main`.
    #[error("cannot empty agentci's environment block: {0} threads are running already")]
    NotAlone(usize),
    #[error("cannot empty agentci's environment block: cannot read {what}: {source}")]
    Proc {
        what: &'static str,
        source: io::Error,
    },
    #[error(
        "cannot empty agentci's environment block: /proc/self/stat has no env_start and env_end"
    )]
    NoBounds,
}

/// What [`wipe`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wiped {
    /// Variables moved to the heap.
    pub moved: usize,
    /// Bytes of the block overwritten with NULs.
    pub bytes: usize,
}

/// Move the environment to the heap and empty the block `/proc/<pid>/environ`
/// shows. Call it first thing in `main`: it refuses once a second thread exists.
pub fn wipe() -> Result<Wiped, WipeError> {
    let threads = std::fs::read_dir("/proc/self/task")
        .map_err(|source| WipeError::Proc {
            what: "/proc/self/task",
            source,
        })?
        .count();
    if threads != 1 {
        return Err(WipeError::NotAlone(threads));
    }
    // SAFETY: this process has one thread, the caller's, so nothing can
    // read or change the environment while the variables move (a thread
    // that is not there cannot be started by anyone but this one).
    unsafe { move_and_wipe() }
}

/// [`wipe`] without its check.
///
/// # Safety
/// No other thread may read or write the environment meanwhile (the
/// contract of `std::env::set_var`).
unsafe fn move_and_wipe() -> Result<Wiped, WipeError> {
    let stat = std::fs::read_to_string("/proc/self/stat").map_err(|source| WipeError::Proc {
        what: "/proc/self/stat",
        source,
    })?;
    let (start, end) = block_bounds(&stat).ok_or(WipeError::NoBounds)?;
    let mut seen: HashSet<OsString> = HashSet::new();
    let mut moved = 0;
    for (name, value) in std::env::vars_os() {
        if !settable(&name) || !seen.insert(name.clone()) {
            continue;
        }
        // SAFETY: the caller guarantees no other thread touches the
        // environment; `settable` rules out the names `set_var` panics on.
        unsafe { std::env::set_var(&name, &value) };
        moved += 1;
    }
    let bytes = end - start;
    if bytes > 0 {
        let block = std::ptr::with_exposed_provenance_mut::<u8>(start);
        // SAFETY: the kernel reports [start, end) as this process's
        // environment strings, on its initial stack, which is mapped
        // writable; no `environ` entry that `std` reads points there any
        // more (see the module's documentation), and no Rust value borrows it.
        unsafe { std::ptr::write_bytes(block, 0, bytes) };
    }
    Ok(Wiped { moved, bytes })
}

/// Whether `set_var` takes `name`: not empty, no `=` (NUL cannot occur in
/// a name read from the environment).
fn settable(name: &OsString) -> bool {
    let bytes = name.as_encoded_bytes();
    !bytes.is_empty() && !bytes.contains(&b'=')
}

/// `env_start` and `env_end` from the text of `/proc/self/stat`: fields 50
/// and 51, counted after the command name, which is in parentheses and may
/// hold spaces and parentheses itself.
fn block_bounds(stat: &str) -> Option<(usize, usize)> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // The first field after the name is field 3 (the state).
    let mut fields = after_name.split_whitespace().skip(50 - 3);
    let start: usize = fields.next()?.parse().ok()?;
    let end: usize = fields.next()?.parse().ok()?;
    (start != 0 && end >= start).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Marks the child process that [`the_block_is_emptied_and_the_values_kept`] starts.
    const CHILD: &str = "AGENTCI_ENVIRON_BLOCK_CHILD";
    const SECRET: &str = "sk-environ-block-test-5d1e";

    #[test]
    fn the_bounds_come_from_fields_50_and_51() {
        let mut fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        fields[50 - 3] = "1000".into();
        fields[51 - 3] = "1200".into();
        let stat = format!("42 (a) b (c)) {}", fields.join(" "));
        assert_eq!(block_bounds(&stat), Some((1000, 1200)));
        // Hidden bounds (read without permission) or a short line: none.
        fields[50 - 3] = "0".into();
        assert_eq!(block_bounds(&format!("1 (x) {}", fields.join(" "))), None);
        assert_eq!(block_bounds("1 (x) R 0 0"), None);
    }

    #[test]
    fn names_set_var_would_refuse_are_left_alone() {
        assert!(settable(&OsString::from("PATH")));
        assert!(!settable(&OsString::from("")));
        assert!(!settable(&OsString::from("=C:")));
    }

    #[test]
    fn more_than_one_thread_is_refused() {
        // The test harness runs this test on a thread of its own.
        assert!(matches!(wipe(), Err(WipeError::NotAlone(n)) if n > 1));
    }

    /// This test binary, run again for the child test only, with a secret
    /// in its environment: the child empties its block and checks what it
    /// and its own children see.
    #[test]
    fn the_block_is_emptied_and_the_values_kept() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "process::environ_block::tests::child_empties_its_block",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .env("AGENTCI_TEST_SECRET", SECRET)
            .env("AGENTCI_TEST_OTHER", "ünïcode value")
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{said}");
        assert!(
            said.contains("child checked"),
            "the child did not run: {said}"
        );
    }

    #[test]
    fn child_empties_its_block() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let before: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        let shown = std::fs::read("/proc/self/environ").unwrap();
        assert!(String::from_utf8_lossy(&shown).contains(SECRET));
        // SAFETY: besides this test's thread there is only the harness's
        // main thread, which waits for the test's result and reads no
        // environment meanwhile.
        let wiped = unsafe { move_and_wipe() }.unwrap();
        assert_eq!(wiped.moved, before.len());
        // The file shows only NULs, as many bytes as before.
        let shown = std::fs::read("/proc/self/environ").unwrap();
        assert_eq!(shown.len(), wiped.bytes);
        assert!(shown.iter().all(|&b| b == 0), "{shown:?}");
        // agentci still reads every value, from the moved copies.
        let after: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        assert_eq!(after, before);
        assert_eq!(std::env::var("AGENTCI_TEST_SECRET").unwrap(), SECRET);
        // A child inheriting the environment, and one given it explicitly
        // as the process runner does, get the values.
        let inherited = Command::new("/usr/bin/env").output().unwrap();
        assert!(String::from_utf8_lossy(&inherited.stdout).contains(SECRET));
        let built = Command::new("/usr/bin/env")
            .env_clear()
            .envs(std::env::vars_os())
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&built.stdout).contains("ünïcode value"));
        println!("child checked");
    }
}
