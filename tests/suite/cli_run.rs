//! `agentci run` driven by flags: a job made from `--goal` (or stdin), flags
//! overriding a job file, `--print-job`, the JSON event stream on stdout, and
//! the messages for flags that are misspelled. The real binary against the
//! fake model server on 127.0.0.1.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{
    Sandbox, agentci_in, events, outside_github, read_jsonl, stderr, stdout,
};
use super::support::prerequisites;

const TYPO: &str = "hello wrold\n";
const GOAL: &str = "Fix the typo in greeting.txt.";

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("ws/greeting.txt", TYPO);
    sb.skill("fixer", None);
    sb
}

/// A model that fixes the typo in one step.
fn fixing_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Fix the typo", "greeting.txt says hello world")]),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        )]),
        Reply::step_done("fixed the typo"),
        Reply::text("Fixed the typo `wrold` -> `world`."),
    ]
}

/// The flags that make the whole job, for a model at `base_url`.
fn job_flags(base_url: &str) -> Vec<String> {
    [
        "--skill",
        "fixer",
        "--skills-path",
        "skills",
        "--model",
        "openai:fake-model",
        "--base-url",
        base_url,
        "--workspace",
        "ws",
        "--tools",
        "read,edit",
        "--allow",
        "read",
        "--allow",
        "edit(*.txt)",
        "--check",
        "grep -q 'hello world' greeting.txt",
        "--progress",
        "plain",
    ]
    .iter()
    .map(ToString::to_string)
    .collect()
}

fn run(sb: &Sandbox, args: &[String]) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.agentci(&args)
}

/// The text of every user message the model was sent.
fn user_text(model: &FakeModel) -> String {
    model
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn with_paths_redacted(sb: &Sandbox, text: &str) -> String {
    text.replace(&sb.path().display().to_string(), "[SANDBOX]")
}

#[test]
fn a_run_made_from_flags_plans_executes_and_checks() {
    let model = FakeModel::start(fixing_script());
    let sb = sandbox();
    let mut args: Vec<String> = vec!["run".into(), "--goal".into(), GOAL.into()];
    args.extend(job_flags(&model.base_url()));
    args.extend(["--trace".into(), "out/trace.jsonl".into()]);
    let out = run(&sb, &args);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(sb.read("ws/greeting.txt"), "hello world\n");
    assert!(user_text(&model).contains(GOAL));
    let trace = sb.trace("out/trace.jsonl");
    let checks = events(&trace, "check.completed");
    assert_eq!(checks.len(), 1, "{trace:?}");
    assert_eq!(checks[0]["outcome"], "passed", "{:?}", checks[0]);
}

#[test]
fn the_goal_is_read_from_stdin_with_goal_dash() {
    let model = FakeModel::start(fixing_script());
    let sb = sandbox();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentci"));
    outside_github(&mut cmd);
    cmd.current_dir(sb.path())
        .args(["run", "--goal", "-"])
        .args(job_flags(&model.base_url()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let goal_from_stdin = "Fix the typo in greeting.txt, read from stdin.\nSecond line.\n";
    child
        .stdin
        .take()
        .unwrap()
        .write_all(goal_from_stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(user_text(&model).contains("read from stdin"));
    assert_eq!(sb.read("ws/greeting.txt"), "hello world\n");
}

#[test]
fn flags_override_the_job_file() {
    // The job's own budget would allow the run; --max-tool-calls 0 is refused
    // at the flag, and --max-tool-calls 1 ends the run at the second call.
    let model = FakeModel::start(vec![
        Reply::plan(&[("Look", "done")]),
        Reply::tool_calls(vec![("c1", "read", json!({"path": "greeting.txt"}))]),
        Reply::tool_calls(vec![("c2", "read", json!({"path": "greeting.txt"}))]),
        Reply::text("never reached"),
    ]);
    let sb = sandbox();
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: from-file\nskill: fixer\ngoal: The goal written in the file.\n\
             model: {{provider: openai, name: fake-model, base_url: {}}}\nworkspace: ws\n\
             skills_path: [skills]\ntools: [read]\npermissions: {{allow: [read]}}\n\
             budget: {{max_tool_calls: 50, max_turns: 20}}\n",
            model.base_url()
        ),
    );
    let base = ["run", "job.yaml", "--progress", "plain"];
    let printed = sb.agentci(
        &[
            &base[..],
            &[
                "--print-job",
                "--goal",
                "The goal from the flag.",
                "--max-tool-calls",
                "1",
                "--timeout",
                "90s",
            ],
        ]
        .concat(),
    );
    assert_eq!(printed.status.code(), Some(0), "{}", stderr(&printed));
    let yaml = stdout(&printed);
    assert!(yaml.contains("The goal from the flag."), "{yaml}");
    assert!(yaml.contains("max_tool_calls: 1"), "{yaml}");
    assert!(yaml.contains("max_turns: 20"), "{yaml}");
    assert!(yaml.contains("timeout: 90s"), "{yaml}");

    let zero = sb.agentci(&[&base[..], &["--max-tool-calls", "0"]].concat());
    assert_eq!(zero.status.code(), Some(2));
    assert!(
        stderr(&zero).contains("--max-tool-calls: error:"),
        "{}",
        stderr(&zero)
    );

    let out = sb.agentci(
        &[
            &base[..],
            &[
                "--goal",
                "The goal from the flag.",
                "--max-tool-calls",
                "1",
                "--trace",
                "out/trace.jsonl",
            ],
        ]
        .concat(),
    );
    let trace = sb.trace("out/trace.jsonl");
    let completed = trace.last().unwrap();
    assert_eq!(completed["type"], "run.completed");
    assert_eq!(completed["status"], "budget_exceeded", "{}", stderr(&out));
    let sent = user_text(&model);
    assert!(sent.contains("The goal from the flag."), "{sent}");
    assert!(!sent.contains("The goal written in the file."), "{sent}");
}

#[test]
fn print_job_writes_a_job_file_that_runs() {
    let model = FakeModel::start(fixing_script());
    let sb = sandbox();
    let mut args: Vec<String> = vec![
        "run".into(),
        "--print-job".into(),
        "--goal".into(),
        GOAL.into(),
    ];
    args.extend(job_flags(&model.base_url()));
    let printed = run(&sb, &args);
    assert_eq!(printed.status.code(), Some(0), "{}", stderr(&printed));
    assert!(model.requests().is_empty(), "--print-job runs nothing");
    let yaml = stdout(&printed);
    insta::assert_snapshot!(
        "print_job_from_flags",
        with_paths_redacted(&sb, &yaml).replace(&model.base_url(), "[MODEL_URL]")
    );
    sb.write("saved.yaml", &yaml);
    let out = sb.agentci(&["run", "saved.yaml", "--progress", "plain"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(sb.read("ws/greeting.txt"), "hello world\n");
}

/// A job file's further skills, tool-loop, sandbox and MCP keys are written as set, and a
/// printed job printed again is the same; the keys `--print-job` cannot
/// write yet are named on stderr, never dropped in silence.
#[test]
fn print_job_writes_the_jobs_keys_and_names_what_it_leaves_out() {
    let sb = sandbox();
    sb.skill("helper", None);
    sb.write(
        "job.yaml",
        "version: 1\nname: loop\nskill: fixer\ngoal: Fix it.\n\
         model: {provider: openai, name: fake-model, base_url: http://127.0.0.1:9/v1}\n\
         workspace: ws\nskills_path: [skills]\ntools: [read, exec]\n\
         permissions: {allow: [read]}\nmax_parallel_tools: 2\n\
         tool_timeout: 90s\ntool_timeouts: {exec: 1500ms}\nloop_guard: {repeats: 5}\n\
         task: {max_turns: 7}\nskills: [helper]\n\
         sandbox: {profile: workspace-write, network: [crates.io], require: false,\n  \
         limits: {processes: 64, memory: 1GiB}, writable: [~/.cache/tool, preset:cargo]}\n\
         telemetry: {otlp: {endpoint: http://127.0.0.1:9}}\n\
         mcp:\n  servers:\n    local: {command: my-server, args: [--flag], timeout: 10s,\n      \
         env: {TOKEN: \"${{ env.MY_TOKEN }}\", MODE: fast}, tools: [search], required: true}\n    \
         remote: {url: \"http://127.0.0.1:9/mcp\", sampling: true,\n      \
         headers: {Authorization: \"Bearer ${{ env.REMOTE_TOKEN }}\"}}\n",
    );
    let printed = sb.agentci(&["run", "job.yaml", "--print-job"]);
    assert_eq!(printed.status.code(), Some(0), "{}", stderr(&printed));
    let yaml = stdout(&printed);
    for line in [
        "max_parallel_tools: 2",
        "tool_timeout: 90s",
        "  exec: 1500ms",
        "  repeats: 5",
        "  max_turns: 7",
        "  profile: workspace-write",
        "  - crates.io",
        // true is the default and not written; false is.
        "  require: false",
        "    processes: 64",
        "    memory: 1073741824",
        "  - ~/.cache/tool",
        "  - preset:cargo",
        "- helper",
        "      command: my-server",
        "      - --flag",
        "        MODE: fast",
        "      timeout: 10s",
        "      required: true",
        "      sampling: true",
    ] {
        assert!(yaml.lines().any(|l| l == line), "no `{line}` in:\n{yaml}");
    }
    // The servers' references to agentci's environment stay references.
    for reference in ["${{ env.MY_TOKEN }}", "Bearer ${{ env.REMOTE_TOKEN }}"] {
        assert!(yaml.contains(reference), "no `{reference}` in:\n{yaml}");
    }
    assert!(
        stderr(&printed).contains(
            "job.yaml: warning: --print-job does not write `telemetry` yet; the printed job runs \
             without them: copy them from this file into it"
        ),
        "{}",
        stderr(&printed)
    );
    sb.write("saved.yaml", &yaml);
    let again = sb.agentci(&["run", "saved.yaml", "--print-job"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(stdout(&again), yaml);
    assert!(!stderr(&again).contains("warning"), "{}", stderr(&again));
}

#[test]
fn json_puts_only_events_on_stdout() {
    for stream_flag in [&["--json"][..], &["--trace", "-"][..]] {
        let model = FakeModel::start(fixing_script());
        let sb = sandbox();
        let mut args: Vec<String> = vec!["run".into(), "--goal".into(), GOAL.into()];
        args.extend(job_flags(&model.base_url()));
        args.extend(stream_flag.iter().map(ToString::to_string));
        args.extend(["--output-last-message".into(), "last.txt".into()]);
        let out = run(&sb, &args);
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        let text = stdout(&out);
        let lines: Vec<Value> = text
            .lines()
            .map(|line| {
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
            })
            .collect();
        assert_eq!(lines.first().unwrap()["type"], "run.started");
        assert_eq!(lines.last().unwrap()["type"], "run.completed");
        let seqs: Vec<u64> = lines.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
        assert!(stderr(&out).contains("agentci: passed"), "{}", stderr(&out));
        assert_eq!(sb.read("last.txt"), "Fixed the typo `wrold` -> `world`.");
        assert!(
            !sb.path().join("-").exists(),
            "`--trace -` is stdout, not a file"
        );
        // The trace file in the run folder holds the same events.
        let runs = sb.workspace().join(".agentci/runs");
        let run_dir = std::fs::read_dir(&runs)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        assert_eq!(read_jsonl(&run_dir.join("trace.jsonl")).len(), lines.len());
    }
}

#[test]
fn a_misspelled_var_names_the_jobs_vars() {
    let sb = sandbox();
    sb.write(
        "job.yaml",
        "version: 1\nname: vars\nskill: fixer\ngoal: Fix ${{ vars.file_name }} in ${{ vars.mode }} mode.\n\
         vars: {file_name: greeting.txt}\nmodel: {provider: openai, name: fake-model}\n\
         workspace: ws\nskills_path: [skills]\n",
    );
    let out = sb.agentci(&[
        "run",
        "job.yaml",
        "--var",
        "file_nme=x.txt",
        "--var",
        "mode=fast",
        "--print-job",
    ]);
    assert_eq!(out.status.code(), Some(2));
    insta::assert_snapshot!("misspelled_var", stderr(&out));
}

#[test]
fn a_run_that_cannot_start_names_the_flag_or_the_place() {
    let sb = sandbox();
    sb.write(
        "job.yaml",
        "version: 1\nname: missing-skill\nskill: fixr\ngoal: Fix it.\n\
         model: {provider: openai, name: fake-model}\nworkspace: ws\nskills_path: [skills]\n",
    );
    let missing_skill = sb.agentci(&["run", "job.yaml", "--progress", "plain"]);
    let flags = sb.agentci(&[
        "run",
        "--goal",
        "x",
        "--skill",
        "fixer",
        "--skills-path",
        "skills",
        "--model",
        "openai:m",
        "--workspace",
        "ws",
        "--tools",
        "read,raed",
        "--allow",
        "exec(",
        "--timeout",
        "soon",
        "--max-turns=-1",
    ]);
    let nothing = sb.agentci(&["run"]);
    sb.write(
        "typo.yaml",
        "version: 1\nname: typo\nskill: fixer\ngoal: Fix it.\n\
         model: {provider: openai, name: fake-model}\nworkspace: ws\nskills_path: [skills]\n\
         buget: {max_turns: 3}\n",
    );
    let unknown_key = sb.agentci(&["run", "typo.yaml"]);
    let flag_skill = sb.agentci(&[
        "run",
        "--goal",
        "x",
        "--skill",
        "fixr",
        "--skills-path",
        "skills",
        "--model",
        "openai:m",
        "--workspace",
        "ws",
    ]);
    for out in [&missing_skill, &flags, &nothing, &flag_skill, &unknown_key] {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    }
    let report = format!(
        "## missing skill in a job file\n{}\n## bad flags\n{}\n## no job, no goal\n{}\n## missing skill from --skill\n{}\n## unknown key\n{}",
        stderr(&missing_skill),
        stderr(&flags),
        stderr(&nothing),
        stderr(&flag_skill),
        stderr(&unknown_key)
    );
    insta::assert_snapshot!("cannot_start", with_paths_redacted(&sb, &report));
}

// A program reading `--json` output gets the problems of a run that cannot
// start as JSON too (it used to get an empty stdout and had to parse stderr).
#[test]
fn a_run_that_cannot_start_says_why_in_json_with_json() {
    let sb = sandbox();
    sb.write(
        "typo.yaml",
        "version: 1\nname: typo\nskill: fixer\ngoal: Fix it.\n\
         model: {provider: openai, name: fake-model}\nworkspace: ws\nskills_path: [skills]\n\
         buget: {max_turns: 3}\n",
    );
    for stream_flag in [&["--json"][..], &["--trace", "-"][..]] {
        let mut args = vec!["run", "typo.yaml"];
        args.extend_from_slice(stream_flag);
        let out = sb.agentci(&args);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("typo.yaml:8:1: error:"),
            "{}",
            stderr(&out)
        );
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{lines:?}");
        let event: Value = serde_json::from_str(lines[0]).unwrap();
        insta::assert_json_snapshot!("cannot_start_json", event);
    }
    // Without a place, the problem still comes as JSON.
    let out = sb.agentci(&["run", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let event: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(event["type"], "run.not_started");
    assert_eq!(event["problems"][0]["file"], Value::Null);
    assert!(
        event["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("--goal")
    );
}

// What people coming from other agents write: `tool_called: bash` (a tool
// no run can call, so the assertion could never fail) and a case `model:`
// written like a job's mapping (it said "quote text that starts with `{`").
// Under GitHub Actions every problem is an annotation at its place too.
#[test]
fn validate_names_other_agents_tools_and_case_models_and_annotates_on_github() {
    let sb = sandbox();
    sb.write(
        "evals/job.yaml",
        "version: 1\nname: fix\nskill: fixer\ngoal: Fix it.\n\
         model: {provider: openai, name: fake-model}\nskills_path: [../skills]\n",
    );
    sb.write("evals/fixture/greeting.txt", TYPO);
    sb.write(
        "evals/suite.yaml",
        "version: 1\nname: s\njob: job.yaml\ncases:\n  - name: a\n    fixture: fixture\n    \
         model: {provider: openai, base_url: 'http://127.0.0.1:9/v1'}\n    assert:\n      \
         - tool_called: Bash\n      - tool_not_called: mcp__github__create_issue\n      \
         - tool_called: step_done\n",
    );
    let plain = sb.agentci(&["validate", "evals/suite.yaml"]);
    assert_eq!(plain.status.code(), Some(2), "{}", stderr(&plain));
    let out = stdout(&plain);
    assert!(!out.contains("::error"), "{out}");
    let github = agentci_in(
        sb.path(),
        &["validate", "evals/suite.yaml"],
        &[("GITHUB_ACTIONS", "true")],
    );
    assert_eq!(github.status.code(), Some(2), "{}", stderr(&github));
    insta::assert_snapshot!("validate_other_agents_names", stdout(&github));
}

#[test]
fn validate_finds_suites_in_folders_and_checks_them_with_positions() {
    let sb = sandbox();
    sb.write(
        "evals/job.yaml",
        "version: 1\nname: fix\nskill: fixer\ngoal: Fix it.\n\
         model: {provider: openai, name: fake-model}\nskills_path: [../skills]\n",
    );
    sb.write("evals/fixture/greeting.txt", TYPO);
    sb.write("evals/cassettes/good.jsonl", "");
    sb.write(
        "evals/good.yaml",
        "version: 1\nname: good\njob: job.yaml\ncases:\n  - name: fixes\n    fixture: fixture\n    \
         cassette: cassettes/good.jsonl\n    assert:\n      - file_contains: {path: greeting.txt, pattern: world}\n",
    );
    sb.write(
        "evals/broken.yaml",
        "version: 1\nname: broken\njob: job.yaml\ncases:\n  - name: a\n    fixture: nowhere\n    \
         cassette: cassettes/good.jsonl\n    assert:\n      - file_contain: {path: greeting.txt, pattern: world}\n",
    );
    sb.write(
        "evals/nojob.yaml",
        "version: 1\ncases:\n  - {name: a, fixture: fixture}\n",
    );
    let folder = sb.agentci(&["validate", "evals"]);
    assert_eq!(folder.status.code(), Some(2), "{}", stderr(&folder));
    let one = sb.agentci(&["validate", "evals/good.yaml"]);
    assert_eq!(one.status.code(), Some(0), "{}", stdout(&one));
    let report = format!(
        "## the folder\n{}{}\n## the good suite alone\n{}{}",
        stdout(&folder),
        stderr(&folder),
        stdout(&one),
        stderr(&one)
    );
    insta::assert_snapshot!("validate_suites", with_paths_redacted(&sb, &report));
}

#[test]
fn a_failed_checks_annotation_says_why_even_when_the_reason_is_far_up() {
    let model = FakeModel::start(fixing_script());
    let sb = sandbox();
    // A test runner's verdict: the assertion, then many lines of listing.
    let check = "echo \"thread 'sums' panicked at src/lib.rs:9:5:\"; \
                 echo 'assertion `left == right` failed: the sums differ'; \
                 for i in $(seq 1 30); do echo \"    listing line $i\"; done; exit 101";
    let mut args: Vec<String> = vec!["run".into(), "--goal".into(), GOAL.into()];
    args.extend(job_flags(&model.base_url()));
    args.extend(["--check".into(), check.into()]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentci"));
    outside_github(&mut cmd);
    let out = cmd
        .current_dir(sb.path())
        .args(&args)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKSPACE", sb.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let log = stderr(&out);
    let annotation = log
        .lines()
        .find(|l| l.starts_with("::error") && l.contains("panicked at"))
        .unwrap_or_else(|| panic!("no annotation for the failed check:\n{log}"));
    assert!(
        annotation.contains("assertion `left == right` failed: the sums differ"),
        "{annotation}"
    );
    assert!(annotation.contains("listing line 30"), "{annotation}");
    // A job made from flags has no file for the annotation to point at.
    assert!(!annotation.contains("file="), "{annotation}");
}

#[test]
fn a_deny_flag_wins_over_an_allow_flag_for_a_model_that_tries_it() {
    // The model wants the file the --deny rule protects, through the allowed `exec(cat *)`.
    let model = FakeModel::start(vec![
        Reply::plan(&[("Look around", "read the secret")]),
        Reply::tool_calls(vec![(
            "call_cat",
            "exec",
            json!({"command": "cat secret.txt"}),
        )]),
        Reply::step_done("tried"),
        Reply::text("done"),
    ]);
    let sb = sandbox();
    sb.write("ws/secret.txt", "do not show\n");
    let base_url = model.base_url();
    let out = sb.agentci(&[
        "run",
        "--goal",
        "Look around.",
        "--skill",
        "skills/fixer",
        "--model",
        "openai:fake-model",
        "--base-url",
        &base_url,
        "--workspace",
        "ws",
        "--tools",
        "exec",
        "--allow",
        "exec(cat *)",
        "--deny",
        "exec(cat *secret*)",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "none",
    ]);
    // Its only call was denied and the job has no checks: nothing could happen.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let trace = sb.trace("out/trace.jsonl");
    let decision = events(&trace, "permission.decision")
        .into_iter()
        .find(|e| e["call_id"] == "call_cat")
        .unwrap();
    assert_eq!(decision["decision"], "deny", "{decision}");
    assert_eq!(decision["rule"], "deny: exec(cat *secret*)");
    assert!(!user_text(&model).contains("do not show"));
    let sent: String = model.requests().iter().map(ToString::to_string).collect();
    assert!(!sent.contains("do not show"));
}

#[test]
fn validate_suggests_a_skill_with_a_close_name() {
    let sb = sandbox();
    sb.write(
        "job.yaml",
        "version: 1\nname: typo\nskill: fixr\ngoal: Fix it.\n\
         model: {provider: openai, name: fake-model}\nworkspace: ws\nskills_path: [skills]\n",
    );
    let out = sb.agentci(&["validate", "job.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let text = stdout(&out);
    assert!(
        text.contains("job.yaml:3:8: error: skill `fixr` not found")
            && text.contains("(did you mean `fixer`?)"),
        "{text}"
    );
}

/// `text` quoted for `sh`.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[test]
fn on_a_terminal_the_plan_outcomes_checks_and_totals_stay_on_screen() {
    // util-linux `script` gives the run a pseudo-terminal, so the bars are drawn.
    if prerequisites::program(
        &["script"],
        "the pseudo-terminal test of `agentci run`",
        "it is in util-linux: `apt-get install util-linux`",
    )
    .is_none()
    {
        return;
    }
    let model = FakeModel::start(fixing_script());
    let sb = sandbox();
    let mut args: Vec<String> = vec![
        env!("CARGO_BIN_EXE_agentci").into(),
        "run".into(),
        "--goal".into(),
        GOAL.into(),
    ];
    args.extend(job_flags(&model.base_url()));
    // job_flags ends with `--progress plain`; the terminal needs `auto`.
    let len = args.len();
    args[len - 1] = "auto".into();
    let command: Vec<String> = args.iter().map(|a| sh_quote(a)).collect();
    let mut cmd = Command::new("script");
    outside_github(&mut cmd);
    let out = cmd
        .current_dir(sb.path())
        .args(["-qec", &command.join(" "), "/dev/null"])
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    let screen = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{screen}{}", stderr(&out));
    for expected in [
        "[agentci] plan: 1 step",
        "[agentci]   ✓ 1. Fix the typo — done: fixed the typo",
        "[agentci] check \"grep -q 'hello world' greeting.txt\": passed",
        "[agentci] run passed in",
    ] {
        assert!(
            screen.contains(expected),
            "missing `{expected}` in:\n{screen}"
        );
    }
}

/// A `--goal` run is resumed with the same flags plus `--resume`; another
/// goal is another job, and is refused.
#[test]
fn a_run_made_from_flags_resumes_with_the_same_flags() {
    let model = FakeModel::start(fixing_script());
    let sb = sandbox();
    let first = |goal: &str, extra: &[&str]| {
        let mut args: Vec<String> = vec!["run".into(), "--goal".into(), goal.into()];
        args.extend(job_flags(&model.base_url()));
        args.extend(["--out", "out/run"].map(String::from));
        args.extend(extra.iter().map(ToString::to_string));
        run(&sb, &args)
    };
    let out = first(GOAL, &["--max-turns", "1"]);
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));

    let out = first(
        "Another goal.",
        &["--resume", "out/run", "--max-turns", "10"],
    );
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("another job"), "{}", stderr(&out));

    let out = first(GOAL, &["--resume", "out/run", "--max-turns", "10"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(sb.read("ws/greeting.txt"), "hello world\n");
    let trace = sb.trace("out/run/trace.jsonl");
    assert_eq!(events(&trace, "run.resumed").len(), 1);
}
