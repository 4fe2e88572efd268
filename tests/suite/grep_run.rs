//! The `grep` tool across the calls of one run, end to end: the real
//! binary, a scripted model on the fake model server. The tool keeps the
//! patterns it compiled for the run's later calls; a call whose arguments
//! change the matching must never be answered with another call's matcher.

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::stderr;
use super::support::job::{JobBuilder, JobRun};

#[test]
fn a_run_never_answers_a_grep_call_with_a_pattern_compiled_for_another() {
    let calls = [
        ("exact", json!({"pattern": "Needle"})),
        (
            "folded",
            json!({"pattern": "Needle", "case_sensitive": false}),
        ),
        ("exact_again", json!({"pattern": "Needle"})),
        ("regex", json!({"pattern": "Need.e"})),
        ("escaped", json!({"pattern": "Need\\.e"})),
        ("invalid", json!({"pattern": "Need(le"})),
        (
            "folded_again",
            json!({"pattern": "Needle", "case_sensitive": false, "glob": "*.txt"}),
        ),
    ];
    let mut script = vec![Reply::plan(&[("Search", "the needles are found")])];
    script.extend(
        calls
            .iter()
            .map(|(id, args)| Reply::tool_calls(vec![(id, "grep", args.clone())])),
    );
    // Both kinds at once, in one batch, from the same tool (`context`
    // changes no matching; it keeps the run's loop detection away).
    script.push(Reply::tool_calls(vec![
        (
            "batch_exact",
            "grep",
            json!({"pattern": "Needle", "context": 0}),
        ),
        (
            "batch_folded",
            "grep",
            json!({"pattern": "Needle", "case_sensitive": false, "context": 0}),
        ),
    ]));
    script.push(Reply::step_done("searched"));
    script.push(Reply::text("done"));
    let model = FakeModel::start(script);
    let sb = JobBuilder::new("grep-run", "searcher", &model.base_url())
        .goal("Find the needles.")
        .tools("[grep]")
        .body("permissions:\n  default: deny\n  allow: [grep]\n")
        .file(
            "ws/hay.txt",
            "Needle one\nneedle two\nNEEDLE three\nNeed.e four\nNeed-e five\n",
        )
        .write();

    let (out, _trace) = JobRun::new(&sb).traced();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = |id: &str| {
        let text = model.tool_result(id);
        text.lines()
            .filter(|l| l.starts_with("hay.txt:"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let exact = ["hay.txt:1:Needle one"];
    let folded = [
        "hay.txt:1:Needle one",
        "hay.txt:2:needle two",
        "hay.txt:3:NEEDLE three",
    ];
    assert_eq!(lines("exact"), exact);
    assert_eq!(lines("folded"), folded);
    assert_eq!(lines("exact_again"), exact);
    assert_eq!(
        lines("regex"),
        [
            "hay.txt:1:Needle one",
            "hay.txt:4:Need.e four",
            "hay.txt:5:Need-e five"
        ]
    );
    assert_eq!(lines("escaped"), ["hay.txt:4:Need.e four"]);
    let invalid = model.tool_result("invalid");
    assert!(
        invalid.contains("`pattern` is not a valid regex"),
        "{invalid}"
    );
    assert_eq!(lines("folded_again"), folded);
    assert_eq!(lines("batch_exact"), exact);
    assert_eq!(lines("batch_folded"), folded);
}
