//! Attacks by the model server itself: an answer of any size, streamed or
//! not; an answer that trickles forever; a server that never answers; a
//! signal while a slow answer is read. Judged by the side effects on the
//! real binary: the agentci process's peak RSS (from `wait4`), its wall time
//! against `budget.timeout`, and the records (trace, JUnit) on disk.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::signals::signal_and_wait;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl};
use super::support::job::{JobBuilder, JobRun};
use super::support::trace_schema::assert_valid_trace;
use super::support::users::RunAs;
use super::support::wait::{HANG, wait_for};

const MIB: usize = 1024 * 1024;

/// How much more than a run with a short answer a run refusing a 16 MiB
/// answer may take at its peak (issue 38: 800 MB more before answers were
/// capped). A plain body costs the cap's buffer (some 17 MB); a stream some
/// 64 MB in a debug build, the text gathered up to the cap grown by
/// doubling and the event parser's copies. Measured against the same
/// binary, because a debug build's code alone is some 50 MB of RSS; the
/// `answer_cap` bench reports the absolute figure of a release build.
const RSS_GROWTH_LIMIT_KIB: i64 = 96 * 1024;

/// A job reading one file, with `model` appended inside the flow map of
/// `model:` and `body` at the end of the job.
fn sandbox(base_url: &str, model: &str, body: &str) -> Sandbox {
    JobBuilder::new("answers", "reader", base_url)
        .goal("Read the greeting.")
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: \"{base_url}\", \
             retry: {{initial_backoff: 10ms, max_backoff: 40ms}}{model}}}"
        ))
        .file("ws/greeting.txt", "hello\n")
        .tools("[read]")
        .body(&format!(
            "permissions: {{default: allow}}\nchecks:\n  - {{name: ok, run: 'true'}}\n{body}"
        ))
        .write()
}

/// An OpenAI chunk stream whose text is `total` bytes, in deltas of 64 KiB
/// (large deltas keep the fake's own memory small; the framing is
/// [Chat Completions streaming](https://platform.openai.com/docs/api-reference/chat/streaming)).
fn streamed_text(total: usize) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        let event = json!({"id": "chatcmpl-big", "object": "chat.completion.chunk", "created": 0,
                           "model": "fake-model",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {event}\n\n")
    };
    let piece = "x".repeat(64 * 1024);
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    events.extend((0..total / piece.len()).map(|_| chunk(json!({"content": piece}), Value::Null)));
    events.push(chunk(json!({}), json!("stop")));
    events.push("data: [DONE]\n\n".to_string());
    events
}

/// How a run ended, measured from outside.
struct Ended {
    code: i32,
    stderr: String,
    /// Peak resident set of the agentci process (`ru_maxrss`), in KiB.
    peak_rss_kib: i64,
    took: Duration,
}

/// Runs `command` to its end and measures it with `wait4`, which reports
/// the peak RSS of that one child (not of every child the tests started).
fn measured(mut command: Command) -> Ended {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let pid = i32::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; both pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let took = started.elapsed();
    // `wait4` reaped it; `Child` must not wait again.
    std::mem::forget(child);
    assert!(libc::WIFEXITED(status), "agentci was killed: {status}");
    Ended {
        code: libc::WEXITSTATUS(status),
        stderr: reader.join().unwrap(),
        peak_rss_kib: usage.ru_maxrss,
        took,
    }
}

/// The trace's last event (checked against the schema) and the JUnit file.
fn records(sb: &Sandbox) -> (Value, String) {
    let trace_path = sb.path().join("out/trace.jsonl");
    assert_valid_trace(&trace_path);
    let trace = read_jsonl(&trace_path);
    let last = trace.last().unwrap().clone();
    assert_eq!(last["type"], "run.completed", "{last}");
    assert_eq!(events(&trace, "check.completed").len(), 1);
    let junit = std::fs::read_to_string(sb.path().join("out/junit.xml")).unwrap();
    (last, junit)
}

// Regression (issue 38, attack 3): one non-streamed answer of 16 MB took
// agentci to 854 MB RSS and past its `budget.timeout`; nothing capped the
// size of an answer. Now it is refused at the default cap (16 MiB), not
// retried, with the records written, and agentci stays under 64 MiB.
#[test]
fn a_16_mib_answer_is_refused_in_little_memory_streamed_or_not() {
    for user in RunAs::each() {
        let control = FakeModel::start(vec![Reply::text("short")]);
        let sb = sandbox(&control.base_url(), ", stream: false", "");
        let baseline = measured(
            JobRun::new(&sb)
                .junit()
                .progress("none")
                .user(user)
                .command(),
        );
        eprintln!(
            "{}: a short answer peaks at {} KiB",
            user.label(),
            baseline.peak_rss_kib
        );
        for stream in [false, true] {
            let huge = match stream {
                false => Reply::text(&"x".repeat(16 * MIB)),
                true => Reply::events(streamed_text(16 * MIB)),
            };
            let model = FakeModel::start(vec![huge]);
            let sb = sandbox(&model.base_url(), &format!(", stream: {stream}"), "");
            let run = JobRun::new(&sb).junit().progress("none").user(user);
            let ended = measured(run.command());
            let at = format!("{} / stream: {stream}", user.label());
            eprintln!(
                "{at}: exit {} after {:?}, peak RSS {} KiB",
                ended.code, ended.took, ended.peak_rss_kib
            );
            assert_eq!(ended.code, 4, "{at}: {}", ended.stderr);
            assert!(
                ended.stderr.contains("larger than 16 MiB")
                    && ended.stderr.contains("raise model.max_response_bytes"),
                "{at}: {}",
                ended.stderr
            );
            assert_eq!(model.requests().len(), 1, "{at}: the answer was retried");
            assert!(
                ended.peak_rss_kib - baseline.peak_rss_kib < RSS_GROWTH_LIMIT_KIB,
                "{at}: agentci peaked at {} KiB, {} KiB with a short answer",
                ended.peak_rss_kib,
                baseline.peak_rss_kib
            );
            let (last, junit) = records(&sb);
            assert_eq!(last["status"], "provider_unavailable", "{at}: {last}");
            assert!(
                last["reason"]
                    .as_str()
                    .unwrap()
                    .contains("model.max_response_bytes"),
                "{at}: {last}"
            );
            assert!(junit.contains("model.max_response_bytes"), "{at}: {junit}");
        }
    }
}

// `model.max_response_bytes` sets the cap; the message names the job's
// value. An answer under it is read as before.
#[test]
fn the_cap_is_the_jobs_max_response_bytes() {
    let model = FakeModel::start(vec![
        Reply::text(&"y".repeat(80 * 1024)),
        Reply::text(&"y".repeat(80 * 1024)),
    ]);
    let sb = sandbox(
        &model.base_url(),
        ", stream: false, max_response_bytes: 64KiB",
        "",
    );
    let out = JobRun::new(&sb).junit().progress("none").output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("larger than 64 KiB"), "{err}");

    let raised = sb
        .read("job.yaml")
        .replace("max_response_bytes: 64KiB", "max_response_bytes: 1MiB");
    sb.write("job.yaml", &raised);
    let (out, trace) = JobRun::new(&sb).progress("none").traced_if_any();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("max_response_bytes"), "{err}");
    assert!(!events(&trace, "model.response").is_empty(), "{err}");

    let printed = JobRun::bare(&sb).args(&["--print-job"]).output();
    let printed = String::from_utf8_lossy(&printed.stdout);
    assert!(printed.contains("max_response_bytes: 1048576"), "{printed}");

    let wrong = sb
        .read("job.yaml")
        .replace("max_response_bytes: 1MiB", "max_response_bytes: lots");
    sb.write("job.yaml", &wrong);
    let out = JobRun::new(&sb).progress("none").output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("job.yaml:") && err.contains("`model.max_response_bytes` must be a size"),
        "{err}"
    );
}

// Issue 38, item 3: `budget.timeout` ends the run within seconds of its
// limit whatever the server does: an answer that trickles keep-alive lines
// forever (each byte resets no timer of ours), or one that never starts.
#[test]
fn budget_timeout_ends_a_run_whose_answer_never_ends() {
    for user in RunAs::each() {
        for (what, reply) in [
            ("trickle", Reply::trickle(Duration::from_millis(200))),
            ("silence", Reply::hang()),
        ] {
            let model = FakeModel::start(vec![reply]);
            let sb = sandbox(&model.base_url(), "", "budget: {timeout: 3s}\n");
            let run = JobRun::new(&sb).junit().progress("none").user(user);
            let ended = measured(run.command());
            let at = format!("{} / {what}", user.label());
            eprintln!("{at}: exit {} after {:?}", ended.code, ended.took);
            assert_eq!(ended.code, 3, "{at}: {}", ended.stderr);
            assert!(
                ended.took < Duration::from_secs(3 + 7),
                "{at}: the run took {:?} with a 3 s timeout",
                ended.took
            );
            let (last, junit) = records(&sb);
            assert_eq!(last["status"], "budget_exceeded", "{at}: {last}");
            assert!(
                last["reason"].as_str().unwrap().contains("timeout"),
                "{at}: {last}"
            );
            assert!(junit.contains("timeout"), "{at}: {junit}");
        }
    }
}

// Issue 38, attack 3: SIGTERM was ignored while a huge answer was taken in.
// SIGTERM while an answer is still arriving, slowly (a 15 MiB stream at
// 64 KiB a tenth of a second) or as a trickle that never ends: the run
// stops within seconds ([`signal_and_wait`]) with its records written.
#[test]
fn sigterm_while_an_answer_arrives_ends_the_run_with_its_records() {
    for (what, reply) in [
        (
            "slow stream",
            Reply::events(streamed_text(15 * MIB)).paced(Duration::from_millis(100)),
        ),
        ("trickle", Reply::trickle(Duration::from_millis(100))),
    ] {
        let model = FakeModel::start(vec![reply]);
        let sb = sandbox(&model.base_url(), ", stream: true", "");
        let mut child = JobRun::new(&sb)
            .junit()
            .progress("none")
            .command()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for("the model server to get the request", || {
            !model.requests().is_empty()
        });
        // Let part of the answer arrive first.
        std::thread::sleep(Duration::from_millis(700));
        let (code, took) = signal_and_wait(&mut child, libc::SIGTERM);
        assert_eq!(code, 143, "{what}");
        assert!(took < HANG, "{what}");
        let (last, junit) = records(&sb);
        assert_eq!(last["status"], "interrupted", "{what}: {last}");
        assert_eq!(last["signal"], libc::SIGTERM, "{what}: {last}");
        assert!(junit.contains("interrupted by SIGTERM"), "{what}: {junit}");
    }
}
