//! `agentci doctor JOB.yaml`: whether this machine is set up for the job,
//! before a run finds out the hard way: the model's key variable is set
//! (never shown), the model's server answers and takes the key, the
//! programs the job's MCP servers start are installed, and who commits.
//!
//! The CLI may read the environment and reach the network; this module is
//! where `doctor` does. It judges only what a run would need; the sandbox
//! half of `doctor` is [`super::doctor`]'s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::job::{JobSpec, McpTransport, ProviderKind};

/// How long the model's server may take to answer the models list.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// One check of the job's set-up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetupCheck {
    /// `api_key`, `model_server`, `credentials` (Bedrock, Vertex AI), `mcp:NAME`,
    /// `commit_identity`, `cassette`.
    pub name: String,
    pub outcome: Outcome,
    /// What was found, and for a failure how to fix it.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    #[strum(serialize = "FAILED")]
    Failed,
    Skipped,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

fn check(name: impl Into<String>, outcome: Outcome, detail: impl Into<String>) -> SetupCheck {
    SetupCheck {
        name: name.into(),
        outcome,
        detail: detail.into(),
    }
}

/// Every set-up check of `job`; `offline` skips the ones that reach the network.
pub fn setup_checks(
    job: &JobSpec,
    offline: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<SetupCheck> {
    let mut checks = model_checks(job, offline, env);
    checks.extend(mcp_checks(job, env));
    if let Some(commit) = &job.outputs.commit {
        checks.push(check(
            "commit_identity",
            Outcome::Ok,
            format!(
                "commits as {} <{}> (outputs.commit), whatever git's own user.name is",
                commit.author_name, commit.author_email
            ),
        ));
    }
    checks
}

/// The key, and whether the server answers and takes it; a replayed
/// job's cassette instead.
fn model_checks(
    job: &JobSpec,
    offline: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<SetupCheck> {
    let model = &job.model;
    if model.provider == ProviderKind::Replay {
        let cassette = model.cassette.as_deref().map(Path::display);
        let detail = match cassette {
            Some(path) => format!("replays {path}: no key or server needed"),
            None => "replay without a cassette".to_string(),
        };
        return vec![check("cassette", Outcome::Ok, detail)];
    }
    if matches!(
        model.provider,
        ProviderKind::Bedrock | ProviderKind::Vertex | ProviderKind::AzureOpenAi
    ) {
        return vec![cloud_check(model, env)];
    }
    let base_url = match model.provider {
        ProviderKind::Anthropic => crate::provider::anthropic::base_url(model.base_url.as_deref()),
        _ => model
            .base_url
            .clone()
            .unwrap_or_else(|| crate::provider::openai::DEFAULT_BASE_URL.to_string()),
    };
    let key_env = model.api_key_env.clone().unwrap_or_default();
    let key = env(&key_env).filter(|k| !k.is_empty());
    let loopback = reqwest::Url::parse(&base_url).is_ok_and(|u| crate::provider::is_loopback(&u));
    let key_check = match (&key, loopback) {
        (Some(_), _) => check("api_key", Outcome::Ok, format!("{key_env} is set")),
        (None, true) => check(
            "api_key",
            Outcome::Ok,
            format!("{key_env} is not set; a server on loopback may run without one"),
        ),
        (None, false) => check(
            "api_key",
            Outcome::Failed,
            format!(
                "{key_env} is not set; set it to your API key (in GitHub Actions, from a \
                 secret: `env: {key_env}: ${{{{ secrets.{key_env} }}}}`), or point \
                 model.api_key_env at the variable that holds it"
            ),
        ),
    };
    let server = if offline {
        check(
            "model_server",
            Outcome::Skipped,
            format!("{base_url} not asked (--offline)"),
        )
    } else {
        ask_models(
            model.provider,
            &base_url,
            key.as_deref(),
            &key_env,
            &model.name,
        )
    };
    vec![key_check, server]
}

/// GET `BASE/models`, the cheapest request both APIs answer (it costs no
/// tokens): any answer shows the server is there; 401 or 403 that it
/// refuses the key; a list without the job's model, a likely typo.
fn ask_models(
    kind: ProviderKind,
    base_url: &str,
    key: Option<&str>,
    key_env: &str,
    model: &str,
) -> SetupCheck {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let answer = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|runtime| runtime.block_on(get_models(kind, &url, key)));
    let (status, body) = match answer {
        Ok(answer) => answer,
        Err(problem) => {
            return check(
                "model_server",
                Outcome::Failed,
                format!(
                    "{base_url} does not answer ({problem}); check model.base_url and that \
                     the server runs"
                ),
            );
        }
    };
    match status {
        200..=299 => {
            let ids = model_ids(&body);
            // A server that lists models but not this one would answer the
            // run's first request with "model not found": a typo in
            // model.name fails here, as the README promises. An empty list
            // says nothing either way.
            if ids.is_empty() || ids.iter().any(|id| id == model) {
                check(
                    "model_server",
                    Outcome::Ok,
                    format!("{base_url} answers (GET /models: HTTP {status})"),
                )
            } else {
                check(
                    "model_server",
                    Outcome::Failed,
                    format!(
                        "{base_url} answers (GET /models: HTTP {status}) but does not list model \
                         `{model}` (it lists {}); check model.name",
                        shown_ids(&ids)
                    ),
                )
            }
        }
        401 | 403 => check(
            "model_server",
            Outcome::Failed,
            match key {
                Some(_) => format!(
                    "{base_url} refuses the key in {key_env} (HTTP {status}); check the key \
                     and that it belongs to this server"
                ),
                None => format!(
                    "{base_url} asks for a key (HTTP {status}); set {key_env} to your API key"
                ),
            },
        ),
        _ => check(
            "model_server",
            Outcome::Ok,
            format!("{base_url} answers (GET /models: HTTP {status}; it may not list models)"),
        ),
    }
}

/// Bedrock, Vertex AI and Azure OpenAI: whether the region, project,
/// resource and credentials a run would use are there, read as the run
/// reads them (nothing is fetched or signed; the cloud is not asked: its
/// model lists do not say whether a deployment or model is enabled).
fn cloud_check(model: &crate::job::ModelSpec, env: &dyn Fn(&str) -> Option<String>) -> SetupCheck {
    use crate::provider::bedrock::{BedrockConfig, BedrockProvider};
    use crate::provider::vertex::{VertexConfig, VertexProvider};
    let endpoint = match model.provider {
        ProviderKind::Bedrock => BedrockProvider::with_env(
            BedrockConfig {
                name: model.name.clone(),
                region: model.region.clone(),
                base_url: model.base_url.clone(),
                request_timeout: model.request_timeout,
                stream: model.stream,
                reasoning: model.reasoning.clone(),
            },
            env,
        )
        .map(|p| p.endpoint().to_string()),
        ProviderKind::AzureOpenAi => crate::provider::azure::provider_with_env(
            crate::provider::azure::AzureConfig {
                deployment: model.name.clone(),
                base_url: model.base_url.clone(),
                api_version: model.api_version.clone(),
                api_key_env: model.api_key_env.clone(),
                request_timeout: model.request_timeout,
                stream: model.stream,
                reasoning: model.reasoning.clone(),
            },
            env,
        )
        .map(|p| p.endpoint().to_string()),
        _ => VertexProvider::with_env(
            VertexConfig {
                name: model.name.clone(),
                project: model.project.clone(),
                region: model.region.clone(),
                base_url: model.base_url.clone(),
                request_timeout: model.request_timeout,
                stream: model.stream,
                reasoning: model.reasoning.clone(),
            },
            env,
        )
        .map(|p| p.endpoint().to_string()),
    };
    match endpoint {
        Ok(endpoint) => check(
            "credentials",
            Outcome::Ok,
            format!("credentials found; requests go to {endpoint}"),
        ),
        Err(err) => check("credentials", Outcome::Failed, err.to_string()),
    }
}

async fn get_models(
    kind: ProviderKind,
    url: &str,
    key: Option<&str>,
) -> Result<(u16, String), String> {
    let client = crate::tls::client_builder()
        .user_agent(concat!("agentci/", env!("CARGO_PKG_VERSION")))
        .timeout(ANSWER_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    let mut request = client.get(url);
    request = match (kind, key) {
        // https://docs.anthropic.com/en/api/models-list
        (ProviderKind::Anthropic, key) => {
            let request = request.header("anthropic-version", "2023-06-01");
            match key {
                Some(key) => request.header("x-api-key", key),
                None => request,
            }
        }
        // https://platform.openai.com/docs/api-reference/models/list
        (_, Some(key)) => request.bearer_auth(key),
        (_, None) => request,
    };
    let response = request.send().await.map_err(|e| match e.is_timeout() {
        true => format!("no answer within {}s", ANSWER_TIMEOUT.as_secs()),
        false => crate::provider::root_cause(&e),
    })?;
    let status = response.status().as_u16();
    let body = response.text().await.unwrap_or_default();
    Ok((status, body))
}

/// The `id`s of a models list (`{"data": [{"id": …}]}`, both APIs).
fn model_ids(body: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    value["data"]
        .as_array()
        .map(|models| {
            models
                .iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn shown_ids(ids: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut shown: Vec<String> = ids.iter().take(SHOWN).map(|id| format!("`{id}`")).collect();
    if ids.len() > SHOWN {
        shown.push(format!("and {} more", ids.len() - SHOWN));
    }
    shown.join(", ")
}

/// Each stdio MCP server's program is on PATH (or exists, when given as
/// a path); an HTTP server is reached only by a run.
fn mcp_checks(job: &JobSpec, env: &dyn Fn(&str) -> Option<String>) -> Vec<SetupCheck> {
    job.mcp
        .servers
        .iter()
        .filter_map(|server| match &server.transport {
            McpTransport::Stdio { command, .. } => {
                let name = format!("mcp:{}", server.name);
                Some(match find_program(command, env("PATH").as_deref()) {
                    Some(path) => check(
                        name,
                        Outcome::Ok,
                        format!("`{command}` is {}", path.display()),
                    ),
                    None => check(
                        name,
                        Outcome::Failed,
                        format!(
                            "`{command}` is not installed or not on PATH; install it (for \
                             `npx` and `node`, Node.js; for `uvx`, uv; for `python3`, \
                             Python) or name it by its path"
                        ),
                    ),
                })
            }
            McpTransport::Http { .. } => None,
        })
        .collect()
}

/// `program` as the run would start it: a path as given, a bare name
/// found in `path` (an executable file).
fn find_program(program: &str, path: Option<&str>) -> Option<PathBuf> {
    let executable = |candidate: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let candidate = PathBuf::from(program);
        return executable(&candidate).then_some(candidate);
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_lists_of_both_apis_give_their_ids() {
        let openai = r#"{"object":"list","data":[{"id":"gpt-4.1","object":"model"}]}"#;
        assert_eq!(model_ids(openai), ["gpt-4.1"]);
        let anthropic = r#"{"data":[{"type":"model","id":"claude-sonnet-4-5"}],"has_more":false}"#;
        assert_eq!(model_ids(anthropic), ["claude-sonnet-4-5"]);
        assert!(model_ids("not json").is_empty());
    }

    #[test]
    fn programs_are_found_on_path_or_by_their_path() {
        assert!(find_program("sh", Some("/usr/bin:/bin")).is_some());
        assert!(find_program("no-such-program-here", Some("/usr/bin:/bin")).is_none());
        assert!(find_program("/bin/sh", None).is_some());
        assert!(find_program("/nonexistent/sh", None).is_none());
    }
}
