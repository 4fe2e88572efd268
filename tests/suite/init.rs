//! `agentci init` in fresh git repositories of small projects (a Rust
//! crate, an npm package, a Python project): what it writes validates with
//! `agentci validate` and passes actionlint, for every use; the test
//! command is found from the project's files; a second init refuses to
//! overwrite and names the files; `--force` overwrites. The real binary and
//! real git.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::support::harness::{agentci_in, stderr, stdout};
use super::workflow_lint::actionlint;

/// A git repository in a temporary folder holding `files`, committed.
fn repository(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo");
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "first"]);
    dir
}

fn root(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("demo")
}

const CRATE: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    ),
    (
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[test]\nfn adds() { assert_eq!(add(2, 3), 5); }\n",
    ),
];

/// `agentci validate agentci` in `root` succeeds, and actionlint accepts the workflow.
fn assert_valid(root: &Path, workflow: &str) {
    let validated = agentci_in(root, &["validate", "agentci"], &[]);
    assert_eq!(
        validated.status.code(),
        Some(0),
        "{}{}",
        stdout(&validated),
        stderr(&validated)
    );
    let summary = stderr(&validated);
    assert!(summary.contains(": 0 errors, 0 warnings"), "{summary}");
    let Some(linted) = actionlint(&[root.join(".github/workflows").join(workflow)]) else {
        return;
    };
    assert!(
        linted.status.success(),
        "actionlint: {}{}",
        stdout(&linted),
        stderr(&linted)
    );
}

#[test]
fn init_eval_in_a_rust_crate_writes_files_that_validate_and_lint() {
    let dir = repository(CRATE);
    let root = root(&dir);
    let out = agentci_in(&root, &["init", "--use", "eval"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    insta::assert_snapshot!("init_eval_rust", stdout(&out));
    let job = std::fs::read_to_string(root.join("agentci/fix-tests.yaml")).unwrap();
    assert!(job.contains("\"exec(cargo test *)\""), "{job}");
    assert!(job.contains("run: cargo test"), "{job}");
    // The fixture is the repository's tracked files, nothing of agentci's.
    let fixture = root.join("agentci/eval/fixtures/demo");
    assert_eq!(
        std::fs::read_to_string(fixture.join("src/lib.rs")).unwrap(),
        CRATE[1].1
    );
    assert!(!fixture.join("agentci").exists());
    assert_valid(&root, "agentci-eval.yml");

    // A second init writes nothing and names what is in the way.
    std::fs::write(root.join("agentci/fix-tests.yaml"), "# mine\n").unwrap();
    let again = agentci_in(&root, &["init", "--use", "eval"], &[]);
    assert_eq!(again.status.code(), Some(2));
    let refusal = stderr(&again);
    assert!(refusal.contains("agentci/fix-tests.yaml"), "{refusal}");
    assert!(
        refusal.contains(".github/workflows/agentci-eval.yml"),
        "{refusal}"
    );
    assert!(refusal.contains("--force"), "{refusal}");
    assert_eq!(
        std::fs::read_to_string(root.join("agentci/fix-tests.yaml")).unwrap(),
        "# mine\n"
    );
    let forced = agentci_in(&root, &["init", "--use", "eval", "--force"], &[]);
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert_ne!(
        std::fs::read_to_string(root.join("agentci/fix-tests.yaml")).unwrap(),
        "# mine\n"
    );
    assert_valid(&root, "agentci-eval.yml");
}

#[test]
fn every_use_writes_a_job_and_workflow_that_validate_and_lint() {
    for (use_, workflow, job) in [
        ("fix", "agentci-fix.yml", "fix-tests"),
        ("review", "agentci-review.yml", "review"),
        ("maintenance", "agentci-maintenance.yml", "maintenance"),
    ] {
        let dir = repository(CRATE);
        let root = root(&dir);
        let out = agentci_in(&root, &["init", "--use", use_], &[]);
        assert_eq!(out.status.code(), Some(0), "{use_}: {}", stderr(&out));
        assert!(root.join(format!("agentci/{job}.yaml")).is_file());
        assert!(
            root.join(format!("agentci/skills/{job}/SKILL.md"))
                .is_file()
        );
        assert_valid(&root, workflow);
    }
    // The review job only looks: no tool that changes a file.
    let dir = repository(CRATE);
    let root = root(&dir);
    agentci_in(&root, &["init", "--use", "review"], &[]);
    let review = std::fs::read_to_string(root.join("agentci/review.yaml")).unwrap();
    assert!(
        review.contains("tools: [read, grep, find, ls, exec]"),
        "{review}"
    );
    let workflow =
        std::fs::read_to_string(root.join(".github/workflows/agentci-review.yml")).unwrap();
    assert!(
        workflow.contains("job: base/agentci/review.yaml"),
        "{workflow}"
    );
}

#[test]
fn the_test_command_is_found_for_npm_and_python_projects() {
    let npm = repository(&[
        (
            "package.json",
            "{\"name\": \"demo\", \"scripts\": {\"test\": \"node test.js\"}}\n",
        ),
        ("test.js", "console.log('ok')\n"),
    ]);
    let python = repository(&[
        (
            "pyproject.toml",
            "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n",
        ),
        ("test_demo.py", "def test_it():\n    assert True\n"),
    ]);
    for (dir, rule, setup) in [
        (&npm, "exec(npm test *)", "npm ci"),
        (
            &python,
            "exec(python -m pytest *)",
            "python -m pip install pytest",
        ),
    ] {
        let root = root(dir);
        let out = agentci_in(&root, &["init", "--use", "fix"], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let job = std::fs::read_to_string(root.join("agentci/fix-tests.yaml")).unwrap();
        assert!(job.contains(rule), "{job}");
        let workflow =
            std::fs::read_to_string(root.join(".github/workflows/agentci-fix.yml")).unwrap();
        assert!(workflow.contains(setup), "{workflow}");
        assert_valid(&root, "agentci-fix.yml");
    }
}

#[test]
fn init_outside_a_repository_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = agentci_in(dir.path(), &["init"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("git init"), "{}", stderr(&out));
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}
