//! How the reusable action sets up the full sandbox
//! (`.github/actions/agentci/full-sandbox.sh`, run as the action runs it):
//! on a runner that restricts unprivileged user namespaces through AppArmor
//! (GitHub's Ubuntu 24.04 runners), an AppArmor profile for the installed
//! binary that grants `userns`, or the sysctl as a fallback, both through
//! `sudo`; nothing on a runner that does not restrict them.
//!
//! This machine has no AppArmor, so the commands are checked with
//! stand-ins on PATH that record their arguments (`sudo` runs what it is
//! given; `apparmor_parser` and `sysctl` change a stand-in setting), run as
//! an unprivileged user as on a hosted runner. Where the machine does
//! restrict user namespaces and has a passwordless `sudo` (a hosted
//! runner), the last test sets the sandbox up for real and puts the
//! machine back.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use super::support::harness::{Sandbox, stderr, stdout};
use super::support::prerequisites;
use super::support::users::{give_to_nobody, is_root};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/.github/actions/agentci/full-sandbox.sh"
);

const SYSCTL: &str = "kernel.apparmor_restrict_unprivileged_userns";

/// A runner made of stand-ins: the restriction's setting, the AppArmor
/// folder, `sudo`, `apparmor_parser`, `sysctl`, and an installed `agentci`
/// whose `doctor --json` answers as the real one does: user namespaces
/// once a loaded profile names its exact path, or the setting is 0.
struct Runner {
    sb: Sandbox,
}

impl Runner {
    /// A runner whose setting reads `restricted` (`None`: no such setting).
    fn new(restricted: Option<&str>) -> Runner {
        let sb = Sandbox::new();
        let dir = sb.path().display().to_string();
        std::fs::create_dir_all(sb.path().join("apparmor.d")).unwrap();
        if let Some(value) = restricted {
            sb.write("setting", &format!("{value}\n"));
        }
        executable(
            &sb,
            "stubs/sudo",
            &format!(
                "echo \"sudo $*\" >> '{dir}/calls'\n[ -f '{dir}/no-sudo' ] && exit 1\n\
                 [ \"$1\" = -n ] && shift\nexec \"$@\"\n"
            ),
        );
        executable(
            &sb,
            "stubs/apparmor_parser",
            &format!(
                "echo \"apparmor_parser $*\" >> '{dir}/calls'\n\
                 [ -f '{dir}/parser-fails' ] && {{ echo 'parser: syntax error' >&2; exit 1; }}\n\
                 cp \"$2\" '{dir}/loaded-profile'\n"
            ),
        );
        executable(
            &sb,
            "stubs/sysctl",
            &format!("echo \"sysctl $*\" >> '{dir}/calls'\necho 0 > '{dir}/setting'\n"),
        );
        let runner = Runner { sb };
        runner.install("temp/agentci/bin/agentci");
        runner
    }

    /// The stand-in `agentci` at `relative`.
    fn install(&self, relative: &str) -> PathBuf {
        let dir = self.sb.path().display().to_string();
        executable(
            &self.sb,
            relative,
            &format!(
                "[ \"$1 $2\" = 'doctor --json' ] || exit 2\n\
                 if grep -qF \"profile agentci $0 flags\" '{dir}/loaded-profile' 2>/dev/null \
                 || [ \"$(cat '{dir}/setting' 2>/dev/null)\" = 0 ]; then\n\
                 echo '{{\"support\":{{\"user_namespaces\":true}}}}'\nelse\n\
                 echo '{{\"support\":{{\"user_namespaces\":false}}}}'\nfi\n"
            ),
        );
        self.sb.path().join(relative)
    }

    /// `full-sandbox.sh BINARY` as the action runs it, by a user who is not
    /// root (`nobody` when the tests run as root), with the stand-ins first
    /// on PATH.
    fn set_up(&self, binary: &Path) -> Output {
        let mut command = match is_root() {
            true => {
                give_to_nobody(self.sb.path());
                let mut c = Command::new("setpriv");
                c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"]);
                c.arg("bash");
                c
            }
            false => Command::new("bash"),
        };
        command
            .arg(SCRIPT)
            .arg(binary)
            .current_dir(self.sb.path())
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    self.sb.path().join("stubs").display(),
                    std::env::var("PATH").unwrap()
                ),
            )
            .env("AGENTCI_USERNS_SETTING", self.sb.path().join("setting"))
            .env("AGENTCI_APPARMOR_DIR", self.sb.path().join("apparmor.d"));
        command.output().unwrap()
    }

    /// The commands the stand-ins ran, one a line, with this runner's
    /// folder shown as `<dir>`.
    fn calls(&self) -> Vec<String> {
        let dir = self.sb.path().display().to_string();
        std::fs::read_to_string(self.sb.path().join("calls"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.replace(&dir, "<dir>"))
            .collect()
    }

    fn profile(&self) -> Option<String> {
        std::fs::read_to_string(self.sb.path().join("apparmor.d/agentci")).ok()
    }

    fn setting(&self) -> String {
        std::fs::read_to_string(self.sb.path().join("setting"))
            .unwrap_or_default()
            .trim()
            .to_string()
    }
}

/// A shell script at `relative` in the sandbox.
fn executable(sb: &Sandbox, relative: &str, body: &str) {
    let path = sb.write(relative, &format!("#!/bin/sh\n{body}"));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The profile Ubuntu documents for a program that needs user namespaces,
/// attached to `binary`'s exact path.
fn expected_profile(binary: &Path) -> String {
    format!(
        "# Written by the agentci GitHub action (full-sandbox.sh): lets agentci make the user\n\
         # namespaces of its sandbox where unprivileged user namespaces are restricted.\n\
         abi <abi/4.0>,\n\
         include <tunables/global>\n\
         \n\
         profile agentci {} flags=(unconfined) {{\n  \
         userns,\n\
         \n  \
         # Site-specific additions and overrides.\n  \
         include if exists <local/agentci>\n\
         }}\n",
        binary.display()
    )
}

#[test]
fn on_a_restricted_runner_an_apparmor_profile_lets_the_installed_binary_make_namespaces() {
    let runner = Runner::new(Some("1"));
    let binary = runner.sb.path().join("temp/agentci/bin/agentci");
    let out = runner.set_up(&binary);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(runner.profile(), Some(expected_profile(&binary)));
    assert_eq!(
        runner.calls(),
        [
            "sudo -n true",
            "sudo -n tee <dir>/apparmor.d/agentci",
            "sudo -n apparmor_parser -r <dir>/apparmor.d/agentci",
            // The stand-in itself, run by `sudo`.
            "apparmor_parser -r <dir>/apparmor.d/agentci",
        ]
    );
    assert_eq!(
        runner.setting(),
        "1",
        "the machine-wide setting was changed"
    );
    let log = stdout(&out);
    assert!(
        log.contains(&format!(
            "agentci: sandbox set-up: wrote and loaded the AppArmor profile {}/apparmor.d/agentci, \
             which lets {} (and nothing else) make user namespaces",
            runner.sb.path().display(),
            binary.display()
        )),
        "{log}"
    );

    // Another install path (a new cache folder, another version): the
    // profile follows it, naming the exact path agentci now runs from.
    let moved = runner.install("other/bin/agentci");
    let out = runner.set_up(&moved);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(runner.profile(), Some(expected_profile(&moved)));
    assert!(!runner.calls().iter().any(|c| c.contains("sysctl")));
}

#[test]
fn where_no_profile_helps_the_restriction_is_lifted_with_the_sysctl() {
    // The parser refuses the profile (an AppArmor older than 4.0).
    let runner = Runner::new(Some("1"));
    runner.sb.write("parser-fails", "");
    let binary = runner.sb.path().join("temp/agentci/bin/agentci");
    let out = runner.set_up(&binary);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let calls = runner.calls();
    assert_eq!(
        calls[calls.len() - 2..],
        [
            format!("sudo -n sysctl -w {SYSCTL}=0"),
            format!("sysctl -w {SYSCTL}=0")
        ],
        "{calls:?}"
    );
    assert_eq!(runner.setting(), "0");
    let log = stdout(&out);
    assert!(
        log.contains("apparmor_parser could not load")
            && log.contains(&format!("set {SYSCTL}=0 instead")),
        "{log}"
    );

    // A path AppArmor would read as a pattern is never put in a profile.
    let runner = Runner::new(Some("1"));
    let odd = runner.install("odd dir/agentci");
    let out = runner.set_up(&odd);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(runner.profile(), None);
    assert_eq!(
        runner.calls(),
        [
            "sudo -n true".to_string(),
            format!("sudo -n sysctl -w {SYSCTL}=0"),
            format!("sysctl -w {SYSCTL}=0")
        ]
    );
}

#[test]
fn an_unrestricted_runner_is_left_as_it_is_and_no_sudo_is_a_warning() {
    for setting in [Some("0"), None] {
        let runner = Runner::new(setting);
        let binary = runner.sb.path().join("temp/agentci/bin/agentci");
        let out = runner.set_up(&binary);
        assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
        assert!(runner.calls().is_empty(), "{:?}", runner.calls());
        assert!(
            stdout(&out).contains("are not restricted"),
            "{}",
            stdout(&out)
        );
    }

    // Restricted, and no passwordless sudo: nothing changes, and the log
    // says that agentci will refuse a job that requires its sandbox.
    let runner = Runner::new(Some("1"));
    runner.sb.write("no-sudo", "");
    let binary = runner.sb.path().join("temp/agentci/bin/agentci");
    let out = runner.set_up(&binary);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(runner.calls(), ["sudo -n true"]);
    assert_eq!(runner.profile(), None);
    let log = stdout(&out);
    assert!(
        log.starts_with("::warning title=agentci: sandbox set-up::")
            && log.contains("no passwordless sudo")
            && log.contains("agentci refuses to start a job that requires its sandbox"),
        "{log}"
    );
}

/// The real thing, where this machine restricts unprivileged user
/// namespaces and the test's user has a passwordless `sudo` (a GitHub
/// hosted Ubuntu 24.04 runner): after the set-up the real binary, copied
/// to a path of its own, makes its namespaces; the profile and the
/// setting are put back at once.
#[test]
fn on_a_restricted_machine_the_set_up_gives_agentci_its_namespaces() {
    let setting = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";
    let restricted = std::fs::read_to_string(setting).is_ok_and(|v| v.trim() == "1");
    let sudo = !is_root()
        && Command::new("sudo")
            .args(["-n", "true"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !restricted || !sudo {
        prerequisites::skipped(format!(
            "the AppArmor set-up's real effect: needs {setting} = 1 and a passwordless sudo \
             for a user who is not root (a GitHub-hosted Ubuntu 24.04 runner)"
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("agentci");
    std::fs::copy(env!("CARGO_BIN_EXE_agentci"), &binary).unwrap();
    let doctor = |binary: &Path| -> Value {
        let out = Command::new(binary)
            .args(["doctor", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let before = doctor(&binary)["support"]["user_namespaces"].clone();
    let out = Command::new("bash")
        .arg(SCRIPT)
        .arg(&binary)
        .output()
        .unwrap();
    let after = doctor(&binary)["support"].clone();
    // Put the machine back before judging.
    let lifted = std::fs::read_to_string(setting).is_ok_and(|v| v.trim() == "0");
    let _ = Command::new("sudo")
        .args(["-n", "apparmor_parser", "-R", "/etc/apparmor.d/agentci"])
        .output();
    let _ = Command::new("sudo")
        .args(["-n", "rm", "-f", "/etc/apparmor.d/agentci"])
        .output();
    if lifted {
        let _ = Command::new("sudo")
            .args(["-n", "sysctl", "-w", &format!("{SYSCTL}=1")])
            .output();
    }
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(before, false, "namespaces worked before the set-up");
    assert_eq!(after["user_namespaces"], true, "{}", stdout(&out));
    assert_eq!(after["pid_namespace"], true, "{}", stdout(&out));
    eprintln!(
        "the set-up gave agentci its namespaces: {}",
        stdout(&out).trim()
    );
}
