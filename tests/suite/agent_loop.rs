//! The agent loop end to end: parallel read-only batches proven to overlap
//! (a local web server that answers only once every request has arrived),
//! tool timeouts, `web_fetch` under URL rules, and the loop guard that warns
//! a repeating model before it ends the step.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::{Value, json};
use tokio::sync::Barrier;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr};
use super::support::job::JobRun;
use super::support::wait::assert_took_less;

/// What the local web server does; every request is counted by path.
#[derive(Clone)]
struct Site {
    /// `/together/*` answers only once this many requests are waiting.
    together: Arc<Barrier>,
    hits: Arc<std::sync::Mutex<Vec<String>>>,
    answered: Arc<AtomicUsize>,
}

async fn page(State(site): State<Site>, uri: Uri) -> impl IntoResponse {
    let path = uri.path().to_string();
    site.hits.lock().unwrap().push(path.clone());
    let html = |body: &str| {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            format!("<!doctype html><html><head><title>t</title></head><body>{body}</body></html>"),
        )
            .into_response()
    };
    if let Some(name) = path.strip_prefix("/together/") {
        site.together.wait().await;
        site.answered.fetch_add(1, Ordering::SeqCst);
        return html(&format!(
            "<h1>Page {name}</h1><p>answered <b>together</b></p>"
        ));
    }
    match path.as_str() {
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            html("too late")
        }
        "/docs/page" => {
            html("<h1>Docs</h1><ul><li>first item</li></ul><p>token s3cr3t-t0ken-value</p>")
        }
        "/docs/hop" => {
            let mut headers = HeaderMap::new();
            headers.insert(header::LOCATION, "/private/key".parse().unwrap());
            (StatusCode::FOUND, headers, "").into_response()
        }
        _ => html("<p>private</p>"),
    }
}

/// A web server on 127.0.0.1 in its own thread; dropped with the test.
struct WebServer {
    addr: SocketAddr,
    site: Site,
    _runtime: std::thread::JoinHandle<()>,
}

impl WebServer {
    fn start(together: usize) -> WebServer {
        let site = Site {
            together: Arc::new(Barrier::new(together)),
            hits: Arc::default(),
            answered: Arc::default(),
        };
        let state = site.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let app = Router::new().fallback(get(page)).with_state(state);
                let _ = axum::serve(listener, app).await;
            });
        });
        WebServer {
            addr: rx.recv().unwrap(),
            site,
            _runtime: thread,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn hits(&self) -> Vec<String> {
        self.site.hits.lock().unwrap().clone()
    }
}

fn job(sb: &Sandbox, model: &FakeModel, web: &WebServer, extra: &str) {
    sb.skill("fetcher", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: agent-loop
skill: fetcher
goal: Read the pages and update notes.txt.
model:
  provider: openai
  name: fake-model
  base_url: {base}
tools: [read, edit, web_fetch]
workspace: ws
skills_path: [skills]
permissions:
  default: deny
  allow: [read, edit, "web_fetch(http://{addr}/together/*)", "web_fetch(http://{addr}/docs/*)", "web_fetch(http://{addr}/slow)"]
{extra}"#,
            base = model.base_url(),
            addr = web.addr,
        ),
    );
}

fn run(sb: &Sandbox, env: &[(&str, &str)]) -> (std::process::Output, Vec<Value>) {
    JobRun::new(sb).junit().progress("plain").envs(env).traced()
}

/// The tool messages of the request that follows the turn with `first_id`, in order.
fn tool_messages(requests: &[Value], first_id: &str) -> Vec<(String, String)> {
    let request = requests
        .iter()
        .find(|r| {
            r["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["tool_call_id"] == first_id)
        })
        .expect("a request with the turn's results");
    let messages = request["messages"].as_array().unwrap();
    let start = messages
        .iter()
        .position(|m| m["tool_call_id"] == first_id)
        .unwrap();
    messages[start..]
        .iter()
        .take_while(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn fetch(id: &str, url: String) -> (String, String, Value) {
    (
        id.to_string(),
        "web_fetch".to_string(),
        json!({ "url": url }),
    )
}

fn turn(calls: Vec<(String, String, Value)>) -> Reply {
    Reply::tool_calls(
        calls
            .iter()
            .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
            .collect(),
    )
}

/// Six reads and two edits in one turn: the reads overlap (the server holds
/// every answer until all six requests are in, so one-by-one would hang
/// until the tool timeout), the edits run after them in the order given,
/// and the model gets all eight results in its order.
#[test]
fn reads_of_one_turn_overlap_and_every_result_comes_back_in_order() {
    let web = WebServer::start(6);
    let mut calls: Vec<_> = (1..=6)
        .map(|i| fetch(&format!("f{i}"), web.url(&format!("/together/{i}"))))
        .collect();
    calls.push((
        "e1".into(),
        "edit".into(),
        json!({"path": "notes.txt", "old_text": "one", "new_text": "two"}),
    ));
    calls.push((
        "e2".into(),
        "edit".into(),
        json!({"path": "notes.txt", "old_text": "two", "new_text": "three"}),
    ));
    let model = FakeModel::start(vec![
        Reply::plan(&[("Fetch and note", "notes.txt updated")]),
        turn(calls),
        Reply::step_done("noted"),
        Reply::text("Fetched six pages and updated the notes."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/notes.txt", "one\n");
    job(&sb, &model, &web, "tool_timeout: 20s\n");
    let started = Instant::now();
    let (out, trace) = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the reads did not overlap"
    );
    assert_eq!(web.site.answered.load(Ordering::SeqCst), 6);
    // Edits in order: `two` exists only after e1, so e2 worked only after it.
    assert_eq!(sb.read("ws/notes.txt"), "three\n");

    let results = tool_messages(&model.requests(), "f1");
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["f1", "f2", "f3", "f4", "f5", "f6", "e1", "e2"]);
    for (i, (_, text)) in results.iter().take(6).enumerate() {
        assert!(text.contains(&format!("Page {}", i + 1)), "{text}");
        assert!(
            text.contains("answered") && text.contains("together"),
            "{text}"
        );
        assert!(!text.contains("<h1>"), "HTML must be text: {text}");
    }

    let batches = events(&trace, "tool.batch.started");
    assert_eq!(batches.len(), 3, "{batches:?}");
    assert_eq!(
        batches[0]["call_ids"],
        json!(["f1", "f2", "f3", "f4", "f5", "f6"])
    );
    assert_eq!(batches[0]["parallel"], true);
    assert_eq!(batches[0]["max_parallel"], 8);
    assert_eq!(batches[1]["call_ids"], json!(["e1"]));
    assert_eq!(batches[1]["parallel"], false);
    assert_eq!(batches[2]["call_ids"], json!(["e2"]));
    let completed = events(&trace, "tool.batch.completed");
    assert_eq!(completed.len(), 3);
    assert_eq!(completed[0]["timed_out"], json!([]));
}

/// A call past its timeout gets `TIMEOUT` while the other call of its
/// batch finishes; the run goes on.
#[test]
fn a_call_past_its_timeout_times_out_while_the_others_finish() {
    let web = WebServer::start(1);
    let model = FakeModel::start(vec![
        Reply::plan(&[("Fetch", "pages read")]),
        turn(vec![
            fetch("slow", web.url("/slow")),
            fetch("fast", web.url("/docs/page")),
        ]),
        Reply::step_done("read what answered"),
        Reply::text("One page was too slow."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/notes.txt", "one\n");
    job(
        &sb,
        &model,
        &web,
        "tool_timeout: 30s\ntool_timeouts: {web_fetch: 1s}\n",
    );
    let started = Instant::now();
    let (out, trace) = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_took_less(
        started.elapsed(),
        Duration::from_secs(20),
        "the run with a 1s web_fetch timeout",
    );
    let results = tool_messages(&model.requests(), "slow");
    assert_eq!(results.len(), 2);
    assert!(
        results[0].1.starts_with("ERROR TIMEOUT"),
        "{}",
        results[0].1
    );
    assert!(results[0].1.contains("1s"), "{}", results[0].1);
    assert!(results[1].1.contains("first item"), "{}", results[1].1);
    let completed = events(&trace, "tool.batch.completed");
    assert_eq!(completed[0]["timed_out"], json!(["slow"]));
    assert_eq!(completed[0]["call_ids"], json!(["slow", "fast"]));
}

/// A URL no rule allows is denied before anything is fetched; a redirect
/// from an allowed page to a denied one is refused at the hop; a page a
/// rule allows is fetched as text, with the run's secrets masked.
#[test]
fn web_fetch_is_judged_on_the_url_every_hop_and_masks_secrets() {
    let web = WebServer::start(1);
    let model = FakeModel::start(vec![
        Reply::plan(&[("Fetch", "pages read")]),
        turn(vec![
            fetch("denied", web.url("/private/key")),
            fetch("hop", web.url("/docs/hop")),
            fetch("allowed", web.url("/docs/page")),
            fetch("file", "file:///etc/passwd".to_string()),
        ]),
        Reply::step_done("read the docs"),
        Reply::text("Read the docs page."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/notes.txt", "one\n");
    job(&sb, &model, &web, "secrets: [DOCS_TOKEN]\n");
    let (out, trace) = run(&sb, &[("DOCS_TOKEN", "s3cr3t-t0ken-value")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_messages(&model.requests(), "denied");
    let text = |i: usize| results[i].1.as_str();
    assert!(
        text(0).starts_with("ERROR PERMISSION_DENIED"),
        "{}",
        text(0)
    );
    assert!(
        text(0).contains("web_fetch(http://"),
        "names the allowed rules: {}",
        text(0)
    );
    assert!(
        text(1).starts_with("ERROR PERMISSION_DENIED"),
        "{}",
        text(1)
    );
    assert!(text(1).contains("redirected to"), "{}", text(1));
    assert!(text(2).contains("first item"), "{}", text(2));
    assert!(!text(2).contains("s3cr3t-t0ken-value"), "{}", text(2));
    assert!(text(3).starts_with("ERROR"), "{}", text(3));
    // Neither the denied page nor the redirect's target was ever requested.
    let mut hits = web.hits();
    hits.sort();
    assert_eq!(hits, ["/docs/hop", "/docs/page"]);
    let decisions = events(&trace, "permission.decision");
    assert_eq!(decisions[0]["decision"], "deny");
    assert_eq!(decisions[1]["decision"], "allow");
    let raw = std::fs::read_to_string(sb.path().join("out/trace.jsonl")).unwrap();
    assert!(!raw.contains("s3cr3t-t0ken-value"));
}

fn read(id: &str, path: &str) -> (String, String, Value) {
    (id.to_string(), "read".to_string(), json!({ "path": path }))
}

/// The same call again and again: warned once (in the result and as a
/// warning event), then the step ends `failed` and the next step runs.
#[test]
fn a_repeating_model_is_warned_then_its_step_fails_and_the_run_goes_on() {
    let web = WebServer::start(1);
    let same = |i: usize| turn(vec![read(&format!("r{i}"), "notes.txt")]);
    let model = FakeModel::start(vec![
        Reply::plan(&[("Read the notes", "notes read"), ("Finish", "done")]),
        same(1),
        same(2),
        same(3),
        same(4),
        Reply::step_done("finished"),
        Reply::text("Read the notes; got stuck once."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/notes.txt", "one\n");
    job(&sb, &model, &web, "");
    let (out, trace) = run(&sb, &[]);
    // The run goes on to the next step, and fails at the end: a step
    // failed, and the job has no checks to show otherwise.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let requests = model.requests();
    assert!(tool_messages(&requests, "r2")[0].1.contains("one"));
    let warned = &tool_messages(&requests, "r3")[0].1;
    assert!(warned.starts_with("ERROR LOOP_DETECTED"), "{warned}");
    assert!(warned.contains("3rd time"), "{warned}");
    let warnings: Vec<_> = events(&trace, "warning")
        .into_iter()
        .filter(|w| w["source"] == "loop_guard")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let steps = events(&trace, "step.completed");
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["status"], "failed");
    assert!(
        steps[0]["summary"]
            .as_str()
            .unwrap()
            .contains("repeating itself"),
        "{}",
        steps[0]
    );
    assert_eq!(steps[1]["status"], "done");
    let junit = std::fs::read_to_string(sb.path().join("out/junit.xml")).unwrap();
    assert!(junit.contains("repeating itself"), "{junit}");
}

/// A cycle of turns (A, B, A, B) is caught although no single call was
/// repeated `repeats` times.
#[test]
fn a_cycle_of_turns_is_caught() {
    let web = WebServer::start(1);
    let model = FakeModel::start(vec![
        Reply::plan(&[("Read", "read")]),
        turn(vec![read("a1", "a.txt")]),
        turn(vec![read("b1", "b.txt")]),
        turn(vec![read("a2", "a.txt")]),
        turn(vec![read("b2", "b.txt")]),
        turn(vec![read("a3", "a.txt")]),
        Reply::text("Went round in circles."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/notes.txt", "one\n");
    sb.write("ws/a.txt", "a\n");
    sb.write("ws/b.txt", "b\n");
    job(&sb, &model, &web, "loop_guard: {repeats: 5}\n");
    let (out, trace) = run(&sb, &[]);
    // The step caught in the cycle failed, and the job has no checks.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let requests = model.requests();
    let warned = &tool_messages(&requests, "b2")[0].1;
    assert!(warned.contains("cycle"), "{warned}");
    let steps = events(&trace, "step.completed");
    assert_eq!(steps[0]["status"], "failed");
    assert!(steps[0]["summary"].as_str().unwrap().contains("cycle"));
}

/// One call of a generated batch and what its result must be.
#[derive(Clone, Debug)]
enum Kind {
    ReadOk,
    ReadMissing,
    BadArguments,
    UnknownTool,
    /// A web server that accepts the connection and never answers.
    FetchHangs,
    /// Mutating: runs alone, in order.
    Exec,
}

fn kind() -> impl proptest::strategy::Strategy<Value = Kind> {
    proptest::prop_oneof![
        proptest::strategy::Just(Kind::ReadOk),
        proptest::strategy::Just(Kind::ReadMissing),
        proptest::strategy::Just(Kind::BadArguments),
        proptest::strategy::Just(Kind::UnknownTool),
        proptest::strategy::Just(Kind::FetchHangs),
        proptest::strategy::Just(Kind::Exec),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// For any batch with some failures and timeouts, every call gets
    /// exactly one result, in the order the model made the calls.
    #[test]
    fn every_call_of_any_batch_gets_its_own_result_in_order(
        kinds in proptest::collection::vec(kind(), 1..10),
        max_parallel in 1usize..4,
    ) {
        use agentci::agent::batch::{BatchEnv, run_batch};
        use agentci::agent::loop_guard::LoopGuard;
        use agentci::agent::toolset::ToolSet;
        use agentci::event::bus::EventBus;
        use agentci::policy::PermissionPolicy;
        use agentci::provider::ToolCall;
        use agentci::policy::{DefaultDecision, PermissionRules};
        use agentci::job::ToolLoopSpec;
        use agentci::tools::{ToolContext, ToolLimits, Workspace};

        let dir = tempfile::tempdir().unwrap();
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let hang_url = format!("http://{}/never", silent.local_addr().unwrap());
        let calls: Vec<ToolCall> = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| {
                std::fs::write(dir.path().join(format!("f{i}.txt")), format!("content-{i}\n")).unwrap();
                let (name, args) = match k {
                    Kind::ReadOk => ("read", json!({"path": format!("f{i}.txt")})),
                    Kind::ReadMissing => ("read", json!({"path": format!("missing{i}.txt")})),
                    Kind::BadArguments => ("read", json!({"path": i})),
                    Kind::UnknownTool => ("teleport", json!({})),
                    Kind::FetchHangs => ("web_fetch", json!({"url": format!("{hang_url}?{i}")})),
                    Kind::Exec => ("exec", json!({"command": format!("echo out-{i}")})),
                };
                ToolCall { id: format!("c{i}"), name: name.into(), arguments: args.to_string() }
            })
            .collect();
        let tools = ToolSet::new(
            Some(&["read".to_string(), "exec".to_string(), "web_fetch".to_string()]),
            None,
        );
        // The loopback test server is reached only where a rule names its host.
        let policy = PermissionPolicy::new(&PermissionRules {
            default: DefaultDecision::Allow,
            allow: vec![agentci::policy::ToolPattern::parse("web_fetch(http://127.0.0.1:*/**)").unwrap()],
            deny: vec![],
        });
        let ctx = ToolContext {
            workspace: Workspace::new(dir.path()).unwrap(),
            limits: ToolLimits::default(),
            processes: Default::default(),
            secrets: Default::default(),
            access: Default::default(),
            fetch_policy: Some(std::sync::Arc::new(policy.clone())),
        };
        let mut tool_loop = ToolLoopSpec { max_parallel_tools: max_parallel, ..Default::default() };
        tool_loop.tool_timeouts.insert("web_fetch".into(), Duration::from_millis(200));
        let bus = EventBus::new("r", Vec::new());
        let batches = std::sync::atomic::AtomicU64::new(0);
        let env = BatchEnv {
            tools: &tools,
            policy: &policy,
            ctx: &ctx,
            bus: &bus,
            read_only_phase: false,
            tool_loop: &tool_loop,
            batches: &batches,
            tasks: None,
        };
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let mut guard = LoopGuard::new(100);
        let batch = runtime.block_on(run_batch(&env, &calls, &mut guard));
        let results = &batch.results;

        proptest::prop_assert_eq!(results.len(), calls.len());
        // Refused calls are not counted as run; failing and timed-out ones are.
        let admitted = kinds
            .iter()
            .filter(|k| !matches!(k, Kind::BadArguments | Kind::UnknownTool))
            .count();
        proptest::prop_assert_eq!(batch.ran, admitted);
        for (i, (k, result)) in kinds.iter().zip(results).enumerate() {
            let code = result.error.map(|c| c.as_str());
            let text = result.model_text();
            match k {
                Kind::ReadOk => proptest::prop_assert!(text.contains(&format!("content-{i}")), "{}", text),
                Kind::ReadMissing => proptest::prop_assert_eq!(code, Some("NOT_FOUND")),
                Kind::BadArguments => proptest::prop_assert_eq!(code, Some("INVALID_ARGUMENT")),
                Kind::UnknownTool => proptest::prop_assert_eq!(code, Some("UNKNOWN_TOOL")),
                Kind::FetchHangs => proptest::prop_assert_eq!(code, Some("TIMEOUT")),
                Kind::Exec => proptest::prop_assert!(text.contains(&format!("out-{i}")), "{}", text),
            }
        }
        drop(silent);
    }
}

/// Every new key a user can get wrong is reported at its own line, with the fix.
#[test]
fn wrong_tool_loop_keys_are_reported_where_they_are() {
    let sb = Sandbox::new();
    sb.skill("fetcher", None);
    sb.write(
        "job.yaml",
        "version: 1\nname: keys\nskill: fetcher\ngoal: Check the keys.\nworkspace: ws\n\
         skills_path: [skills]\nmax_parallel_tools: 0\ntool_timeout: soon\n\
         tool_timeouts: {teleport: 10s, exec: -1}\nloop_guard: {repeats: 1}\n",
    );
    let out = sb.agentci(&["validate", "job.yaml"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2), "{text}");
    for (line, words) in [
        (
            7,
            "`max_parallel_tools` must be a whole number from 1 to 64",
        ),
        (8, "`tool_timeout`"),
        (9, "`tool_timeouts` names `teleport`, which is not a tool"),
        (9, "`tool_timeouts.exec`"),
        (10, "`loop_guard.repeats` must be at least 2"),
    ] {
        assert!(
            text.lines()
                .any(|l| l.contains(&format!("job.yaml:{line}:")) && l.contains(words)),
            "line {line}: {words}\n{text}"
        );
    }
}

/// The agent's checklist: kept across calls, recorded in the trace, shown in
/// the plain progress log and in the GitHub step summary.
#[test]
fn todo_is_the_agents_checklist_shown_in_the_log_and_the_step_summary() {
    let todo = |id: &str, args: Value| (id.to_string(), "todo".to_string(), args);
    let model = FakeModel::start(vec![
        Reply::plan(&[("Work through the list", "all done")]),
        turn(vec![
            todo("t1", json!({"action": "add", "text": "read the notes"})),
            todo("t2", json!({"action": "add", "text": "write the answer"})),
            todo(
                "t3",
                json!({"action": "update", "id": 1, "status": "in_progress"}),
            ),
        ]),
        turn(vec![
            todo("t4", json!({"action": "update", "id": 1, "status": "done"})),
            todo("t5", json!({"action": "update", "id": 7, "status": "done"})),
        ]),
        Reply::step_done("worked through the list"),
        Reply::text("Read the notes."),
    ]);
    let sb = Sandbox::new();
    sb.write("ws/notes.txt", "one\n");
    sb.skill("lister", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: todo\nskill: lister\ngoal: Keep a list.\nmodel:\n  provider: openai\n  \
             name: fake-model\n  base_url: {}\ntools: [read, todo]\nworkspace: ws\nskills_path: [skills]\n\
             permissions:\n  default: deny\n  allow: [read, todo]\n",
            model.base_url()
        ),
    );
    let summary = sb.path().join("summary.md");
    let summary_text = summary.display().to_string();
    let (out, trace) = run(
        &sb,
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", &summary_text),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = model.requests();
    let first = tool_messages(&requests, "t1");
    assert!(
        first[2].1.contains("[~] 1. read the notes"),
        "{}",
        first[2].1
    );
    assert!(
        first[2].1.contains("[ ] 2. write the answer"),
        "{}",
        first[2].1
    );
    let second = tool_messages(&requests, "t4");
    assert!(
        second[0].1.contains("[x] 1. read the notes"),
        "{}",
        second[0].1
    );
    assert!(
        second[1].1.starts_with("ERROR INVALID_ARGUMENT: no item 7"),
        "{}",
        second[1].1
    );
    let results: Vec<_> = events(&trace, "tool.result")
        .into_iter()
        .filter(|r| r["tool"] == "todo" && r["ok"] == true)
        .collect();
    assert_eq!(
        results.last().unwrap()["data"]["items"][0]["status"],
        "done"
    );
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(log.contains("todo: 0/2 done, now: read the notes"), "{log}");
    assert!(log.contains("todo: 1/2 done"), "{log}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("- [x] read the notes\n- [ ] write the answer"),
        "{md}"
    );
}
