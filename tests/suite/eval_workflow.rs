//! Skill evaluation on pull requests: `--baseline github:BRANCH` against a
//! local fake of the GitHub REST API (`support::fake_github`), with its
//! artifact download redirected to a second host. No baseline yet is a
//! notice; a baseline with a regression fails the run; a download failure is
//! one error line and leaves the evaluation's verdict and results alone;
//! the token never reaches the second host or the output.

use std::path::Path;
use std::process::Output;

use super::eval::notes_sandbox;
use super::support::fake_github::{FakeGithub, FakeRun, TOKEN, results_zip};
use super::support::harness::{Sandbox, agentci_in, stderr, stdout};

pub(super) const WORKFLOW: &str = "skills-eval.yml";
const LENIENT: [&str; 4] = ["--min-pass-rate", "0", "--max-duration-increase", "1000"];

/// `agentci ARGS` in the sandbox with `env`, its workspaces under the sandbox.
pub(super) fn agentci_env(sb: &Sandbox, args: &[&str], env: &[(String, String)]) -> Output {
    let temp = sb.path().join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let temp = temp.display().to_string();
    all.push(("TMPDIR", &temp));
    agentci_in(sb.path(), args, &all)
}

/// `eval suite.yaml --filter passes --out OUT` and the lenient gates.
fn eval_passes(sb: &Sandbox, out: &str, extra: &[&str], env: &[(String, String)]) -> Output {
    let mut args = vec![
        "eval",
        "suite.yaml",
        "--filter",
        "passes",
        "--out",
        out,
        "--progress",
        "none",
    ];
    args.extend(LENIENT);
    args.extend(extra);
    agentci_env(sb, &args, env)
}

/// A passing run of the `passes` case kept as the artifact of run `id` on main.
fn baseline_run(sb: &Sandbox, github: &FakeGithub, id: u64) {
    let base = eval_passes(sb, "base", &[], &[]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let json = std::fs::read(sb.path().join("base/results.json")).unwrap();
    github.add_run(FakeRun {
        id,
        workflow: WORKFLOW.into(),
        branch: "main".into(),
        fork: false,
        artifacts: vec![
            (id * 10, "agentci-eval-shard-1".into(), results_zip(b"{}")),
            (
                id * 10 + 1,
                "agentci-eval-baseline".into(),
                results_zip(&json),
            ),
        ],
    });
}

fn assert_token_stayed_home(github: &FakeGithub, out: &Output) {
    assert!(!stderr(out).contains(TOKEN) && !stdout(out).contains(TOKEN));
    for seen in github.seen() {
        match seen.server {
            "api" => assert_eq!(
                seen.authorization.as_deref(),
                Some(format!("Bearer {TOKEN}").as_str()),
                "{seen:?}"
            ),
            _ => assert_eq!(seen.authorization, None, "the token went to {seen:?}"),
        }
    }
}

#[test]
fn no_baseline_yet_is_a_notice_and_the_run_is_judged_on_its_own() {
    let sb = notes_sandbox();
    let github = FakeGithub::start();
    // The workflow has run, but only on another branch.
    github.add_run(FakeRun {
        id: 5,
        workflow: WORKFLOW.into(),
        branch: "feature".into(),
        fork: false,
        artifacts: vec![],
    });
    let out = eval_passes(
        &sb,
        "now",
        &["--baseline", "github:main"],
        &github.env(WORKFLOW),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "agentci: notice: no baseline yet: first run on main, nothing compared \
             (no successful run of skills-eval.yml on main yet)"
        ),
        "{err}"
    );
    assert!(sb.path().join("now/results.json").is_file());
    assert!(!sb.path().join("now/baseline.json").exists());
    // A workflow file the base branch does not have yet: the same notice.
    let out = eval_passes(
        &sb,
        "now",
        &["--baseline", "github:main"],
        &github.env("new-eval.yml"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no baseline yet: first run on main, nothing compared (the workflow new-eval.yml is not on main yet)"),
        "{}",
        stderr(&out)
    );
    assert_token_stayed_home(&github, &out);
}

#[test]
fn a_baseline_from_the_base_branch_finds_the_regression() {
    let sb = notes_sandbox();
    let github = FakeGithub::start();
    baseline_run(&sb, &github, 41);
    // A newer successful run that kept no baseline (a pull request's, say):
    // the search goes on to the older one.
    github.add_run(FakeRun {
        id: 42,
        workflow: WORKFLOW.into(),
        branch: "main".into(),
        fork: false,
        artifacts: vec![(420, "agentci-eval-shard-1".into(), results_zip(b"{}"))],
    });
    // The case now replays the bad session.
    let suite = sb.read("suite.yaml");
    sb.write(
        "suite.yaml",
        &suite.replacen("cassettes/good.jsonl", "cassettes/bad.jsonl", 1),
    );
    let out = eval_passes(
        &sb,
        "now",
        &["--baseline", "github:main"],
        &github.env(WORKFLOW),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("agentci: baseline: the merged results of https://github.com/octo/skills/actions/runs/41 (skills-eval.yml on main)"),
        "{err}"
    );
    assert!(
        err.contains("regression: notes/passes: passed in the baseline, failed now"),
        "{err}"
    );
    // The baseline is kept beside the results for the steps after.
    assert_eq!(
        std::fs::read(sb.path().join("now/baseline.json")).unwrap(),
        std::fs::read(sb.path().join("base/results.json")).unwrap()
    );
    let seen = github.seen();
    let targets: Vec<String> = seen
        .iter()
        .map(|s| format!("{} {} {}", s.server, s.method, s.target))
        .collect();
    assert!(
        targets[0].starts_with(
            "api GET /repos/octo/skills/actions/workflows/skills-eval.yml/runs?branch=main&status=success"
        ),
        "{targets:?}"
    );
    assert!(
        targets.iter().any(|t| t
            == "api GET /repos/octo/skills/actions/runs/42/artifacts?name=agentci-eval-baseline"),
        "{targets:?}"
    );
    assert!(
        targets
            .iter()
            .any(|t| t.starts_with("storage GET /artifacts/411.zip?sig=signed-411")),
        "the zip comes from the second host: {targets:?}"
    );
    assert_token_stayed_home(&github, &out);
}

#[test]
fn a_forks_pull_request_on_a_branch_named_main_never_becomes_the_baseline() {
    let sb = notes_sandbox();
    let github = FakeGithub::start();
    baseline_run(&sb, &github, 41);
    // The case now replays the bad session; a stranger's pull request from
    // a fork whose branch is called `main` uploaded this bad run as the
    // "baseline", newer than the real one, to hide the regression.
    let suite = sb.read("suite.yaml");
    sb.write(
        "suite.yaml",
        &suite.replacen("cassettes/good.jsonl", "cassettes/bad.jsonl", 1),
    );
    let poison = eval_passes(&sb, "poison", &[], &[]);
    assert_eq!(poison.status.code(), Some(0), "{}", stderr(&poison));
    let poisoned = std::fs::read(sb.path().join("poison/results.json")).unwrap();
    github.add_run(FakeRun {
        id: 43,
        workflow: WORKFLOW.into(),
        branch: "main".into(),
        fork: true,
        artifacts: vec![(431, "agentci-eval-baseline".into(), results_zip(&poisoned))],
    });
    let out = eval_passes(
        &sb,
        "now",
        &["--baseline", "github:main"],
        &github.env(WORKFLOW),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "the regression is found: {err}");
    assert!(
        err.contains("actions/runs/41 (skills-eval.yml on main)"),
        "{err}"
    );
    assert!(
        !github.seen().iter().any(|s| s.target.contains("runs/43")),
        "the fork's run was looked at"
    );
}

#[test]
fn a_download_failure_is_one_error_line_and_the_verdict_is_unchanged() {
    let sb = notes_sandbox();
    let github = FakeGithub::start();
    baseline_run(&sb, &github, 7);
    github.fail_downloads();
    let alone = eval_passes(&sb, "alone", &[], &[]);
    let out = eval_passes(
        &sb,
        "now",
        &["--baseline", "github:main"],
        &github.env(WORKFLOW),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), alone.status.code(), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(
        errors,
        [
            "agentci: error: --baseline github:main: cannot read the baseline: download the \
             artifact 71: GitHub answered 500 for the download link on localhost: storage is \
             down; nothing is compared and the evaluation's verdict is its own (fix the step \
             named, or run without --baseline)"
        ],
        "{err}"
    );
    let results = |dir: &str| -> serde_json::Value {
        serde_json::from_str(&sb.read(&format!("{dir}/results.json"))).unwrap()
    };
    assert_eq!(results("now")["suites"][0]["pass_rate"], 1.0);
    assert_eq!(
        results("now")["regressions"],
        serde_json::json!([]),
        "nothing compared"
    );
    assert_eq!(
        results("now")["suites"][0]["cases_passed"],
        results("alone")["suites"][0]["cases_passed"]
    );
    assert_token_stayed_home(&github, &out);

    // Under GitHub Actions the same line is an annotation on the pull request.
    let mut env = github.env(WORKFLOW);
    env.push(("GITHUB_ACTIONS".into(), "true".into()));
    let out = eval_passes(&sb, "now2", &["--baseline", "github:main"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("::error title=agentci baseline::--baseline github:main: cannot read the baseline: download the artifact 71"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn github_baseline_outside_actions_says_what_is_missing() {
    let sb = notes_sandbox();
    let out = eval_passes(&sb, "now", &["--baseline", "github:main"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("error: --baseline github:main: needs GITHUB_TOKEN (pass `env: GITHUB_TOKEN: ${{ github.token }}`), GITHUB_REPOSITORY"),
        "{err}"
    );
    assert!(!Path::new(&sb.path().join("now/results.json")).exists());
    let out = eval_passes(&sb, "now", &["--baseline", "github:"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("names no branch; write github:BRANCH"),
        "{}",
        stderr(&out)
    );
}

/// A baseline where `passes` passed and a run where it fails, in `base/`
/// and `now/`.
fn regressed_results(sb: &Sandbox) {
    let base = eval_passes(sb, "base", &[], &[]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let suite = sb.read("suite.yaml");
    sb.write(
        "suite.yaml",
        &suite.replacen("cassettes/good.jsonl", "cassettes/bad.jsonl", 1),
    );
    let now = eval_passes(sb, "now", &[], &[]);
    assert_eq!(now.status.code(), Some(0), "{}", stderr(&now));
}

const REPORT_URL: &str = "https://github.com/octo/skills/actions/runs/9#artifacts";

#[test]
fn the_pull_request_comment_is_updated_in_place() {
    let sb = notes_sandbox();
    regressed_results(&sb);
    let github = FakeGithub::start();
    let other = github.add_comment(
        7,
        "Looks good to me! The bot's comment starts with <!-- agentci-eval-comment -->",
    );
    let ours = github.add_comment(7, "<!-- agentci-eval-comment -->\nan older run's table");
    let comment = |pr: &str| {
        agentci_env(
            &sb,
            &[
                "report",
                "comment",
                "now",
                "--baseline",
                "base/results.json",
                "--pr",
                pr,
                "--report-url",
                REPORT_URL,
            ],
            &github.env(WORKFLOW),
        )
    };
    let out = comment("7");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Exit 0 with a regression, and `--help` says so (it said "exit 1 on a
    // regression", which only `eval` and `report merge` do).
    for command in ["comment", "html"] {
        let help = stdout(&agentci_env(&sb, &["report", command, "--help"], &[]));
        assert!(help.contains("the exit code stays 0"), "{help}");
        assert!(!help.contains("exit 1"), "{help}");
    }
    let help = stdout(&agentci_env(&sb, &["report", "merge", "--help"], &[]));
    assert!(help.contains("exit 1 on a regression"), "{help}");
    assert!(
        stderr(&out).contains(&format!(
            "agentci: updated the comment on #7: https://github.com/octo/skills/pull/7#issuecomment-{ours}"
        )),
        "{}",
        stderr(&out)
    );
    let comments = github.comments(7);
    assert_eq!(comments.len(), 2, "no second comment: {comments:?}");
    assert_eq!(comments[0].0, other);
    assert!(comments[0].1.starts_with("Looks good to me!"), "not edited");
    assert_eq!(comments[1].0, ours);
    let body = comments[1].1.clone();
    assert!(
        body.starts_with("<!-- agentci-eval-comment -->\n"),
        "{body}"
    );
    assert!(
        body.contains("| notes | 100% [21–100%] → 0% [0–79%] | 2 | – | 480 → 480 (+0%) |"),
        "the pass rate before → after and the regression count: {body}"
    );
    assert!(
        body.contains(&format!("[HTML report]({REPORT_URL})")),
        "{body}"
    );
    // What the comment says is what `report comment` prints without --pr.
    let printed = agentci_env(
        &sb,
        &[
            "report",
            "comment",
            "now",
            "--baseline",
            "base/results.json",
            "--report-url",
            REPORT_URL,
        ],
        &[],
    );
    assert_eq!(stdout(&printed), body);
    insta::assert_snapshot!("eval_workflow_pr_comment", body);

    // A pull request without our comment gets one, and then keeps it.
    for _ in 0..2 {
        let out = comment("8");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    assert_eq!(github.comments(8).len(), 1, "{:?}", github.comments(8));
    let methods: Vec<String> = github
        .seen()
        .iter()
        .filter(|s| s.method != "GET")
        .map(|s| format!("{} {}", s.method, s.target))
        .collect();
    assert_eq!(
        methods,
        [
            format!("PATCH /repos/octo/skills/issues/comments/{ours}"),
            "POST /repos/octo/skills/issues/8/comments".to_string(),
            format!(
                "PATCH /repos/octo/skills/issues/comments/{}",
                github.comments(8)[0].0
            ),
        ]
    );
    assert_token_stayed_home(&github, &out);
}

#[test]
fn a_comment_that_cannot_be_posted_is_one_error_line() {
    let sb = notes_sandbox();
    regressed_results(&sb);
    let github = FakeGithub::start();
    let mut env = github.env(WORKFLOW);
    // A token GitHub does not take.
    env.retain(|(k, _)| k != "GITHUB_TOKEN");
    env.push(("GITHUB_TOKEN".into(), "ghs_wrong".into()));
    let out = agentci_env(&sb, &["report", "comment", "now", "--pr", "7"], &env);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("agentci: error: report comment: list the comments of pull request #7: GitHub answered 401"),
        "{err}"
    );
    assert!(!err.contains("ghs_wrong"), "{err}");
}

/// The notes suite with a price for its model: $0.001 a token.
fn priced_sandbox() -> Sandbox {
    let sb = notes_sandbox();
    let job = sb.read("job.yaml").replace(
        "model: {provider: openai, name: scripted}",
        "model: {provider: openai, name: scripted, price: {input_per_mtok: 1000, output_per_mtok: 1000}}",
    );
    sb.write("job.yaml", &job);
    sb
}

#[test]
fn max_cost_usd_refuses_an_estimate_over_it_before_running() {
    let sb = priced_sandbox();
    let base = eval_passes(&sb, "base", &[], &[]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let base_results: serde_json::Value =
        serde_json::from_str(&sb.read("base/results.json")).unwrap();
    let per_attempt = base_results["suites"][0]["cases"][0]["cost_usd"]
        .as_f64()
        .expect("the priced run has a cost");
    assert!(per_attempt > 0.1, "{per_attempt}");
    // Three attempts at the baseline's cost per attempt are over the limit.
    let limit = format!("{:.4}", per_attempt * 2.5);
    let out = eval_passes(
        &sb,
        "now",
        &[
            "--repeat",
            "3",
            "--max-cost-usd",
            &limit,
            "--baseline",
            "base/results.json",
        ],
        &[],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "agentci: error: --max-cost-usd {}: this evaluation is estimated at ${:.4} (1 case runs × 3 attempts",
            limit.trim_end_matches('0'),
            per_attempt * 3.0
        )),
        "{err}"
    );
    assert!(err.contains("nothing was run"), "{err}");
    assert!(!sb.path().join("now/results.json").exists());
    // Under the limit it runs, and says what it expects to spend.
    let out = eval_passes(
        &sb,
        "now",
        &["--max-cost-usd", &limit, "--baseline", "base/results.json"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "agentci: estimated cost ${per_attempt:.4} for 1 case runs, within --max-cost-usd"
        )),
        "{}",
        stderr(&out)
    );

    // Without a baseline, the cassettes' recorded usage at the model's list
    // price: refused before any request goes out to the (absent) live model.
    let out = eval_passes(
        &sb,
        "live",
        &[
            "--model",
            "openai:gpt-4.1-mini",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--max-cost-usd",
            "0.0000001",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("this evaluation is estimated at $0.0003 (1 case runs × 1 attempts"),
        "{}",
        stderr(&out)
    );
    let out = eval_passes(&sb, "bad", &["--max-cost-usd", "0"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("error: --max-cost-usd: 0 is not an amount above 0"));
}

#[test]
fn max_cost_usd_stops_the_run_that_reaches_it_and_keeps_what_finished() {
    let sb = priced_sandbox();
    let out = agentci_env(
        &sb,
        &[
            "eval",
            "suite.yaml",
            "--out",
            "now",
            "--jobs",
            "1",
            "--min-pass-rate",
            "0",
            "--max-cost-usd",
            "0.5",
            "--progress",
            "plain",
        ],
        &[],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("reaching --max-cost-usd 0.5; the results of what finished are kept"),
        "{err}"
    );
    let results: serde_json::Value = serde_json::from_str(&sb.read("now/results.json")).unwrap();
    let note = results["interrupted"].as_str().unwrap();
    assert!(
        note.starts_with("stopped by --max-cost-usd 0.5: finished attempts cost $"),
        "{note}"
    );
    let attempts: usize = results["suites"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["attempts"].as_array().unwrap().len())
        .sum();
    assert!(
        (1..6).contains(&attempts),
        "some attempts finished and were kept, not all six: {attempts}\n{err}"
    );
    // Merged (as the workflow's merge job does), the stopped run fails the verdict.
    let merge = agentci_env(&sb, &["report", "merge", "now", "--out", "merged"], &[]);
    assert_eq!(merge.status.code(), Some(1), "{}", stderr(&merge));
    assert!(
        stderr(&merge).contains("agentci: incomplete: stopped by --max-cost-usd 0.5"),
        "{}",
        stderr(&merge)
    );
}

// ---------------------------------------------------------------------------
// The reusable workflow `.github/workflows/agentci-eval.yml`, its scripts run
// as written: the plan job's, the action's eval step for each shard, the merge
// job's and the comment job's, with the fake GitHub API.

fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(path: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(repo().join(path)).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path} is not YAML: {e}"))
}

/// What a step's `${{ … }}` expressions stand for in one simulated run; an
/// expression the test does not know fails it, so the YAML cannot grow a
/// value the test never sets.
struct Context {
    values: std::collections::BTreeMap<&'static str, String>,
}

impl Context {
    fn evaluate(&self, text: &str) -> String {
        let re = regex::Regex::new(r"\$\{\{\s*(.*?)\s*\}\}").unwrap();
        re.replace_all(text, |c: &regex::Captures| {
            self.values
                .get(&c[1])
                .cloned()
                .unwrap_or_else(|| panic!("the test does not know `{}`", &c[1]))
        })
        .into_owned()
    }
}

/// `name=value` lines and `name<<DELIM` blocks of a `$GITHUB_OUTPUT` file.
fn outputs(path: &Path) -> std::collections::BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut found = std::collections::BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
            found.insert(name.to_string(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            found.insert(name.to_string(), value.to_string());
        }
    }
    found
}

/// Run one step's `run:` script with its `env:` evaluated, in `dir`, as
/// the runner would (bash, `GITHUB_OUTPUT` fresh for the step).
fn run_step(
    step: &serde_json::Value,
    context: &Context,
    dir: &Path,
    runner_env: &[(String, String)],
) -> (Output, std::collections::BTreeMap<String, String>) {
    let script = step["run"].as_str().expect("a run step");
    let output = dir.join(format!("github-output-{}", uuid_like()));
    let mut command = std::process::Command::new("bash");
    super::support::harness::outside_github(&mut command);
    command
        .arg("-e")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env_remove("OPENAI_API_KEY")
        .env("GITHUB_OUTPUT", &output);
    if let Some(env) = step["env"].as_object() {
        for (name, value) in env {
            command.env(name, context.evaluate(value.as_str().unwrap()));
        }
    }
    for (name, value) in runner_env {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    let found = outputs(&output);
    (out, found)
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::SeqCst).to_string()
}

fn step_with<'a>(job: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    job["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step `{id}`"))
}

/// One whole run of the workflow for `event` (`push` or `pull_request`):
/// returns the merge job's folder, its step outputs and the verdict step's
/// exit code.
struct WorkflowRun {
    dir: std::path::PathBuf,
    merge: Output,
    verdict: Option<i32>,
    summary: String,
}

fn run_workflow(sb: &Sandbox, github: &FakeGithub, event: &str, name: &str) -> WorkflowRun {
    let workflow = yaml(".github/workflows/agentci-eval.yml");
    let action = yaml(".github/actions/agentci/action.yml");
    let jobs = &workflow["jobs"];
    let bin = env!("CARGO_BIN_EXE_agentci").to_string();
    let values = |extra: &[(&'static str, String)]| {
        let mut values = std::collections::BTreeMap::from([
            ("inputs.shards", "3".to_string()),
            ("inputs.repeat", "1".to_string()),
            ("inputs.min-pass-rate", "0".to_string()),
            ("inputs.max-cost-usd", "30".to_string()),
            ("github.event_name", event.to_string()),
            ("github.base_ref", "main".to_string()),
            ("github.token", TOKEN.to_string()),
            ("steps.agentci.outputs.bin", bin.clone()),
            ("steps.install.outputs.bin", bin.clone()),
            ("github.event.pull_request.number", "7".to_string()),
            (
                "needs.merge.outputs.report-url",
                "https://github.com/octo/skills/actions/runs/99/artifacts/5".to_string(),
            ),
        ]);
        values.extend(extra.iter().cloned());
        Context { values }
    };
    let run_dir = sb.path().join(name);
    std::fs::create_dir_all(&run_dir).unwrap();

    // The plan job: the matrix and the shards' arguments.
    let (out, plan) = run_step(
        step_with(&jobs["plan"], "plan"),
        &values(&[]),
        &run_dir,
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(plan["shards"], "[1,2,3]");
    assert!(
        plan["args"].contains("--max-cost-usd 10.000000"),
        "the cost limit is split: {}",
        plan["args"]
    );

    // Each shard: the shard job's action step, through the action's eval
    // script, in the caller's checkout (the sandbox).
    let shard_step = jobs["shard"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u == "$/.github/actions/agentci")
        })
        .unwrap();
    let eval_step = action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "eval")
        .unwrap();
    for shard in 1..=3 {
        let shard_values = values(&[
            ("matrix.shard", shard.to_string()),
            ("needs.plan.outputs.args", plan["args"].clone()),
            ("inputs.suites", "suite.yaml".to_string()),
            ("inputs.skills-path", String::new()),
            ("inputs.model", String::new()),
            ("inputs.base-url", String::new()),
            ("inputs.agentci-version", String::new()),
        ]);
        // The action's inputs, from the shard step's `with:`.
        let mut with = std::collections::BTreeMap::new();
        for (k, v) in shard_step["with"].as_object().unwrap() {
            let value = match v {
                serde_json::Value::String(s) => shard_values.evaluate(s),
                other => other.to_string(),
            };
            assert!(
                action["inputs"][k].is_object(),
                "the action has no input `{k}`"
            );
            with.insert(k.clone(), value);
        }
        let mut action_values = std::collections::BTreeMap::new();
        for (k, input) in action["inputs"].as_object().unwrap() {
            let key: &'static str = Box::leak(format!("inputs.{k}").into_boxed_str());
            let value = with
                .get(k)
                .cloned()
                .unwrap_or_else(|| input["default"].as_str().unwrap_or_default().to_string());
            action_values.insert(key, value);
        }
        action_values.insert("steps.install.outputs.bin", bin.clone());
        let action_context = Context {
            values: action_values,
        };
        let (out, _) = run_step(eval_step, &action_context, sb.path(), &[]);
        assert!(
            [Some(0), Some(1)].contains(&out.status.code()),
            "shard {shard}: {}",
            stderr(&out)
        );
        // actions/upload-artifact, then download-artifact into shards/NAME/.
        let artifact = run_dir.join("shards").join(&with["artifact-name"]);
        std::fs::create_dir_all(artifact.parent().unwrap()).unwrap();
        std::fs::rename(sb.path().join(".agentci/eval"), &artifact).unwrap();
    }

    // The merge job, its steps as written.
    let merge_job = &jobs["merge"];
    let summary = run_dir.join("step-summary.md");
    let mut runner = github.env(WORKFLOW);
    runner.retain(|(k, _)| k != "GITHUB_TOKEN");
    runner.push(("GITHUB_ACTIONS".into(), "true".into()));
    runner.push(("GITHUB_STEP_SUMMARY".into(), summary.display().to_string()));
    let (merge, merge_outputs) = run_step(
        step_with(merge_job, "merge"),
        &values(&[]),
        &run_dir,
        &runner,
    );
    let verdict_step = merge_job["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "The merged verdict")
        .unwrap();
    let verdict_values = values(&[(
        "steps.merge.outputs.verdict",
        merge_outputs.get("verdict").cloned().unwrap_or_default(),
    )]);
    let (verdict, _) = run_step(verdict_step, &verdict_values, &run_dir, &[]);
    WorkflowRun {
        summary: std::fs::read_to_string(&summary).unwrap_or_default(),
        dir: run_dir,
        merge,
        verdict: verdict.status.code(),
    }
}

/// The comment job's script, in the merge job's folder (the report artifact
/// it downloads holds the same `merged/`).
fn run_comment(run: &WorkflowRun, github: &FakeGithub) -> Output {
    let workflow = yaml(".github/workflows/agentci-eval.yml");
    let job = &workflow["jobs"]["comment"];
    let step = job["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["run"].is_string())
        .unwrap();
    let context = Context {
        values: std::collections::BTreeMap::from([
            (
                "steps.agentci.outputs.bin",
                env!("CARGO_BIN_EXE_agentci").to_string(),
            ),
            ("github.token", TOKEN.to_string()),
            ("github.event.pull_request.number", "7".to_string()),
            (
                "needs.merge.outputs.report-url",
                "https://github.com/octo/skills/actions/runs/99/artifacts/5".to_string(),
            ),
        ]),
    };
    let mut runner = github.env(WORKFLOW);
    runner.retain(|(k, _)| k != "GITHUB_TOKEN");
    runner.push(("GITHUB_ACTIONS".into(), "true".into()));
    runner.push(("GITHUB_BASE_REF".into(), "main".into()));
    run_step(step, &context, &run.dir, &runner).0
}

#[test]
fn the_eval_workflow_declares_its_interface_and_least_permissions() {
    let workflow = yaml(".github/workflows/agentci-eval.yml");
    let call = &workflow["on"]["workflow_call"];
    for input in [
        "suites",
        "shards",
        "model",
        "base-url",
        "repeat",
        "min-pass-rate",
        "agentci-version",
        "comment",
        "max-cost-usd",
    ] {
        assert!(call["inputs"][input].is_object(), "input `{input}` missing");
    }
    assert_eq!(call["inputs"]["shards"]["default"], 1);
    assert_eq!(call["inputs"]["comment"]["default"], false);
    assert!(call["secrets"]["OPENAI_API_KEY"].is_object());
    assert_eq!(workflow["permissions"], serde_json::json!({}));
    let jobs = &workflow["jobs"];
    assert_eq!(jobs["plan"]["permissions"], serde_json::json!({}));
    assert_eq!(
        jobs["shard"]["permissions"],
        serde_json::json!({"contents": "read"})
    );
    assert_eq!(
        jobs["merge"]["permissions"],
        serde_json::json!({"contents": "read", "actions": "read"})
    );
    assert_eq!(
        jobs["comment"]["permissions"],
        serde_json::json!({"pull-requests": "write"})
    );
    // The baseline artifact is the name `--baseline github:BRANCH` looks for,
    // kept on pushes to the default branch only.
    let keep = jobs["merge"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["with"]["name"] == "agentci-eval-baseline")
        .expect("a step keeping the baseline artifact");
    assert_eq!(keep["with"]["path"], "merged/results.json");
    let condition = keep["if"].as_str().unwrap();
    assert!(
        condition.contains("github.event_name == 'push'")
            && condition.contains("github.event.repository.default_branch"),
        "{condition}"
    );
    assert!(
        jobs["comment"]["if"]
            .as_str()
            .unwrap()
            .contains("inputs.comment")
    );
}

#[test]
fn the_eval_workflow_scripts_shard_merge_compare_and_comment() {
    let sb = notes_sandbox();
    let github = FakeGithub::start();

    // A pull request before main has a baseline: compared with nothing, a notice.
    let first = run_workflow(&sb, &github, "pull_request", "pr-first");
    let err = stderr(&first.merge);
    assert!(
        err.contains("agentci: notice: no baseline yet: first run on main, nothing compared"),
        "{err}"
    );
    assert_eq!(first.verdict, Some(0), "{err}");
    assert!(first.dir.join("merged/html/index.html").is_file());

    // A push to main: no comparison; its merged results become the artifact
    // later pull requests compare with (upload-artifact of merged/results.json).
    let push = run_workflow(&sb, &github, "push", "push-main");
    assert_eq!(push.verdict, Some(0), "{}", stderr(&push.merge));
    assert!(
        !stderr(&push.merge).contains("baseline"),
        "{}",
        stderr(&push.merge)
    );
    let merged = std::fs::read(push.dir.join("merged/results.json")).unwrap();
    github.add_run(FakeRun {
        id: 300,
        workflow: WORKFLOW.into(),
        branch: "main".into(),
        fork: false,
        artifacts: vec![(3000, "agentci-eval-baseline".into(), results_zip(&merged))],
    });

    // A pull request that breaks a case: the merged verdict fails on the
    // regression, in the step summary and annotations too.
    let suite = sb.read("suite.yaml");
    sb.write(
        "suite.yaml",
        &suite.replacen("cassettes/good.jsonl", "cassettes/bad.jsonl", 1),
    );
    let pr = run_workflow(&sb, &github, "pull_request", "pr-regressed");
    let err = stderr(&pr.merge);
    assert_eq!(pr.verdict, Some(1), "{err}");
    assert!(
        err.contains("regression: notes/passes: passed in the baseline, failed now"),
        "{err}"
    );
    assert!(pr.summary.contains("Regressions"), "{}", pr.summary);
    assert!(
        stdout(&pr.merge).contains("::error"),
        "{}",
        stdout(&pr.merge)
    );
    assert!(pr.dir.join("merged/baseline.json").is_file());
    assert!(pr.dir.join("merged/html/index.html").is_file());

    // The comment job: an older comment of ours is updated, not a second one added.
    let ours = github.add_comment(7, "<!-- agentci-eval-comment -->\nold");
    let out = run_comment(&pr, &github);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let comments = github.comments(7);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert_eq!(comments[0].0, ours);
    assert!(
        comments[0].1.contains("**❌ regressed** against `main`"),
        "{}",
        comments[0].1
    );
    assert!(
        comments[0]
            .1
            .contains("notes/passes: passed in the baseline, failed now"),
        "{}",
        comments[0].1
    );
    assert_token_stayed_home(&github, &out);
    assert_token_stayed_home(&github, &pr.merge);

    // A failed download: one error line, the merged verdict is the
    // evaluation's own (it regressed nothing it could see: the gate is 0).
    github.fail_downloads();
    let broken = run_workflow(&sb, &github, "pull_request", "pr-broken");
    let err = stderr(&broken.merge);
    assert_eq!(broken.verdict, Some(0), "{err}");
    assert!(
        err.contains("agentci: error: --baseline github:main: cannot read the baseline: download the artifact 3000"),
        "{err}"
    );
    assert!(broken.dir.join("merged/results.json").is_file());
}

/// `results.json` without what differs between two runs of the same
/// attempts: times, durations and where the run folder was.
fn comparable(results: &mut serde_json::Value) {
    const VARYING: &[&str] = &[
        "duration_ms",
        "run_ms",
        "setup_ms",
        "started_at",
        "mean_duration_ms",
        "shard",
        "reuse",
    ];
    match results {
        serde_json::Value::Object(map) => {
            for key in VARYING {
                map.remove(*key);
            }
            for value in map.values_mut() {
                comparable(value);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(comparable),
        _ => {}
    }
}

/// The sharded path end to end on this machine: the shipped suites in three
/// shards, each its own process running at the same time, merged, equal to
/// one unsharded run.
#[test]
fn three_shards_of_the_shipped_suites_merge_into_the_unsharded_run() {
    let out = tempfile::tempdir().unwrap();
    let suites = [
        "fixtures/fix-failing-test/suite.yaml",
        "fixtures/write-changelog/suite.yaml",
    ];
    let eval = |dir: &str, shard: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agentci"));
        super::support::harness::outside_github(&mut command);
        command
            .arg("eval")
            .args(suites)
            .args(["--progress", "none", "--jobs", "1", "--out"])
            .arg(out.path().join(dir))
            .current_dir(repo())
            .env_remove("OPENAI_API_KEY")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        if let Some(shard) = shard {
            command.args(["--shard", shard]);
        }
        command.spawn().unwrap()
    };
    let shards: Vec<_> = (1..=3)
        .map(|i| eval(&format!("shard{i}"), Some(&format!("{i}/3"))))
        .collect();
    for (i, shard) in shards.into_iter().enumerate() {
        let done = shard.wait_with_output().unwrap();
        assert_eq!(
            done.status.code(),
            Some(0),
            "shard {}: {}",
            i + 1,
            String::from_utf8_lossy(&done.stderr)
        );
    }
    let whole = eval("whole", None).wait_with_output().unwrap();
    assert_eq!(
        whole.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let merge = agentci_in(
        out.path(),
        &[
            "report", "merge", "shard1", "shard2", "shard3", "--out", "merged",
        ],
        &[],
    );
    assert_eq!(merge.status.code(), Some(0), "{}", stderr(&merge));
    let read = |dir: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(out.path().join(dir).join("results.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    // Each shard ran a part, and together every case once.
    let cases = |v: &serde_json::Value| -> usize {
        v["suites"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["cases"].as_array().unwrap().len())
            .sum()
    };
    let parts: Vec<usize> = (1..=3)
        .map(|i| cases(&read(&format!("shard{i}"))))
        .collect();
    assert_eq!(parts.iter().sum::<usize>(), 9, "{parts:?}");
    assert!(parts.iter().all(|n| *n > 0 && *n < 9), "{parts:?}");
    let (mut merged, mut unsharded) = (read("merged"), read("whole"));
    comparable(&mut merged);
    comparable(&mut unsharded);
    assert_eq!(merged, unsharded);
}
