//! `agentci doctor`: what this machine's kernel can enforce of the sandbox
//! (Landlock, namespaces, capabilities, seccomp), and so which protections a job's
//! `sandbox:` gets here, what commands can still reach without the missing
//! ones, how to get the full sandbox, and which jobs would refuse to start
//! here (`super::doctor_jobs`). Given a job file it also says whether that
//! job starts and checks this machine's set-up for it
//! (`super::doctor_setup`). The machine's part only informs (exit 0); a job
//! that would refuse to start or a set-up check that fails is exit 1, a job
//! file that does not load exit 2.

use std::fmt::Write as _;
use std::io::Write as _;

use serde_json::json;

use super::args::DoctorArgs;
use super::doctor_jobs::{JobStart, job_start, job_text, profiles, profiles_text};
use super::doctor_setup::{Outcome, SetupCheck, setup_checks};
use super::{CliError, Exit};
use crate::job::LoadOptions;
use crate::sandbox::{Exposure, FULL_SANDBOX, Support, still_exposed, support};

pub fn doctor(args: &DoctorArgs, run_env: &crate::run_env::RunEnv) -> Result<Exit, CliError> {
    let job = match &args.job {
        Some(job_file) => {
            let cwd = std::env::current_dir().map_err(CliError::CurrentDir)?;
            let options = LoadOptions {
                cwd,
                ..LoadOptions::default()
            };
            match crate::job::load_job(job_file, &options) {
                Ok((job, _)) => Some(job),
                Err(problems) => {
                    let mut stderr = std::io::stderr();
                    for problem in problems {
                        let _ = writeln!(stderr, "{}", problem.with_severity());
                    }
                    return Err(CliError::Reported);
                }
            }
        }
        None => None,
    };
    let env = |name: &str| run_env.var(name);
    let setup = job
        .as_ref()
        .map(|job| setup_checks(job, args.offline, &env));
    let support = support();
    let job_sandbox: Option<JobStart> = job.as_ref().map(|job| job_start(&job.sandbox, &support));
    let text = if args.json {
        let exposed: Vec<_> = exposed(&support)
            .iter()
            .map(|e| json!({"name": e.name, "what": e.what}))
            .collect();
        let enforced: Vec<_> = enforced(&support)
            .into_iter()
            .map(|(name, on, what)| json!({"name": name, "enforced": on, "what": what}))
            .collect();
        let value = json!({
            "support": support,
            "enforced": enforced,
            "exposed": exposed,
            "full_sandbox": (!support.pid_namespace).then_some(FULL_SANDBOX),
            "jobs": profiles(&support),
            "job_sandbox": job_sandbox,
            "setup": setup,
        });
        format!("{value}\n")
    } else {
        // The job's checks first: they are what the user asked about and
        // what decides the exit code; the kernel report follows.
        let mut text = String::new();
        if let Some(setup) = &setup {
            text.push_str(&setup_report(setup));
        }
        if let Some(start) = &job_sandbox {
            text.push_str(&job_text(start));
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&report(&support));
        text.push_str(&profiles_text(&support));
        text
    };
    // Nothing to do if stdout is closed.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    let refuses = job_sandbox.as_ref().is_some_and(|start| !start.starts);
    let failed = refuses || setup.iter().flatten().any(|c| c.outcome == Outcome::Failed);
    Ok(if failed { Exit::Failed } else { Exit::Success })
}

/// The job's set-up checks, one a line.
fn setup_report(checks: &[SetupCheck]) -> String {
    let mut out = String::from("set-up for the job:\n");
    for c in checks {
        let _ = writeln!(
            out,
            "  {:<17} {:<7}  {}",
            c.name,
            c.outcome.as_str(),
            c.detail
        );
    }
    out
}

/// The text report.
fn report(support: &Support) -> String {
    let mut out = String::new();
    let yes = |b: bool| if b { "yes" } else { "no" };
    let landlock = match support.landlock_abi {
        0 => "not available".to_string(),
        abi => format!("ABI {abi}"),
    };
    let _ = writeln!(out, "agentci doctor: what this machine can enforce");
    let _ = writeln!(out, "  landlock:           {landlock}");
    let _ = writeln!(out, "  running as root:    {}", yes(support.root));
    let _ = writeln!(
        out,
        "  user namespace:     {}{}",
        yes(support.user_namespaces),
        match (support.user_namespaces, support.root) {
            (true, true) =>
                " (children are root only inside it: root and the workspace's owner mapped)",
            (true, false) => " (children keep your uid)",
            (false, _) => "",
        }
    );
    let _ = writeln!(out, "  pid namespace:      {}", yes(support.pid_namespace));
    let _ = writeln!(
        out,
        "  mount namespace:    {}",
        yes(support.mount_namespace)
    );
    let _ = writeln!(
        out,
        "  network namespace:  {}",
        yes(support.network_namespace)
    );
    let _ = writeln!(
        out,
        "  network proxy:      {}{}",
        yes(support.network_namespace),
        match support.network_namespace {
            true => " (sandbox.network: [hosts] is served inside the run's network namespace)",
            false => " (sandbox.network: [hosts] cannot be enforced here)",
        }
    );
    let _ = writeln!(
        out,
        "  uts/ipc namespaces: {}",
        yes(support.uts_ipc_namespaces)
    );
    let _ = writeln!(out, "  read-only view:     {}", yes(support.read_only_view));
    let _ = writeln!(out, "  capabilities:       {}", yes(support.capabilities));
    let _ = writeln!(out, "  seccomp:            {}", yes(support.seccomp));
    let _ = writeln!(
        out,
        "  control groups:     {}{}",
        yes(support.control_groups),
        match support.control_groups {
            true => " (a group per call: processes and memory counted and limited)",
            false => " (limits by setrlimit only)",
        }
    );
    let _ = writeln!(out, "protections of `workspace-write`:");
    for (name, on, what) in enforced(support) {
        let _ = writeln!(
            out,
            "  {:<17} {}  {what}",
            name,
            if on { "enforced" } else { "MISSING " }
        );
    }
    let exposed = exposed(support);
    if !exposed.is_empty() {
        let _ = writeln!(out, "still exposed to commands here:");
        for Exposure { name, what } in exposed {
            let _ = writeln!(out, "  {name:<20}{what}");
        }
    }
    if !support.pid_namespace {
        let _ = writeln!(out, "{FULL_SANDBOX}");
    }
    out
}

/// What commands can still reach here under `workspace-write`.
fn exposed(support: &Support) -> Vec<Exposure> {
    let missing: Vec<String> = enforced(support)
        .into_iter()
        .filter(|(_, on, _)| !on)
        .map(|(name, ..)| name.to_string())
        .collect();
    still_exposed(&missing)
}

/// Each protection, whether it holds here, and what it means.
fn enforced(s: &Support) -> Vec<(&'static str, bool, &'static str)> {
    vec![
        (
            "filesystem",
            s.landlock_abi > 0,
            "writes only in the workspace and a private temporary folder (Landlock)",
        ),
        (
            "user_namespace",
            s.user_namespaces,
            "children's capabilities reach only their own namespaces; files go only to mapped users (user namespace)",
        ),
        (
            "processes",
            s.pid_namespace,
            "own PID namespace and /proc: agentci's environment is unreadable, nothing outlives a call",
        ),
        (
            "run_folder",
            s.mount_namespace,
            "the run folder, trace, `.git` and skill folders are read-only for children (mount namespace)",
        ),
        (
            "checkpoint_key",
            s.mount_namespace,
            "the checkpoint key reads empty for children (mount namespace)",
        ),
        (
            "read_denied",
            s.mount_namespace,
            "files `read(...)` deny rules cover read empty for children (mount namespace)",
        ),
        (
            "outside_read_only",
            s.mount_namespace && s.read_only_view,
            "mode, owner, extended attributes and times outside the writable folders cannot change (read-only mounts)",
        ),
        (
            "process_limit",
            s.control_groups || !s.root,
            "sandbox.limits.processes binds: a control group per call, or RLIMIT_NPROC for a user who is not root",
        ),
        (
            "capabilities",
            s.capabilities,
            "as root, children keep only the capabilities that write a workspace another user owns",
        ),
        (
            "seccomp",
            s.seccomp,
            "no device nodes, set-ID files, mounts, ptrace, kernel modules, keyrings, hostname changes or new user namespaces",
        ),
        (
            "hostname_ipc",
            s.uts_ipc_namespaces,
            "own hostname and System V IPC: changes stay inside (UTS and IPC namespaces)",
        ),
        (
            "network",
            s.network_namespace,
            "no outgoing network unless sandbox.network: true, or only the listed hosts through agentci's proxy (network namespace with its own loopback)",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_each_protection() {
        let full = Support {
            landlock_abi: 7,
            root: false,
            user_namespaces: true,
            pid_namespace: true,
            mount_namespace: true,
            network_namespace: true,
            uts_ipc_namespaces: true,
            read_only_view: true,
            capabilities: true,
            seccomp: true,
            control_groups: true,
        };
        insta::assert_snapshot!("doctor_full", report(&full));
        let bare = Support {
            root: true,
            ..Support::default()
        };
        insta::assert_snapshot!("doctor_bare", report(&bare));
    }
}
