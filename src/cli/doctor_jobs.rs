//! `agentci doctor`'s answer to "would my job start here?": a run whose
//! sandbox profile the kernel cannot fully enforce refuses to start unless
//! the job sets `sandbox.require: false` ([`crate::sandbox::refusal`]).
//! For each profile in the kernel report, and for the job `doctor JOB`
//! names. It judges from the machine's probed support; it starts nothing.

use std::fmt::Write as _;

use serde::Serialize;

use crate::sandbox::{SandboxProfile, SandboxSpec, Support, expected_report, refusal};

/// Whether a job with one sandbox would start here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobStart {
    pub profile: &'static str,
    /// `sandbox.require`.
    pub require: bool,
    /// The run would start (possibly degraded, when `require` is false).
    pub starts: bool,
    /// The protections of the profile not enforced here.
    pub missing: Vec<String>,
    /// What a person reads: why it refuses and the choices, or how it runs.
    pub detail: String,
}

/// Whether a job with `spec` starts on a machine with `support`.
pub fn job_start(spec: &SandboxSpec, support: &Support) -> JobStart {
    let report = expected_report(spec, support);
    let refused = refusal(&report);
    let detail = match (&refused, spec.profile, report.missing.is_empty()) {
        (Some(why), ..) => why.clone(),
        (None, SandboxProfile::Off, _) => "starts with no sandbox (`sandbox: off`)".to_string(),
        (None, _, true) => "starts: every protection of the profile is enforced here".to_string(),
        (None, _, false) => format!(
            "starts degraded, as the job accepts with `sandbox.require: false`; not enforced: {}",
            report.missing.join(", ")
        ),
    };
    JobStart {
        profile: spec.profile.as_str(),
        require: spec.require,
        starts: refused.is_none(),
        missing: report.missing,
        detail,
    }
}

/// Each confining profile with the defaults (`require: true`, no network).
pub fn profiles(support: &Support) -> Vec<JobStart> {
    [SandboxProfile::WorkspaceWrite, SandboxProfile::ReadOnly]
        .into_iter()
        .map(|profile| {
            let spec = SandboxSpec {
                profile,
                ..SandboxSpec::default()
            };
            job_start(&spec, support)
        })
        .collect()
}

/// The kernel report's part: which jobs start here.
pub fn profiles_text(support: &Support) -> String {
    let mut out = String::from("which jobs start here (sandbox.require defaults to true):\n");
    for start in profiles(support) {
        let what = match start.starts {
            true => "start".to_string(),
            false => format!(
                "REFUSE to start (not enforced: {}) unless the job sets `sandbox.require: false`",
                start.missing.join(", ")
            ),
        };
        let _ = writeln!(out, "  {:<17} jobs {what}", start.profile);
    }
    let _ = writeln!(out, "  {:<17} jobs start (no sandbox)", "off");
    out
}

/// The `doctor JOB` part: whether that job starts here.
pub fn job_text(start: &JobStart) -> String {
    format!(
        "the job's sandbox (`{}`, sandbox.require: {}):\n  {:<17} {:<7}  {}\n",
        start.profile,
        start.require,
        "sandbox",
        if start.starts { "ok" } else { "FAILED" },
        start.detail
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Support {
        Support {
            landlock_abi: 7,
            root: true,
            user_namespaces: true,
            pid_namespace: true,
            mount_namespace: true,
            network_namespace: true,
            uts_ipc_namespaces: true,
            read_only_view: true,
            capabilities: true,
            seccomp: true,
            control_groups: true,
        }
    }

    #[test]
    fn a_job_starts_where_its_profile_is_enforced_and_refuses_where_not() {
        let spec = SandboxSpec::default();
        let start = job_start(&spec, &full());
        assert!(start.starts && start.missing.is_empty(), "{start:?}");

        let no_landlock = Support {
            landlock_abi: 0,
            ..full()
        };
        let start = job_start(&spec, &no_landlock);
        assert!(!start.starts);
        assert_eq!(start.missing, ["filesystem"]);
        assert!(start.detail.contains("require: false"), "{}", start.detail);

        let accepted = SandboxSpec {
            require: false,
            ..SandboxSpec::default()
        };
        let start = job_start(&accepted, &no_landlock);
        assert!(start.starts, "{start:?}");
        assert!(
            start.detail.starts_with("starts degraded"),
            "{}",
            start.detail
        );

        let off = SandboxSpec {
            profile: SandboxProfile::Off,
            ..SandboxSpec::default()
        };
        assert!(job_start(&off, &Support::default()).starts);

        let text = profiles_text(&no_landlock);
        assert!(
            text.contains("workspace-write   jobs REFUSE to start (not enforced: filesystem)"),
            "{text}"
        );
        assert!(profiles_text(&full()).contains("read-only         jobs start\n"));
    }
}
