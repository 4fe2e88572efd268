//! What `agentci validate` prints for each job in the broken-job corpus
//! (tests/data/broken-jobs/), snapshotted with insta: the error lines on
//! stdout, the count on stderr and the exit code, so a change to a message
//! shows up in review. Where each problem must be reported is checked in
//! `validate.rs`; this file holds the words.

use std::path::Path;
use std::process::Command;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

#[test]
fn validate_output_for_each_broken_job() {
    let mut jobs: Vec<String> = std::fs::read_dir(Path::new(DATA).join("broken-jobs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| {
            Path::new(name)
                .extension()
                .is_some_and(|ext| ext.eq_ignore_ascii_case("yaml"))
        })
        .collect();
    jobs.sort();
    assert!(jobs.len() >= 12, "the broken-job set shrank: {jobs:?}");
    // Absolute paths in messages (a skill folder looked for) are the checkout's.
    let data = regex::escape(DATA);
    for job in jobs {
        let output = Command::new(env!("CARGO_BIN_EXE_agentci"))
            .args(["validate", &format!("broken-jobs/{job}")])
            .current_dir(DATA)
            .output()
            .unwrap();
        let text = format!(
            "exit code: {:?}\n--- stdout\n{}--- stderr\n{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        let name = format!(
            "validate_{}",
            job.trim_end_matches(".yaml").replace('-', "_")
        );
        insta::with_settings!({filters => vec![(data.as_str(), "[DATA]")]}, {
            insta::assert_snapshot!(name, text);
        });
    }
}
