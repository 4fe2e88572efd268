//! Every example in the README and `docs/*.md` works as written: each
//! fenced job, suite, skill and workflow is taken out of its page and
//! checked, and every step that runs agentci's action — in the docs and in
//! `.github/workflows/` — names a job that exists and loads with exactly the
//! `vars:` and `args:` the step passes (the documented complete workflow
//! passed `vars: crate=core` to a job with no vars: exit 2 on first use).
//!
//! What each fence is, from its content:
//! - a job (keys of the job schema): `agentci validate`, which must report
//!   no error and no warning. A fragment (no `name`, `skill` or `goal`) is
//!   completed by appending the keys of [`BASE_JOB`] it lacks, so its own
//!   lines keep their numbers;
//! - a suite (`cases:`): `agentci validate`; a fragment without `job:` gets
//!   `version: 1` and the shipped fix-failing-test job;
//! - a skill (a `markdown` fence starting with `---`): `agentci validate`
//!   of its folder;
//! - a workflow (`jobs:`): actionlint. A fragment is completed around it:
//!   a job's keys (`steps:`, `permissions:`) become job `example` of an
//!   `on: workflow_dispatch` workflow (with `runs-on: ubuntu-latest` when
//!   missing), a list of steps that job's `steps:`.
//!
//! A fence is marked by an HTML comment on the line above it,
//! `<!-- example: … -->`, with `;`-separated words: `var K=V` (a var the
//! surrounding text passes), `in DIR` (where it lives in a checkout, so
//! its relative paths resolve: `workflows/`, `fixtures/NAME/`), `with FILE`
//! (a file it names, made beside it holding `{}`, the JSON that any
//! schema or settings file the example names accepts),
//! `partial: WHY` (deliberately incomplete: not checked) and `invalid: WHY`
//! (shows something wrong: `validate` must refuse it). A YAML fence that is
//! none of the above and has no marker fails the test, so nothing is
//! skipped by accident.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use super::support::docs;
use super::support::harness::{agentci_in, copy_tree, stderr, stdout};
use super::workflow_lint::{actionlint, as_actionlint_reads_it};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// What a job fragment is completed with (each key only when the fragment
/// lacks it): a job that validates cleanly with the shipped skill.
const BASE_JOB: &[(&str, &str)] = &[
    ("version", "version: 1\n"),
    ("name", "name: docs-example\n"),
    ("skill", "skill: fix-failing-test\n"),
    ("goal", "goal: Make `cargo test` pass.\n"),
    ("model", "model: {provider: openai, name: gpt-4.1-mini}\n"),
    ("tools", "tools: [read, grep, find, ls, edit, exec]\n"),
    (
        "permissions",
        "permissions: {default: deny, allow: [read, grep, find, ls, \"edit(src/**)\", \"exec(cargo test *)\"]}\n",
    ),
    (
        "checks",
        "checks: [{name: tests pass, run: cargo test --quiet}]\n",
    ),
];

/// The marker above a fence.
#[derive(Debug, Default)]
struct Marker {
    vars: Vec<String>,
    dir: Option<String>,
    files: Vec<String>,
    partial: bool,
    invalid: bool,
}

impl Marker {
    fn parse(line: &str) -> Option<Marker> {
        let words = line
            .trim()
            .strip_prefix("<!-- example:")?
            .strip_suffix("-->")?;
        let mut marker = Marker::default();
        // `partial:` and `invalid:` end the marker: the rest is the reason.
        let (words, reason) = match ["partial:", "invalid:"]
            .iter()
            .filter_map(|w| words.find(w))
            .min()
        {
            Some(at) => (&words[..at], &words[at..]),
            None => (words, ""),
        };
        marker.partial = reason.starts_with("partial:");
        marker.invalid = reason.starts_with("invalid:");
        for word in words.split(';').map(str::trim).filter(|w| !w.is_empty()) {
            if let Some(var) = word.strip_prefix("var ") {
                marker.vars.push(var.trim().to_string());
            } else if let Some(file) = word.strip_prefix("with ") {
                marker.files.push(file.trim().to_string());
            } else if let Some(dir) = word.strip_prefix("in ") {
                marker.dir = Some(dir.trim().to_string());
            } else {
                panic!("unknown word `{word}` in the example marker `{line}`");
            }
        }
        Some(marker)
    }
}

/// One fenced block of a page.
#[derive(Debug)]
struct Fence {
    /// `page:line` of the fence's first line of content.
    place: String,
    info: String,
    /// The content, without the fence's own indentation.
    body: String,
    marker: Marker,
}

/// Every fenced block of every page.
fn fences() -> Vec<Fence> {
    let mut found = Vec::new();
    for (page, text) in docs::pages() {
        let name = page
            .strip_prefix(ROOT)
            .unwrap_or(&page)
            .display()
            .to_string();
        let lines: Vec<&str> = text.lines().collect();
        let mut at = 0;
        while at < lines.len() {
            let line = lines[at];
            let indent = line.len() - line.trim_start().len();
            let Some(info) = line.trim_start().strip_prefix("```") else {
                at += 1;
                continue;
            };
            let above = lines[..at].iter().rev().find(|l| !l.trim().is_empty());
            let marker = above.and_then(|l| Marker::parse(l)).unwrap_or_default();
            let start = at + 1;
            let end = (start..lines.len())
                .find(|&i| lines[i].trim_start().starts_with("```"))
                .unwrap_or_else(|| panic!("{name}:{}: a fence left open", at + 1));
            let body: String = lines[start..end]
                .iter()
                .map(|l| format!("{}\n", l.get(indent..).unwrap_or(l.trim_start())))
                .collect();
            found.push(Fence {
                place: format!("{name}:{}", start + 1),
                info: info.trim().to_string(),
                body,
                marker,
            });
            at = end + 1;
        }
    }
    found
}

/// The top-level keys of the job file, from its schema.
fn job_keys() -> Vec<String> {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join("docs/schemas/job.schema.json"))
            .expect("the job schema"),
    )
    .expect("JSON");
    schema["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .cloned()
        .collect()
}

/// A checkout's example folders, copied, for examples to sit in.
fn checkout_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for folder in ["workflows", "skills", "fixtures"] {
        copy_tree(&Path::new(ROOT).join(folder), &dir.path().join(folder));
    }
    dir
}

/// `agentci validate PATH --var …` in `root`: passed with no warning, or
/// what it printed.
fn validate(root: &Path, path: &Path, vars: &[String]) -> Result<(), String> {
    let path = path.display().to_string();
    let mut args = vec!["validate", path.as_str()];
    for var in vars {
        args.extend(["--var", var.as_str()]);
    }
    let out = agentci_in(root, &args, &[]);
    let clean = out.status.code() == Some(0) && stderr(&out).contains(": 0 errors, 0 warnings");
    if clean { Ok(()) } else { Err(printed(&out)) }
}

fn printed(out: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    )
}

/// The workflow a fragment stands for, or the workflow itself.
fn completed_workflow(parsed: &Value, body: &str) -> String {
    let indented = |text: &str, by: usize| -> String {
        text.lines()
            .map(|l| format!("{}{l}\n", " ".repeat(by)))
            .collect()
    };
    let head = "on: workflow_dispatch\njobs:\n  example:\n";
    match parsed {
        Value::Object(map) if map.contains_key("jobs") => body.to_string(),
        Value::Object(map) => {
            let runs_on = if map.contains_key("runs-on") {
                ""
            } else {
                "    runs-on: ubuntu-latest\n"
            };
            format!("{head}{runs_on}{}", indented(body, 4))
        }
        _ => format!(
            "{head}    runs-on: ubuntu-latest\n    steps:\n{}",
            indented(body, 6)
        ),
    }
}

/// What a YAML fence is.
enum Kind {
    Job,
    Suite,
    Workflow,
}

fn kind_of(parsed: &Value, job_keys: &[String]) -> Option<Kind> {
    let is_step = |v: &Value| v.get("uses").is_some() || v.get("run").is_some();
    match parsed {
        Value::Object(map) if map.contains_key("jobs") || map.contains_key("steps") => {
            Some(Kind::Workflow)
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(is_step) => {
            Some(Kind::Workflow)
        }
        Value::Object(map) if map.contains_key("cases") => Some(Kind::Suite),
        Value::Object(map) if !map.is_empty() && map.keys().all(|k| job_keys.contains(k)) => {
            Some(Kind::Job)
        }
        _ => None,
    }
}

/// Checks one job, suite or skill fence; workflows are gathered into
/// `workflows` for one actionlint run.
fn check_fence(
    fence: &Fence,
    number: usize,
    root: &Path,
    job_keys: &[String],
    workflows: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let dir = root.join(fence.marker.dir.as_deref().unwrap_or("docs-examples"));
    std::fs::create_dir_all(&dir).expect("example folder");
    if ["markdown", "md"].contains(&fence.info.as_str()) {
        if !fence.body.starts_with("---\n") {
            return Ok(());
        }
        let name = fence
            .body
            .lines()
            .find_map(|l| l.strip_prefix("name:"))
            .map(|n| n.trim().to_string())
            .ok_or("a skill without `name:`")?;
        let folder = dir.join(&name);
        std::fs::create_dir_all(&folder).expect("skill folder");
        std::fs::write(folder.join("SKILL.md"), &fence.body).expect("write skill");
        return validate(root, &folder, &fence.marker.vars);
    }
    let parsed: Value = serde_saphyr::from_str(&fence.body)
        .map_err(|e| format!("not YAML ({e}); mark it `<!-- example: partial: WHY -->`"))?;
    let Some(kind) = kind_of(&parsed, job_keys) else {
        return Err(
            "neither a job, a suite nor a workflow: complete it, or mark it \
             `<!-- example: partial: WHY -->`"
                .to_string(),
        );
    };
    for name in &fence.marker.files {
        std::fs::write(dir.join(name), "{}\n").expect("write the file the example names");
    }
    let file = dir.join(format!("example-{number}.yaml"));
    let text = match kind {
        Kind::Workflow => {
            workflows.push((
                fence.place.clone(),
                completed_workflow(&parsed, &fence.body),
            ));
            return Ok(());
        }
        Kind::Job => {
            let mut text = fence.body.clone();
            for (key, line) in BASE_JOB {
                if parsed.get(key).is_none() {
                    text.push_str(line);
                }
            }
            text
        }
        Kind::Suite if parsed.get("job").is_none() => {
            let job = root.join("workflows/fix-failing-test.yaml");
            format!("{}version: 1\njob: {}\n", fence.body, job.display())
        }
        Kind::Suite => fence.body.clone(),
    };
    std::fs::write(&file, &text).expect("write example");
    match (
        validate(root, &file, &fence.marker.vars),
        fence.marker.invalid,
    ) {
        (Ok(()), false) => Ok(()),
        (Err(said), true) if said.contains("error:") => Ok(()),
        (Ok(()), true) => Err("marked invalid, but `agentci validate` accepts it".to_string()),
        (Err(said), _) => Err(format!("as checked:\n{text}\nagentci validate: {said}")),
    }
}

#[test]
fn every_job_suite_skill_and_workflow_in_the_docs_works_as_written() {
    let root = checkout_copy();
    let job_keys = job_keys();
    let mut workflows = Vec::new();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (number, fence) in fences().iter().enumerate() {
        let yaml = ["yaml", "yml"].contains(&fence.info.as_str());
        let markdown = ["markdown", "md"].contains(&fence.info.as_str());
        if fence.marker.partial || !(yaml || markdown) {
            continue;
        }
        checked += 1;
        if let Err(problem) = check_fence(fence, number, root.path(), &job_keys, &mut workflows) {
            problems.push(format!("{}: {problem}", fence.place));
        }
    }
    assert!(checked >= 20, "only {checked} examples found");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut files = Vec::new();
    for (i, (place, workflow)) in workflows.iter().enumerate() {
        for step in action_steps(workflow) {
            if let Err(problem) = check_action_step(&step, dir.path()) {
                problems.push(format!("{place}: {problem}"));
            }
        }
        let file = dir.path().join(format!("docs-workflow-{}.yml", i + 1));
        std::fs::write(&file, as_actionlint_reads_it(workflow)).expect("write");
        files.push((place.clone(), file));
    }
    assert!(workflows.len() >= 5, "{workflows:?}");
    if let Some(out) = actionlint(&files.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>())
        && !out.status.success()
    {
        let mut said = stdout(&out);
        for (place, file) in &files {
            said = said.replace(&file.display().to_string(), &format!("{place} (completed)"));
        }
        problems.push(format!("actionlint:\n{said}"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// A step that runs agentci's action: its inputs.
struct ActionStep {
    with: serde_json::Map<String, Value>,
}

/// The steps of a workflow that use agentci's action, and the suites of
/// jobs that call the reusable eval workflow (as steps with `suite`).
fn action_steps(workflow: &str) -> Vec<ActionStep> {
    let parsed: Value = serde_saphyr::from_str(workflow).unwrap_or(Value::Null);
    let mut found = Vec::new();
    let Some(jobs) = parsed["jobs"].as_object() else {
        return found;
    };
    for job in jobs.values() {
        let with = job["with"].as_object().cloned().unwrap_or_default();
        if job["uses"]
            .as_str()
            .is_some_and(|u| u.contains("/.github/workflows/agentci-eval.yml"))
        {
            let mut inputs = serde_json::Map::new();
            inputs.insert(
                "suite".into(),
                with.get("suites").cloned().unwrap_or_default(),
            );
            found.push(ActionStep { with: inputs });
        }
        for step in job["steps"].as_array().into_iter().flatten() {
            let ours = step["uses"].as_str().is_some_and(|u| {
                u.ends_with("/.github/actions/agentci") || u.contains("/.github/actions/agentci@")
            });
            if ours {
                let with = step["with"].as_object().cloned().unwrap_or_default();
                found.push(ActionStep { with });
            }
        }
    }
    found
}

/// An input's text, with `${{ runner.temp }}` as `temp` and any other
/// expression as `example` (what a workflow would fill in).
fn input(step: &ActionStep, name: &str, temp: &Path) -> Option<String> {
    let value = match step.with.get(name)? {
        Value::String(s) => s.clone(),
        Value::Null => return None,
        other => other.to_string(),
    };
    let expression = regex::Regex::new(r"\$\{\{[^}]*\}\}").expect("regex");
    let value = value.replace("${{ runner.temp }}", &temp.display().to_string());
    Some(expression.replace_all(&value, "example").into_owned())
}

/// Whether the job a step names exists and loads with exactly the step's
/// inputs: the command line the action builds (action.yml, step `run`),
/// with `--print-job`, which loads and checks everything and runs nothing.
/// A suite step validates its suites.
fn check_action_step(step: &ActionStep, temp: &Path) -> Result<(), String> {
    let lines = |name: &str| -> Vec<String> {
        input(step, name, temp)
            .unwrap_or_default()
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    if input(step, "install-only", temp).as_deref() == Some("true") {
        return Ok(());
    }
    let suites = lines("suite");
    if !suites.is_empty() {
        // A reusable workflow's own input (`${{ inputs.suites }}`) names
        // nothing to check here; its callers' suites are checked.
        if suites == ["example"] {
            return Ok(());
        }
        let mut args = vec!["validate".to_string()];
        args.extend(suites);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = agentci_in(Path::new(ROOT), &args, &[]);
        return match out.status.code() {
            Some(0) => Ok(()),
            _ => Err(format!("agentci {}: {}", args.join(" "), printed(&out))),
        };
    }
    let mut args = vec!["run".to_string()];
    args.extend(input(step, "job", temp).filter(|j| !j.is_empty()));
    if let Some(goal) = input(step, "goal", temp) {
        args.extend(["--goal".to_string(), goal]);
    }
    for path in lines("skills-path") {
        args.extend(["--skills-path".to_string(), path]);
    }
    for (name, flag) in [
        ("workspace", "--workspace"),
        ("model", "--model"),
        ("base-url", "--base-url"),
        ("replay", "--replay"),
    ] {
        if let Some(value) = input(step, name, temp) {
            // A workspace an earlier step makes (`${{ runner.temp }}/calc`).
            if name == "workspace" && Path::new(&value).is_absolute() {
                std::fs::create_dir_all(&value).expect("workspace");
            }
            args.extend([flag.to_string(), value]);
        }
    }
    for var in lines("vars") {
        args.extend(["--var".to_string(), var]);
    }
    args.extend(
        input(step, "args", temp)
            .unwrap_or_default()
            .split_whitespace()
            .map(String::from),
    );
    args.push("--print-job".to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = agentci_in(Path::new(ROOT), &args, &[]);
    match out.status.code() {
        Some(0) => Ok(()),
        _ => Err(format!(
            "the action runs `agentci {}`: {}",
            args.join(" "),
            printed(&out)
        )),
    }
}

/// This repository's workflows run the action with jobs that exist and
/// load with the `vars:` and `args:` each step passes.
#[test]
fn every_action_step_in_our_workflows_names_a_job_that_loads_with_its_inputs() {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut steps = 0;
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(Path::new(ROOT).join(".github/workflows")).expect("workflows") {
        let path: PathBuf = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("workflow");
        for step in action_steps(&text) {
            steps += 1;
            if let Err(problem) = check_action_step(&step, temp.path()) {
                problems.push(format!("{}: {problem}", path.display()));
            }
        }
    }
    assert!(steps >= 7, "only {steps} action steps found");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// The check is not blind: a step passing a var the job does not use (the
/// documented complete workflow's `vars: crate=core`) is refused, and so is
/// a job that does not exist.
#[test]
fn an_action_step_with_a_var_the_job_does_not_use_is_refused() {
    let temp = tempfile::tempdir().expect("temp dir");
    let workflow = "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      \
         - uses: ./.github/actions/agentci\n        with:\n          \
         job: workflows/fix-failing-test.yaml\n          vars: |\n            crate=core\n";
    let steps = action_steps(workflow);
    assert_eq!(steps.len(), 1);
    let problem = check_action_step(&steps[0], temp.path()).expect_err("refused");
    assert!(problem.contains("does not use a var `crate`"), "{problem}");
    let missing = workflow.replace("fix-failing-test.yaml", "no-such-job.yaml");
    let missing = missing.replace("          vars: |\n            crate=core\n", "");
    let problem = check_action_step(&action_steps(&missing)[0], temp.path()).expect_err("refused");
    assert!(problem.contains("no-such-job.yaml"), "{problem}");
}

/// A fence that is none of the kinds and carries no marker is an error, not
/// a skip; a marked one is honoured.
#[test]
fn an_unrecognised_fence_fails_unless_marked() {
    let root = checkout_copy();
    let fence = |body: &str, marker: &str| Fence {
        place: "page.md:1".into(),
        info: "yaml".into(),
        body: body.into(),
        marker: Marker::parse(marker).unwrap_or_default(),
    };
    let keys = job_keys();
    let mut workflows = Vec::new();
    let unknown = fence("frobnicate: true\n", "");
    assert!(check_fence(&unknown, 0, root.path(), &keys, &mut workflows).is_err());
    // A job fragment is completed and validated; a wrong value is caught.
    let fragment = fence("sandbox: {profile: workspace-write}\n", "");
    assert_eq!(
        check_fence(&fragment, 1, root.path(), &keys, &mut workflows),
        Ok(())
    );
    let wrong = fence("sandbox: {profile: wide-open}\n", "");
    let said = check_fence(&wrong, 2, root.path(), &keys, &mut workflows).expect_err("refused");
    assert!(said.contains("wide-open"), "{said}");
    let invalid = fence(
        "sandbox: {profile: wide-open}\n",
        "<!-- example: invalid: shows an error -->",
    );
    assert_eq!(
        check_fence(&invalid, 3, root.path(), &keys, &mut workflows),
        Ok(())
    );
    let var = fence(
        "goal: Fix ${{ vars.crate }}.\n",
        "<!-- example: var crate=core -->",
    );
    assert_eq!(
        check_fence(&var, 4, root.path(), &keys, &mut workflows),
        Ok(())
    );
    assert!(workflows.is_empty());
}
