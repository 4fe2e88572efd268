//! The three-turn task `round_trips` and `run_floor` share: a workspace of
//! two small files, a `reader` skill and a job that may `read` and run
//! `ls`. The batching model's answers to it are the test suite's
//! (`tests/suite/support/notes_script.rs`), which those benches include
//! beside its fake model.

use std::path::Path;

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

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}
