//! `agentci doctor JOB.yaml`: this machine's set-up for a job, checked
//! before a run finds out: the model's key variable (never shown), whether
//! the model's server answers and takes the key (against the fake model
//! server's models list, as strict as the real APIs'), the programs the
//! job's MCP servers start, `--offline`, and whether the job's sandbox
//! would let it start here. A failed check, or a job that would refuse to
//! start, is exit 1.

use serde_json::Value;

use super::support::fake_model::FakeModel;
use super::support::harness::{Sandbox, agentci_in, stderr, stdout};
use super::support::job::JobBuilder;

fn sandbox(model: &str, mcp: &str) -> Sandbox {
    JobBuilder::new("fix", "fixer", "")
        .goal("Fix it.")
        .model_inline(model)
        .file("ws/notes.txt", "x\n")
        .body(mcp)
        .write()
}

/// The set-up part of `doctor --json`, and the exit code.
fn doctor(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, Value) {
    let mut all = vec!["doctor", "job.yaml", "--json"];
    all.extend_from_slice(args);
    let out = agentci_in(sb.path(), &all, env);
    let value: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
    (out.status.code(), value["setup"].clone())
}

fn outcome(setup: &Value, name: &str) -> (String, String) {
    let check = setup
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {setup}"));
    (
        check["outcome"].as_str().unwrap().to_string(),
        check["detail"].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_server_that_answers_and_takes_the_key_passes_and_the_key_is_never_shown() {
    let model = FakeModel::start(Vec::new());
    for api in ["openai", "anthropic"] {
        let sb = sandbox(
            &format!(
                "{{provider: {api}, name: fake-model, base_url: {}}}",
                model.base_url()
            ),
            "",
        );
        let key_env = if api == "openai" {
            "OPENAI_API_KEY"
        } else {
            "ANTHROPIC_API_KEY"
        };
        let (code, setup) = doctor(&sb, &[], &[(key_env, "sk-secret-value")]);
        assert_eq!(code, Some(0), "{setup}");
        assert_eq!(
            outcome(&setup, "api_key"),
            ("ok".into(), format!("{key_env} is set"))
        );
        let (state, detail) = outcome(&setup, "model_server");
        assert_eq!(state, "ok", "{detail}");
        assert!(
            detail.contains("answers (GET /models: HTTP 200)"),
            "{detail}"
        );
        assert!(!setup.to_string().contains("sk-secret-value"), "{setup}");
    }
}

#[test]
fn a_missing_key_a_refusing_server_and_a_silent_one_fail_with_the_fix() {
    let model = FakeModel::start(Vec::new());
    // On loopback a key is not required, but this server asks for one.
    let sb = sandbox(
        &format!(
            "{{provider: openai, name: fake-model, base_url: {}}}",
            model.base_url()
        ),
        "",
    );
    let (code, setup) = doctor(&sb, &[], &[]);
    assert_eq!(code, Some(1), "{setup}");
    assert_eq!(outcome(&setup, "api_key").0, "ok");
    let (state, detail) = outcome(&setup, "model_server");
    assert_eq!(state, "failed");
    assert!(
        detail.contains("asks for a key (HTTP 401); set OPENAI_API_KEY"),
        "{detail}"
    );

    // A remote server without the key: the key check fails and says how.
    let sb = sandbox("{provider: openai, name: gpt-4.1}", "");
    let (code, setup) = doctor(&sb, &["--offline"], &[]);
    assert_eq!(code, Some(1), "{setup}");
    let (state, detail) = outcome(&setup, "api_key");
    assert_eq!(state, "failed");
    assert!(detail.contains("secrets.OPENAI_API_KEY"), "{detail}");
    assert_eq!(outcome(&setup, "model_server").0, "skipped");

    // Nothing listening: the server does not answer.
    let sb = sandbox(
        "{provider: openai, name: m, base_url: 'http://127.0.0.1:9/v1'}",
        "",
    );
    let (code, setup) = doctor(&sb, &[], &[]);
    assert_eq!(code, Some(1), "{setup}");
    let (state, detail) = outcome(&setup, "model_server");
    assert_eq!(state, "failed");
    assert!(detail.contains("does not answer"), "{detail}");

    // A model name the server does not list fails the check, as the README
    // says (it printed `ok … does not list model` and exited 0).
    let sb = sandbox(
        &format!(
            "{{provider: openai, name: fake-modle, base_url: {}}}",
            model.base_url()
        ),
        "",
    );
    let (code, setup) = doctor(&sb, &[], &[("OPENAI_API_KEY", "k")]);
    assert_eq!(code, Some(1), "{setup}");
    let (state, detail) = outcome(&setup, "model_server");
    assert_eq!(state, "failed", "{detail}");
    assert!(
        detail.contains("does not list model `fake-modle` (it lists `fake-model`)"),
        "{detail}"
    );
}

#[test]
fn mcp_programs_that_are_not_installed_are_named() {
    let sb = sandbox(
        "{provider: openai, name: m, base_url: 'http://127.0.0.1:9/v1'}",
        "mcp:\n  servers:\n    here: {command: sh, args: ['-c', 'true']}\n    \
         gone: {command: no-such-mcp-server-program}\n",
    );
    let (code, setup) = doctor(&sb, &["--offline"], &[]);
    assert_eq!(code, Some(1), "{setup}");
    assert_eq!(outcome(&setup, "mcp:here").0, "ok");
    let (state, detail) = outcome(&setup, "mcp:gone");
    assert_eq!(state, "failed");
    assert!(detail.contains("not installed or not on PATH"), "{detail}");

    // The text report, for a person.
    let out = agentci_in(sb.path(), &["doctor", "job.yaml", "--offline"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    // The job's checks come first, the kernel report after them (they came
    // after a screenful of kernel lines, where a failed check was missed).
    assert!(text.starts_with("set-up for the job:\n"), "{text}");
    let kernel = text
        .find("agentci doctor: what this machine can enforce")
        .unwrap_or_else(|| panic!("no kernel report after the checks: {text}"));
    let setup_part = &text[..kernel];
    insta::assert_snapshot!("doctor_setup_text", setup_part);
}

#[test]
fn a_job_that_does_not_load_is_exit_2_with_its_problems() {
    let sb = sandbox("{provider: openai}", "");
    let out = agentci_in(sb.path(), &["doctor", "job.yaml"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("job.yaml:"), "{}", stderr(&out));
}

/// A job whose sandbox this machine cannot fully enforce would refuse to
/// start: `doctor JOB` says so and why (exit 1), and says which profiles
/// refuse here; the same job accepting the degraded sandbox would start.
/// The machine without Landlock is the test switch's.
#[test]
fn doctor_says_whether_the_job_would_refuse_to_start() {
    let no_landlock = [("AGENTCI_TEST_SANDBOX_UNSUPPORTED", "landlock")];
    let model = "{provider: openai, name: m, base_url: 'http://127.0.0.1:9/v1'}";
    let sb = sandbox(model, "");
    let out = agentci_in(
        sb.path(),
        &["doctor", "job.yaml", "--offline", "--json"],
        &no_landlock,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let job = &value["job_sandbox"];
    assert_eq!(job["starts"], false, "{job}");
    assert_eq!(job["missing"], serde_json::json!(["filesystem"]));
    let detail = job["detail"].as_str().unwrap();
    assert!(
        detail.contains("the run refuses to start") && detail.contains("require: false}"),
        "{detail}"
    );
    let profiles: Vec<(&str, bool)> = value["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["profile"].as_str().unwrap(), p["starts"] == true))
        .collect();
    assert_eq!(profiles, [("workspace-write", false), ("read-only", false)]);

    let out = agentci_in(
        sb.path(),
        &["doctor", "job.yaml", "--offline"],
        &no_landlock,
    );
    let text = stdout(&out);
    assert!(
        text.contains("workspace-write   jobs REFUSE to start (not enforced: filesystem)")
            && text.contains("  sandbox           FAILED   the run refuses to start"),
        "{text}"
    );

    // Accepted knowingly, the same job starts, degraded.
    let sb = sandbox(model, "sandbox: {require: false}\n");
    let out = agentci_in(
        sb.path(),
        &["doctor", "job.yaml", "--offline", "--json"],
        &no_landlock,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["job_sandbox"]["starts"], true);
    assert!(
        value["job_sandbox"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("starts degraded"),
        "{value}"
    );
}
