//! Ad-hoc runs: `agentci run --goal "…" --model P:N` with no job file and
//! no `--skill` runs with the built-in skill `general` and the
//! workspace-write defaults (the tools every run is offered, each allowed;
//! exec contained by the sandbox); `--tools` and `--allow` narrow them; bad
//! flags are refused at the flag. The real binary against the fake model
//! server on 127.0.0.1, in a folder with no job file.

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, read_jsonl, stderr, stdout};

/// A model that lists the files and says what it saw.
fn listing_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("List the files", "the files are known")]),
        Reply::tool_calls(vec![("call_ls", "ls", json!({"path": "."}))]),
        Reply::step_done("listed them"),
        Reply::text("The workspace holds README.md and src/main.rs."),
    ]
}

/// A workspace with two files and nothing of agentci's.
fn workspace() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("ws/README.md", "# demo\n");
    sb.write("ws/src/main.rs", "fn main() {}\n");
    sb
}

/// `agentci ARGS` in the workspace, as a user types it there.
fn run_in_workspace(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    agentci_in(&sb.workspace(), args, &[])
}

/// The only trace the run wrote in its default run folder.
fn the_trace(sb: &Sandbox) -> Vec<Value> {
    let runs = sb.workspace().join(".agentci/runs");
    let mut dirs: Vec<_> = std::fs::read_dir(&runs)
        .unwrap_or_else(|e| panic!("{}: {e}", runs.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    read_jsonl(&dirs.remove(0).join("trace.jsonl"))
}

#[test]
fn a_goal_and_a_model_are_enough_for_a_run() {
    let model = FakeModel::start(listing_script());
    let sb = workspace();
    let base_url = model.base_url();
    let out = run_in_workspace(
        &sb,
        &[
            "run",
            "--goal",
            "list the files",
            "--model",
            "openai:fake-model",
            "--base-url",
            &base_url,
            "--progress",
            "none",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stdout(&out).contains("README.md and src/main.rs"));
    let yaml: Vec<_> = walk(&sb.workspace())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    assert!(yaml.is_empty(), "no job file is written: {yaml:?}");
    let trace = the_trace(&sb);
    let started = events(&trace, "run.started");
    assert_eq!(started[0]["job_file"], "(command line)");
    assert_eq!(started[0]["skill"], "general");
    let loaded = events(&trace, "skill.loaded");
    let skill_dir = loaded[0]["path"].as_str().unwrap().to_string();
    // The built-in skill's folder is private and goes with the run.
    assert!(!std::path::Path::new(&skill_dir).exists(), "{skill_dir}");

    // What the model is sent: the built-in skill in the system prompt, the
    // offered tools, and the per-run lines saying exec runs any command.
    let requests = model.requests();
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    let from_skill = &system[system.find("# Skill:").unwrap()..];
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    let workspace = std::fs::canonicalize(sb.workspace()).unwrap();
    let shown = format!("tools: {}\n\n{from_skill}", tools.join(", "))
        .replace(&skill_dir, "[SKILL_DIR]")
        .replace(&workspace.display().to_string(), "[WORKSPACE]");
    insta::assert_snapshot!("ad_hoc_request", shown);
    // The warning at the start (in the trace, and on stderr with a
    // progress display) says what the run may do and how to narrow it.
    let note = events(&trace, "warning")
        .into_iter()
        .map(|w| w["message"].as_str().unwrap().to_string())
        .find(|m| m.contains("built-in skill"))
        .unwrap_or_else(|| panic!("{trace:?}"));
    insta::assert_snapshot!("ad_hoc_note", note);
}

/// Every file under `dir`, outside `.agentci/`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.ends_with(".agentci") {
            continue;
        }
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// The permission decision the run's trace holds for `call_id`.
fn decision(trace: &[Value], call_id: &str) -> Value {
    events(trace, "permission.decision")
        .into_iter()
        .find(|e| e["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no decision for {call_id}: {trace:?}"))
        .clone()
}

#[test]
fn exec_runs_any_command_by_default_and_allow_narrows_it() {
    let calls = || {
        vec![
            Reply::plan(&[("Make a file", "made.txt exists")]),
            Reply::tool_calls(vec![(
                "call_touch",
                "exec",
                json!({"command": "touch made.txt"}),
            )]),
            Reply::tool_calls(vec![(
                "call_echo",
                "exec",
                json!({"command": "echo written > echoed.txt"}),
            )]),
            Reply::step_done("made it"),
            Reply::text("Made the files."),
        ]
    };
    let goal = ["run", "--goal", "make the files", "--progress", "none"];
    let model_flags = |url: &str| {
        vec![
            "--model".to_string(),
            "openai:fake-model".to_string(),
            "--base-url".to_string(),
            url.to_string(),
        ]
    };
    // No rules: both commands run (in the sandbox, in the workspace).
    let model = FakeModel::start(calls());
    let sb = workspace();
    let flags = model_flags(&model.base_url());
    let args: Vec<&str> = goal
        .iter()
        .copied()
        .chain(flags.iter().map(String::as_str))
        .collect();
    let out = run_in_workspace(&sb, &args);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let trace = the_trace(&sb);
    assert_eq!(decision(&trace, "call_touch")["decision"], "allow");
    assert!(sb.workspace().join("made.txt").is_file());
    assert_eq!(sb.read("ws/echoed.txt"), "written\n");

    // `--allow 'exec(echo *)'` replaces exec's bare rule: touch is denied,
    // while the other tools keep theirs.
    let model = FakeModel::start(calls());
    let sb = workspace();
    let flags = model_flags(&model.base_url());
    let args: Vec<&str> = goal
        .iter()
        .copied()
        .chain(flags.iter().map(String::as_str))
        .chain(["--allow", "exec(echo *)"])
        .collect();
    let out = run_in_workspace(&sb, &args);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let trace = the_trace(&sb);
    assert_eq!(decision(&trace, "call_touch")["decision"], "deny");
    assert_eq!(decision(&trace, "call_echo")["decision"], "allow");
    assert!(!sb.workspace().join("made.txt").exists());
    let started = &events(&trace, "run.started")[0];
    let allow = started["permissions"]["allow"].to_string();
    assert!(
        allow.contains("\"edit\"") && !allow.contains("\"exec\""),
        "{allow}"
    );
}

#[test]
fn tools_narrows_what_is_offered_and_allowed() {
    let model = FakeModel::start(listing_script());
    let sb = workspace();
    let base_url = model.base_url();
    let out = run_in_workspace(
        &sb,
        &[
            "run",
            "--goal",
            "list the files",
            "--model",
            "openai:fake-model",
            "--base-url",
            &base_url,
            "--tools",
            "ls,read",
            "--progress",
            "none",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let offered: Vec<String> = model.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .filter(|name| !["submit_plan", "step_done", "update_plan"].contains(&name.as_str()))
        .collect();
    assert_eq!(offered, ["read", "ls"]);
    let system = model.requests()[0]["messages"][0]["content"].to_string();
    assert!(
        system.contains("exec is not among this run's tools"),
        "{system}"
    );
}

#[test]
fn print_job_writes_the_builtin_skill_and_the_saved_job_validates() {
    let sb = workspace();
    let out = run_in_workspace(
        &sb,
        &[
            "run",
            "--goal",
            "list the files",
            "--model",
            "openai:fake-model",
            "--allow",
            "exec(cargo test *)",
            "--print-job",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let yaml = stdout(&out);
    assert!(yaml.contains("builtin: general"), "{yaml}");
    sb.write("ws/job.yaml", &yaml);
    let validated = run_in_workspace(&sb, &["validate", "job.yaml"]);
    assert_eq!(
        validated.status.code(),
        Some(0),
        "{}{}",
        stdout(&validated),
        stderr(&validated)
    );
    assert!(stdout(&validated).contains("skill general"));
}

#[test]
fn bad_flags_and_unknown_builtins_are_refused_where_they_are_written() {
    let sb = workspace();
    let flags = run_in_workspace(
        &sb,
        &[
            "run",
            "--goal",
            "list the files",
            "--model",
            "gpt-4.1",
            "--tools",
            "read,bash",
        ],
    );
    let no_model = run_in_workspace(&sb, &["run", "--goal", "list the files"]);
    sb.write(
        "ws/job.yaml",
        "version: 1\nname: typo\nskill: {builtin: genral}\ngoal: Look.\n\
         model: {provider: openai, name: m}\n",
    );
    let builtin = run_in_workspace(&sb, &["validate", "job.yaml"]);
    for out in [&flags, &no_model, &builtin] {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    }
    let report = format!(
        "## bad --model and --tools\n{}\n## no model\n{}\n## unknown built-in skill\n{}",
        stderr(&flags),
        stderr(&no_model),
        stdout(&builtin),
    );
    insta::assert_snapshot!("ad_hoc_refused", report);
}
