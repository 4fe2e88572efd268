//! [`ProcessRunner::for_job`], the one way a job's process runner is made:
//! for a run, for `agentci mcp` trying a job's servers, and for an eval
//! case's `run:` assertions. Each used to build its own, and their secret
//! sets had drifted apart (`agentci mcp` masked nothing, the assertions
//! missed the MCP servers' secrets): here the job's sandbox, its `env:`
//! and the secrets to mask and withhold all come from the job and the
//! run's [`RunEnv`], the same way for every caller.

use crate::job::JobSpec;
pub use crate::process::RunnerExtra;
use crate::process::{ProcessRunner, RunnerConfig, RunnerError};
use crate::run_env::RunEnv;

impl ProcessRunner {
    /// The runner children of a run of `job` get: its sandbox, its `env:`
    /// resolved in `env`, then `extra`'s variables, and the run's whole
    /// secret set ([`super::secrets::run_redactor`]: the job's secrets and
    /// its MCP servers') masked in what they print and withheld where the
    /// sandbox cannot hide agentci.
    pub fn for_job(
        job: &JobSpec,
        env: &RunEnv,
        extra: RunnerExtra,
    ) -> Result<ProcessRunner, RunnerError> {
        let lookup = |name: &str| env.var(name);
        let secrets = super::secrets::run_redactor(job, lookup);
        let (mut children_env, _missing) = job.resolve_env(lookup);
        let mut children = extra;
        // Later entries win when the command is spawned.
        children_env.append(&mut children.extra_env);
        children.extra_env = children_env;
        ProcessRunner::new(
            RunnerConfig {
                sandbox: job.sandbox.clone(),
                children,
                secrets,
            },
            env,
        )
    }
}

/// A warning for each secret the job passes through `env:` that `env`
/// does not set.
pub fn unset_secrets(job: &JobSpec, env: &RunEnv) -> Vec<String> {
    let (_, missing) = job.resolve_env(|name| env.var(name));
    missing
        .iter()
        .map(|name| {
            format!("secret `{name}` is not set in the environment; `env` passes nothing for it")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job with an MCP server whose token comes from `MCP_TOKEN`, a
    /// secret `REG_TOKEN` passed to children through `env:`, no sandbox.
    fn job(dir: &std::path::Path) -> JobSpec {
        let path = dir.join("job.yaml");
        let yaml = "name: j\nskill: s\ngoal: g\nmodel: {provider: openai, name: m}\n\
                    sandbox: off\nsecrets: [REG_TOKEN]\nenv: {REGISTRY: \"${{ secrets.REG_TOKEN }}\"}\n\
                    mcp:\n  servers:\n    srv:\n      command: srv\n      \
                    env: {TOKEN: \"${{ env.MCP_TOKEN }}\"}\n";
        std::fs::write(&path, yaml).unwrap();
        let options = crate::job::LoadOptions {
            cwd: dir.to_path_buf(),
            ..Default::default()
        };
        crate::job::load_job(&path, &options).unwrap().0
    }

    fn env(pairs: &[(&str, &str)]) -> RunEnv {
        RunEnv::new(pairs.iter().map(|(k, v)| (k.into(), v.into())))
    }

    #[test]
    fn a_jobs_runner_masks_its_mcp_servers_secrets_too() {
        let dir = tempfile::tempdir().unwrap();
        let job = job(dir.path());
        let env = env(&[
            ("MCP_TOKEN", "tok-mcp-0123456789"),
            ("REG_TOKEN", "tok-reg-0123456789"),
        ]);
        let extra = RunnerExtra {
            workspace: dir.path().to_path_buf(),
            run_id: format!("processes-test-{}", std::process::id()),
            ..RunnerExtra::default()
        };
        let runner = ProcessRunner::for_job(&job, &env, extra).unwrap();
        assert_eq!(
            runner
                .secrets()
                .redact("mcp tok-mcp-0123456789 reg tok-reg-0123456789"),
            "mcp *** reg ***"
        );
        assert!(unset_secrets(&job, &env).is_empty());
    }

    #[test]
    fn a_secret_the_environment_lacks_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let warnings = unset_secrets(&job(dir.path()), &env(&[]));
        assert_eq!(
            warnings,
            ["secret `REG_TOKEN` is not set in the environment; `env` passes nothing for it"]
        );
    }
}
