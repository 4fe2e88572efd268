//! OpenTelemetry export of a run (`telemetry.otlp`, `OTEL_EXPORTER_OTLP_*`):
//! the real binary against the fake model, exporting to an OTLP/HTTP
//! receiver on 127.0.0.1 that decodes what it gets with the official
//! `opentelemetry-proto` definitions; and a collector that cannot be
//! reached, which must change neither the result nor the exit code.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue as ProtoKeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, stderr};
use super::support::job::{JobBuilder, JobRun};
use super::support::server_thread::serve_on_thread;
use super::support::wait::assert_took_less;

#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    metrics: Vec<Metric>,
    /// The `x-team-key` header of each export.
    keys: Vec<String>,
}

/// An OTLP/HTTP receiver on 127.0.0.1 accepting `POST /v1/traces` (protobuf).
struct Receiver {
    addr: SocketAddr,
    received: Arc<Mutex<Received>>,
    _thread: std::thread::JoinHandle<()>,
}

impl Receiver {
    fn start() -> Receiver {
        Receiver::serve(
            axum::Router::new()
                .route("/v1/traces", post(traces))
                .route("/v1/metrics", post(metrics)),
        )
    }

    fn serve(app: axum::Router<Arc<Mutex<Received>>>) -> Receiver {
        let received = Arc::new(Mutex::new(Received::default()));
        let state = Arc::clone(&received);
        let (addr, thread) = serve_on_thread("127.0.0.1:0", |listener| async move {
            axum::serve(listener, app.with_state(state)).await.unwrap();
        });
        Receiver {
            addr,
            received,
            _thread: thread,
        }
    }

    fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn traces(
    State(received): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> ([(&'static str, &'static str); 1], Vec<u8>) {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf request");
    let mut received = received.lock().unwrap();
    if let Some(key) = headers.get("x-team-key") {
        received.keys.push(key.to_str().unwrap().to_string());
    }
    for resource in request.resource_spans {
        for scope in resource.scope_spans {
            received.spans.extend(scope.spans);
        }
    }
    let answer = ExportTraceServiceResponse::default().encode_to_vec();
    ([("content-type", "application/x-protobuf")], answer)
}

async fn metrics(
    State(received): State<Arc<Mutex<Received>>>,
    body: Bytes,
) -> ([(&'static str, &'static str); 1], Vec<u8>) {
    let request = ExportMetricsServiceRequest::decode(body).expect("an OTLP protobuf request");
    let mut received = received.lock().unwrap();
    for resource in request.resource_metrics {
        for scope in resource.scope_metrics {
            received.metrics.extend(scope.metrics);
        }
    }
    let answer = ExportMetricsServiceResponse::default().encode_to_vec();
    ([("content-type", "application/x-protobuf")], answer)
}

/// A workspace with a typo, a skill and a job whose model is `base_url`.
fn sandbox(base_url: &str, telemetry: &str) -> Sandbox {
    JobBuilder::new("fix-greeting", "fixer", base_url)
        .model_extra(
            "  retry: {initial_backoff: 1ms}\n  price: {input_per_mtok: 2, output_per_mtok: 8}\n",
        )
        .file("ws/greeting.txt", "hello wrold\n")
        .tools("[read, edit, exec, task]")
        .body(&format!(
            r#"permissions:
  default: deny
  allow: [read, "edit(*.txt)", task]
checks:
  - name: greeting fixed
    run: grep -q "hello world" greeting.txt
  - name: greeting shouted
    run: grep -q "HELLO" greeting.txt
{telemetry}"#
        ))
        .write()
}

/// The sub-agent's conversation: its first message holds this.
const LANE: &str = "LANE-CHECK";

/// One step: a rate-limited answer retried, an edit, a sub-agent that
/// reads the file, a denied `exec`.
fn script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Fix the typo", "greeting.txt says hello world")]),
        Reply::rate_limited("0"),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        )])
        .with_usage(120, 30),
        Reply::tool_calls(vec![(
            "call_task",
            "task",
            json!({"prompt": format!("{LANE} Does greeting.txt say hello world?"), "kind": "explore"}),
        )]),
        Reply::tool_calls(vec![(
            "call_sub_read",
            "read",
            json!({"path": "greeting.txt"}),
        )])
        .in_lane(LANE),
        Reply::text("Yes, it says hello world.").in_lane(LANE),
        Reply::tool_calls(vec![("call_push", "exec", json!({"command": "git push"}))]),
        Reply::step_done("fixed the typo"),
        Reply::text("Fixed the typo."),
    ]
}

fn run(sb: &Sandbox, env: &[(&str, &str)]) -> (std::process::Output, Vec<Value>) {
    JobRun::new(sb).progress("plain").envs(env).traced()
}

fn text(value: &Any) -> String {
    match value {
        Any::StringValue(s) => s.clone(),
        Any::IntValue(n) => n.to_string(),
        Any::DoubleValue(x) => x.to_string(),
        Any::BoolValue(b) => b.to_string(),
        Any::ArrayValue(a) => format!(
            "[{}]",
            a.values
                .iter()
                .filter_map(|v| v.value.as_ref().map(text))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => format!("{other:?}"),
    }
}

/// Each span as `parent > name {attributes}`, sorted: what the snapshot
/// holds. Ids and times are left out; the run's id is redacted.
fn summary(spans: &[Span]) -> String {
    let names: HashMap<&[u8], &str> = spans
        .iter()
        .map(|s| (s.span_id.as_slice(), s.name.as_str()))
        .collect();
    let mut lines: Vec<String> = spans
        .iter()
        .map(|span| {
            let parent = if span.parent_span_id.is_empty() {
                "(root)"
            } else {
                names
                    .get(span.parent_span_id.as_slice())
                    .copied()
                    .unwrap_or("(unknown parent)")
            };
            let mut attributes: BTreeMap<String, String> = span
                .attributes
                .iter()
                .map(|kv| {
                    let value = kv.value.as_ref().and_then(|v| v.value.as_ref()).map(text);
                    (kv.key.clone(), value.unwrap_or_default())
                })
                .collect();
            if attributes.contains_key("agentci.run.id") {
                attributes.insert("agentci.run.id".into(), "[run id]".into());
            }
            let status = span.status.as_ref().map_or(0, |s| s.code);
            let events: Vec<&str> = span.events.iter().map(|e| e.name.as_str()).collect();
            let attributes: Vec<String> =
                attributes.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!(
                "{parent} > {} [status {status}] events {events:?}\n    {}",
                span.name,
                attributes.join("\n    ")
            )
        })
        .collect();
    lines.sort();
    lines.join("\n")
}

#[test]
fn a_run_is_exported_as_one_trace_of_genai_spans_nested_as_it_ran() {
    let receiver = Receiver::start();
    let model = FakeModel::start(script());
    let telemetry = format!(
        "telemetry:\n  otlp:\n    endpoint: {}\n    protocol: http/protobuf\n    headers: {{x-team-key: team-123}}\n",
        receiver.base_url()
    );
    let sb = sandbox(&model.base_url(), &telemetry);
    let (out, trace) = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        events(&trace, "model.retry").len() == 1,
        "a retry was scripted"
    );
    assert!(
        events(&trace, "warning")
            .iter()
            .all(|w| w["source"] != "telemetry"),
        "the receiver took every export"
    );

    let received = receiver.received.lock().unwrap();
    assert!(!received.keys.is_empty());
    assert!(received.keys.iter().all(|k| k == "team-123"));
    let spans = &received.spans;
    let trace_ids: std::collections::BTreeSet<&Vec<u8>> =
        spans.iter().map(|s| &s.trace_id).collect();
    assert_eq!(trace_ids.len(), 1, "one run, one trace");
    for span in spans {
        assert!(
            span.end_time_unix_nano >= span.start_time_unix_nano,
            "{}",
            span.name
        );
    }
    // Message content never leaves the run.
    let all = format!("{spans:?}");
    assert!(
        !all.contains("Fix the typo in greeting"),
        "the goal was exported"
    );
    assert!(
        !all.contains("Fixed the typo."),
        "the final text was exported"
    );
    insta::assert_snapshot!(summary(spans));
}

#[test]
fn an_unreachable_collector_is_one_warning_and_changes_neither_result_nor_exit_code() {
    let without = {
        let model = FakeModel::start(script());
        let sb = sandbox(&model.base_url(), "");
        let (out, trace) = run(&sb, &[]);
        (out.status.code(), trace.last().unwrap()["status"].clone())
    };
    // A port nothing listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let model = FakeModel::start(script());
    let sb = sandbox(&model.base_url(), "");
    let endpoint = format!("http://{closed}");
    let started = std::time::Instant::now();
    let (out, trace) = run(&sb, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]);
    assert_eq!(
        (out.status.code(), trace.last().unwrap()["status"].clone()),
        without,
        "{}",
        stderr(&out)
    );
    assert_eq!(without.0, Some(1));
    let warnings: Vec<&Value> = events(&trace, "warning")
        .into_iter()
        .filter(|w| w["source"] == "telemetry")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(message.contains(&endpoint), "{message}");
    assert!(message.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{message}");
    assert_took_less(
        started.elapsed(),
        std::time::Duration::from_secs(20),
        "the run with an unreachable collector",
    );
}

#[test]
fn validate_refuses_a_protocol_not_taken_and_names_the_two_that_are() {
    let sb = sandbox(
        "http://127.0.0.1:9/v1",
        "telemetry:\n  otlp:\n    endpoint: http://127.0.0.1:4318\n    protocol: http/json\n",
    );
    let out = sb.agentci(&["validate", "job.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let all = format!("{}{}", stderr(&out), super::support::harness::stdout(&out));
    assert!(
        all.contains("`http/json`; use `http/protobuf` (the collector's port 4318) or `grpc`"),
        "{all}"
    );
    assert!(all.contains("job.yaml:25"), "placed at its line: {all}");
}

#[test]
fn trace_export_sends_the_same_spans_a_live_export_made() {
    let live = Receiver::start();
    let model = FakeModel::start(script());
    let telemetry = format!("telemetry:\n  otlp:\n    endpoint: {}\n", live.base_url());
    let sb = sandbox(&model.base_url(), &telemetry);
    let (out, _) = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));

    let later = Receiver::start();
    let endpoint = later.base_url();
    let out = sb.agentci(&["trace", "export", "--otlp", &endpoint, "out/trace.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        super::support::harness::stdout(&out).contains("/v1/traces"),
        "says where the spans went"
    );
    let live_spans = summary(&live.received.lock().unwrap().spans);
    let exported = summary(&later.received.lock().unwrap().spans);
    assert!(!exported.is_empty());
    assert_eq!(exported, live_spans);
}

#[test]
fn trace_export_of_a_run_cut_short_ends_every_span_and_marks_the_run_unfinished() {
    let model = FakeModel::start(script());
    let sb = sandbox(&model.base_url(), "");
    run(&sb, &[]);
    let full = std::fs::read_to_string(sb.path().join("out/trace.jsonl")).unwrap();
    let cut: Vec<&str> = full
        .lines()
        .take_while(|line| !line.contains("\"check.completed\""))
        .collect();
    sb.write("out/cut.jsonl", &(cut.join("\n") + "\n"));

    let receiver = Receiver::start();
    let out = agentci_in(
        sb.path(),
        &["trace", "export", "out/cut.jsonl"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.base_url())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let received = receiver.received.lock().unwrap();
    let run = received
        .spans
        .iter()
        .find(|s| s.name.starts_with("invoke_agent"))
        .expect("the run's span");
    let status = run
        .attributes
        .iter()
        .find(|kv| kv.key == "agentci.run.status")
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .map(text);
    assert_eq!(status.as_deref(), Some("unfinished"));
    assert!(received.spans.iter().any(|s| s.name.starts_with("chat ")));
    assert!(!received.spans.iter().any(|s| s.name.starts_with("check ")));
}

#[test]
fn trace_export_names_the_missing_or_unreachable_collector() {
    let model = FakeModel::start(script());
    let sb = sandbox(&model.base_url(), "");
    run(&sb, &[]);
    let out = sb.agentci(&["trace", "export", "out/trace.jsonl"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("give --otlp URL"), "{}", stderr(&out));

    let out = sb.agentci(&["trace", "export", "--otlp", "ftp://x", "out/trace.jsonl"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--otlp:"), "{}", stderr(&out));

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let endpoint = format!("http://{closed}");
    let out = sb.agentci(&["trace", "export", "--otlp", &endpoint, "out/trace.jsonl"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot be reached"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--otlp"), "{}", stderr(&out));
}

/// The CI job's span a run or an evaluation nests under.
const CI_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CI_SPAN: &str = "00f067aa0ba902b7";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `parent name > name [outcome]` for the spans `keep` selects, sorted; the
/// CI job's span is `(ci)`.
fn tree(spans: &[Span], keep: impl Fn(&Span) -> bool) -> String {
    let names: HashMap<&[u8], &str> = spans
        .iter()
        .map(|s| (s.span_id.as_slice(), s.name.as_str()))
        .collect();
    let mut lines: Vec<String> = spans
        .iter()
        .filter(|s| keep(s))
        .map(|span| {
            let parent = match names.get(span.parent_span_id.as_slice()) {
                Some(name) => name.to_string(),
                None if hex(&span.parent_span_id) == CI_SPAN => "(ci)".to_string(),
                None => "(none)".to_string(),
            };
            let outcome = span
                .attributes
                .iter()
                .find(|kv| kv.key == "agentci.eval.outcome" || kv.key == "agentci.run.status")
                .and_then(|kv| kv.value.as_ref()?.value.as_ref())
                .map(text)
                .unwrap_or_default();
            format!("{parent} > {} [{outcome}]", span.name)
        })
        .collect();
    lines.sort();
    lines.join("\n")
}

#[test]
fn an_eval_is_one_trace_its_attempts_spans_above_their_runs_under_the_ci_job() {
    let sandbox = super::eval::notes_sandbox();
    sandbox.write(
        "telemetry.yaml",
        "version: 1\nname: notes\njob: job.yaml\ncases:\n  - name: steady\n    fixture: fixture\n    \
         cassettes: [cassettes/good.jsonl, cassettes/bad.jsonl]\n    assert:\n      - file_contains: \
         {path: notes.txt, pattern: 'status: fixed'}\n",
    );
    let receiver = Receiver::start();
    let out = agentci_in(
        sandbox.path(),
        &[
            "eval",
            "telemetry.yaml",
            "--repeat",
            "2",
            "--jobs",
            "1",
            "--min-pass-rate",
            "0",
            "--out",
            "out",
            "--progress",
            "none",
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.base_url()),
            ("TRACEPARENT", &format!("00-{CI_TRACE}-{CI_SPAN}-01")),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("telemetry"), "{}", stderr(&out));
    let received = receiver.received.lock().unwrap();
    let spans = &received.spans;
    assert!(
        spans.iter().all(|s| hex(&s.trace_id) == CI_TRACE),
        "the evaluation is one trace, the CI job's"
    );
    insta::assert_snapshot!(tree(spans, |s| s.name.starts_with("eval")
        || s.name.starts_with("invoke_agent")));
}

#[test]
fn the_git_step_is_a_span_of_the_run_and_a_run_nests_under_traceparent() {
    let receiver = Receiver::start();
    let model = FakeModel::start(vec![
        Reply::plan(&[("Fix the typo", "greeting.txt says hello world")]),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        )]),
        Reply::step_done("fixed"),
        Reply::text("Fixed the typo."),
    ]);
    let sb = sandbox(
        &model.base_url(),
        "outputs: {patch: changes.patch, commit: {branch: agentci/fix, on_failure: true}}\n",
    );
    super::git_output::init_repo(&sb.path().join("ws"), &[("greeting.txt", "hello wrold\n")]);
    let (out, trace) = run(
        &sb,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.base_url()),
            ("TRACEPARENT", &format!("00-{CI_TRACE}-{CI_SPAN}-01")),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(events(&trace, "git.commit").len(), 1);
    let received = receiver.received.lock().unwrap();
    let spans = &received.spans;
    assert!(spans.iter().all(|s| hex(&s.trace_id) == CI_TRACE));
    insta::assert_snapshot!(tree(spans, |s| !s.name.starts_with("chat ")
        && !s.name.starts_with("execute_tool")));
    let git = spans.iter().find(|s| s.name == "git").expect("a git span");
    let keys: Vec<&str> = git.attributes.iter().map(|kv| kv.key.as_str()).collect();
    for key in [
        "agentci.git.patch",
        "agentci.git.files_changed",
        "vcs.ref.head.name",
        "vcs.ref.head.revision",
    ] {
        assert!(keys.contains(&key), "{key} in {keys:?}");
    }
}

/// A run exporting to a fresh receiver with the variable `name` set to
/// `value` as well, and the warnings in its trace that mention `about`.
fn exported_with(name: &str, value: &str, about: &str) -> (Receiver, Vec<Value>) {
    let receiver = Receiver::start();
    let model = FakeModel::start(script());
    let sb = sandbox(&model.base_url(), "");
    let (out, trace) = run(
        &sb,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.base_url()),
            (name, value),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let warnings = events(&trace, "warning")
        .into_iter()
        .filter(|w| w["message"].as_str().unwrap_or("").contains(about))
        .cloned()
        .collect();
    (receiver, warnings)
}

#[test]
fn a_traceparent_that_cannot_be_read_is_a_warning_and_the_run_a_trace_of_its_own() {
    let (receiver, warnings) = exported_with("TRACEPARENT", "not-a-traceparent", "TRACEPARENT");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let received = receiver.received.lock().unwrap();
    let run = received
        .spans
        .iter()
        .find(|s| s.name.starts_with("invoke_agent"))
        .unwrap();
    assert!(run.parent_span_id.is_empty(), "the run is a root span");
}

fn labels(attributes: &[ProtoKeyValue]) -> String {
    let mut pairs: Vec<String> = attributes
        .iter()
        .map(|kv| {
            let value = kv.value.as_ref().and_then(|v| v.value.as_ref()).map(text);
            format!("{}={}", kv.key, value.unwrap_or_default())
        })
        .collect();
    pairs.sort();
    pairs.join(" ")
}

/// Each data point as `name{labels} = value`, sorted: sums for counters,
/// counts (and token sums) for histograms; durations vary, so only their
/// counts are shown.
fn metric_points(metrics: &[Metric]) -> String {
    let mut lines = Vec::new();
    for metric in metrics {
        match &metric.data {
            Some(Data::Sum(sum)) => {
                for point in &sum.data_points {
                    let value = match point.value {
                        Some(Number::AsInt(n)) => n.to_string(),
                        Some(Number::AsDouble(x)) => format!("{x:.6}"),
                        None => "-".to_string(),
                    };
                    lines.push(format!(
                        "{} [{}] {{{}}} = {value}",
                        metric.name,
                        metric.unit,
                        labels(&point.attributes)
                    ));
                }
            }
            Some(Data::Histogram(histogram)) => {
                for point in &histogram.data_points {
                    let sum = if metric.unit == "s" {
                        String::new()
                    } else {
                        format!(" sum {}", point.sum.unwrap_or_default())
                    };
                    lines.push(format!(
                        "{} [{}] {{{}}} = count {}{sum}",
                        metric.name,
                        metric.unit,
                        labels(&point.attributes),
                        point.count
                    ));
                }
            }
            other => lines.push(format!("{}: unexpected {other:?}", metric.name)),
        }
    }
    lines.sort();
    lines.join("\n")
}

#[test]
fn a_run_sends_its_metrics_to_the_same_collector() {
    let receiver = Receiver::start();
    let model = FakeModel::start(script());
    let sb = sandbox(&model.base_url(), "");
    let (out, trace) = run(
        &sb,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.base_url())],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let totals = &trace.last().unwrap()["totals"];
    let received = receiver.received.lock().unwrap();
    let points = metric_points(&received.metrics);
    let input: u64 = totals["input_tokens"].as_u64().unwrap();
    assert!(
        points.contains("gen_ai.token.type=input} = count"),
        "{points}"
    );
    let input_sum: f64 = received
        .metrics
        .iter()
        .filter(|m| m.name == "gen_ai.client.token.usage")
        .filter_map(|m| match &m.data {
            Some(Data::Histogram(h)) => Some(h.data_points.clone()),
            _ => None,
        })
        .flatten()
        .filter(|p| labels(&p.attributes).contains("gen_ai.token.type=input"))
        .map(|p| p.sum.unwrap_or_default())
        .sum();
    assert_eq!(input_sum as u64, input, "the tokens add up to the run's");
    insta::assert_snapshot!(points);
}

#[test]
fn metrics_are_not_sent_where_only_a_traces_endpoint_is_named() {
    let receiver = Receiver::start();
    let model = FakeModel::start(script());
    let sb = sandbox(&model.base_url(), "");
    let url = format!("{}/v1/traces", receiver.base_url());
    run(&sb, &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &url)]);
    let received = receiver.received.lock().unwrap();
    assert!(!received.spans.is_empty());
    assert!(received.metrics.is_empty());
}

/// The value of `key` on `span`, as text.
fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .map(text)
}

#[test]
fn message_content_is_exported_only_when_asked_and_masked() {
    const SECRET: &str = "sk-telemetry-very-secret-key";
    let receiver = Receiver::start();
    let mut replies = script();
    // The model repeats the key it should never have seen: the span gets the mask.
    let last = replies.len() - 1;
    replies[last] = Reply::text(&format!("Fixed the typo. Key: {SECRET}"));
    let model = FakeModel::start(replies);
    let telemetry = format!(
        "telemetry:\n  content: true\n  otlp: {{endpoint: {}}}\n",
        receiver.base_url()
    );
    let sb = sandbox(&model.base_url(), &telemetry);
    let (out, _) = run(&sb, &[("OPENAI_API_KEY", SECRET)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let received = receiver.received.lock().unwrap();
    let spans = &received.spans;
    assert!(
        !format!("{spans:?}").contains(SECRET),
        "the key was exported"
    );

    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    let first = chats.iter().min_by_key(|s| s.start_time_unix_nano).unwrap();
    let input = attribute(first, "gen_ai.input.messages").expect("input messages");
    let input: Value = serde_json::from_str(&input).unwrap();
    assert_eq!(input[0]["role"], "user");
    assert!(
        input[0]["parts"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Fix the typo in greeting.txt"),
        "{input}"
    );
    assert!(attribute(first, "gen_ai.system_instructions").is_some());
    let answered: Vec<String> = chats
        .iter()
        .filter_map(|s| attribute(s, "gen_ai.output.messages"))
        .collect();
    assert!(
        answered
            .iter()
            .any(|m| m.contains("Fixed the typo. Key: ***")),
        "{answered:?}"
    );
    let edit = spans
        .iter()
        .find(|s| s.name == "execute_tool edit")
        .unwrap();
    let arguments = attribute(edit, "gen_ai.tool.call.arguments").unwrap();
    assert!(arguments.contains("wrold"), "{arguments}");
    assert!(attribute(edit, "gen_ai.tool.call.result").is_some());
}

/// An OTLP/gRPC receiver on 127.0.0.1: the collector's two `Export` methods
/// over HTTP/2 (h2c), messages framed as the gRPC wire format says
/// (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md: a
/// compressed flag, a 4-byte big-endian length, the message; the status in
/// the `grpc-status` trailer). A request that is not `application/grpc` is
/// refused, as a gRPC server does.
fn grpc_receiver() -> Receiver {
    use axum::body::Body;
    use axum::http::{HeaderMap as Headers, Response, StatusCode};
    use http_body::Frame;

    fn unframe(body: &[u8]) -> &[u8] {
        assert_eq!(body[0], 0, "uncompressed");
        let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
        assert_eq!(body.len(), 5 + len, "one message per call");
        &body[5..]
    }

    fn answer(message: Vec<u8>) -> Response<Body> {
        let mut framed = vec![0u8];
        framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
        framed.extend_from_slice(&message);
        let mut trailers = Headers::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        let frames: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = vec![
            Ok(Frame::data(Bytes::from(framed))),
            Ok(Frame::trailers(trailers)),
        ];
        Response::builder()
            .header("content-type", "application/grpc")
            .body(Body::new(http_body_util::StreamBody::new(
                futures_util::stream::iter(frames),
            )))
            .unwrap()
    }

    fn is_grpc(headers: &Headers) -> bool {
        headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/grpc"))
    }

    async fn traces(
        State(received): State<Arc<Mutex<Received>>>,
        headers: Headers,
        body: Bytes,
    ) -> Response<Body> {
        if !is_grpc(&headers) {
            return Response::builder()
                .status(StatusCode::UNSUPPORTED_MEDIA_TYPE)
                .body(Body::empty())
                .unwrap();
        }
        let request = ExportTraceServiceRequest::decode(unframe(&body)).unwrap();
        let mut received = received.lock().unwrap();
        if let Some(key) = headers.get("x-team-key") {
            received.keys.push(key.to_str().unwrap().to_string());
        }
        for resource in request.resource_spans {
            for scope in resource.scope_spans {
                received.spans.extend(scope.spans);
            }
        }
        answer(ExportTraceServiceResponse::default().encode_to_vec())
    }

    async fn metrics(
        State(received): State<Arc<Mutex<Received>>>,
        headers: Headers,
        body: Bytes,
    ) -> Response<Body> {
        if !is_grpc(&headers) {
            return Response::builder()
                .status(StatusCode::UNSUPPORTED_MEDIA_TYPE)
                .body(Body::empty())
                .unwrap();
        }
        let request = ExportMetricsServiceRequest::decode(unframe(&body)).unwrap();
        let mut received = received.lock().unwrap();
        for resource in request.resource_metrics {
            for scope in resource.scope_metrics {
                received.metrics.extend(scope.metrics);
            }
        }
        answer(ExportMetricsServiceResponse::default().encode_to_vec())
    }

    Receiver::serve(
        axum::Router::new()
            .route(
                "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                post(traces),
            )
            .route(
                "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
                post(metrics),
            ),
    )
}

#[test]
fn grpc_export_sends_the_same_spans_and_the_metrics() {
    let http = Receiver::start();
    let model = FakeModel::start(script());
    let sb = sandbox(
        &model.base_url(),
        &format!("telemetry:\n  otlp: {{endpoint: {}}}\n", http.base_url()),
    );
    run(&sb, &[]);

    let grpc = grpc_receiver();
    let model = FakeModel::start(script());
    let sb = sandbox(
        &model.base_url(),
        &format!(
            "telemetry:\n  otlp:\n    endpoint: {}\n    protocol: grpc\n    headers: {{X-Team-Key: team-123}}\n",
            grpc.base_url()
        ),
    );
    let (out, trace) = run(&sb, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        events(&trace, "warning")
            .iter()
            .all(|w| w["source"] != "telemetry"),
        "{trace:?}"
    );
    let received = grpc.received.lock().unwrap();
    assert!(received.keys.iter().all(|k| k == "team-123") && !received.keys.is_empty());
    assert_eq!(
        summary(&received.spans),
        summary(&http.received.lock().unwrap().spans)
    );
    assert!(
        received.metrics.iter().any(|m| m.name == "agentci.runs"),
        "metrics over gRPC too"
    );
}

#[test]
fn an_unreachable_grpc_collector_is_one_warning_and_changes_nothing() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let model = FakeModel::start(script());
    let sb = sandbox(&model.base_url(), "");
    let endpoint = format!("http://{closed}");
    let started = std::time::Instant::now();
    let (out, trace) = run(
        &sb,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let warnings: Vec<&Value> = events(&trace, "warning")
        .into_iter()
        .filter(|w| w["source"] == "telemetry")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]["message"].as_str().unwrap().contains("gRPC"),
        "{warnings:?}"
    );
    assert_took_less(
        started.elapsed(),
        std::time::Duration::from_secs(20),
        "the run with an unreachable collector",
    );
}

#[test]
fn a_resumed_run_is_a_span_of_its_own_with_its_step_and_calls_beneath_it() {
    let receiver = Receiver::start();
    let model = FakeModel::start(vec![
        Reply::plan(&[("write a", "a.txt exists"), ("write b", "b.txt exists")]),
        Reply::tool_call("write", json!({"path": "a.txt", "content": "one\n"})),
        Reply::step_done("wrote a"),
        Reply::tool_call("write", json!({"path": "b.txt", "content": "two\n"})),
        Reply::step_done("wrote b"),
        Reply::text("Both files are written."),
    ]);
    let sb = Sandbox::new();
    sb.skill("writer", None);
    sb.write(
        "job.yaml",
        "name: two-files\nskill: writer\ngoal: Write a.txt and b.txt.\nworkspace: ws\n\
         skills_path: [skills]\nmodel: {provider: openai, name: fake-model}\n\
         tools: [read, write]\npermissions: {default: allow}\nbudget: {max_turns: 3}\n\
         checks:\n  - {name: both written, run: 'test -f a.txt && test -f b.txt'}\n",
    );
    let url = model.base_url();
    let endpoint = receiver.base_url();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];
    let mut args = vec!["run", "job.yaml", "--base-url", &url, "--progress", "none"];
    args.extend(["--out", "out/run"]);
    let out = agentci_in(sb.path(), &args, &env);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    args.extend(["--resume", "out/run", "--max-turns", "10"]);
    let out = agentci_in(sb.path(), &args, &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let received = receiver.received.lock().unwrap();
    let spans = &received.spans;
    let runs: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent two-files")
        .collect();
    assert_eq!(runs.len(), 2, "the stopped run and the resumed one");
    let resumed = runs
        .iter()
        .find(|s| attribute(s, "agentci.run.resumed").as_deref() == Some("true"))
        .expect("the resumed run's span");
    assert_eq!(
        attribute(resumed, "gen_ai.request.model").as_deref(),
        Some("fake-model")
    );
    assert_eq!(
        attribute(resumed, "agentci.run.status").as_deref(),
        Some("passed")
    );
    // Nothing of the resumed run is left without its run above it.
    let ids: std::collections::HashSet<&[u8]> =
        spans.iter().map(|s| s.span_id.as_slice()).collect();
    for span in spans.iter().filter(|s| !s.name.starts_with("invoke_agent")) {
        assert!(
            ids.contains(span.parent_span_id.as_slice()),
            "{} has no parent",
            span.name
        );
    }
    insta::assert_snapshot!(tree(spans, |s| s.trace_id == resumed.trace_id
        && !s.name.starts_with("execute_tool")));
}

#[test]
fn an_otlp_protocol_variable_not_taken_is_a_warning_and_http_protobuf_is_sent() {
    let (receiver, warnings) = exported_with(
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "http/json",
        "OTEL_EXPORTER_OTLP_PROTOCOL is `http/json`",
    );
    assert!(!warnings.is_empty(), "no warning about the protocol");
    assert!(!receiver.received.lock().unwrap().spans.is_empty());
}
