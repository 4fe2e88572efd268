//! The context estimate follows the server's counts, end to end: when the
//! model server reports what each request cost, the next request is sized
//! at that ratio of tokens to bytes, so a model whose tokenizer is denser
//! than the offline one is compacted at its own count of the mark, and a
//! run that knows its counts needs no tokenizer table.

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, stderr};
use super::support::trace_schema::assert_valid_trace;

/// A file of about 3 KB: some 700 tokens for the offline tokenizer.
fn file(tag: &str) -> String {
    (0..50)
        .map(|i| format!("{tag} line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

fn run(base_url: &str) -> Vec<Value> {
    let sb = Sandbox::new();
    for tag in ["f1", "f2", "f3"] {
        sb.write(&format!("ws/{tag}.txt"), &file(tag));
    }
    sb.skill("reader", None);
    sb.write(
        "job.yaml",
        &format!(
            r#"version: 1
name: counted
skill: reader
goal: Read the three files.
model:
  provider: openai
  name: fake-model
  base_url: {base_url}
  context_window: 16000
  compact_with: digest
tools: [read]
workspace: ws
skills_path: [skills]
permissions:
  default: allow
"#
        ),
    );
    let args = ["run", "job.yaml", "--out", "run", "--progress", "plain"];
    let out = agentci_in(sb.path(), &args, &[]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_valid_trace(&sb.path().join("run/trace.jsonl"));
    sb.trace("run/trace.jsonl")
}

/// The session: a plan, three reads, done. With `counting`, the server
/// counts one token for every byte it is sent (four times as dense as the
/// offline tokenizer on this English text, too far from it to be taken as
/// a calibration of it); without, it reports the fake's constant 100
/// tokens, which is no count of the request.
fn session(counting: bool) -> (Vec<Value>, usize) {
    let counted = |reply: Reply| {
        if counting {
            reply.with_prompt_counted(1)
        } else {
            reply
        }
    };
    let read = |id: &str, path: &str| {
        counted(Reply::tool_calls(vec![(
            id,
            "read",
            json!({ "path": path }),
        )]))
    };
    let model = FakeModel::start(vec![
        counted(Reply::plan(&[("Read the files", "their content is known")])),
        read("call_f1", "f1.txt"),
        read("call_f2", "f2.txt"),
        read("call_f3", "f3.txt"),
        counted(Reply::step_done("read all three")),
        counted(Reply::text("The files hold fox lines.")),
    ]);
    let trace = run(&model.base_url());
    assert_eq!(model.remaining(), 0);
    assert_eq!(trace.last().unwrap()["status"], "passed");
    (trace, model.requests().len())
}

#[test]
fn a_server_counting_more_tokens_than_the_offline_tokenizer_is_compacted_at_its_count() {
    // By the offline tokenizer the session stays under the mark (12,800 of
    // 16,000 tokens): nothing is compacted.
    let (uncounted, _) = session(false);
    assert!(events(&uncounted, "context.compacted").is_empty());

    let (trace, requests) = session(true);
    assert_eq!(requests, 6, "a digest makes no extra call");
    let compacted = events(&trace, "context.compacted");
    assert!(!compacted.is_empty());
    let responses = events(&trace, "model.response");
    for c in &compacted {
        assert_eq!(c["method"], "digest");
        assert_eq!(c["high_water"], 12_800);
        let before = c["tokens_before"].as_u64().unwrap();
        assert!(before >= 12_800 && c["tokens_after"].as_u64() < Some(12_800));
        // The estimate is the server's count of the request before plus
        // what the turn added (one file of 3 KB) at the server's ratio.
        let call: usize = c["call_id"].as_str().unwrap()["model-".len()..]
            .parse()
            .unwrap();
        let last_count = responses[call - 2]["usage"]["input_tokens"]
            .as_u64()
            .unwrap();
        assert!(
            before > last_count && before < last_count + 5_000,
            "{before} {last_count}"
        );
    }
}
