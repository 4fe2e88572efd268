//! Attacks through what agentci prints, end to end: the real binary under
//! GitHub Actions (and with the plain log), a scripted hostile model on the
//! fake model server, and a check whose output is hostile too.
//!
//! Each output is read back the way its reader reads it: the Actions runner
//! splits the log, the step summary and the outputs on `\r` as well as `\n`
//! and takes any line that starts with `::` (after spaces) for a workflow
//! command; a terminal acts on escape sequences; GitHub renders the step
//! summary as Markdown with HTML.

use regex::Regex;
use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, stderr, stdout};
use super::support::job::JobBuilder;
use super::support::users::RunAs;

/// What a hostile model puts in a value to start a command of its own.
const CR_INJECTION: &str = "\r::error::pwned\r::stop-commands::x\r";

/// Terminal escape sequences: a clipboard write (OSC 52), clear screen and
/// cursor home (CSI), a window title (OSC 0, ended by ST), a C1 CSI, a DCS.
const TERMINAL_ESCAPES: &str = "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}[2J\u{1b}[H\u{1b}]0;pwned title\u{1b}\\\u{9b}31m\u{1b}Pq#0\u{1b}\\";

/// A sandbox with a skill and a job allowing `exec`, whose check prints
/// `check_output` and fails.
fn sandbox(base_url: &str, check_output: &str) -> Sandbox {
    let sb = JobBuilder::new("hostile-output", "fixer", base_url)
        .goal("Do what the model was scripted to do.")
        .model_inline(&format!(
            "{{provider: openai, name: fake-model, base_url: \"{base_url}\"}}"
        ))
        .file("ws/README.md", "# project\n")
        .file("ws/check-output.txt", check_output)
        .tools("[read, exec]")
        .body(
            r#"permissions:
  default: allow
checks:
  - name: prints hostile output
    run: cat check-output.txt; exit 1
"#,
        )
        .write();
    sb.write("gh/step_summary.md", "");
    sb.write("gh/output.txt", "");
    sb
}

/// A run whose plan title, exec command, step summary and final text all
/// carry `payload`.
fn hostile_script(payload: &str) -> Vec<Reply> {
    vec![
        Reply::plan(&[(&format!("Fix it{payload}"), "it is fixed")]),
        Reply::tool_calls(vec![(
            "call_exec",
            "exec",
            json!({"command": format!("echo 'ran{payload}'")}),
        )]),
        Reply::step_done(&format!("did it{payload}")),
        Reply::text(&format!("All done.{payload}\nSecond line.{payload}")),
    ]
}

/// How a run's output is shown.
#[derive(Clone, Copy, Debug)]
enum Display {
    /// The GitHub Actions sink (`GITHUB_ACTIONS=true`).
    Github,
    /// The plain log (`--progress plain`, outside Actions): what a
    /// terminal or a CI system that is not GitHub shows.
    Plain,
}

/// Everything one run printed or wrote for GitHub (nothing outside it).
struct Printed {
    stdout: String,
    stderr: String,
    summary: String,
    outputs: String,
}

fn run(sb: &Sandbox, user: RunAs, display: Display) -> Printed {
    let summary = sb.path().join("gh/step_summary.md");
    let outputs = sb.path().join("gh/output.txt");
    let (summary_var, outputs_var) = (summary.display().to_string(), outputs.display().to_string());
    let workspace = sb.path().display().to_string();
    let github = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_STEP_SUMMARY", summary_var.as_str()),
        ("GITHUB_OUTPUT", outputs_var.as_str()),
        ("GITHUB_WORKSPACE", workspace.as_str()),
    ];
    let mut args = vec!["run", "job.yaml", "--trace", "out/trace.jsonl"];
    let env: &[(&str, &str)] = match display {
        Display::Github => &github,
        Display::Plain => {
            args.extend(["--progress", "plain"]);
            &[]
        }
    };
    let out = sb.agentci_as(user, &args, env);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{} ({display:?}): the check fails, the run ends; stderr: {}",
        user.label(),
        stderr(&out)
    );
    Printed {
        stdout: stdout(&out),
        stderr: stderr(&out),
        summary: std::fs::read_to_string(&summary).unwrap(),
        outputs: std::fs::read_to_string(&outputs).unwrap(),
    }
}

/// The lines the Actions runner reads in `text` that it would take for a
/// workflow command agentci did not mean: it splits on `\r` and `\n` and
/// trims leading spaces. agentci's own commands are groups, annotations
/// with properties, and the stop-commands pair around the model's text
/// (a random 32-digit token).
fn foreign_commands(text: &str) -> Vec<String> {
    let own = Regex::new(
        r"^::(group::|endgroup::$|(error|warning|notice) [a-z]+=|stop-commands::[0-9a-f]{32}$|[0-9a-f]{32}::$)",
    )
    .unwrap();
    text.split(['\r', '\n'])
        .map(str::trim_start)
        .filter(|line| line.starts_with("::") && !own.is_match(line))
        .map(str::to_string)
        .collect()
}

// Regression (issue 20): a lone `\r` in an exec command, a plan title, a
// step summary or a check's output was printed raw, and the runner, which
// splits lines on CR too, read the `::error::` and `::stop-commands::`
// after it as commands of their own.
#[test]
fn a_carriage_return_cannot_start_a_workflow_command() {
    for user in RunAs::each() {
        for display in [Display::Github, Display::Plain] {
            let model = FakeModel::start(hostile_script(CR_INJECTION));
            let sb = sandbox(&model.base_url(), &format!("failing{CR_INJECTION}\n"));
            let printed = run(&sb, user, display);
            for (name, text) in [
                ("stdout", &printed.stdout),
                ("stderr", &printed.stderr),
                ("the step summary", &printed.summary),
                ("the step outputs", &printed.outputs),
            ] {
                assert_eq!(
                    foreign_commands(text),
                    Vec::<String>::new(),
                    "{} ({display:?}): {name} starts a command agentci did not mean:\n{text}",
                    user.label()
                );
                assert!(
                    !text.contains('\r'),
                    "{} ({display:?}): a raw CR in {name}:\n{text:?}",
                    user.label()
                );
            }
            // What the model wrote is still there, only made visible.
            assert!(
                printed.stderr.contains(r"Fix it\r::error::pwned"),
                "{}",
                printed.stderr
            );
        }
    }
}

/// The characters that drive a terminal: ESC, the C1 controls, BEL.
fn terminal_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| c == '\u{1b}' || c == '\u{7}' || ('\u{80}'..='\u{9f}').contains(&c))
        .collect()
}

// Regression (issue 20): escape sequences in the model's text (an OSC 52
// clipboard write, clear screen, a window title) reached stderr, and ESC
// bytes the step summary.
#[test]
fn terminal_escapes_from_the_model_reach_no_output() {
    for user in RunAs::each() {
        for display in [Display::Github, Display::Plain] {
            let model = FakeModel::start(hostile_script(TERMINAL_ESCAPES));
            let sb = sandbox(&model.base_url(), &format!("failing{TERMINAL_ESCAPES}\n"));
            let printed = run(&sb, user, display);
            for (name, text) in [
                ("stdout", &printed.stdout),
                ("stderr", &printed.stderr),
                ("the step summary", &printed.summary),
            ] {
                assert_eq!(
                    terminal_controls(text),
                    Vec::<char>::new(),
                    "{} ({display:?}): terminal controls in {name}:\n{text:?}",
                    user.label()
                );
                assert!(
                    !text.contains("]52;"),
                    "{} ({display:?}): the clipboard sequence is still in {name}:\n{text:?}",
                    user.label()
                );
            }
            // The model's words around the sequences are kept.
            assert!(printed.stderr.contains("Fix it"), "{}", printed.stderr);
            if let Display::Github = display {
                // Reading the trace back shows it as inertly as the run did.
                for view in ["show", "summary"] {
                    let out = sb.agentci_as(user, &["trace", view, "out/trace.jsonl"], &[]);
                    let shown = stdout(&out);
                    assert_eq!(
                        terminal_controls(&shown),
                        Vec::<char>::new(),
                        "trace {view}:\n{shown:?}"
                    );
                    assert!(!shown.contains("]52;"), "trace {view}:\n{shown:?}");
                }
            }
        }
    }
}

/// The lines of `markdown` outside fenced code blocks: what GitHub renders
/// as live Markdown and HTML.
fn live_lines(markdown: &str) -> Vec<&str> {
    let mut live = Vec::new();
    let mut fence: Option<usize> = None;
    for line in markdown.lines() {
        let ticks = line.chars().take_while(|&c| c == '`').count();
        match fence {
            Some(open) if ticks >= open && line.trim_end().len() == ticks => fence = None,
            Some(_) => {}
            None if ticks >= 3 => fence = Some(ticks),
            None => live.push(line),
        }
    }
    live
}

/// Does `markup` occur in `text` without a backslash before it?
fn unescaped(text: &str, markup: &str) -> bool {
    text.match_indices(markup)
        .any(|(at, _)| !text[..at].ends_with('\\'))
}

// Regression (issue 20): the model's final text went into the step summary
// as live Markdown and HTML: a fake "all checks passed" table and image
// beacons that fetch a URL of the model's choice when the page is viewed.
#[test]
fn the_models_text_is_inert_in_the_step_summary() {
    let final_text = "Everything is fine.\n\n| all checks | passed |\n|---|---|\n| clippy | ✅ |\n\n\
                      ![x](http://h/beacon)\n<img src=\"http://h/beacon2\">\n```\nnot a real fence\n```";
    for user in RunAs::each() {
        let model = FakeModel::start(vec![
            Reply::plan(&[(
                "Fix <img src=http://h/plan-beacon> | it ![p](http://h/p)",
                "done",
            )]),
            Reply::step_done("did it ![s](http://h/step-beacon) <b>bold</b>"),
            Reply::text(final_text),
        ]);
        let sb = sandbox(&model.base_url(), "failing\n");
        let summary = run(&sb, user, Display::Github).summary;
        let live = live_lines(&summary).join("\n");
        for live_markup in ["<img", "<b>", "![", "| all checks"] {
            assert!(
                !unescaped(&live, live_markup),
                "{}: `{live_markup}` is live in the step summary:\n{summary}",
                user.label()
            );
        }
        // The final text is there whole, inside a fence longer than its own.
        let section = summary
            .split("### Summary\n\n")
            .nth(1)
            .unwrap_or_else(|| panic!("no summary section:\n{summary}"));
        let fence_line = section.lines().next().unwrap();
        assert!(fence_line.starts_with("````"), "{summary}");
        assert!(
            section.contains(&format!(
                "{final_text}\n{}\n",
                fence_line.trim_end_matches("text")
            )),
            "{summary}"
        );
        // The plan's step is still one item of the list.
        assert!(
            live.lines()
                .any(|l| l.starts_with("1. ✅ Fix ") && l.contains("plan-beacon")),
            "{summary}"
        );
    }
}
