//! Whether a run may start with the sandbox this machine can give it:
//! with `sandbox.require` (the default) a profile the kernel cannot fully
//! enforce refuses the run before any child starts, naming what is missing
//! and the choices; with `require: false` the run goes on degraded, with
//! the warning of [`super::degraded_message`].
//!
//! This module judges and words the refusal only; what is missing comes
//! from the run's [`SandboxReport`] (or, for `agentci doctor`, from
//! [`super::expected_report`]).

use crate::event::SandboxReport;

/// Whether a run with `report` must not start: the job requires its
/// sandbox and part of its isolation cannot be enforced here. A missing
/// process limit alone (root without a control group) does not refuse: it
/// bounds how much a command may start, not what it may reach, and the
/// call's timeout still ends a fork bomb; it stays a warning.
pub fn refuses(report: &SandboxReport) -> bool {
    report.require && report.missing.iter().any(|m| m != "process_limit")
}

/// Why a run with `report` does not start, with what is missing and the
/// choices; `None` when it may start.
pub fn refusal(report: &SandboxReport) -> Option<String> {
    if !refuses(report) {
        return None;
    }
    let degraded = super::degraded_message(report)?;
    Some(format!(
        "the run refuses to start: {degraded}. Choices: {}; `sandbox: off` for a workspace \
         you trust (commands then run unconfined); or `sandbox: {{profile: {}, require: false}}` \
         to accept the degraded sandbox knowingly",
        how_to_enforce(&report.missing),
        report.profile
    ))
}

/// The protections that need namespaces, which the same machine setting
/// (unprivileged user namespaces, a container's seccomp profile) gives.
const NEED_NAMESPACES: &[&str] = &[
    "user_namespace",
    "processes",
    "run_folder",
    "checkpoint_key",
    "read_denied",
    "outside_read_only",
    "hostname_ipc",
    "network",
];

/// How to get what `missing` names on this machine, as one clause.
pub fn how_to_enforce(missing: &[String]) -> String {
    let lacks = |names: &[&str]| missing.iter().any(|m| names.contains(&m.as_str()));
    let mut ways: Vec<&str> = Vec::new();
    if lacks(NEED_NAMESPACES) {
        ways.push(super::FULL_SANDBOX);
    }
    if lacks(&["filesystem"]) {
        ways.push("a kernel with Landlock (Linux 5.13 or later, `landlock` in its `lsm=` list)");
    }
    if lacks(&["seccomp", "capabilities"]) {
        ways.push(
            "a kernel and container that let agentci install seccomp filters and drop \
             capabilities (a container started with `--security-opt seccomp=unconfined`)",
        );
    }
    if lacks(&["process_limit"]) {
        ways.push(
            "a control group agentci can make (cgroup v2 with the pids controller delegated), \
             or agentci run as a user who is not root",
        );
    }
    match ways.is_empty() {
        true => "get the full sandbox (see `agentci doctor`)".to_string(),
        false => format!("get the full sandbox: {}", ways.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(require: bool, missing: &[&str]) -> SandboxReport {
        SandboxReport {
            profile: "workspace-write".into(),
            require,
            missing: missing.iter().map(|m| m.to_string()).collect(),
            ..SandboxReport::default()
        }
    }

    #[test]
    fn a_required_sandbox_with_anything_missing_refuses_and_names_the_choices() {
        let refused = refusal(&report(true, &["filesystem", "processes"])).unwrap();
        for expected in [
            "the run refuses to start",
            "filesystem: writes outside the workspace are not blocked",
            "processes:",
            "kernel.apparmor_restrict_unprivileged_userns=0",
            "Landlock (Linux 5.13",
            "`sandbox: off`",
            "`sandbox: {profile: workspace-write, require: false}`",
        ] {
            assert!(refused.contains(expected), "{expected}: {refused}");
        }
        // What is not missing is not offered as a fix.
        assert!(!refused.contains("pids controller"), "{refused}");
        assert!(refusal(&report(true, &[])).is_none());
        assert!(!refuses(&report(false, &["filesystem"])));
        assert!(refusal(&report(false, &["filesystem"])).is_none());
    }

    // A root CI container without a control group refused every run, though
    // only the process limit was missing: that one stays a warning.
    #[test]
    fn a_missing_process_limit_alone_does_not_refuse() {
        assert!(!refuses(&report(true, &["process_limit"])));
        assert!(refusal(&report(true, &["process_limit"])).is_none());
        assert!(refuses(&report(true, &["process_limit", "seccomp"])));
    }
}
