//! Azure OpenAI end to end: the real binary against the fake server's
//! deployment route, which, like Azure, answers 404 to a request without
//! `api-version` and 401 to one without `api-key` or a bearer token. A full
//! run with the resource key, one with an Entra ID token and a pinned API
//! version, a replay of a recorded run, and the errors for a missing
//! credential and a missing `base_url`.

use std::process::{Command, Output};

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, outside_github, read_jsonl, stderr, stdout};
use super::support::job::JobBuilder;
use super::support::job::JobRun;
use super::support::trace_schema::assert_valid_trace;

const KEY: &str = "azure-resource-key-123";
const TOKEN: &str = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra";

/// A job for deployment `gpt4o-prod`; `base_url` and `model_extra` (inside
/// `model:`) as given.
fn sandbox(base_url: Option<&str>, model_extra: &str) -> Sandbox {
    let base_url = base_url.map_or_else(String::new, |url| format!("  base_url: {url}\n"));
    JobBuilder::reader("azure-check", "")
        .model_block(&format!(
            "  provider: azure-openai\n  name: gpt4o-prod\n{base_url}  request_timeout: 5s\n  \
             retry: {{initial_backoff: 10ms, max_backoff: 40ms}}\n"
        ))
        .model_extra(model_extra)
        .write()
}

/// Runs the binary with exactly the Azure variables given.
fn run(sb: &Sandbox, extra: &[&str], env: &[(&str, &str)]) -> Output {
    JobRun::new(sb)
        .progress("plain")
        .args(extra)
        .env_remove("AZURE_OPENAI_API_KEY")
        .env_remove("AZURE_OPENAI_AD_TOKEN")
        .envs(env)
        .output()
}

fn session() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Read the greeting", "its text is known")]),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))]),
        Reply::step_done("read it"),
        Reply::text("The greeting says hello world."),
    ]
}

fn passed(out: &Output, sb: &Sandbox) -> Vec<Value> {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    assert!(stdout(out).contains("hello world"), "{}", stdout(out));
    let path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&path);
    let trace = read_jsonl(&path);
    assert_eq!(trace.last().unwrap()["status"], "passed");
    trace
}

/// The resource endpoint of the fake: no `/v1`, as Azure's endpoints have none.
fn endpoint(model: &FakeModel) -> String {
    format!("http://{}", model.addr())
}

#[test]
fn a_full_run_with_the_resource_key() {
    let model = FakeModel::start(session());
    let sb = sandbox(Some(&endpoint(&model)), "");
    let out = run(&sb, &[], &[("AZURE_OPENAI_API_KEY", KEY)]);
    let trace = passed(&out, &sb);
    let captured = model.captured();
    assert_eq!(captured.len(), 4);
    for request in &captured {
        assert_eq!(
            request.path,
            "/openai/deployments/gpt4o-prod/chat/completions"
        );
        assert_eq!(request.query.as_deref(), Some("api-version=2024-10-21"));
        assert_eq!(request.azure_api_key.as_deref(), Some(KEY));
        assert_eq!(request.authorization, None);
        assert_eq!(request.body["model"], "gpt4o-prod");
        assert_eq!(request.body["stream"], true);
    }
    let mut first = captured[0].body.clone();
    first["messages"] = json!("[conversation]");
    first["tools"] = json!("[tools]");
    insta::assert_json_snapshot!("azure_first_request", first);
    let started = events(&trace, "run.started");
    assert_eq!(started[0]["model"]["provider"], "azure-openai");
    assert_eq!(started[0]["model"]["name"], "gpt4o-prod");
}

#[test]
fn an_entra_id_token_goes_as_a_bearer_with_the_pinned_version() {
    let model = FakeModel::start(session());
    let sb = sandbox(
        Some(&endpoint(&model)),
        "  api_version: 2025-04-01-preview\n  stream: false",
    );
    let out = run(&sb, &[], &[("AZURE_OPENAI_AD_TOKEN", TOKEN)]);
    passed(&out, &sb);
    for request in model.captured() {
        assert_eq!(
            request.query.as_deref(),
            Some("api-version=2025-04-01-preview")
        );
        assert_eq!(
            request.authorization.as_deref(),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(request.azure_api_key, None);
        assert!(request.body.get("stream").is_none());
    }
    // The token never reaches the trace.
    assert!(!sb.read("out/trace.jsonl").contains(TOKEN));
}

#[test]
fn a_recorded_run_replays_without_the_resource() {
    let model = FakeModel::start(session());
    let sb = sandbox(Some(&endpoint(&model)), "");
    let out = run(
        &sb,
        &["--record", "cassette.jsonl"],
        &[("AZURE_OPENAI_API_KEY", KEY)],
    );
    passed(&out, &sb);
    drop(model);
    assert!(!sb.read("cassette.jsonl").contains(KEY));
    let out = run(&sb, &["--replay", "cassette.jsonl"], &[]);
    let trace = passed(&out, &sb);
    assert_eq!(events(&trace, "model.response").len(), 4);
}

#[test]
fn missing_credentials_and_base_url_are_one_line_each() {
    let sb = sandbox(Some("https://contoso.openai.azure.com"), "");
    let out = run(&sb, &[], &[]);
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains("neither AZURE_OPENAI_API_KEY nor AZURE_OPENAI_AD_TOKEN is set"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    let sb = sandbox(None, "");
    let out = run(&sb, &[], &[("AZURE_OPENAI_API_KEY", KEY)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("provider azure-openai needs `base_url`"),
        "{err}"
    );

    let sb = sandbox(
        Some("https://contoso.openai.azure.com"),
        "  api_version: latest",
    );
    let out = run(&sb, &[], &[("AZURE_OPENAI_API_KEY", KEY)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`api_version` `latest` is not an Azure OpenAI API version"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_fake_refuses_what_azure_refuses() {
    let model = FakeModel::start(vec![Reply::text("unused")]);
    let url = format!(
        "{}/openai/deployments/gpt4o-prod/chat/completions",
        endpoint(&model)
    );
    let body = json!({"model": "gpt4o-prod", "messages": [{"role": "user", "content": "hi"}]});
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let send = |url: String, key: bool| {
        runtime.block_on(async {
            let mut request = reqwest::Client::new().post(url).json(&body);
            if key {
                request = request.header("api-key", KEY);
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        })
    };
    let (status, answer) = send(url.clone(), true);
    assert_eq!(
        (status, answer["error"]["message"].as_str()),
        (404, Some("Resource not found"))
    );
    let (status, answer) = send(format!("{url}?api-version=2024-10-21"), false);
    assert_eq!(status, 401);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Access denied")
    );
    assert_eq!(model.remaining(), 1);
}

/// `agentci doctor` on an Azure job: the credentials check reads the key or
/// the Entra ID token as a run does and names the deployment's URL; it
/// neither asks `GET /models` (the wrong URL and header for Azure) nor
/// reports a key variable as missing when a token is set.
#[test]
fn doctor_checks_the_resource_key_or_token_as_a_run_reads_them() {
    let sb = sandbox(Some("https://contoso.openai.azure.com"), "");
    let doctor = |env: &[(&str, &str)]| -> Value {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentci"));
        outside_github(&mut cmd);
        for name in ["AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"] {
            cmd.env_remove(name);
        }
        let out = cmd
            .args(["doctor", "job.yaml", "--json"])
            .envs(env.iter().copied())
            .current_dir(sb.path())
            .output()
            .unwrap();
        let report: Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
        let names: Vec<&str> = report["setup"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert!(!names.contains(&"model_server"), "{report}");
        assert!(!names.contains(&"api_key"), "{report}");
        report["setup"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "credentials")
            .cloned()
            .unwrap_or_else(|| panic!("no credentials check in {report}"))
    };
    let found = doctor(&[]);
    assert_eq!(found["outcome"], "failed", "{found}");
    let detail = found["detail"].as_str().unwrap();
    assert!(
        detail.contains("AZURE_OPENAI_API_KEY") && detail.contains("AZURE_OPENAI_AD_TOKEN"),
        "{found}"
    );
    let found = doctor(&[("AZURE_OPENAI_AD_TOKEN", TOKEN)]);
    assert_eq!(found["outcome"], "ok", "{found}");
    let detail = found["detail"].as_str().unwrap();
    assert!(
        detail.contains(
            "https://contoso.openai.azure.com/openai/deployments/gpt4o-prod/chat/completions"
        ),
        "{found}"
    );
    assert!(!detail.contains(TOKEN), "{found}");
}
