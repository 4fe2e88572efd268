//! The three-turn task `round_trips` and `run_floor` share: a workspace of
//! two small files, a `reader` skill, a job that may `read` and run `ls`,
//! and the answers of a model that batches (plan with the first call,
//! report with the last `step_done`). A bench including this module
//! includes the test suite's fake model as `fake_model`.

use std::path::Path;

use serde_json::json;

use crate::fake_model::Reply;

/// What the model reports at the end.
pub const REPORT: &str = "notes.txt says: ship on Friday.";

/// The workspace's files under `root/ws`.
pub fn workspace(root: &Path) {
    write(&root.join("ws/notes.txt"), "ship on Friday\n");
    write(&root.join("ws/todo.txt"), "nothing\n");
}

/// The workspace, the skill and `job.yaml` (talking to `base_url`, with
/// `job_extra` appended) under `root`.
pub fn write_task(root: &Path, base_url: &str, job_extra: &str) {
    workspace(root);
    write(
        &root.join("skills/reader/SKILL.md"),
        "---\nname: reader\ndescription: Reads files.\n---\nRead what the goal says.\n",
    );
    write(
        &root.join("job.yaml"),
        &format!(
            "name: notes\nskill: reader\nskills_path: [skills]\n\
             goal: List the files, read notes.txt and say what it says.\n\
             model: {{provider: openai, name: bench, base_url: {base_url}}}\n\
             tools: [read, exec]\npermissions: {{default: deny, allow: [read, \"exec(ls)\"]}}\n\
             workspace: ws\n{job_extra}"
        ),
    );
}

/// The batching model's three answers.
pub fn batching_script() -> Vec<Reply> {
    vec![
        Reply::tool_calls(vec![
            (
                "plan",
                "submit_plan",
                json!({"steps": [{"title": "Read the notes", "expected_outcome": "known"}]}),
            ),
            ("list", "exec", json!({"command": "ls"})),
        ]),
        Reply::tool_calls(vec![("read", "read", json!({"path": "notes.txt"}))]),
        Reply::tool_calls(vec![(
            "done",
            "step_done",
            json!({"summary": "read notes.txt", "report": REPORT}),
        )]),
    ]
}

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}
