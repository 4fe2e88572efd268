//! Which values of a run are secrets: the job's API key, its `secrets:`, the
//! push token and well-known token variables, looked up in the environment.
//! The runner builds the run's [`Redactor`] from
//! them; masking itself is [`crate::redact`]'s job.

use crate::job::JobSpec;
use crate::redact::{Redactor, WELL_KNOWN_SECRETS};

/// The redactor of a run of `job`: [`secret_values`] and the values its MCP
/// servers' environments take from secrets. The event bus masks every event
/// with it; eval masks the attempt's patch with the same one.
pub fn run_redactor(job: &JobSpec, env: impl Fn(&str) -> Option<String>) -> Redactor {
    Redactor::new(
        secret_values(job, &env)
            .into_iter()
            .chain(super::mcp::secret_values(job, &env)),
    )
}

/// The secret values of a run of `job`, looked up with `env` (the process
/// environment in the CLI): the value of the model's `api_key_env`, of every
/// variable in the job's `secrets:`, of the push token's `token_env`, and
/// of [`WELL_KNOWN_SECRETS`].
pub fn secret_values(job: &JobSpec, env: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let names = job
        .model
        .api_key_env
        .iter()
        .map(String::as_str)
        .chain(job.secrets.iter().map(String::as_str))
        .chain(job.outputs.push.iter().map(|push| push.token_env.as_str()))
        .chain(WELL_KNOWN_SECRETS.iter().copied());
    names.filter_map(env).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Regression: a push token in a variable other than GITHUB_TOKEN
    // (`outputs.push.token_env`) was not masked.
    #[test]
    fn the_api_key_secrets_and_the_push_token_are_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.yaml");
        let yaml = "name: j\nskill: s\ngoal: g\nmodel: {provider: openai, name: m, api_key_env: LLM_KEY}\n\
                    secrets: [REG_TOKEN]\noutputs:\n  commit: {branch: b}\n  push: {remote: origin, token_env: PUSH_TOKEN}\n";
        std::fs::write(&path, yaml).unwrap();
        let options = crate::job::LoadOptions {
            cwd: dir.path().to_path_buf(),
            ..Default::default()
        };
        let (job, _) = crate::job::load_job(&path, &options).unwrap();
        let env = |name: &str| Some(format!("value-of-{name}"));
        let values = secret_values(&job, env);
        for name in ["LLM_KEY", "REG_TOKEN", "PUSH_TOKEN", "GITHUB_TOKEN"] {
            assert!(
                values.contains(&format!("value-of-{name}")),
                "{name}: {values:?}"
            );
        }
    }
}
