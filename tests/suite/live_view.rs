//! The live view on a terminal (issue 23), in a real terminal: the binary
//! runs in a tmux pane against the fake model server, whose delayed replies
//! hold the run still while the pane is captured. Mid-run the pane shows
//! the plan with each step's state, the current step's tool calls, the
//! elapsed time and the spend against the budget; at the end, the final
//! picture with the failed check's last lines. Colour follows `NO_COLOR`,
//! `CLICOLOR` and `CLICOLOR_FORCE`. Times, the spinner and ports are
//! redacted from the snapshots.

use std::time::Duration;

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, stderr};
use super::support::job::JobBuilder;
use super::support::tmux::{self, Pane};

const ESC: char = '\u{1b}';

/// A model that reads, fixes the typo in step 2 and answers; the reply that
/// ends step 2 comes after `hold`, while the pane is captured.
fn script(hold: Duration) -> Vec<Reply> {
    vec![
        Reply::plan(&[
            ("Read the greeting", "the typo is found"),
            ("Fix the typo", "greeting.txt says hello world"),
            ("Report", "the change is described"),
        ])
        .with_usage(200, 40),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "greeting.txt"}))])
            .with_usage(260, 20),
        Reply::step_done("found `wrold`").with_usage(300, 10),
        Reply::tool_calls(vec![("call_ls", "ls", json!({}))]).with_usage(320, 10),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "greeting.txt", "old_text": "wrold", "new_text": "world"}),
        )])
        .with_usage(340, 60),
        Reply::delay(hold, Reply::step_done("fixed the typo").with_usage(400, 10)),
        Reply::step_done("described it").with_usage(410, 10),
        Reply::text("Fixed the typo `wrold` -> `world` in greeting.txt.").with_usage(420, 15),
    ]
}

/// A workspace with the typo and a job whose second check fails with output.
fn sandbox(base_url: &str) -> Sandbox {
    JobBuilder::new("fix-greeting", "fixer", base_url)
        .file("ws/greeting.txt", "hello wrold\n")
        .model_extra("  price: {input_per_mtok: 1000, output_per_mtok: 1000}\n")
        .tools("[read, edit, ls]")
        .body(
            r#"budget: {max_turns: 20, max_tokens: 100000, max_cost_usd: 50, timeout: 10m}
permissions:
  default: allow
checks:
  - name: greeting fixed
    run: grep -q "hello world" greeting.txt
  - name: style
    run: "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22; do echo style report line $i; done; exit 3"
"#,
        )
        .write()
}

fn run_argv() -> Vec<String> {
    [
        env!("CARGO_BIN_EXE_agentci"),
        "run",
        "job.yaml",
        "--out",
        "out",
    ]
    .map(String::from)
    .to_vec()
}

/// Elapsed times, durations, the spinner and the fake server's port as placeholders.
fn redacted() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\b\d+(\.\d+)?s\b|\b\d+m\d\ds\b", "[TIME]");
    settings.add_filter(r"(?m)^[⠁-⣿] ", "[SPINNER] ");
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    settings
}

#[test]
fn on_a_terminal_the_live_view_shows_the_plan_the_calls_and_the_spend_then_the_final_picture() {
    if tmux::available("the live terminal view tests").is_none() {
        return;
    }
    let model = FakeModel::start(script(Duration::from_secs(4)));
    let sb = sandbox(&model.base_url());
    let pane = Pane::start(sb.path(), &run_argv(), &[("NO_COLOR", "1")]);

    // Step 2 has made its calls and waits for the model: the sixth turn
    // is in flight, with the spend of the five before it.
    let during = pane.wait_for("step 2's edit finished and turn 6 asked", |s| {
        s.contains("edit greeting.txt ok")
            && s.contains("turn 6 of 20")
            && s.contains("1,560 of 100,000 tokens")
    });
    let final_screen = pane.wait_for("the run's end", |s| s.contains("[exit "));

    redacted().bind(|| {
        insta::assert_snapshot!("live_view_during_a_step", during);
        insta::assert_snapshot!("live_view_final_picture", final_screen);
    });
    // Regression (issue 23): the check line was printed twice, once above the plan.
    assert_eq!(
        final_screen.matches("check \"greeting fixed\"").count(),
        1,
        "{final_screen}"
    );
    assert!(final_screen.contains("[exit 1]"), "{final_screen}");
}

#[test]
fn on_a_terminal_the_view_is_in_colour_unless_no_color_or_clicolor_0() {
    if tmux::available("the live terminal view tests").is_none() {
        return;
    }
    for (env, coloured) in [
        (None, true),
        (Some(("NO_COLOR", "1")), false),
        (Some(("CLICOLOR", "0")), false),
    ] {
        let model = FakeModel::start(script(Duration::ZERO));
        let sb = sandbox(&model.base_url());
        let env: Vec<(&str, &str)> = env.into_iter().collect();
        let pane = Pane::start(sb.path(), &run_argv(), &env);
        pane.wait_for("the run's end", |s| s.contains("[exit "));
        let screen = pane.capture(true);
        assert_eq!(
            screen.contains(&format!("{ESC}[")),
            coloured,
            "{env:?}: escape sequences expected: {coloured}:\n{screen}"
        );
    }
}

#[test]
fn clicolor_force_colours_the_plain_log_that_is_not_a_terminal() {
    let model = FakeModel::start(script(Duration::ZERO));
    let sb = sandbox(&model.base_url());
    let args = ["run", "job.yaml", "--out", "out", "--progress", "plain"];
    let out = agentci_in(sb.path(), &args, &[("CLICOLOR_FORCE", "1")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(
        log.contains(&format!("{ESC}[31mcheck \"style\": failed")),
        "{log}"
    );
    assert!(out.stdout.iter().all(|&b| b != 0x1b), "colour on stdout");

    let model = FakeModel::start(script(Duration::ZERO));
    let sb = sandbox(&model.base_url());
    let env = [("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")];
    let out = agentci_in(sb.path(), &args, &env);
    assert!(!stderr(&out).contains(ESC), "{}", stderr(&out));
}

/// `agentci eval` in a terminal prints a table with aligned columns for a
/// person, not the Markdown summary, which stays in `summary.md`.
#[test]
fn eval_in_a_terminal_prints_an_aligned_table_not_markdown() {
    if tmux::available("the live terminal view tests").is_none() {
        return;
    }
    let sb = super::eval::notes_sandbox();
    let argv: Vec<String> = [
        env!("CARGO_BIN_EXE_agentci"),
        "eval",
        "suite.yaml",
        "--out",
        "results",
        "--jobs",
        "1",
        "--min-pass-rate",
        "0",
    ]
    .map(String::from)
    .to_vec();
    let pane = Pane::start(sb.path(), &argv, &[("NO_COLOR", "1")]);
    pane.wait_for("the eval's end", |s| s.contains("[exit "));
    let screen = pane.capture_joined();
    assert!(
        !screen.contains("|---"),
        "Markdown on the terminal:\n{screen}"
    );
    assert!(sb.read("results/summary.md").contains("|---|"));
    let mut settings = redacted();
    settings.add_filter(r"\$\d+\.\d{4}", "[COST]");
    let root = sb.path().canonicalize().unwrap();
    for path in [root.as_path(), sb.path()] {
        settings.add_filter(&regex::escape(&path.display().to_string()), "[SANDBOX]");
    }
    settings.bind(|| insta::assert_snapshot!("eval_table_on_a_terminal", screen));
}
