//! `agentci validate`: every broken job under tests/data/broken-jobs/ must be
//! reported at the line and column its `# expect:` comments name, and
//! nothing else; valid jobs and skills print `ok` lines and exit 0.
//!
//! Expectation comments: `# expect: LINE:COL substring` for a problem in
//! the job file itself, `# expect: REL/PATH:LINE:COL substring` for one in
//! another file (relative to the job file's folder, e.g. its SKILL.md).

use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output};

use agentci::job::{LoadOptions, ProviderKind, load_job};

use super::support::harness::copy_tree;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

/// A temporary copy of tests/data, so runs never depend on the checkout's location.
struct DataCopy {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

fn data_copy() -> DataCopy {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    copy_tree(Path::new(DATA), &root);
    DataCopy { _tmp: tmp, root }
}

fn agentci(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn error_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.contains(": error: ")).collect()
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

struct Expectation {
    /// `FILE:LINE:COL: error: ` as printed, relative to the data folder.
    prefix: String,
    substring: String,
}

fn expectations(job: &Path) -> Vec<Expectation> {
    let text = std::fs::read_to_string(DATA.to_string() + "/" + job.to_str().unwrap()).unwrap();
    let job_dir = job.parent().unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("# expect: "))
        .map(|expect| {
            let (place, substring) = expect.split_once(' ').unwrap();
            let mut parts: Vec<&str> = place.rsplitn(3, ':').collect();
            parts.reverse();
            let (file, line, column) = match parts.as_slice() {
                [line, column] => (job.to_path_buf(), line, column),
                [file, line, column] => (normalize(&job_dir.join(file)), line, column),
                _ => panic!("bad expectation `{expect}` in {}", job.display()),
            };
            Expectation {
                prefix: format!("{}:{line}:{column}: error: ", file.display()),
                substring: substring.to_string(),
            }
        })
        .collect()
}

#[test]
fn broken_jobs_are_reported_at_the_expected_positions() {
    let data = data_copy();
    let mut jobs: Vec<PathBuf> = std::fs::read_dir(Path::new(DATA).join("broken-jobs"))
        .unwrap()
        .map(|e| Path::new("broken-jobs").join(e.unwrap().file_name()))
        .collect();
    jobs.sort();
    assert!(jobs.len() >= 12, "the broken-job set shrank: {jobs:?}");
    for job in jobs {
        let expected = expectations(&job);
        assert!(
            !expected.is_empty(),
            "{} has no `# expect:` line",
            job.display()
        );
        let output = agentci(&data.root, &["validate", job.to_str().unwrap()]);
        let out = stdout(&output);
        assert_eq!(output.status.code(), Some(2), "{}:\n{out}", job.display());
        for e in &expected {
            assert!(
                out.lines()
                    .any(|l| l.starts_with(&e.prefix) && l.contains(&e.substring)),
                "{}: expected a line starting `{}` containing `{}`, got:\n{out}",
                job.display(),
                e.prefix,
                e.substring
            );
        }
        // Nothing beyond what is expected: no duplicates, no follow-on noise.
        assert_eq!(
            error_lines(&out).len(),
            expected.len(),
            "{}: unexpected errors:\n{out}",
            job.display()
        );
    }
}

#[test]
fn all_semantic_problems_come_in_one_pass_sorted_by_position() {
    let data = data_copy();
    let output = agentci(&data.root, &["validate", "broken-jobs/many-problems.yaml"]);
    let out = stdout(&output);
    let positions: Vec<(u32, u32)> = error_lines(&out)
        .iter()
        .map(|l| {
            let mut parts = l.split(':').skip(1);
            let line = parts.next().unwrap().parse().unwrap();
            let column = parts.next().unwrap().parse().unwrap();
            (line, column)
        })
        .collect();
    assert!(positions.len() >= 12, "{out}");
    let mut sorted = positions.clone();
    sorted.sort();
    assert_eq!(positions, sorted, "{out}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("validated 1 file: 12 errors"), "{stderr}");
}

#[test]
fn valid_jobs_and_skills_print_ok_lines_and_exit_zero() {
    let data = data_copy();
    let output = agentci(&data.root, &["validate", "valid"]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{out}");
    let ok: Vec<&str> = out.lines().filter(|l| l.starts_with("ok   ")).collect();
    assert_eq!(
        ok,
        [
            "ok   skills/claude-names/SKILL.md (skill claude-names)",
            "ok   valid/by-path.yaml (job claude skill by path, skill claude-names)",
            "ok   skills/ok-skill/SKILL.md (skill ok-skill)",
            "ok   valid/fix-tests.yaml (job fix core tests, skill ok-skill)",
        ],
        "{out}"
    );
    // The skill's unknown tool is warned about at its own position, not dropped.
    assert!(
        out.contains("skills/claude-names/SKILL.md:4:81: warning: unknown tool `Frobnicate`"),
        "{out}"
    );
    assert!(
        out.contains("skills/claude-names/SKILL.md:5:1: warning: unknown key `x-vendor-key`"),
        "{out}"
    );
    // The folder scan skips GitHub workflows and YAML that is not a job.
    assert!(
        !out.contains("ci.yml") && !out.contains("not-a-job"),
        "{out}"
    );
}

#[test]
fn repository_skills_are_valid() {
    let output = agentci(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &["validate", "skills"],
    );
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{out}");
    for skill in ["fix-failing-test", "write-changelog"] {
        let line = format!("ok   skills/{skill}/SKILL.md (skill {skill})");
        assert!(out.lines().any(|l| l == line), "{out}");
    }
    assert!(
        !out.contains("warning:"),
        "repository skills should be clean:\n{out}"
    );
}

#[test]
fn default_path_finds_workspace_skills_and_honours_agentciignore() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("skills/lint")).unwrap();
    std::fs::write(
        root.join("skills/lint/SKILL.md"),
        "---\nname: lint\ndescription: Fix lint.\n---\nRun the linter.\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("jobs")).unwrap();
    std::fs::write(
        root.join("jobs/lint.yaml"),
        "name: lint\nskill: lint\ngoal: fix lint\nmodel: {name: m}\n\
         permissions: {allow: [read, edit]}\nchecks: [{name: lint, run: make lint}]\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("broken")).unwrap();
    std::fs::write(root.join("broken/job.yaml"), "goal: x\nbogus: 1\n").unwrap();
    std::fs::write(root.join(".agentciignore"), "broken/\n").unwrap();

    let output = agentci(&root, &["validate"]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        // A job's skill is validated (and reported) before the job's own line.
        [
            "ok   skills/lint/SKILL.md (skill lint)",
            "ok   jobs/lint.yaml (job lint, skill lint)",
        ]
    );

    // Given explicitly, the ignored job is validated.
    let output = agentci(&root, &["validate", "broken/job.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stdout(&output).contains("broken/job.yaml:2:1: error: unknown key `bogus`"));
}

#[test]
fn missing_paths_and_empty_folders_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let output = agentci(tmp.path(), &["validate", "nope.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stdout(&output).contains("nope.yaml: error: no such file or folder"));
    let output = agentci(tmp.path(), &["validate"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stdout(&output),
        ".: error: no job files or skills found in this folder\n"
    );
    let output = agentci(
        tmp.path(),
        &["validate", "--skills-path", "missing", "nope.yaml"],
    );
    assert!(stdout(&output).contains("--skills-path: error: missing is not a directory"));
}

#[test]
fn hostile_yaml_is_refused_not_expanded() {
    // An alias bomb under keys SKILL.md ignores (other tools' keys) would
    // expand to 10^9 nodes; serde-saphyr's budget must stop it quickly.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bomb");
    std::fs::create_dir(&dir).unwrap();
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    let mut text =
        String::from("---\nname: bomb\ndescription: d\na: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for pair in names.windows(2) {
        let items = vec![format!("*{}", pair[0]); 10].join(", ");
        text.push_str(&format!("{0}: &{0} [{items}]\n", pair[1]));
    }
    text.push_str("---\nbody\n");
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
    let started = std::time::Instant::now();
    let output = agentci(tmp.path(), &["validate", "bomb"]);
    assert_eq!(output.status.code(), Some(2));
    let out = stdout(&output);
    assert!(
        out.contains("error: YAML document too large or too complex"),
        "{out}"
    );
    super::support::wait::assert_took_less(
        started.elapsed(),
        std::time::Duration::from_secs(20),
        "validating the YAML bomb",
    );
}

#[test]
fn flags_override_the_job_and_bad_flags_name_themselves() {
    let data = data_copy();
    let job = data.root.join("valid/fix-tests.yaml");
    let options = LoadOptions {
        cwd: data.root.clone(),
        vars: vec!["crate=cli".into()],
        model: Some("openai:llama3:8b".into()),
        base_url: Some("http://127.0.0.1:9/v1".into()),
        ..LoadOptions::default()
    };
    let (spec, warnings) = load_job(&job, &options).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(spec.name, "fix cli tests");
    assert_eq!(spec.goal, "Make `cargo test -p cli` pass.\n");
    assert_eq!(spec.checks[0].run, "cargo test -p cli");
    assert_eq!(spec.checks[0].timeout.as_secs(), 300);
    assert_eq!(spec.checks[1].timeout.as_secs(), 600);
    assert_eq!(spec.vars["retries"], "3");
    assert_eq!(spec.vars["strict"], "true");
    assert_eq!(spec.model.name, "llama3:8b");
    assert_eq!(
        spec.model.base_url.as_deref(),
        Some("http://127.0.0.1:9/v1")
    );
    assert_eq!(spec.model.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert_eq!(spec.budget.timeout.map(|d| d.as_secs()), Some(900));
    assert_eq!(spec.budget.max_cost_usd, Some(2.5));
    assert_eq!(spec.workspace, data.root);
    assert_eq!(spec.outputs.trace, Some(data.root.join("out/trace.jsonl")));
    assert_eq!(spec.skills_path, [data.root.join("skills")]);
    assert_eq!(spec.max_plan_turns, 3);
    assert_eq!(spec.tools.as_ref().unwrap().len(), 6);

    let cassette = data.root.join("session.jsonl");
    std::fs::write(&cassette, "").unwrap();
    let replay = LoadOptions {
        cwd: data.root.clone(),
        replay: Some("session.jsonl".into()),
        ..LoadOptions::default()
    };
    let (spec, _) = load_job(&job, &replay).unwrap();
    assert_eq!(spec.model.provider, ProviderKind::Replay);
    assert_eq!(spec.model.cassette, Some(cassette));

    let bad = LoadOptions {
        cwd: data.root.clone(),
        vars: vec!["novalue".into()],
        model: Some("gpt-4".into()),
        workspace: Some("no-such-dir".into()),
        ..LoadOptions::default()
    };
    let problems: Vec<String> = load_job(&job, &bad)
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("--var: `novalue` is not of the form K=V")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("--model: `gpt-4` is not of the form PROVIDER:NAME")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.starts_with("--workspace: ")),
        "{problems:?}"
    );
}

#[test]
fn skills_map_claude_code_tool_names() {
    let skill =
        agentci::skills::load_skill_dir(&Path::new(DATA).join("skills/claude-names")).unwrap();
    let tools: Vec<&str> = skill
        .allowed_tools
        .as_ref()
        .unwrap()
        .iter()
        .map(|p| p.as_str())
        .collect();
    // MultiEdit maps to edit like Edit; the duplicate is kept once.
    assert_eq!(
        tools,
        [
            "read",
            "grep",
            "find",
            "ls",
            "edit",
            "exec(git diff *)",
            "exec(npm test)"
        ]
    );
    assert_eq!(skill.warnings.len(), 2, "{:?}", skill.warnings);
    assert!(
        skill
            .warnings
            .iter()
            .any(|w| w.contains("unknown tool `Frobnicate`"))
    );
}

/// A job whose vars or model come only from the command line validates with
/// the same flags `agentci run` would get. Regression: `validate` had no
/// `--var`/`--model`, so such jobs could not be validated at all.
#[test]
fn flags_complete_a_job_as_run_would() {
    let data = data_copy();
    std::fs::write(
        data.root.join("flag-job.yaml"),
        "name: flags\nskill: ok-skill\nskills_path: [skills]\ngoal: Greet ${{ vars.who }}.\n",
    )
    .unwrap();
    let bare = agentci(&data.root, &["validate", "flag-job.yaml"]);
    assert_eq!(bare.status.code(), Some(2));
    let text = stdout(&bare);
    assert!(text.contains("undefined var `who`"), "{text}");
    assert!(text.contains("missing model name"), "{text}");

    let with_flags = agentci(
        &data.root,
        &[
            "validate",
            "flag-job.yaml",
            "--var",
            "who=world",
            "--model",
            "openai:gpt-4.1-mini",
        ],
    );
    assert_eq!(with_flags.status.code(), Some(0), "{}", stdout(&with_flags));
    assert!(stdout(&with_flags).contains("ok   flag-job.yaml (job flags, skill ok-skill)"));
}

/// Regression: a suite with a key indented out of line got the parser's
/// "mapping values are not allowed in this context", which names no fix.
#[test]
fn suite_syntax_errors_are_explained_like_job_ones() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("suite.yaml"),
        "version: 1\nname: s\njob: job.yaml\ncases:\n  - name: a\n    fixture: f\n     goal: g\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("colon.yaml"),
        "version: 1\nname: s\njob: job.yaml\ncases:\n  - name: a\n    fixture: f\n    goal: Fix: it\n",
    )
    .unwrap();
    let indent = agentci(tmp.path(), &["validate", "suite.yaml"]);
    let colon = agentci(tmp.path(), &["validate", "colon.yaml"]);
    insta::assert_snapshot!(
        "suite_syntax_errors",
        format!("{}{}", stdout(&indent), stdout(&colon))
    );
}

/// Regression: `validate --var K=V` said ok for a var the job never uses,
/// and `agentci run` with the same flags exited 2. Now both refuse it, with
/// the job's vars and a did-you-mean.
#[test]
fn a_var_the_job_does_not_use_is_refused_as_run_refuses_it() {
    let data = data_copy();
    std::fs::write(
        data.root.join("flag-job.yaml"),
        "name: flags\nskill: ok-skill\nskills_path: [skills]\ngoal: Greet ${{ vars.who }}.\n\
         model: {provider: openai, name: gpt-4.1-mini}\n",
    )
    .unwrap();
    let flags = ["flag-job.yaml", "--var", "who=world", "--var", "whom=you"];
    let validate = agentci(&data.root, &[&["validate"][..], &flags].concat());
    assert_eq!(validate.status.code(), Some(2), "{}", stdout(&validate));
    let said = String::from_utf8_lossy(&validate.stderr).into_owned() + &stdout(&validate);
    assert!(
        said.contains("the job does not use a var `whom` (did you mean `who`?)"),
        "{said}"
    );
    let run = agentci(
        &data.root,
        &[&["run"][..], &flags, &["--print-job"]].concat(),
    );
    assert_eq!(run.status.code(), Some(2));
}

/// A mistyped fixture folder gets a did-you-mean, and a misspelt assertion
/// is one error: the item blanked to recover used to read as `~` and be
/// reported again as `unknown value ~`.
#[test]
fn a_suite_with_a_mistyped_fixture_and_assertion_gets_one_error_each() {
    let data = data_copy();
    let suite = data.root.join("suite");
    std::fs::create_dir_all(suite.join("calc-add")).unwrap();
    std::fs::write(
        suite.join("job.yaml"),
        "name: j\nskill: ok-skill\nskills_path: [../skills]\ngoal: g\nmodel: {name: m}\n",
    )
    .unwrap();
    for (name, asserts) in [
        (
            "several.yaml",
            "      - run: cargo test\n      - file_contians: {path: a, pattern: b}\n      - max_turns: 3\n",
        ),
        (
            "alone.yaml",
            "      - file_contians: {path: a, pattern: b}\n",
        ),
    ] {
        std::fs::write(
            suite.join(name),
            format!(
                "version: 1\njob: job.yaml\ncases:\n  - name: a\n    fixture: calc-ad\n    assert:\n{asserts}"
            ),
        )
        .unwrap();
        let out = agentci(&suite, &["validate", name]);
        assert_eq!(out.status.code(), Some(2));
        let text = stdout(&out);
        let errors = error_lines(&text);
        assert_eq!(errors.len(), 2, "{text}");
        assert!(
            errors[0].ends_with("fixture folder calc-ad does not exist (did you mean `calc-add`?)")
                || errors[0].contains("calc-ad does not exist (did you mean `calc-add`?)"),
            "{text}"
        );
        assert!(
            errors[1].contains("unknown value `file_contians` (did you mean `file_contains`?)"),
            "{text}"
        );
        assert!(!text.contains("`~`"), "{text}");
    }
}
