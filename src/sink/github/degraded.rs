//! The annotation for a degraded sandbox under GitHub Actions: what is not
//! enforced, what commands can still reach, and how to get the full
//! sandbox in a workflow, where the fix is a step or a container option
//! rather than a machine setting.
//!
//! Built from the `sandbox.degraded` event's report, which agentci itself
//! makes (no model text); [`super::annotation`] escapes it all the same.

use crate::event::SandboxReport;
use crate::sandbox::{children_reach_agentci, degraded_message};

/// The title of the annotation.
pub(super) const TITLE: &str = "agentci: sandbox degraded";

/// How to get the namespaces a workflow's machine refused.
const FULL_SANDBOX_IN_A_WORKFLOW: &str = "For the full sandbox: on a GitHub-hosted Ubuntu runner \
     (24.04 restricts unprivileged user namespaces), the agentci action sets it up itself \
     (`sandbox-setup: true`, its default); without the action, run \
     `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` in a step before agentci; \
     on a self-hosted runner, allow unprivileged user namespaces; in a container job, give the \
     container `options: --privileged` (or `--security-opt seccomp=unconfined --security-opt \
     apparmor=unconfined --cap-add SYS_ADMIN`): Docker's default seccomp profile refuses `unshare`.";

/// The annotation's message for `report`; `None` when nothing is missing.
pub(super) fn degraded_annotation(report: &SandboxReport) -> Option<String> {
    let mut message = degraded_message(report)?;
    if children_reach_agentci(report) {
        message.push('\n');
        message.push_str(FULL_SANDBOX_IN_A_WORKFLOW);
    }
    Some(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_namespaces_the_annotation_says_how_to_get_them_in_a_workflow() {
        let report = |missing: &[&str]| SandboxReport {
            profile: "workspace-write".into(),
            missing: missing.iter().map(|m| m.to_string()).collect(),
            ..SandboxReport::default()
        };
        let message = degraded_annotation(&report(&["processes", "network"])).unwrap();
        assert!(message.contains("kernel.apparmor_restrict_unprivileged_userns=0"));
        assert!(message.contains("--security-opt seccomp=unconfined"));
        assert!(message.contains("UDP"), "{message}");
        // An old kernel without Landlock is not fixed by a container option.
        let message = degraded_annotation(&report(&["filesystem"])).unwrap();
        assert!(!message.contains("--privileged"), "{message}");
        assert!(degraded_annotation(&report(&[])).is_none());
    }
}
