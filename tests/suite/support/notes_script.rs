//! The batching model's answers to the three-turn task (list the files,
//! read `notes.txt`, answer): the plan with the first call, the report with
//! the last `step_done`. Shared by `suite::round_trips` and the
//! `round_trips` and `run_floor` benches, which include this file beside
//! the fake model (`super::fake_model` in both).

use serde_json::json;

use super::fake_model::Reply;

/// What the model reports at the end.
pub const REPORT: &str = "notes.txt says: ship on Friday. Checked: ls shows notes.txt and \
                          todo.txt; read notes.txt. Left: nothing.";

/// The batching model's three answers.
pub fn batching_script() -> Vec<Reply> {
    vec![
        Reply::tool_calls(vec![
            (
                "plan",
                "submit_plan",
                json!({"steps": [{"title": "Read the notes", "expected_outcome": "it is done"}]}),
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
