//! agentci's own process cannot be read through /proc by what runs as the
//! same user. Regression: with the sandbox degraded (no user namespaces, as
//! on runners that restrict them) a command could read the API key from
//! `/proc/<agentci's pid>/environ`.
//!
//! And io_uring is refused inside the sandbox. Regression: the seccomp
//! filter judged the mode of `open*`, `chmod*` and `mknod*`, but an
//! `IORING_OP_OPENAT` (whose mode the kernel reads from a shared ring, past
//! the filter) made a root-owned `-rwsr-xr-x` file that outlived the run.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::sandbox::enforced;
use super::sandbox_root::attack;
use super::support::harness::{Sandbox, stderr};
use super::support::prerequisites;
use super::support::users::RunAs;
use super::support::wait::{children_of, wait_for};

/// The unprivileged user both agentci and the reader run as.
const NOBODY: &str = "65534";

#[test]
fn a_process_of_the_same_user_cannot_read_agentcis_environment() {
    // SAFETY: geteuid only reads the calling process's effective user id.
    if unsafe { libc::geteuid() } != 0 {
        return prerequisites::lacking(
            "the test that agentci's environment is closed to its user",
            "root (to switch to an unprivileged user)",
            "AGENTCI_REQUIRE_ROOT",
        );
    }
    // A copy nobody can execute, in a folder nobody can enter.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let binary = dir.path().join("agentci");
    std::fs::copy(env!("CARGO_BIN_EXE_agentci"), &binary).unwrap();
    let as_nobody = |program: &str| {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid",
            NOBODY,
            "--regid",
            NOBODY,
            "--clear-groups",
            program,
        ]);
        cmd
    };
    // agentci waits on an MCP server that never answers: long enough to look at it.
    let mut agentci = as_nobody(binary.to_str().unwrap())
        .args([
            "mcp",
            "list",
            "--startup-timeout",
            "10s",
            "--",
            "/bin/sleep",
            "20",
        ])
        .env("OPENAI_API_KEY", "sk-hardening-test-secret")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("setpriv (util-linux) must be installed");
    let environ = format!("/proc/{}/environ", agentci.id());
    // setpriv execs agentci in place; agentci hardens itself first thing,
    // long before it starts the server: once the server is its child, it is
    // past that point and still running.
    wait_for("agentci to start the MCP server `/bin/sleep 20`", || {
        std::fs::read_link(format!("/proc/{}/exe", agentci.id()))
            .is_ok_and(|exe| exe.ends_with("agentci"))
            && !children_of(agentci.id()).is_empty()
    });
    let read = as_nobody("cat").arg(&environ).output().unwrap();
    let _ = agentci.kill();
    let _ = agentci.wait();
    let shown = String::from_utf8_lossy(&read.stdout);
    assert!(
        !shown.contains("sk-hardening-test-secret"),
        "a process of the same user read agentci's environment"
    );
    assert!(
        String::from_utf8_lossy(&read.stderr).contains("Permission denied"),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
}

/// `tests/data/programs/io_uring_openat.c` compiled into `dir` with `cc`;
/// `None` (a skip, a failure under CI) where there is no `cc`.
fn io_uring_attack(dir: &Path) -> Option<PathBuf> {
    let cc = prerequisites::program(
        &["cc", "gcc", "clang"],
        "the io_uring attack",
        "install a C compiler (Debian: gcc)",
    )?;
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/programs/io_uring_openat.c");
    let binary = dir.join("uring");
    let out = Command::new(cc)
        .arg("-O1")
        .arg("-o")
        .arg(&binary)
        .arg(source)
        .output()
        .unwrap();
    assert!(out.status.success(), "cc: {}", stderr(&out));
    Some(binary)
}

/// Attack: the model's `exec` runs a program that asks io_uring to create
/// a file with mode 04755 (`IORING_OP_OPENAT`). Every io_uring call answers
/// `ENOSYS` in the sandbox, so no ring exists and no file is made; the same
/// program outside the sandbox shows the kernel would have made it.
#[test]
fn io_uring_is_refused_and_makes_no_set_user_id_file() {
    let built = tempfile::tempdir().unwrap();
    let Some(program) = io_uring_attack(built.path()) else {
        return;
    };
    // Outside the sandbox the attack works wherever io_uring is enabled:
    // the test tries what could really happen.
    let outside = tempfile::tempdir().unwrap();
    let direct = Command::new(&program)
        .arg("made-outside")
        .current_dir(outside.path())
        .output()
        .unwrap();
    let direct = String::from_utf8_lossy(&direct.stdout).to_string();
    match direct.contains("io_uring_setup: ok") {
        true => {
            let mode = std::fs::metadata(outside.path().join("made-outside"))
                .unwrap()
                .mode();
            assert_eq!(mode & 0o4000, 0o4000, "{mode:o}: {direct}");
            eprintln!(
                "outside the sandbox io_uring made a -rwsr-xr-x file: the attack is real here"
            );
        }
        false => eprintln!("io_uring is disabled on this kernel outside the sandbox too: {direct}"),
    }
    for user in RunAs::each() {
        let who = user.label();
        let sb = Sandbox::new();
        let copy = sb.path().join("uring");
        std::fs::copy(&program, &copy).unwrap();
        let command = format!("{} suid-uring; ls -l suid-uring 2>&1", copy.display());
        let (out, trace, outputs) = attack(&sb, user, &[&command], "", &[]);
        assert_eq!(out.status.code(), Some(0), "as {who}: {}", stderr(&out));
        assert!(enforced(&trace, "seccomp"), "as {who}: no seccomp here");
        let printed = &outputs[0];
        // 38 is ENOSYS: the sandbox answers as a kernel without io_uring.
        assert!(
            ["io_uring_setup", "io_uring_enter", "io_uring_register"]
                .iter()
                .all(|call| printed.contains(&format!("{call}: errno 38"))),
            "as {who}: io_uring was not refused: {printed}"
        );
        assert!(!printed.contains("openat:"), "as {who}: {printed}");
        assert!(
            !sb.workspace().join("suid-uring").exists(),
            "as {who}: io_uring made a file: {printed}"
        );
        eprintln!("as {who}: io_uring refused in the sandbox (ENOSYS), no file made");
    }
}
