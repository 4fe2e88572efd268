//! What an eval attempt's transcript in the HTML report shows, loaded in
//! headless Chromium: each tool call with its output (masked), the diff of
//! what the attempt changed, a failed assertion's whole output with its
//! lines, the plan with how each step ended, filters that work from the
//! address, links from every failing case to its transcript, and an
//! accessibility pass (headings in order, only native controls, labels).

use std::path::Path;

use regex::Regex;
use serde_json::json;

use super::eval_report::{artifact, dom_in_chromium, opening_tag, screenshot_in_chromium};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, stderr};

const SECRET: &str = "s3cr3t-planted-value-0042";

const JOB: &str = "version: 1
name: fix-notes
skill: notes-fixer
skills_path: [skills]
goal: Change the status in notes.txt to fixed.
model: {provider: openai, name: scripted}
tools: [read, edit, ls, exec]
secrets: [PLANTED_TOKEN]
permissions: {default: allow}
budget: {max_turns: 12}
";

const SUITE: &str = "version: 1
name: notes
job: job.yaml
cases:
  - name: looks-around
    fixture: fixture
    assert:
      - file_contains: {path: notes.txt, pattern: 'status: fixed'}
      - run: \"printf 'first line of the check\\\\nsecond line of the check\\\\n'; exit 1\"
  - name: passes
    fixture: fixture
    assert:
      - file_contains: {path: notes.txt, pattern: 'status: fixed'}
";

/// The first case's session: it looks around (`ls`, an `exec` whose output
/// carries the secret, hostile markup and more lines than are shown at
/// first), fixes the file and finishes; the second case's fixes it at once.
fn sessions() -> Vec<Reply> {
    let fix = || {
        Reply::tool_call(
            "edit",
            json!({"path": "notes.txt", "old_text": "status: broken", "new_text": "status: fixed"}),
        )
    };
    vec![
        Reply::plan(&[
            ("Look around", "know the files"),
            ("Fix the status", "notes.txt says fixed"),
        ]),
        Reply::tool_call("ls", json!({})),
        Reply::tool_call(
            "exec",
            json!({"command": "cat notes.txt && echo '<script>alert(1)</script></details></pre>' && seq 1 900"}),
        ),
        Reply::step_done("looked"),
        fix(),
        Reply::step_done("fixed"),
        Reply::text("Set the status to fixed."),
        Reply::plan(&[("Fix the status", "notes.txt says fixed")]),
        fix(),
        Reply::step_done("fixed"),
        Reply::text("Fixed."),
    ]
}

fn sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.skill("notes-fixer", None);
    sandbox.write("job.yaml", JOB);
    sandbox.write("suite.yaml", SUITE);
    sandbox.write(
        "fixture/notes.txt",
        &format!("title: notes\ntoken: {SECRET}\nstatus: broken\n"),
    );
    sandbox.write("fixture/keep.txt", "leave me\n");
    sandbox
}

#[test]
fn a_transcript_shows_tool_output_the_diff_and_assertion_output_in_a_browser() {
    let sandbox = sandbox();
    let model = FakeModel::start(sessions());
    let temp = sandbox.path().join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let base_url = model.base_url();
    let out = agentci_in(
        sandbox.path(),
        &[
            "eval",
            "suite.yaml",
            "--model",
            "openai:scripted",
            "--base-url",
            &base_url,
            "--jobs",
            "1",
            "--out",
            "out",
            "--html",
            "html",
            "--min-pass-rate",
            "0",
            "--progress",
            "none",
        ],
        &[
            ("PLANTED_TOKEN", SECRET),
            ("TMPDIR", &temp.display().to_string()),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(model.remaining(), 0, "{}", stderr(&out));
    // The attempt keeps its diff next to its trace, masked.
    let patch = sandbox.read("out/notes/looks-around/1/changes.patch");
    assert!(
        patch.contains("-status: broken\n+status: fixed\n"),
        "{patch}"
    );
    assert!(!patch.contains(SECRET), "{patch}");

    let page = sandbox.path().join("html/index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    html_alone(&html);
    browser(&page);
    snapshot(&sandbox, &html);
}

/// What the page says without a browser: masked, escaped, self-contained.
fn html_alone(html: &str) {
    assert!(!html.contains(SECRET), "a secret reached the report");
    assert!(
        html.contains("token: ***"),
        "the masked secret is not shown"
    );
    // Nothing is fetched: no remote address in any src or href.
    let remote = Regex::new(r#"(?i)(src|href)\s*=\s*"?(https?:|//)"#).unwrap();
    assert!(!remote.is_match(html), "the report loads something remote");
    assert!(
        !html.contains("<script>alert(1)"),
        "tool output is not escaped"
    );
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;/details&gt;&lt;/pre&gt;"),
        "the hostile output is not shown as text"
    );
    assert_eq!(
        html.matches("<details").count(),
        html.matches("</details>").count(),
        "output closed a block"
    );
}

fn browser(page: &Path) {
    let Some((dom, log)) = dom_in_chromium(page, "#t-0-0-1") else {
        return;
    };
    assert!(
        !dom.contains("data-js-error=\"") && !log.contains("Uncaught"),
        "{log}"
    );
    assert!(
        dom.contains("data-report-ready=\"yes\""),
        "the script did not run"
    );
    assert!(opening_tag(&dom, r#"id="t-0-0-1""#).contains(r#"open="""#));
    // Each tool call with its output; a long one cut and expandable.
    assert!(
        dom.contains(r#"<b>Tool call</b> <code>ls</code>"#),
        "no ls call"
    );
    let ls = dom.find("<code>ls</code>").unwrap();
    let output = dom[ls..].find(r#"<p class="label">Output</p>"#).unwrap();
    assert!(
        dom[ls + output..].contains("keep.txt"),
        "the ls output is not shown"
    );
    assert!(dom.contains(r#"<code>exec</code> <span class="args">cat notes.txt &amp;&amp;"#));
    assert!(
        dom.contains("<summary>Show the other "),
        "a long output is not expandable"
    );
    assert!(
        dom.contains("\n899\n900"),
        "the end of the exec output is missing"
    );
    // The diff, highlighted.
    assert!(
        dom.contains(r#"<span class="del">-status: broken"#),
        "no diff"
    );
    assert!(
        dom.contains(r#"<span class="add">+status: fixed"#),
        "no diff"
    );
    // The failed assertion's whole output, lines kept.
    assert!(
        dom.contains("exit code 1: first line of the check\nsecond line of the check</pre>"),
        "the assertion output lost its lines"
    );
    // The plan with how each step ended.
    assert!(dom.contains(r#"<span class="badge ok">done</span> Look around"#));
    assert!(dom.contains(r#"<span class="badge ok">done</span> Fix the status"#));
    // Every failing case links to its transcript, and every link lands.
    assert!(dom.contains(r##"<a class="case-link bad" href="#t-0-0-1">looks-around</a>"##));
    for target in Regex::new(r##"href="#([^"]+)""##)
        .unwrap()
        .captures_iter(&dom)
    {
        assert!(
            dom.contains(&format!("id=\"{}\"", &target[1])),
            "no #{}",
            &target[1]
        );
    }
    filters(page);
    accessible(&dom);

    // A copy with the failing transcript and its tool calls open, shot
    // from the top (a headless screenshot of a scrolled page leaves the
    // top unpainted).
    let html = std::fs::read_to_string(page)
        .unwrap()
        .replacen(r#"id="t-0-0-1""#, r#"id="t-0-0-1" open"#, 1)
        .replace(
            r#"<details class="ev tool"#,
            r#"<details open class="ev tool"#,
        );
    let open = page.with_file_name("open.html");
    std::fs::write(&open, html).unwrap();
    let shot = artifact("eval-transcript.png");
    screenshot_in_chromium(&open, "", &shot);
}

/// The filters, set from the address: not passed only, and one case (the
/// model filter is tried where there are several models, in `eval_report`).
fn filters(page: &Path) {
    let hidden = |dom: &str, id: &str| opening_tag(dom, &format!("id=\"{id}\"")).contains("hidden");
    let (failed, _) = dom_in_chromium(page, "?failed=1").unwrap();
    assert!(
        !hidden(&failed, "t-0-0-1") && hidden(&failed, "t-0-1-1"),
        "failed only"
    );
    let (case, _) = dom_in_chromium(page, "?case=notes/passes").unwrap();
    assert!(
        hidden(&case, "t-0-0-1") && !hidden(&case, "t-0-1-1"),
        "by case"
    );
    let (none, _) = dom_in_chromium(page, "?case=notes/passes&failed=1").unwrap();
    assert!(
        hidden(&none, "t-0-0-1") && hidden(&none, "t-0-1-1"),
        "both filters"
    );
    assert!(!hidden(&none, "f-none"), "no note that nothing matches");
    // A link to a transcript the filters hide still shows it.
    let (linked, _) = dom_in_chromium(page, "?case=notes/passes#t-0-0-1").unwrap();
    assert!(
        !hidden(&linked, "t-0-0-1"),
        "a link led to a hidden transcript"
    );
}

/// Headings in order, controls a keyboard reaches, every control labelled.
fn accessible(dom: &str) {
    let levels: Vec<u32> = Regex::new(r"<h([1-6])[\s>]")
        .unwrap()
        .captures_iter(dom)
        .map(|c| c[1].parse().unwrap())
        .collect();
    assert_eq!(levels.first(), Some(&1), "{levels:?}");
    for pair in levels.windows(2) {
        assert!(
            pair[1] <= pair[0] + 1,
            "a heading level is skipped: {levels:?}"
        );
    }
    // Only native controls: no click handlers on other elements, nothing
    // taken out of the tab order, no fake buttons.
    for bad in ["onclick", "tabindex=\"-1\"", "role=\"button\""] {
        assert!(!dom.contains(bad), "{bad} in the page");
    }
    assert_eq!(
        dom.matches("<summary").count(),
        dom.matches("<details").count()
    );
    for control in Regex::new(r"<(input|select)\b").unwrap().find_iter(dom) {
        let before = &dom[..control.start()];
        let open = before.rfind("<label").unwrap_or(0);
        assert!(
            open > before.rfind("</label>").unwrap_or(0),
            "a control without a label at {}",
            &dom[control.start()..control.start() + 60]
        );
    }
    assert!(dom.contains("<html lang=\"en\""));
}

/// The transcript section as a person reads its structure: one element a
/// line, times, paths and ids redacted.
fn snapshot(sandbox: &Sandbox, html: &str) {
    let start = html.find(r#"<section id="transcripts">"#).unwrap();
    let end = start + html[start..].find("</section>").unwrap();
    let section = Regex::new(r"(<(details|div|p|li|pre|form|ul|ol)\b)")
        .unwrap()
        .replace_all(&html[start..end], "\n$1");
    let root = regex::escape(&sandbox.path().display().to_string());
    insta::with_settings!({filters => vec![
        (root.as_str(), "[SANDBOX]"),
        (r"\d+\.\ds\b", "[TIME]"),
        (r"\d+ms\b", "[MS]"),
        (r"\d+ tokens", "[N] tokens"),
        (r"call_[A-Za-z0-9_-]+", "[CALL]"),
    ]}, {
        insta::assert_snapshot!("eval_transcript_section", section);
    });
}
