//! `agentci::mcp::McpSet`, a job's servers managed together, against real
//! child processes of tests/mcp-servers/test_server.py: started at once,
//! a failed (required) one reported with its stderr, concurrent calls,
//! timeouts that take one server down and leave the other working,
//! refreshed tool lists, resources and templates, shutdown.

use std::path::Path;
use std::time::{Duration, Instant};

use agentci::job::{McpServerSpec, McpTransport};
use agentci::mcp::{McpSet, StartContext};
use agentci::process::{ProcessRunner, RunnerConfig, RunnerExtra};
use agentci::sandbox::{SandboxProfile, SandboxSpec};
use serde_json::json;

use super::mcp::test_server;
use super::support::harness::Sandbox;
use super::support::wait::assert_took_less;

fn spec(name: &str, args: &[&str]) -> McpServerSpec {
    let words = test_server(args);
    McpServerSpec {
        name: name.to_string(),
        transport: McpTransport::Stdio {
            command: words[0].clone(),
            args: words[1..].to_vec(),
            env: Vec::new(),
            cwd: None,
        },
        timeout: Duration::from_secs(20),
        startup_timeout: Duration::from_secs(20),
        tools: None,
        required: false,
        roots: false,
        sampling: false,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Starts `specs` on `rt`, which must outlive the set: the servers'
/// connections run on it.
fn start(
    rt: &tokio::runtime::Runtime,
    workspace: &Path,
    specs: &[McpServerSpec],
    runner: Option<&ProcessRunner>,
) -> McpSet {
    let lookup = |_: &str| None;
    let cx = StartContext {
        workspace,
        env: &lookup,
        runner,
        sampler: None,
    };
    rt.block_on(McpSet::start(specs, &cx))
}

#[test]
fn servers_start_together_and_a_failed_required_one_is_named_with_its_stderr() {
    let sb = Sandbox::new();
    let rt = runtime();
    let mut broken = spec("broken", &["--exit-before-init"]);
    broken.required = true;
    let specs = [
        spec("good", &[]),
        broken,
        spec("optional", &["--exit-before-init"]),
    ];
    let set = start(&rt, sb.path(), &specs, None);
    let failed: Vec<&str> = set.failed().iter().map(|d| d.server.as_str()).collect();
    assert_eq!(failed, ["broken", "optional"]);
    let required = set.required_failure().expect("the required server failed");
    assert_eq!(required.server, "broken");
    assert!(required.reason.contains("code 3"), "{required:?}");
    assert!(
        required
            .stderr
            .iter()
            .any(|l| l.contains("refusing to start")),
        "{required:?}"
    );
    let tools: Vec<String> = set
        .tools()
        .into_iter()
        .map(|(s, t)| format!("{s}/{}", t.name))
        .collect();
    assert!(tools.contains(&"good/add".to_string()), "{tools:?}");
    // Failed servers are reported by `failed`, not again as newly down.
    assert!(set.take_down().is_empty());
    let call = rt.block_on(set.call("broken", "add", json!({"a": 1, "b": 2})));
    assert_eq!(call.unwrap_err().server, "broken");
    let unknown = rt.block_on(set.call("nope", "add", json!({}))).unwrap();
    assert!(unknown.is_error);
    assert!(
        unknown.text.contains("no MCP server `nope`"),
        "{}",
        unknown.text
    );
    assert!(
        unknown.text.contains("good, broken, optional") || unknown.text.contains("good"),
        "{}",
        unknown.text
    );
    rt.block_on(set.shutdown_all());
}

#[test]
fn concurrent_calls_share_one_server_and_a_hung_one_goes_down_alone() {
    let sb = Sandbox::new();
    let rt = runtime();
    let mut slow = spec("slow", &[]);
    slow.timeout = Duration::from_millis(500);
    let specs = [spec("fast", &[]), slow];
    let set = start(&rt, sb.path(), &specs, None);
    assert!(set.failed().is_empty(), "{:?}", set.failed());

    // Twenty calls in flight at once on the same server, each answered with its own sum.
    let outputs = rt.block_on(futures_util::future::join_all(
        (0..20).map(|i| set.call("fast", "add", json!({"a": i, "b": 1000}))),
    ));
    for (i, output) in outputs.into_iter().enumerate() {
        assert_eq!(output.unwrap().text, format!("{}", i + 1000));
    }

    let hung = rt.block_on(set.call("slow", "sleep", json!({"seconds": 30})));
    let down = hung.unwrap_err();
    assert!(
        down.reason.contains("within its timeout of 500ms"),
        "{down:?}"
    );
    let newly = set.take_down();
    assert_eq!(newly.len(), 1);
    assert_eq!(newly[0].server, "slow");
    assert!(
        set.take_down().is_empty(),
        "each server is reported down once"
    );
    // The other server and its tools keep working.
    let names: Vec<String> = set.tools().into_iter().map(|(s, _)| s).collect();
    assert!(names.iter().all(|s| s == "fast"), "{names:?}");
    let sum = rt
        .block_on(set.call("fast", "add", json!({"a": 2, "b": 3})))
        .unwrap();
    assert_eq!(sum.text, "5");
    rt.block_on(set.shutdown_all());
}

#[test]
fn a_changed_tool_list_is_refreshed_once() {
    let sb = Sandbox::new();
    let rt = runtime();
    let set = start(&rt, sb.path(), &[spec("test", &["--list-changed"])], None);
    let refreshed = rt.block_on(set.take_refreshed());
    assert_eq!(refreshed.len(), 1, "{refreshed:?}");
    assert_eq!(refreshed[0].server, "test");
    assert!(refreshed[0].tools.iter().any(|t| t.name == "late"));
    assert!(rt.block_on(set.take_refreshed()).is_empty());
    rt.block_on(set.shutdown_all());
}

#[test]
fn resources_and_templates_of_one_or_every_server_are_listed_and_read() {
    let sb = Sandbox::new();
    let rt = runtime();
    let specs = [spec("notes", &["--resources"]), spec("plain", &[])];
    let set = start(&rt, sb.path(), &specs, None);
    let all = rt.block_on(set.list_resources(None)).unwrap();
    let uris: Vec<String> = all
        .resources
        .iter()
        .map(|(s, r)| format!("{s} {}", r.uri))
        .collect();
    assert_eq!(uris, ["notes test://notes/1", "notes test://notes/2"]);
    let templates: Vec<String> = all
        .templates
        .iter()
        .map(|(s, r)| format!("{s} {}", r.uri))
        .collect();
    assert_eq!(templates, ["notes test://notes/{id}"]);
    assert!(all.down.is_empty());

    let plain = rt.block_on(set.list_resources(Some("plain"))).unwrap();
    assert!(plain.resources.is_empty() && plain.templates.is_empty());
    let unknown = rt
        .block_on(set.list_resources(Some("nope")))
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("no MCP server `nope`"), "{unknown}");

    // A URI made from the template.
    let read = rt
        .block_on(set.read_resource("notes", "test://notes/7"))
        .unwrap();
    assert!(!read.is_error);
    assert!(read.text.contains("note 7"), "{}", read.text);
    let missing = rt
        .block_on(set.read_resource("notes", "other://x"))
        .unwrap();
    assert!(missing.is_error);
    assert!(missing.text.contains("-32002"), "{}", missing.text);
    rt.block_on(set.shutdown_all());
}

#[test]
fn shutdown_stops_every_server_at_once_even_those_ignoring_stdin() {
    let sb = Sandbox::new();
    let rt = runtime();
    let specs = [
        spec("a", &["--ignore-stdin-close"]),
        spec("b", &["--ignore-stdin-close"]),
        spec("c", &[]),
    ];
    let set = start(&rt, sb.path(), &specs, None);
    let started = Instant::now();
    rt.block_on(set.shutdown_all_within(Duration::from_millis(300)));
    // Not a timing assertion: a generous bound that fails only if the
    // servers were waited for one after the other forever.
    assert_took_less(
        started.elapsed(),
        Duration::from_secs(20),
        "shutting down three servers",
    );
    for name in ["a", "b", "c"] {
        let call = rt.block_on(set.call(name, "add", json!({"a": 1, "b": 1})));
        assert!(call.unwrap_err().reason.contains("shut down"));
    }
    assert!(
        set.take_down().is_empty(),
        "shut-down servers are not newly down"
    );
    rt.block_on(set.shutdown_all());
}

#[test]
fn servers_started_through_a_sandboxed_runner_work_and_get_its_environment() {
    let sb = Sandbox::new();
    let workspace = sb.workspace();
    std::fs::create_dir_all(&workspace).unwrap();
    let runner = ProcessRunner::new(
        RunnerConfig {
            sandbox: SandboxSpec {
                profile: SandboxProfile::WorkspaceWrite,
                network: false,
                require: false,
                ..SandboxSpec::default()
            },
            children: RunnerExtra {
                workspace: workspace.clone(),
                run_id: format!("mcp-set-test-{}", std::process::id()),
                extra_env: vec![("JOB_VAR".to_string(), "from the job".to_string())],
                ..RunnerExtra::default()
            },
            secrets: Default::default(),
        },
        &agentci::run_env::RunEnv::new(std::env::vars_os()),
    )
    .unwrap();
    let rt = runtime();
    let set = start(&rt, &workspace, &[spec("test", &[])], Some(&runner));
    assert!(set.failed().is_empty(), "{:?}", set.failed());
    let job_var = rt
        .block_on(set.call("test", "env", json!({"name": "JOB_VAR"})))
        .unwrap();
    assert_eq!(job_var.text, "from the job");
    // Cargo sets this for the test process; a server must not inherit it.
    assert!(std::env::var("CARGO_MANIFEST_DIR").is_ok());
    let leaked = rt
        .block_on(set.call("test", "env", json!({"name": "CARGO_MANIFEST_DIR"})))
        .unwrap();
    assert_eq!(leaked.text, "<unset>");
    let tmp = rt
        .block_on(set.call("test", "env", json!({"name": "TMPDIR"})))
        .unwrap();
    assert!(tmp.text.contains("agentci-mcp-set-test"), "{}", tmp.text);
    rt.block_on(set.shutdown_all());
}

#[test]
fn a_server_down_before_shutdown_is_still_reported_down_after_it() {
    let sb = Sandbox::new();
    let rt = runtime();
    let set = start(
        &rt,
        sb.path(),
        &[spec("crashy", &[]), spec("calm", &[])],
        None,
    );
    let crashed = rt.block_on(set.call("crashy", "crash", json!({})));
    let down = crashed.unwrap_err();
    assert!(down.reason.contains("code 7"), "{down:?}");
    rt.block_on(set.shutdown_all());
    let newly: Vec<String> = set.take_down().into_iter().map(|d| d.server).collect();
    assert_eq!(newly, ["crashy"]);
}
