//! agentci's own process cannot be read through /proc by what runs as the
//! same user. Regression: with the sandbox degraded (no user namespaces, as
//! on runners that restrict them) a command could read the API key from
//! `/proc/<agentci's pid>/environ`.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use super::support::prerequisites;
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
