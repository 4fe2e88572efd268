//! Attacks through what the model reads and what it may print: encoded
//! secrets, prompt injection in untrusted files and pull request text,
//! skills planted by a pull request, and the rule named for every call.
//! The real binary against the scripted fake model server.

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, read_jsonl, stderr};
use super::support::trace_schema::assert_valid_trace;

const KEY: &str = "sk-test-0123456789-abcdefXYZ";

/// A sandbox with a skill and a job at `base_url`; `extra` is appended to the job.
fn sandbox(base_url: &str, extra: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.write("ws/README.md", "# project\n");
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: untrusted
skill: fixer
goal: Summarize the issue.
model: {{provider: openai, name: fake-model, base_url: "{base_url}"}}
workspace: ws
skills_path: [skills]
{extra}"#
        ),
    );
    sb
}

fn run(sb: &Sandbox, env: &[(&str, &str)]) -> std::process::Output {
    let args = [
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--junit",
        "out/junit.xml",
        "--progress",
        "none",
    ];
    agentci_in(sb.path(), &args, env)
}

/// Every message content the server received, joined.
fn model_input(model: &FakeModel) -> String {
    model
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n")
}

fn base64(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("base64")
        .arg("-w0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
}

// Regression (issue 10, attack 2): `base64` of the key got past the
// masking of exact values, into the trace, the JUnit file and the model's input.
#[test]
fn base64_and_hex_of_a_secret_are_masked_everywhere() {
    let commands = [
        // alone, then at the two other alignments inside a longer stream
        r#"printf %s "$MY_TOKEN" | base64"#,
        r#"printf 'x%s\n' "$MY_TOKEN" | base64 -w 10"#,
        r#"env | grep MY_TOKEN | base64 | tr '+/' '-_'"#,
        r#"printf %s "$MY_TOKEN" | od -An -tx1 | tr -d ' \n'"#,
    ];
    let mut script = vec![Reply::plan(&[("Look", "done")])];
    script.push(Reply::tool_calls(
        commands
            .iter()
            .enumerate()
            .map(|(i, c)| (["c0", "c1", "c2", "c3"][i], "exec", json!({"command": c})))
            .collect(),
    ));
    script.push(Reply::step_done("looked"));
    script.push(Reply::text("done"));
    let model = FakeModel::start(script);
    let sb = sandbox(
        &model.base_url(),
        "tools: [exec]\npermissions: {default: allow}\nsecrets: [MY_TOKEN]\n\
         env:\n  MY_TOKEN: \"${{ secrets.MY_TOKEN }}\"\n\
         checks:\n  - {name: prints the key, run: 'printf %s \"$MY_TOKEN\" | base64; exit 1'}\n",
    );
    let out = run(&sb, &[("MY_TOKEN", KEY)]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));

    let needles = [
        base64(KEY.as_bytes()),
        base64(KEY.as_bytes()).trim_end_matches('=').to_string(),
        base64(&KEY.as_bytes()[2..20]),
        hex(KEY.as_bytes()),
    ];
    let trace = sb.read("out/trace.jsonl");
    let junit = sb.read("out/junit.xml");
    let input = model_input(&model);
    for (name, text) in [
        ("trace", &trace),
        ("junit", &junit),
        ("model input", &input),
    ] {
        assert!(!text.contains(KEY), "{name} holds the key");
        for needle in &needles {
            assert!(
                !text.replace(['\n', '\r'], "").contains(needle.as_str()),
                "{name} holds {needle}:\n{text}"
            );
        }
    }
    assert!(junit.contains("***"), "{junit}");
    // What the model got back from each command: the masked form, not nothing.
    let results: Vec<String> = model
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .filter(|text| text.starts_with("exit code"))
        .collect();
    assert!(results.len() >= 4, "{results:?}");
    assert!(results.iter().all(|r| r.contains("***")), "{results:?}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The trace's events of `kind`, parsed.
#[allow(dead_code)]
fn trace_events(sb: &Sandbox, kind: &str) -> Vec<Value> {
    let path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&path);
    events(&read_jsonl(&path), kind)
        .into_iter()
        .cloned()
        .collect()
}
