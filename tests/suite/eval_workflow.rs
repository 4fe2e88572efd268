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
    let other = github.add_comment(7, "Looks good to me!");
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
    assert!(
        stderr(&out).contains(&format!(
            "agentci: updated the comment on #7: https://github.com/octo/skills/pull/7#issuecomment-{ours}"
        )),
        "{}",
        stderr(&out)
    );
    let comments = github.comments(7);
    assert_eq!(comments.len(), 2, "no second comment: {comments:?}");
    assert_eq!(comments[0], (other, "Looks good to me!".to_string()));
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
    // Under the limit it runs.
    let out = eval_passes(
        &sb,
        "now",
        &["--max-cost-usd", &limit, "--baseline", "base/results.json"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

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
}
