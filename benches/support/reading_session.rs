//! The session the replay benchmarks share: ten files of 200 lines in a
//! workspace, a `reader` skill, and a job that reads them with `read` and
//! `grep`. The job's `base_url` is the placeholder `BASE_URL`, filled in
//! once the fake model server has started.

use std::path::Path;
use std::time::Duration;

/// Writes the workspace, the skill and `job.yaml` under `root`; `model_extra`
/// goes into the job's model mapping (`, context_window: N`), `budget` is
/// the job's budget mapping.
pub fn setup(root: &Path, model_extra: &str, budget: &str) {
    for i in 0..10 {
        let text: String = (0..200)
            .map(|l| format!("line {l} of file {i}\n"))
            .collect();
        write(&root.join(format!("ws/src/file{i}.txt")), &text);
    }
    write(
        &root.join("skills/reader/SKILL.md"),
        "---\nname: reader\ndescription: Reads files.\n---\nRead what the goal says.\n",
    );
    write(
        &root.join("job.yaml"),
        &format!(
            "name: bench\nskill: reader\nskills_path: [skills]\ngoal: Read every file.\n\
             model: {{provider: openai, name: bench, base_url: BASE_URL{model_extra}}}\n\
             tools: [read, grep]\npermissions: {{default: allow}}\nbudget: {budget}\n\
             workspace: ws\n"
        ),
    );
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
