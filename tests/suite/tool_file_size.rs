//! `write` and `edit` keep to the job's `sandbox.limits.file_size`, as the
//! kernel holds `exec`'s children to it: content (or an edit's result) over
//! it is refused with a result naming the limit, and nothing is written.
//! The real binary against the scripted fake model server, as root and as
//! an unprivileged user.

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::stderr;
use super::support::job::{JobBuilder, JobRun};
use super::support::users::RunAs;

/// The job's limit in these tests; the requests that carry the model's
/// arguments back stay under the fake server's 2 MB body limit.
const LIMIT: usize = 100 * 1024;

// Regression (issue 38, item 7): the `write` tool took 30 MB in one call;
// only `exec`'s children were held to `file_size`.
#[test]
fn write_and_edit_refuse_a_file_over_the_file_size_limit() {
    for user in RunAs::each() {
        let model = FakeModel::start(vec![
            Reply::plan(&[("Write", "written")]),
            Reply::tool_calls(vec![
                (
                    "big",
                    "write",
                    json!({"path": "big.txt", "content": "x".repeat(2 * LIMIT)}),
                ),
                (
                    "fits",
                    "write",
                    json!({"path": "fits.txt", "content": "y".repeat(LIMIT)}),
                ),
                (
                    "grow",
                    "edit",
                    json!({"path": "small.txt", "old_text": "a", "new_text": "b".repeat(1000),
                           "replace_all": true}),
                ),
            ]),
            Reply::step_done("tried"),
            Reply::text("Done."),
        ]);
        let base_url = model.base_url();
        let sb = JobBuilder::new("sizes", "writer", &base_url)
            .goal("Write the files.")
            .model_inline(&format!(
                "{{provider: openai, name: fake-model, base_url: \"{base_url}\", stream: false}}"
            ))
            .file("ws/small.txt", &"a\n".repeat(1100))
            .tools("[write, edit]")
            .body("permissions: {default: allow}\nsandbox: {limits: {file_size: 100KiB}}\n")
            .write();
        let out = JobRun::new(&sb).progress("none").user(user).output();
        let at = user.label();
        assert_eq!(out.status.code(), Some(0), "{at}: {}", stderr(&out));
        for call in ["big", "grow"] {
            let result = model.tool_result(call);
            assert!(
                result.contains("RESOURCE_LIMIT")
                    && result.contains("file size limit of 102400 bytes")
                    && result.contains("sandbox.limits.file_size"),
                "{at} / {call}: {result}"
            );
        }
        assert!(model.tool_result("fits").contains("created"), "{at}");
        let ws = sb.workspace();
        assert!(!ws.join("big.txt").exists(), "{at}: big.txt was written");
        assert_eq!(
            std::fs::read_to_string(ws.join("small.txt")).unwrap(),
            "a\n".repeat(1100),
            "{at}: small.txt changed"
        );
        assert_eq!(
            std::fs::metadata(ws.join("fits.txt")).unwrap().len(),
            LIMIT as u64
        );
    }
}
