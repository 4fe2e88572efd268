//! Where eval results are read: regressions in `results.json`, the JUnit and
//! `summary.md`; GitHub Actions' step summary, annotations and outputs; the
//! HTML report (from `eval --html` and `report html` over merged shards),
//! loaded in headless Chromium; and several `--model`s side by side against
//! the fake model server.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use super::eval::{bad_script, eval, good_script, notes_sandbox, results};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, stderr, stdout};
use super::support::junit_schema::assert_readable;
use super::support::prerequisites;

const LENIENT: [&str; 4] = ["--min-pass-rate", "0", "--max-duration-increase", "1000"];

/// A baseline where `passes` passed, and a run where it replays the bad
/// session: one case regression and one suite pass-rate regression.
fn regressed(sandbox: &Sandbox, extra_env: &[(&str, &str)]) -> std::process::Output {
    let mut args = vec!["suite.yaml", "--filter", "passes", "--out", "base"];
    args.extend(LENIENT);
    let base = eval(sandbox, &args);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let suite = sandbox.read("suite.yaml");
    sandbox.write(
        "suite.yaml",
        &suite.replacen("cassettes/good.jsonl", "cassettes/bad.jsonl", 1),
    );
    let mut args = vec![
        "eval",
        "suite.yaml",
        "--out",
        "now",
        "--baseline",
        "base/results.json",
        "--progress",
        "none",
    ];
    args.extend(LENIENT);
    agentci_in(sandbox.path(), &args, extra_env)
}

#[test]
fn regressions_are_in_results_json_junit_and_summary_md() {
    let sandbox = notes_sandbox();
    let now = regressed(&sandbox, &[]);
    assert_eq!(now.status.code(), Some(1), "{}", stderr(&now));
    let out = sandbox.path().join("now");

    let r = results(&out);
    let found = r["regressions"].as_array().unwrap();
    let case = found.iter().find(|x| x["kind"] == "case").unwrap();
    assert_eq!(case["suite"], "notes");
    assert_eq!(case["case"], "passes");
    assert_eq!(case["before"], "passed (1/1 attempts)");
    assert_eq!(case["after"], "failed (0/1 attempts, 0 errored)");
    let rate = found.iter().find(|x| x["kind"] == "pass_rate").unwrap();
    assert_eq!(
        (rate["before"].as_str(), rate["after"].as_str()),
        (Some("100.0%"), Some("40.0%"))
    );

    let xml = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert_readable(&out.join("junit.xml"));
    assert!(xml.contains(r#"<testsuite name="regressions""#), "{xml}");
    assert!(
        xml.contains(r#"<testcase name="notes/passes" classname="regressions.notes""#),
        "{xml}"
    );
    assert!(
        xml.contains("before (baseline): passed (1/1 attempts)")
            && xml.contains("after: failed (0/1 attempts, 0 errored)"),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testcase name="notes (pass rate)""#),
        "{xml}"
    );

    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("### Regressions against the baseline"), "{md}");
    assert!(
        md.contains("| notes/passes: passed in the baseline, failed now | passed (1/1 attempts) | failed (0/1 attempts, 0 errored) |"),
        "{md}"
    );
    // Nothing regressed: the field is there, and empty.
    let base = results(&sandbox.path().join("base"));
    assert_eq!(base["regressions"], json!([]));
}

#[test]
fn github_actions_gets_the_step_summary_annotations_and_outputs() {
    let sandbox = notes_sandbox();
    let summary = sandbox.path().join("step-summary.md");
    let outputs = sandbox.path().join("github-output");
    let (summary_s, outputs_s) = (summary.display().to_string(), outputs.display().to_string());
    let now = regressed(
        &sandbox,
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", &summary_s),
            ("GITHUB_OUTPUT", &outputs_s),
        ],
    );
    assert_eq!(now.status.code(), Some(1), "{}", stderr(&now));
    let written = std::fs::read_to_string(sandbox.path().join("now/summary.md")).unwrap();
    let step = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(step.trim_end(), written.trim_end());
    // What a user reads, with times, costs and paths redacted.
    let sandbox_path = regex::escape(&sandbox.path().display().to_string());
    insta::with_settings!({filters => vec![
        (sandbox_path.as_str(), "[SANDBOX]"),
        (r"\d+\.\ds\b", "[TIME]"),
        (r"\$\d+\.\d{4}", "[COST]"),
    ]}, {
        insta::assert_snapshot!("eval_summary_with_regressions", written);
    });

    let out = stdout(&now);
    let annotations: Vec<&str> = out.lines().filter(|l| l.starts_with("::error")).collect();
    for expected in [
        "::error title=agentci eval%3A notes/passes failed::notes/passes failed: 0/1 attempts passed, 0 errored: attempt 1: 3 of 7 assertions failed: `status: passed` saw",
        "::error title=agentci eval%3A notes/fails failed::",
        "::error title=agentci eval%3A notes/errors error::notes/errors error: 0/0 attempts passed, 1 errored",
        "::error title=agentci eval%3A regression in notes/passes::notes/passes: passed in the baseline, failed now (before passed (1/1 attempts), after failed (0/1 attempts, 0 errored))",
        "::error title=agentci eval%3A regression in notes::notes: pass rate 100.0%25 → 40.0%25",
    ] {
        assert!(
            annotations.iter().any(|a| a.starts_with(expected)),
            "no annotation starting {expected:?} in:\n{}",
            annotations.join("\n")
        );
    }
    // A passing case is not annotated.
    assert!(!out.contains("notes/expected-failure passed"), "{out}");

    let outputs = std::fs::read_to_string(&outputs).unwrap();
    assert!(outputs.contains("pass-rate=0.4000\n"), "{outputs}");
    assert!(outputs.contains("regressions=2\n"), "{outputs}");
    let results_line = outputs.lines().find(|l| l.starts_with("results=")).unwrap();
    assert!(
        Path::new(&results_line["results=".len()..]).ends_with("now/results.json"),
        "{outputs}"
    );
}

/// Headless Chromium; `None` (a skip) outside CI on a machine without it.
pub(super) fn chromium() -> Option<PathBuf> {
    prerequisites::program(
        &["chromium", "chromium-browser", "google-chrome"],
        "the eval HTML report tests in a browser",
        "apt-get install chromium; .ci/run installs it",
    )
}

/// Chromium run headless on `target` with `tail` (a query and/or a
/// fragment) after its address: its stdout and its log.
fn in_chromium(chromium: &Path, extra: &[String], target: &Path, tail: &str) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}{tail}", target.display()))
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The DOM of `page` at `tail` after its scripts ran, and the log. A copy
/// of the page gets a `window.onerror` hook first, so a JavaScript error
/// becomes an attribute the dumped DOM shows.
pub(super) fn dom_in_chromium(page: &Path, tail: &str) -> Option<(String, String)> {
    let chromium = chromium()?;
    let html = std::fs::read_to_string(page).unwrap();
    let hook = "<head><script>window.onerror=function(m){document.documentElement.setAttribute('data-js-error',String(m));};</script>";
    let probe = page.with_file_name("probe.html");
    std::fs::write(&probe, html.replacen("<head>", hook, 1)).unwrap();
    Some(in_chromium(
        &chromium,
        &["--dump-dom".to_string()],
        &probe,
        tail,
    ))
}

/// A screenshot of `page` at `tail` into `shot`; the log.
pub(super) fn screenshot_in_chromium(page: &Path, tail: &str, shot: &Path) -> Option<String> {
    let chromium = chromium()?;
    let (_, log) = in_chromium(
        &chromium,
        &[
            "--window-size=1280,3600".to_string(),
            // Time to paint after the script scrolled to a linked transcript.
            "--virtual-time-budget=2000".to_string(),
            format!("--screenshot={}", shot.display()),
        ],
        page,
        tail,
    );
    assert!(shot.is_file(), "no screenshot: {log}");
    eprintln!("HTML report screenshot: {}", shot.display());
    Some(log)
}

/// What Chromium shows of `page`: the DOM at `fragment` after the scripts
/// ran, and its log; a screenshot of the page's top goes to `screenshot`.
fn load_in_chromium(page: &Path, fragment: &str, screenshot: &Path) -> Option<(String, String)> {
    let (dom, log) = dom_in_chromium(page, fragment)?;
    let shot_log = screenshot_in_chromium(page, "", screenshot)?;
    Some((dom, format!("{log}\n{shot_log}")))
}

/// The opening tag of the element whose tag contains `marker`.
pub(super) fn opening_tag<'a>(dom: &'a str, marker: &str) -> &'a str {
    let at = dom
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in the page"));
    let start = dom[..at].rfind('<').unwrap();
    let end = at + dom[at..].find('>').unwrap();
    &dom[start..=end]
}

/// Where screenshots are kept after the test, for a person to look at.
pub(super) fn artifact(name: &str) -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"),
            PathBuf::from,
        )
        .join("test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const HOSTILE: &str = "Done. <script>document.title='pwned'</script><img src=x onerror=\"document.body.setAttribute('data-pwned','1')\"> </pre></details>";

const LIVE_SUITE: &str = "version: 1
name: live
job: job.yaml
cases:
  - name: fix
    fixture: fixture
    assert:
      - file_contains: {path: notes.txt, pattern: 'status: fixed'}
";

#[test]
fn several_models_side_by_side_and_the_html_report_in_a_browser() {
    let sandbox = notes_sandbox();
    sandbox.write("live.yaml", LIVE_SUITE);
    // One attempt at a time, so one model's whole session is served before
    // the other's; the fake answers both names, as an OpenAI-compatible
    // gateway would.
    let mut alpha = good_script();
    alpha.pop();
    alpha.push(Reply::text(HOSTILE));
    let model = FakeModel::start(alpha.into_iter().chain(bad_script()).collect());
    let out = eval(
        &sandbox,
        &[
            "live.yaml",
            "--model",
            "openai:alpha",
            "--model",
            "openai:beta",
            "--base-url",
            &model.base_url(),
            "--jobs",
            "1",
            "--out",
            "out",
            "--html",
            "html",
            "--min-pass-rate",
            "0",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(model.remaining(), 0);
    let r = results(&sandbox.path().join("out"));
    let cases = r["suites"][0]["cases"].as_array().unwrap();
    let side: Vec<(&str, &str, &str)> = cases
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["model"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
            )
        })
        .collect();
    // One attempt at a time: the model asked first got the good session.
    let requests = model.requests();
    let first = requests[0]["model"].as_str().unwrap();
    let last = requests.last().unwrap()["model"].as_str().unwrap();
    assert_ne!(first, last, "each model got its own session");
    let status = |m: &str| if m == first { "passed" } else { "failed" };
    assert_eq!(
        side,
        [
            ("fix", "openai:alpha", status("alpha")),
            ("fix", "openai:beta", status("beta")),
        ]
    );
    let row = |m: &str| {
        format!(
            "| live | fix | openai:{m} | {} |",
            if m == first {
                "✅ passed"
            } else {
                "❌ failed"
            }
        )
    };

    let md = std::fs::read_to_string(sandbox.path().join("out/summary.md")).unwrap();
    assert!(
        md.contains(&row("alpha")) && md.contains(&row("beta")),
        "{md}"
    );
    let xml = std::fs::read_to_string(sandbox.path().join("out/junit.xml")).unwrap();
    assert!(
        xml.contains(r#"testcase name="fix [openai:alpha]""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"testcase name="fix [openai:beta]""#),
        "{xml}"
    );
    let err = stderr(&out);
    assert!(err.contains("HTML report in html/index.html"), "{err}");
    // Progress names the model of each attempt.
    for m in ["alpha", "beta"] {
        let line = format!("live/fix [openai:{m}] #1: {}", status(m));
        assert!(err.contains(&line), "{err}");
    }

    let page = sandbox.path().join("html/index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing fetched from anywhere.
    for remote in ["http://", "https://", "src=\"//"] {
        let outside_svg = html.replace("http://www.w3.org/2000/svg", "");
        assert!(!outside_svg.contains(remote), "the report loads {remote}");
    }
    assert!(
        html.contains("&lt;script&gt;document.title"),
        "hostile text not escaped"
    );

    let shot = artifact("eval-report-models.png");
    // A link to an attempt opens its transcript.
    let Some((dom, log)) = load_in_chromium(&page, "#t-0-1-1", &shot) else {
        return;
    };
    assert!(!dom.contains("data-js-error=\""), "JavaScript error: {dom}");
    assert!(
        opening_tag(&dom, r#"id="t-0-1-1""#).contains(r#"open="""#),
        "the linked transcript is not open"
    );
    assert!(
        !log.contains("Uncaught"),
        "JavaScript error in the log: {log}"
    );
    assert!(
        dom.contains("data-report-ready=\"yes\""),
        "the script did not run: {dom}"
    );
    assert!(
        !dom.contains("data-pwned=\"") && !dom.contains("<title>pwned"),
        "model text ran"
    );
    for id in [
        "chart-suites",
        "chart-cases",
        "chart-cost",
        "chart-tokens",
        "chart-time",
    ] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "no {id}");
    }
    assert!(dom.contains("openai:alpha") && dom.contains("openai:beta"));
    // The transcripts filtered by model, from the address.
    let (alpha_only, _) = dom_in_chromium(&page, "?model=openai:alpha").unwrap();
    let hidden = |id: &str| opening_tag(&alpha_only, &format!("id=\"{id}\"")).contains("hidden");
    assert!(!hidden("t-0-0-1") && hidden("t-0-1-1"), "the model filter");
    assert!(dom.contains("class=\"transcript\""), "no transcript");
    assert!(
        dom.contains("<b>Tool call</b> <code>edit</code> <span class=\"args\">notes.txt</span>"),
        "no tool call in the transcript"
    );
    assert!(
        dom.contains("Final answer"),
        "no final answer in the transcript"
    );
    assert!(dom.contains("Check fixed"), "no check in the transcript");
    assert!(
        dom.contains(r#"<b>Plan</b><ol><li><span class="badge ok">done</span> Fix the status"#),
        "no plan in the transcript"
    );
    // The model's hostile answer is there, as text.
    assert!(
        dom.contains("<pre>Done. &lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;img"),
        "the final answer is not shown as text"
    );
}

#[test]
fn report_html_merges_shards_flags_flaky_cases_and_shows_the_baseline() {
    let sandbox = notes_sandbox();
    for shard in ["1/2", "2/2"] {
        let dir = format!("shard{}", &shard[..1]);
        let out = eval(
            &sandbox,
            &[
                "suite.yaml",
                "--shard",
                shard,
                "--out",
                &dir,
                "--repeat",
                "2",
            ],
        );
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{}",
            stderr(&out)
        );
    }
    let base = eval(
        &sandbox,
        &["suite.yaml", "--filter", "passes", "--out", "base"],
    );
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let out = agentci_in(
        sandbox.path(),
        &[
            "report",
            "html",
            "shard1",
            "shard2/results.json",
            "--out",
            "merged-html",
            "--baseline",
            "base/results.json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = sandbox.path().join("merged-html/index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // Every attempt of both shards, each with its transcript read.
    assert_eq!(html.matches("class=\"transcript\"").count(), 10, "{html}");
    assert!(!html.contains("No transcript"), "a trace was not found");
    assert!(html.contains(r#"<span class="badge flaky">flaky</span>"#));
    assert!(
        html.contains(" baseline</span>"),
        "no baseline in the legend"
    );
    let shot = artifact("eval-report-merged.png");
    if let Some((dom, log)) = load_in_chromium(&page, "", &shot) {
        assert!(
            !dom.contains("data-js-error=\"") && !log.contains("Uncaught"),
            "{log}"
        );
    }

    // A folder without results: the error names it, nothing is written.
    let missing = agentci_in(
        sandbox.path(),
        &["report", "html", "nowhere", "--out", "x"],
        &[],
    );
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("nowhere/results.json"),
        "{}",
        stderr(&missing)
    );
    assert!(!sandbox.path().join("x").exists());
}

#[test]
fn bad_model_lists_are_refused_before_anything_runs() {
    let sandbox = notes_sandbox();
    let twice = eval(
        &sandbox,
        &[
            "suite.yaml",
            "--model",
            "openai:a",
            "--model",
            "openai:a",
            "--out",
            "o",
        ],
    );
    assert_eq!(twice.status.code(), Some(2));
    assert!(
        stderr(&twice).contains("--model openai:a is given twice"),
        "{}",
        stderr(&twice)
    );
    let record = eval(
        &sandbox,
        &[
            "suite.yaml",
            "--record",
            "--model",
            "openai:a",
            "--model",
            "openai:b",
            "--out",
            "o",
        ],
    );
    assert_eq!(record.status.code(), Some(2));
    assert!(
        stderr(&record).contains("--record with several --model"),
        "{}",
        stderr(&record)
    );
    assert!(!sandbox.path().join("o").exists());
}

// Regression: XML readers turn a raw line break inside an attribute into a
// space (attribute-value normalization, XML 1.0 §3.3.3), so a multi-line
// failure message (one failed assertion a line) was shown on one line by
// every JUnit reader. It is written as `&#10;`, which readers keep.
#[test]
fn a_multi_line_failure_message_keeps_its_line_breaks_in_junit_readers() {
    let sandbox = notes_sandbox();
    sandbox.write(
        "multi.yaml",
        "version: 1\nname: multi\njob: job.yaml\ncases:\n  - name: two-lines\n    fixture: fixture\n    cassette: cassettes/good.jsonl\n    assert:\n      - run: |\n          test -f notes.txt\n          grep -q 'status: broken' notes.txt\n",
    );
    let out = eval(&sandbox, &["multi.yaml", "--out", "out"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let junit = sandbox.path().join("out/junit.xml");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let message = "attempt 1: 1 of 2 assertions failed:&#10;`run: test -f notes.txt grep -q";
    assert!(xml.contains(message), "{xml}");
    if let Some(read) = assert_readable(&junit) {
        let message = read[0].results[0].1.clone().unwrap_or_default();
        assert!(
            message.contains("assertions failed:\n`run: test -f notes.txt grep -q"),
            "junitparser reads {message:?}"
        );
    }
}
