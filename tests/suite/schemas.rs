//! `agentci schema job|suite|trace`: the JSON Schemas editors use for
//! completion. The copies in docs/schemas/ must equal what the binary
//! prints (they are generated from the loader's own structs and the event
//! types, so a key added there and not shipped here fails this test); every
//! shipped job and suite must validate against them, and the structurally
//! broken jobs must not. Every trace the suite writes is held to the
//! generated trace schema by `support::trace_schema`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn schema_printed(kind: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(["schema", kind])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

fn validator(kind: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(&schema_printed(kind)).unwrap();
    jsonschema::meta::validate(&schema)
        .unwrap_or_else(|e| panic!("the {kind} schema is not a valid JSON Schema: {e}"));
    jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|e| panic!("the {kind} schema does not compile: {e}"))
}

fn yaml_as_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn errors(validator: &jsonschema::Validator, path: &Path) -> Vec<String> {
    validator
        .iter_errors(&yaml_as_json(path))
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn yaml_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn shipped_schemas_equal_what_agentci_schema_prints() {
    for kind in ["job", "suite", "trace"] {
        let path = Path::new(ROOT).join(format!("docs/schemas/{kind}.schema.json"));
        let shipped = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            shipped == schema_printed(kind),
            "{} is out of date: run `agentci schema {kind} > docs/schemas/{kind}.schema.json`",
            path.display()
        );
    }
}

#[test]
fn every_shipped_job_and_suite_validates_against_its_schema() {
    let jobs = validator("job");
    let mut job_files = yaml_files("workflows");
    job_files.extend(
        yaml_files("tests/data/valid")
            .into_iter()
            .filter(|p| !p.ends_with("not-a-job.yaml")),
    );
    assert!(job_files.len() >= 7, "{job_files:?}");
    for job in &job_files {
        assert_eq!(
            errors(&jobs, job),
            Vec::<String>::new(),
            "{}",
            job.display()
        );
    }
    let suites = validator("suite");
    let suite_files: Vec<PathBuf> = ["fixtures/fix-failing-test", "fixtures/write-changelog"]
        .iter()
        .flat_map(|dir| yaml_files(dir))
        .collect();
    assert_eq!(suite_files.len(), 2, "{suite_files:?}");
    for suite in &suite_files {
        assert_eq!(
            errors(&suites, suite),
            Vec::<String>::new(),
            "{}",
            suite.display()
        );
    }
}

#[test]
fn structurally_broken_jobs_fail_the_schema_where_validate_says() {
    let jobs = validator("job");
    let broken = Path::new(ROOT).join("tests/data/broken-jobs");
    for (job, expected) in [
        ("unknown-top-level-key.yaml", "Additional properties"),
        ("unknown-nested-key.yaml", "max_tunrs"),
        ("wrong-type.yaml", ""),
        ("structural-and-semantic.yaml", "gaol"),
        ("many-problems.yaml", "/version: 2"),
        // `tools` items and `model.provider` are enums (they were any
        // string, so editors completed nothing and `tools: [bash]` passed).
        ("unknown-tool.yaml", "\"Bash\" is not one of"),
    ] {
        let found = errors(&jobs, &broken.join(job));
        assert!(
            found.iter().any(|e| e.contains(expected)),
            "{job}: the schema should refuse it ({expected}), found {found:?}"
        );
    }
}

/// The enums list what the loader accepts: every builtin tool and every
/// provider, and nothing else.
#[test]
fn tools_and_providers_are_enums_an_editor_can_complete() {
    let schema: Value = serde_json::from_str(&schema_printed("job")).unwrap();
    let defs = &schema["$defs"];
    let tools: Vec<&str> = defs["ToolName"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(tools, agentci::tools::catalog::names());
    let providers = defs["ProviderName"]["enum"].as_array().unwrap();
    assert_eq!(providers.len(), agentci::job::ProviderKind::ALL.len());
    let jobs = validator("job");
    let job = |body: &str| -> Value {
        serde_saphyr::from_str(&format!("name: x\nskill: s\ngoal: g\n{body}")).unwrap()
    };
    assert!(jobs.is_valid(&job(
        "tools: [read, exec]\nmodel: {provider: bedrock, name: m}"
    )));
    assert!(!jobs.is_valid(&job("tools: [bash]")));
    assert!(!jobs.is_valid(&job("model: {provider: opanai, name: m}")));
}

#[test]
fn shipped_jobs_and_suites_name_their_schema_for_editors() {
    let mut files = yaml_files("workflows");
    files.extend(yaml_files("fixtures/fix-failing-test"));
    files.extend(yaml_files("fixtures/write-changelog"));
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let kind = if text.contains("\ncases:") {
            "suite"
        } else {
            "job"
        };
        let first = text.lines().next().unwrap_or_default();
        let target = first
            .strip_prefix("# yaml-language-server: $schema=")
            .unwrap_or_else(|| panic!("{}: no schema line first", file.display()));
        assert!(target.ends_with(&format!("/{kind}.schema.json")), "{first}");
        assert!(
            file.parent().unwrap().join(target).is_file(),
            "{}: {target} does not exist",
            file.display()
        );
    }
}

/// Regression: the schema refused `compact_at: 80%`, which the loader takes;
/// the job file reference's full example uses every key, so it guards the types.
#[test]
fn the_documented_job_example_validates_against_the_schema() {
    let page = std::fs::read_to_string(Path::new(ROOT).join("docs/job-file.md")).unwrap();
    let section = page.split("\n## The job file\n").nth(1).unwrap();
    let example = section
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    let job: Value = serde_saphyr::from_str(example).unwrap();
    assert!(job.get("budget").is_some(), "{job}");
    let found: Vec<String> = validator("job")
        .iter_errors(&job)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert_eq!(found, Vec::<String>::new());
}

/// The generated trace schema judges, it does not only describe: a line
/// of an event type no run writes, or an event missing a field its type
/// requires, fails it; a real line passes.
#[test]
fn the_generated_trace_schema_refuses_what_no_run_writes() {
    let trace = validator("trace");
    let line = |extra: Value| {
        let mut value = serde_json::json!({"seq": 1, "ts": "2026-11-27T00:00:00Z", "run_id": "r"});
        value
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        value
    };
    let warning = line(serde_json::json!({"type": "warning", "source": "job", "message": "m"}));
    assert!(trace.is_valid(&warning), "a warning line is refused");
    assert!(!trace.is_valid(&line(serde_json::json!({"type": "run.exploded"}))));
    let no_message = line(serde_json::json!({"type": "warning", "source": "job"}));
    assert!(!trace.is_valid(&no_message));
    let mut no_seq = warning.clone();
    no_seq.as_object_mut().unwrap().remove("seq");
    assert!(!trace.is_valid(&no_seq));
}
