//! agentci in GitHub Actions: the real binary with `GITHUB_ACTIONS=true`
//! against the fake model server, writing temporary `GITHUB_STEP_SUMMARY`
//! and `GITHUB_OUTPUT` files; secrets masked everywhere; the scrubbed `exec`
//! environment; and the reusable action's command line, run as written in
//! `.github/actions/agentci/action.yml`.
//!
//! The step summary and the workflow-command log are insta snapshots, taken
//! after times and temporary paths are redacted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use regex::Regex;
use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, read_jsonl, stderr, stdout};
use super::support::job::JobBuilder;
use super::support::trace_schema::assert_valid_trace;

const SECRET: &str = "s3cr3t-value-8f2a";
const API_KEY: &str = "sk-test-key-4b1d9e";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A sandbox with a greeting to fix, a skill and a job; `extra` is appended to the job.
fn sandbox(base_url: &str, checks: &str, extra: &str) -> Sandbox {
    JobBuilder::new("fix-greeting", "fixer", base_url)
        .file("ws/greeting.txt", "hello wrold\n")
        .tools("[read, edit, ls, exec]")
        .body(&format!(
            "permissions:\n  default: allow\nchecks:\n{checks}{extra}"
        ))
        .write()
}

fn fixing_script() -> Vec<Reply> {
    vec![
        Reply::tool_calls(vec![("call_ls", "ls", json!({}))]),
        Reply::plan(&[
            ("Read the greeting", "the typo is found"),
            ("Fix the typo", "greeting.txt says hello world"),
        ]),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))]),
        Reply::step_done("found `wrold`"),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        )]),
        Reply::step_done("fixed the typo"),
        Reply::text("Fixed the typo `wrold` -> `world` in greeting.txt."),
    ]
}

/// Temporary GitHub files and the environment that points at them.
struct GithubFiles {
    summary: PathBuf,
    output: PathBuf,
}

impl GithubFiles {
    fn new(sb: &Sandbox) -> GithubFiles {
        let files = GithubFiles {
            summary: sb.path().join("gh/step_summary.md"),
            output: sb.path().join("gh/output.txt"),
        };
        std::fs::create_dir_all(sb.path().join("gh")).unwrap();
        files
    }

    fn env(&self, sb: &Sandbox) -> Vec<(String, String)> {
        vec![
            ("GITHUB_ACTIONS".into(), "true".into()),
            (
                "GITHUB_STEP_SUMMARY".into(),
                self.summary.display().to_string(),
            ),
            ("GITHUB_OUTPUT".into(), self.output.display().to_string()),
            ("GITHUB_WORKSPACE".into(), sb.path().display().to_string()),
        ]
    }

    fn summary(&self) -> String {
        std::fs::read_to_string(&self.summary).unwrap()
    }

    /// `name=value` outputs, `name<<DELIM` blocks joined back into values.
    fn outputs(&self) -> BTreeMap<String, String> {
        let text = std::fs::read_to_string(&self.output).unwrap();
        let mut outputs = BTreeMap::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if let Some((name, delimiter)) = line.split_once("<<") {
                let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
                outputs.insert(name.to_string(), value.join("\n"));
            } else if let Some((name, value)) = line.split_once('=') {
                outputs.insert(name.to_string(), value.to_string());
            }
        }
        outputs
    }
}

fn run_in(sb: &Sandbox, args: &[&str], env: &[(String, String)]) -> Output {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    agentci_in(sb.path(), args, &env)
}

/// Durations, the sandbox's path and run ids replaced by stable placeholders.
fn redact(text: &str, sb: &Sandbox) -> String {
    let root = sb.path().canonicalize().unwrap();
    let text = text
        .replace(&root.display().to_string(), "<sandbox>")
        .replace(&sb.path().display().to_string(), "<sandbox>");
    let times = Regex::new(r"\b\d+(\.\d+)?s\b|\b\d+m\d\ds\b").unwrap();
    times.replace_all(&text, "<time>").into_owned()
}

#[test]
fn github_run_groups_steps_annotates_failures_and_writes_summary_and_outputs() {
    let model = FakeModel::start(fixing_script());
    let checks = r#"  - name: greeting fixed
    run: grep -q "hello world" greeting.txt
  - name: style
    run: 'echo "greeting.txt:1:7: style: say hello to someone" >&2; exit 1'
"#;
    let sb = sandbox(&model.base_url(), checks, "");
    let gh = GithubFiles::new(&sb);
    let out = run_in(
        &sb,
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--junit",
            "out/junit.xml",
        ],
        &gh.env(&sb),
    );
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert_valid_trace(&sb.path().join("out/trace.jsonl"));
    let log = stderr(&out);

    // No bars and no colour: GitHub mode replaces the terminal display.
    assert!(!log.contains('\u{1b}'), "escape codes in the log:\n{log}");
    // Planning and each step are folded, and the groups are balanced.
    assert!(log.contains("::group::Plan\n"), "{log}");
    assert!(
        log.contains("::group::step 1/2: Read the greeting\n"),
        "{log}"
    );
    assert!(log.contains("::group::step 2/2: Fix the typo\n"), "{log}");
    assert_eq!(
        log.matches("::group::").count(),
        log.matches("::endgroup::").count(),
        "{log}"
    );
    // The failing check points at the file and line its output names,
    // relative to the checkout ($GITHUB_WORKSPACE).
    assert!(
        log.contains("::error file=ws/greeting.txt,line=1,col=7,title=check \"style\" failed::"),
        "{log}"
    );
    insta::assert_snapshot!("failed_run_log", redact(&log, &sb));

    let outputs = gh.outputs();
    assert_eq!(outputs["status"], "failed");
    assert_eq!(outputs["exit-code"], "1");
    assert_eq!(
        PathBuf::from(&outputs["trace"]),
        sb.path().join("out/trace.jsonl")
    );
    assert_eq!(
        PathBuf::from(&outputs["junit"]),
        sb.path().join("out/junit.xml")
    );
    assert_eq!(outputs["patch"], "");
    assert_eq!(outputs["cost-usd"], "", "the fake model has no price");

    let summary = gh.summary();
    assert!(
        summary.contains("### Changed files\n\n- `greeting.txt`"),
        "{summary}"
    );
    insta::assert_snapshot!("failed_run_summary", redact(&summary, &sb));
}

#[test]
fn a_job_level_failure_is_annotated_at_the_job_file() {
    // The model server answers nothing useful: the provider fails, no check runs.
    let model = FakeModel::start(vec![Reply::status(
        400,
        "model `fake-model` does not exist",
    )]);
    let sb = sandbox(&model.base_url(), "  - {name: ok, run: \"true\"}\n", "");
    let gh = GithubFiles::new(&sb);
    let out = run_in(&sb, &["run", "job.yaml"], &gh.env(&sb));
    assert_eq!(out.status.code(), Some(4), "stderr: {}", stderr(&out));
    let log = stderr(&out);
    // `model:` is on line 5 of the job file.
    assert!(
        log.contains("::error file=job.yaml,line=5,title=agentci%3A provider_unavailable::"),
        "{log}"
    );
    assert_eq!(gh.outputs()["status"], "provider_unavailable");
    assert_eq!(gh.outputs()["exit-code"], "4");
    assert!(gh.summary().contains("provider_unavailable"));
}

#[test]
fn secrets_are_masked_in_trace_junit_summary_logs_and_what_the_model_sees() {
    let model = FakeModel::start(vec![
        Reply::plan(&[(
            "Show the environment",
            "the tools see the allowed variables",
        )]),
        Reply::tool_calls(vec![
            (
                "call_echo",
                "exec",
                json!({"command": "echo token=$MY_TOKEN"}),
            ),
            ("call_env", "exec", json!({"command": "env | sort"})),
        ]),
        Reply::step_done(&format!("printed the token {SECRET}")),
        Reply::text(&format!("The token is {SECRET} and the key {API_KEY}.")),
    ]);
    let checks = "  - name: token visible to checks\n    run: echo \"check saw $MY_TOKEN\"; test -n \"$MY_TOKEN\"\n";
    let extra =
        "secrets: [MY_TOKEN]\nenv:\n  MY_TOKEN: \"${{ secrets.MY_TOKEN }}\"\n  PLAIN: hello\n";
    let sb = sandbox(&model.base_url(), checks, extra);
    let gh = GithubFiles::new(&sb);
    let mut env = gh.env(&sb);
    env.push(("MY_TOKEN".into(), SECRET.into()));
    env.push(("OPENAI_API_KEY".into(), API_KEY.into()));
    env.push(("UNLISTED_VAR".into(), "must-not-leak".into()));
    let out = run_in(
        &sb,
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--junit",
            "out/junit.xml",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_valid_trace(&sb.path().join("out/trace.jsonl"));

    // The key really reached the model server, and nothing else carries it.
    let captured = model.captured();
    assert_eq!(
        captured[0].authorization.as_deref(),
        Some(format!("Bearer {API_KEY}").as_str())
    );
    let requests = serde_json::to_string(&model.requests()).unwrap();
    // What agentci sent the model: the tool results. (The scripted model's own
    // messages carry the secret because the script wrote it there.)
    let tool_results: Vec<String> = model
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().unwrap().clone())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    let places = [
        ("trace", sb.read("out/trace.jsonl")),
        ("junit", sb.read("out/junit.xml")),
        ("step summary", gh.summary()),
        ("stdout", stdout(&out)),
        ("stderr", stderr(&out)),
        ("tool results sent to the model", tool_results.join("\n")),
    ];
    for (place, text) in &places {
        assert!(
            !text.contains(SECRET),
            "the secret leaked into the {place}:\n{text}"
        );
        assert!(
            !text.contains(API_KEY),
            "the API key leaked into the {place}:\n{text}"
        );
    }
    assert!(
        stdout(&out).contains("The token is *** and the key ***."),
        "{}",
        stdout(&out)
    );
    assert!(sb.read("out/junit.xml").contains("check saw ***"));
    assert!(
        // `*` is escaped in the summary's Markdown, so the mask shows as written.
        gh.summary().contains("printed the token \\*\\*\\*"),
        "{}",
        gh.summary()
    );

    // exec saw the secret (masked on the way back) and only the allowed environment.
    assert!(requests.contains("token=***"), "{requests}");
    let trace = read_jsonl(&sb.path().join("out/trace.jsonl"));
    assert_eq!(events(&trace, "tool.result").len(), 2);
    let env_output = model.requests()[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "call_env")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    let names: Vec<&str> = env_output
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(env_output.contains("\nPLAIN=hello\n"), "{env_output}");
    assert!(env_output.contains("\nMY_TOKEN=***\n"), "{env_output}");
    assert!(
        names.contains(&"PATH") && names.contains(&"HOME"),
        "{names:?}"
    );
    for name in &names {
        assert!(
            agentci::tools::exec::is_inherited(name)
                || ["PLAIN", "MY_TOKEN", "PWD", "SHLVL", "_", "OLDPWD"].contains(name)
                // git's command-line settings: no implicit bare repositories.
                || ["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"].contains(name),
            "exec saw `{name}`, which is not in the allowed environment:\n{env_output}"
        );
    }
    assert!(!env_output.contains("UNLISTED_VAR") && !env_output.contains("GITHUB_"));
}

/// One step of the action, as parsed from action.yml.
fn action() -> Value {
    let text = std::fs::read_to_string(repo().join(".github/actions/agentci/action.yml")).unwrap();
    serde_saphyr::from_str(&text).expect("action.yml is YAML")
}

/// The value of a `${{ ... }}` expression in the run step's `env`.
fn evaluate(expression: &str, inputs: &BTreeMap<&str, String>, action: &Value) -> String {
    let inner = expression
        .trim()
        .strip_prefix("${{")
        .and_then(|e| e.strip_suffix("}}"))
        .unwrap_or_else(|| panic!("not an expression: {expression}"))
        .trim();
    if let Some(name) = inner.strip_prefix("inputs.") {
        let declared = &action["inputs"][name];
        assert!(
            declared.is_object(),
            "the run step uses undeclared input `{name}`"
        );
        return inputs
            .get(name)
            .cloned()
            .unwrap_or_else(|| declared["default"].as_str().unwrap_or_default().to_string());
    }
    if inner == "steps.install.outputs.bin" {
        return env!("CARGO_BIN_EXE_agentci").to_string();
    }
    panic!("the test does not know how to evaluate `{expression}`");
}

#[test]
fn action_yml_declares_its_interface_and_its_command_line_runs() {
    let action = action();
    assert_eq!(action["runs"]["using"], "composite");
    for input in [
        "job",
        "model",
        "api-key",
        "vars",
        "working-directory",
        "version",
        "goal",
        "skills-path",
        "args",
        "suite",
    ] {
        assert!(
            action["inputs"][input].is_object(),
            "input `{input}` missing"
        );
    }
    for output in ["status", "exit-code", "junit", "trace", "patch", "cost-usd"] {
        let value = action["outputs"][output]["value"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(
            value,
            format!("${{{{ steps.run.outputs.{output} }}}}"),
            "output `{output}` must forward what agentci wrote to $GITHUB_OUTPUT"
        );
    }
    let steps = action["runs"]["steps"].as_array().unwrap();
    let step = steps
        .iter()
        .find(|s| s["id"] == "run")
        .expect("a step with id `run`");
    let script = step["run"].as_str().unwrap();

    // Every flag the script passes is a real `agentci run` flag.
    let help = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let flags = Regex::new(r"\(--([a-z][a-z-]*)").unwrap();
    let used: Vec<String> = flags
        .captures_iter(script)
        .map(|c| c[1].to_string())
        .collect();
    assert!(used.len() >= 5, "{used:?}");
    for flag in &used {
        assert!(
            help.contains(&format!("--{flag} ")),
            "`--{flag}` is not an agentci run flag:\n{help}"
        );
    }

    // Run the script as the runner would, with the step's env evaluated.
    let model = FakeModel::start(fixing_script());
    let sb = sandbox(
        &model.base_url(),
        "  - {name: greeting fixed, run: grep -q \"hello world\" greeting.txt}\n",
        "vars: {who: nobody, mood: calm}\n",
    );
    let job = sb.read("job.yaml").replace(
        "goal: Fix the typo in greeting.txt.",
        "goal: Fix the typo in greeting.txt for ${{ vars.who }}.",
    );
    sb.write("job.yaml", &job);
    // A model name the job does not have, to see `model` and `base-url` take effect.
    let inputs: BTreeMap<&str, String> = BTreeMap::from([
        ("job", "job.yaml".to_string()),
        ("model", "openai:model-from-the-action".to_string()),
        ("base-url", model.base_url()),
        ("api-key", API_KEY.to_string()),
        // A second var, padded and after a blank line, to see the lines parsed.
        ("vars", "who=the action\n\n  mood=1  \n".to_string()),
        // Extra arguments, split on whitespace, and a skills folder per line.
        ("args", "--max-turns 20  --max-tool-calls 30".to_string()),
        (
            "skills-path",
            format!("\n  {}\n", sb.path().join("skills").display()),
        ),
        ("working-directory", sb.path().display().to_string()),
    ]);
    let gh = GithubFiles::new(&sb);
    let working_directory = evaluate(
        step["working-directory"].as_str().unwrap(),
        &inputs,
        &action,
    );
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(script)
        .current_dir(&working_directory)
        .env_remove("OPENAI_API_KEY");
    for (name, value) in step["env"].as_object().unwrap() {
        command.env(name, evaluate(value.as_str().unwrap(), &inputs, &action));
    }
    for (name, value) in gh.env(&sb) {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("::add-mask::"),
        "the key is masked by the runner too"
    );
    assert!(!stderr(&out).contains(API_KEY));

    assert_eq!(gh.outputs()["status"], "passed");
    assert_eq!(gh.outputs()["exit-code"], "0");
    let captured = model.captured();
    assert_eq!(
        captured[0].authorization.as_deref(),
        Some(format!("Bearer {API_KEY}").as_str()),
        "api-key reaches the variable named by api-key-env"
    );
    let first = &captured[0].body;
    assert_eq!(first["model"], "model-from-the-action");
    let goal = serde_json::to_string(&first["messages"]).unwrap();
    assert!(
        goal.contains("for the action."),
        "vars reach the goal: {goal}"
    );
    let trace = Path::new(&gh.outputs()["trace"]).to_path_buf();
    assert_valid_trace(&trace);
    assert!(
        stdout(&out).contains("--max-turns 20 --max-tool-calls 30"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_eval_mode_runs_real_eval_flags_and_uploads_the_reports() {
    let action = action();
    let steps = action["runs"]["steps"].as_array().unwrap();
    let eval = steps.iter().find(|s| s["id"] == "eval").unwrap();
    assert_eq!(
        eval["if"],
        "inputs.suite != '' && inputs.install-only != 'true'"
    );
    let run = steps.iter().find(|s| s["id"] == "run").unwrap();
    assert_eq!(
        run["if"],
        "inputs.suite == '' && inputs.install-only != 'true'"
    );
    let script = eval["run"].as_str().unwrap();
    let help = Command::new(env!("CARGO_BIN_EXE_agentci"))
        .args(["eval", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let flags = Regex::new(r"[( ]--([a-z][a-z-]*)").unwrap();
    let used: Vec<String> = flags
        .captures_iter(script)
        .map(|c| c[1].to_string())
        .collect();
    for flag in ["html", "out", "model", "skills-path"] {
        assert!(used.iter().any(|u| u == flag), "{used:?}");
    }
    for flag in &used {
        assert!(
            help.contains(&format!("--{flag} ")),
            "`--{flag}` is not an agentci eval flag:\n{help}"
        );
    }
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .expect("an upload-artifact step");
    assert_eq!(
        upload["if"],
        "always() && inputs.suite != '' && inputs.install-only != 'true'"
    );
    assert!(
        upload["with"]["path"]
            .as_str()
            .unwrap()
            .ends_with("/.agentci/eval")
    );
    let cache = steps.iter().find(|s| s["id"] == "cache").unwrap();
    assert!(
        cache["uses"]
            .as_str()
            .unwrap()
            .starts_with("actions/cache@")
    );
    for output in ["pass-rate", "regressions", "results"] {
        assert_eq!(
            action["outputs"][output]["value"],
            format!("${{{{ steps.eval.outputs.{output} }}}}")
        );
    }
}

#[test]
fn example_workflows_call_the_action_with_declared_inputs_and_real_jobs() {
    let action = action();
    let dir = repo().join(".github/workflows");
    let mut calls = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let workflow: Value = serde_saphyr::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()));
        for (job_name, job) in workflow["jobs"].as_object().unwrap() {
            for step in job["steps"].as_array().unwrap() {
                if step["uses"] != "./.github/actions/agentci" {
                    continue;
                }
                calls += 1;
                let with = step["with"].as_object().unwrap();
                for key in with.keys() {
                    assert!(
                        action["inputs"][key].is_object(),
                        "{} job {job_name}: the action has no input `{key}`",
                        path.display()
                    );
                }
                let job_file = with["job"].as_str().unwrap();
                let out = agentci_in(&repo(), &["validate", job_file], &[]);
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{}: {job_file} does not validate:\n{}",
                    path.display(),
                    stdout(&out)
                );
            }
        }
    }
    assert!(
        calls >= 4,
        "the CI and the three maintenance workflows use the action"
    );
}

// Regression: long output was masked only after it was cut, so a secret at
// the cut showed its first characters in the trace, JUnit, summary, log and
// what the model saw. The secret also holds a quote and a backslash, which
// the trace and JUnit escape: masking must happen before that escaping.
#[test]
fn a_secret_cut_in_the_middle_of_long_output_is_masked_everywhere() {
    const ODD_SECRET: &str = "s3\"cr\\et-TOKEN-xyz";
    // exec keeps 30000 characters (15000 from the start), a check 20000 (10000):
    // the secret starts 5 characters before each cut.
    let exec = r#"head -c 14995 /dev/zero | tr '\0' a; printf '%s' "$MY_TOKEN"; head -c 40000 /dev/zero | tr '\0' b"#;
    let model = FakeModel::start(vec![
        Reply::plan(&[("Print a lot", "the output is cut")]),
        Reply::tool_calls(vec![("call_long", "exec", json!({"command": exec}))]),
        Reply::step_done("printed"),
        Reply::text("Printed a lot."),
    ]);
    let checks = "  - name: long output\n    run: head -c 9995 /dev/zero | tr '\\0' a; printf '%s' \"$MY_TOKEN\"; head -c 40000 /dev/zero | tr '\\0' b; exit 1\n";
    let extra = "secrets: [MY_TOKEN]\nenv:\n  MY_TOKEN: \"${{ secrets.MY_TOKEN }}\"\n";
    let sb = sandbox(&model.base_url(), checks, extra);
    let gh = GithubFiles::new(&sb);
    let mut env = gh.env(&sb);
    env.push(("MY_TOKEN".into(), ODD_SECRET.into()));
    let out = run_in(
        &sb,
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--junit",
            "out/junit.xml",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let trace = sb.read("out/trace.jsonl");
    assert!(
        trace.contains("bytes of stdout cut"),
        "the output was not cut"
    );
    let places = [
        ("trace", trace),
        ("junit", sb.read("out/junit.xml")),
        ("step summary", gh.summary()),
        ("log", stderr(&out)),
        ("model", serde_json::to_string(&model.requests()).unwrap()),
    ];
    // The start of the secret, raw and as JSON and XML write it.
    for (place, text) in &places {
        for part in ["s3\"cr", "s3\\\"cr", "s3&quot;cr", "TOKEN-xyz"] {
            assert!(!text.contains(part), "`{part}` leaked into the {place}");
        }
    }
}

// Regression: a run that could not start (a bad job file) under GitHub
// Actions printed a plain line and wrote no outputs, so `exit-code` and
// `status` were empty and no annotation pointed at the job file.
#[test]
fn a_job_that_does_not_start_is_annotated_and_still_sets_the_outputs() {
    let sb = sandbox(
        "http://127.0.0.1:9",
        "  - {name: c, run: 'true'}\n",
        "bogus: 1\n",
    );
    let gh = GithubFiles::new(&sb);
    let out = run_in(&sb, &["run", "job.yaml"], &gh.env(&sb));
    assert_eq!(out.status.code(), Some(2));
    let log = stderr(&out);
    let line = sb
        .read("job.yaml")
        .lines()
        .position(|l| l.starts_with("bogus"))
        .unwrap()
        + 1;
    assert!(
        log.contains(&format!(
            "::error file=job.yaml,line={line},col=1::unknown key `bogus`"
        )),
        "{log}"
    );
    let outputs = gh.outputs();
    assert_eq!(outputs["status"], "error");
    assert_eq!(outputs["exit-code"], "2");
    assert_eq!(outputs["trace"], "");
    assert!(gh.summary().contains("did not start"), "{}", gh.summary());
    assert!(gh.summary().contains("unknown key"), "{}", gh.summary());
}

// Regression: the agent's summary went to stdout as is, so a model that
// wrote a line starting with `::` (`::error::…`, `::stop-commands::…`) had
// the GitHub runner execute it as a workflow command.
#[test]
fn model_text_on_stdout_cannot_issue_workflow_commands() {
    let mut script = fixing_script();
    script.pop();
    script.push(Reply::text(
        "Fixed it.\n::error file=src/lib.rs,line=1::fake\n  ::stop-commands::x",
    ));
    let model = FakeModel::start(script);
    let sb = sandbox(
        &model.base_url(),
        "  - {name: greeting fixed, run: grep -q \"hello world\" greeting.txt}\n",
        "",
    );
    let gh = GithubFiles::new(&sb);
    let out = run_in(&sb, &["run", "job.yaml"], &gh.env(&sb));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let token = lines[0]
        .strip_prefix("::stop-commands::")
        .unwrap_or_else(|| panic!("no stop-commands before the model's text:\n{text}"));
    assert!(token.len() >= 16, "{token}");
    assert_eq!(lines[1], "Fixed it.");
    assert_eq!(lines.last().unwrap(), &format!("::{token}::"));

    // Outside GitHub Actions the summary is printed as it is.
    let mut script = fixing_script();
    script.pop();
    script.push(Reply::text("Fixed it.\n::error::not a command here"));
    let model = FakeModel::start(script);
    let sb = sandbox(
        &model.base_url(),
        "  - {name: greeting fixed, run: grep -q \"hello world\" greeting.txt}\n",
        "",
    );
    let out = run_in(&sb, &["run", "job.yaml"], &[]);
    assert_eq!(stdout(&out), "Fixed it.\n::error::not a command here\n");
}
