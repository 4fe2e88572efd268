//! `agentci mcp list/call` against the public reference servers
//! (`@modelcontextprotocol/server-everything`, `server-filesystem`) over
//! stdio and Streamable HTTP, and the `mcp:` job key through `validate`,
//! `run` and `mcp list JOB.yaml`.
//!
//! The reference servers are pinned in tests/mcp-servers/package-lock.json
//! and installed on first use (`support::prerequisites`); on a machine
//! without `npm` these tests are skipped and the run says so at its end.
//! The misbehaving-server tests are in `mcp_misbehave`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::harness::{Sandbox, agentci_in, stderr, stdout};
use super::support::prerequisites::npm_packages;

const SERVERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp-servers");

/// The `mcp-server-NAME` binary from tests/mcp-servers (installed on first
/// use), or `None` on a machine without `npm`.
pub fn npm_server(name: &str) -> Option<PathBuf> {
    let modules = npm_packages("mcp-servers", "the tests against the MCP reference servers")?;
    Some(modules.join(format!(".bin/mcp-server-{name}")))
}

/// `python3 tests/mcp-servers/test_server.py`, as command words.
pub fn test_server(args: &[&str]) -> Vec<String> {
    let mut words = vec!["python3".to_string(), format!("{SERVERS}/test_server.py")];
    words.extend(args.iter().map(|a| a.to_string()));
    words
}

/// `agentci mcp ARGS... -- COMMAND...` in `dir`.
pub fn mcp(dir: &Path, args: &[&str], command: &[String]) -> Output {
    let mut all: Vec<&str> = vec!["mcp"];
    all.extend_from_slice(args);
    if !command.is_empty() {
        all.push("--");
        all.extend(command.iter().map(String::as_str));
    }
    agentci_in(dir, &all, &[])
}

pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\n{}",
            stdout(out),
            stderr(out)
        )
    })
}

fn everything() -> Option<Vec<String>> {
    npm_server("everything").map(|bin| vec![bin.display().to_string()])
}

#[test]
fn everything_lists_tools_resources_and_templates() {
    let Some(server) = everything() else { return };
    let sandbox = Sandbox::new();
    let out = mcp(sandbox.path(), &["list", "--json"], &server);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = json(&out);
    let server = &listed["servers"][0];
    assert_eq!(server["status"], "up");
    assert_eq!(server["server"]["protocol_version"], "2025-11-25");
    let tools = server["tools"].as_array().unwrap();
    let sum = tools.iter().find(|t| t["name"] == "get-sum").unwrap();
    assert_eq!(sum["read_only"], true);
    assert_eq!(
        sum["input_schema"]["required"],
        serde_json::json!(["a", "b"])
    );
    // `$schema`, `annotations` and `execution` in its tools did not stop the listing.
    assert!(tools.iter().any(|t| t["read_only"] == false));
    assert!(!server["resources"].as_array().unwrap().is_empty());
    let templates = server["resource_templates"].as_array().unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t["uri"].as_str().unwrap().contains("{resourceId}"))
    );
}

#[test]
fn everything_adds_numbers_and_answers_wrong_arguments_with_an_error_result() {
    let Some(server) = everything() else { return };
    let sandbox = Sandbox::new();
    let ok = mcp(
        sandbox.path(),
        &["call", "get-sum", r#"{"a": 2, "b": 3}"#],
        &server,
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert_eq!(stdout(&ok).trim(), "The sum of 2 and 3 is 5.");

    let wrong = mcp(
        sandbox.path(),
        &["call", "--json", "get-sum", r#"{"a": 2, "b": "three"}"#],
        &server,
    );
    assert_eq!(wrong.status.code(), Some(1), "{}", stderr(&wrong));
    let result = json(&wrong);
    assert_eq!(result["status"], "tool_error");
    assert!(
        result["text"].as_str().unwrap().contains("-32602"),
        "{result}"
    );

    let unknown = mcp(sandbox.path(), &["call", "no-such-tool"], &server);
    assert_eq!(unknown.status.code(), Some(1), "{}", stderr(&unknown));
}

#[test]
fn everything_structured_content_is_passed_on_as_json() {
    let Some(server) = everything() else { return };
    let sandbox = Sandbox::new();
    let out = mcp(
        sandbox.path(),
        &[
            "call",
            "--json",
            "get-structured-content",
            r#"{"location": "Chicago"}"#,
        ],
        &server,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = json(&out);
    assert!(result["structured_content"].is_object(), "{result}");
}

#[test]
fn everything_images_are_summarised_and_kept_in_full() {
    let Some(server) = everything() else { return };
    let sandbox = Sandbox::new();
    let out = mcp(
        sandbox.path(),
        &["call", "--json", "get-tiny-image"],
        &server,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = json(&out);
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .contains("[image: image/png"),
        "{result}"
    );
    let image = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "image")
        .unwrap();
    assert!(image["data"].as_str().unwrap().len() > 100);
}

#[test]
fn filesystem_server_reads_inside_its_folder_and_refuses_outside() {
    let Some(bin) = npm_server("filesystem") else {
        return;
    };
    let sandbox = Sandbox::new();
    let dir = sandbox.workspace().canonicalize().unwrap();
    std::fs::write(dir.join("hello.txt"), "hello from the workspace\n").unwrap();
    let server = vec![bin.display().to_string(), dir.display().to_string()];
    let path = dir.join("hello.txt").display().to_string();
    let args = format!(r#"{{"path": "{path}"}}"#);
    let out = mcp(sandbox.path(), &["call", "read_text_file", &args], &server);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("hello from the workspace"));

    let outside = mcp(
        sandbox.path(),
        &["call", "read_text_file", r#"{"path": "/etc/hostname"}"#],
        &server,
    );
    assert_eq!(outside.status.code(), Some(1), "{}", stderr(&outside));
}

#[test]
fn filesystem_server_on_a_missing_folder_is_unreachable_with_its_stderr() {
    let Some(bin) = npm_server("filesystem") else {
        return;
    };
    let sandbox = Sandbox::new();
    let missing = sandbox.path().join("does-not-exist").display().to_string();
    let out = mcp(
        sandbox.path(),
        &["list"],
        &[bin.display().to_string(), missing],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("exited with code 1 before it was initialized"),
        "{err}"
    );
    assert!(
        err.contains("| Error: None of the specified directories are accessible"),
        "{err}"
    );
}

/// A free port on 127.0.0.1 (bound, then released for the server).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// server-everything over Streamable HTTP; killed on drop.
struct HttpServer {
    child: Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn everything_over_http() -> Option<HttpServer> {
    let bin = npm_server("everything")?;
    let port = free_port();
    let child = Command::new(bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "server-everything did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    })
}

#[test]
fn a_remote_server_is_reached_over_streamable_http() {
    let Some(server) = everything_over_http() else {
        return;
    };
    let sandbox = Sandbox::new();
    let out = mcp(
        sandbox.path(),
        &[
            "call",
            "--url",
            &server.url,
            "get-sum",
            r#"{"a": 40, "b": 2}"#,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "The sum of 40 and 2 is 42.");

    // The same server named in a job, with a header read from the environment.
    let job = format!(
        "name: remote\nskill: s\ngoal: g\nmodel: {{name: m}}\nmcp:\n  servers:\n    everything:\n      url: {}\n      \
         headers: {{X-Token: \"${{{{ env.MCP_TEST_TOKEN }}}}\"}}\n",
        server.url
    );
    let job = sandbox.write("job.yaml", &job);
    let env = [("MCP_TEST_TOKEN", "t0ken")];
    let listed = agentci_in(
        &sandbox.workspace(),
        &["mcp", "list", "--json", job.to_str().unwrap()],
        &env,
    );
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert_eq!(json(&listed)["servers"][0]["name"], "everything");

    let unset = agentci_in(
        &sandbox.workspace(),
        &["mcp", "list", job.to_str().unwrap()],
        &[],
    );
    assert_eq!(unset.status.code(), Some(4), "{}", stderr(&unset));
    assert!(stderr(&unset).contains("environment variable `MCP_TEST_TOKEN`"));
}

#[test]
fn an_unreachable_url_exits_4() {
    let sandbox = Sandbox::new();
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let out = mcp(
        sandbox.path(),
        &["call", "--url", &url, "--startup-timeout", "5s", "x"],
        &[],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("could not be reached at {url}")));
}

fn job_with_servers(sandbox: &Sandbox, servers: &str) -> PathBuf {
    sandbox.skill("s", None);
    sandbox.write(
        "job.yaml",
        &format!(
            "name: with-mcp\nskill: s\nskills_path: [skills]\ngoal: use the tools\nworkspace: \
             ws\nmodel: {{name: m}}\nmcp:\n  servers:\n{servers}"
        ),
    )
}

#[test]
fn validate_accepts_the_mcp_key() {
    let sandbox = Sandbox::new();
    job_with_servers(
        &sandbox,
        "    fs:\n      command: npx\n      args: [server-filesystem, .]\n      timeout: 10s\n      \
         tools: [read_text_file]\n      required: true\n",
    );
    let validated = sandbox.agentci(&["validate", "job.yaml"]);
    assert_eq!(validated.status.code(), Some(0), "{}", stdout(&validated));
    let text = stdout(&validated);
    // The job has no checks (a warning of its own); nothing is wrong with its servers.
    let others: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("warning") && !l.contains("has no checks"))
        .collect();
    assert!(others.is_empty(), "{text}");
}

#[test]
fn a_job_lists_every_server_even_when_one_is_down() {
    let Some(everything) = npm_server("everything") else {
        return;
    };
    let sandbox = Sandbox::new();
    let job = job_with_servers(
        &sandbox,
        &format!(
            "    good:\n      command: {}\n      tools: [get-sum, echo, not-offered]\n    \
             broken:\n      command: python3\n      args: [{SERVERS}/test_server.py, \
             --exit-before-init]\n",
            everything.display()
        ),
    );
    let out = sandbox.agentci(&["mcp", "list", "--json", job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let listed = json(&out);
    let servers = listed["servers"].as_array().unwrap();
    let broken = servers.iter().find(|s| s["name"] == "broken").unwrap();
    assert_eq!(broken["status"], "down");
    assert!(
        broken["reason"]
            .as_str()
            .unwrap()
            .contains("exited with code 3")
    );
    assert_eq!(broken["stderr"][0], "test server: refusing to start");
    let good = servers.iter().find(|s| s["name"] == "good").unwrap();
    let names: Vec<&str> = good["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "get-sum"], "only the allow-listed tools");
    assert_eq!(
        good["missing_allowed_tools"],
        serde_json::json!(["not-offered"])
    );

    // The allow-list holds for `mcp call` too.
    let refused = sandbox.agentci(&["mcp", "call", job.to_str().unwrap(), "good", "get-env"]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stdout(&refused).contains("not in the `tools` allow-list"));
}
