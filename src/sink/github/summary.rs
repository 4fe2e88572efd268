//! The Markdown step summary of one run, appended to `$GITHUB_STEP_SUMMARY`:
//! status, the numbers of the run, the plan with each step's outcome, the
//! checks (with the output of failed ones), the changed files and the
//! agent's summary. Text from the run is made inert for the place it lands
//! in ([`crate::inert::markdown`]): escaped in a table cell or list item,
//! fenced as a code block when it is the model's or a check's own text, so
//! nothing in it renders as live Markdown or HTML; it is already free of
//! secrets.

use std::fmt::Write as _;

use super::SummaryFacts;
use crate::event::{CheckOutcome, RunStatus, StepStatus};
use crate::inert::markdown::{block, cell_code, code, html, inline};
use crate::sink::describe_resume;
use crate::sink::progress::{one_line, plural, secs, thousands};

/// The Markdown step summary of one run.
pub(super) fn summary_markdown(report: &SummaryFacts) -> String {
    let mut md = String::new();
    heading_and_numbers(&mut md, report);
    plan_section(&mut md, report);
    checks_section(&mut md, report);
    checklist_section(&mut md, report);
    changed_files_section(&mut md, report);
    if let Some(summary) = report.completed.as_ref().and_then(|d| d.summary.as_deref()) {
        // The model's own words, shown as written and never rendered.
        let _ = writeln!(md, "### Summary\n\n{}\n", block(summary.trim(), "text"));
    }
    result_section(&mut md, report);
    footer(&mut md, report);
    md
}

/// The status line with the reason, and the table of the run's numbers.
fn heading_and_numbers(md: &mut String, report: &SummaryFacts) {
    let name = report
        .started
        .as_ref()
        .map_or("agentci", |s| s.job_name.as_str());
    let (icon, status, reason) = match &report.completed {
        Some(done) => (
            status_icon(done.status),
            done.status.as_str(),
            done.reason.as_str(),
        ),
        None if report.cut_short => (
            "⚠️",
            "interrupted",
            "the trace ends before run.completed: the run was cut short",
        ),
        None => ("❌", "error", "the run did not complete"),
    };
    let _ = writeln!(md, "## {icon} agentci: {} — {status}\n", inline(name));
    let _ = writeln!(md, "{}\n", inline(reason));
    for resumed in &report.resumed {
        let _ = writeln!(md, "↩️ {}\n", inline(&describe_resume(resumed)));
    }

    md.push_str("| | |\n|---|---|\n");
    if let Some(started) = &report.started {
        let _ = writeln!(md, "| Skill | {} |", cell_code(&started.skill));
        let model = format!("{}:{}", started.model.provider, started.model.name);
        let _ = writeln!(md, "| Model | {} |", cell_code(&model));
    }
    if let Some(done) = &report.completed {
        let t = &done.totals;
        let _ = writeln!(md, "| Duration | {} |", secs(t.duration_ms));
        let _ = writeln!(md, "| Turns | {} |", t.turns);
        let _ = writeln!(md, "| Tool calls | {} |", t.tool_calls);
        let reasoning = match t.reasoning_tokens {
            0 => String::new(),
            n => format!(", of which {} reasoning", thousands(n)),
        };
        let _ = writeln!(
            md,
            "| Tokens | {} ({} in, {} out{reasoning}) |",
            thousands(t.input_tokens + t.output_tokens),
            thousands(t.input_tokens),
            thousands(t.output_tokens)
        );
        let cost = t
            .cost_usd
            .map_or_else(|| "unknown".to_string(), |c| format!("${c:.4}"));
        let _ = writeln!(md, "| Cost | {cost} |");
    }
    md.push('\n');
}

/// The plan, each step marked with how it ended or that it was not reached.
fn plan_section(md: &mut String, report: &SummaryFacts) {
    if !report.plan.is_empty() {
        md.push_str("### Plan\n\n");
        for (i, step) in report.plan.iter().enumerate() {
            let (mark, note) = match report.step_summaries.get(&i) {
                Some((summary, StepStatus::Done)) => {
                    ("✅", format!(" — {}", inline(&one_line(summary, 200))))
                }
                Some((summary, status)) => (
                    if *status == StepStatus::Blocked {
                        "⛔"
                    } else {
                        "❌"
                    },
                    format!(
                        " — {}: {}",
                        status.as_str(),
                        inline(&one_line(summary, 200))
                    ),
                ),
                None if report.step_started.contains(&i) => ("❌", " — not finished".to_string()),
                None => ("⏭️", " — not reached".to_string()),
            };
            let _ = writeln!(md, "{}. {mark} {}{note}", i + 1, inline(&step.title));
        }
        md.push('\n');
    }
}

/// The checks' table, then the last lines of output of each that failed.
fn checks_section(md: &mut String, report: &SummaryFacts) {
    if !report.checks.is_empty() {
        md.push_str("### Checks\n\n| Check | Result | Exit code | Duration |\n|---|---|---|---|\n");
        for check in &report.checks {
            let (mark, word) = match check.outcome {
                CheckOutcome::Passed => ("✅", "passed"),
                CheckOutcome::Failed => ("❌", "failed"),
                CheckOutcome::TimedOut => ("⏱️", "timed out"),
                CheckOutcome::Skipped => ("⏭️", "skipped"),
            };
            let code = check
                .exit_code
                .map_or_else(|| "—".to_string(), |c| c.to_string());
            let _ = writeln!(
                md,
                "| {} | {mark} {word} | {code} | {} |",
                inline(&check.name),
                secs(check.duration_ms)
            );
        }
        md.push('\n');
        for check in &report.checks {
            if matches!(check.outcome, CheckOutcome::Failed | CheckOutcome::TimedOut) {
                let output: Vec<&str> = check.output.lines().collect();
                let tail = output[output.len().saturating_sub(30)..].join("\n");
                let _ = writeln!(
                    md,
                    "<details><summary>Output of <code>{}</code> (last 30 lines)</summary>\n\n{}\n\n</details>\n",
                    html(&check.name),
                    block(&tail, "text")
                );
            }
        }
    }
}

/// The agent's `todo` checklist as it last stood, when it kept one.
fn checklist_section(md: &mut String, report: &SummaryFacts) {
    if let Some(items) = report
        .todo
        .as_ref()
        .and_then(|t| t.get("items"))
        .and_then(|i| i.as_array())
        .filter(|i| !i.is_empty())
    {
        md.push_str("### Agent's checklist\n\n");
        for item in items {
            let done = item.get("status").and_then(|s| s.as_str()) == Some("done");
            let text = item
                .get("text")
                .and_then(|t| t.as_str())
                .unwrap_or_default();
            let _ = writeln!(md, "- [{}] {}", if done { "x" } else { " " }, inline(text));
        }
        md.push('\n');
    }
}

/// The files the run changed.
fn changed_files_section(md: &mut String, report: &SummaryFacts) {
    md.push_str("### Changed files\n\n");
    if report.changed_files.is_empty() {
        md.push_str("None.\n\n");
    } else {
        for file in &report.changed_files {
            let _ = writeln!(md, "- {}", code(file));
        }
        md.push('\n');
    }
}

/// Where the trace and the JUnit report were written.
fn footer(md: &mut String, report: &SummaryFacts) {
    if let Some(started) = &report.started {
        let outputs = &started.outputs;
        let _ = writeln!(
            md,
            "<sub>{} · trace {} · JUnit {}</sub>\n",
            plural(report.plan.len() as u64, "plan step"),
            code(outputs.trace.as_deref().unwrap_or("-")),
            code(outputs.junit.as_deref().unwrap_or("-"))
        );
    }
}

/// The structured result, pretty-printed in a JSON block (cut when long:
/// the whole of it is in `outputs.result`).
fn result_section(md: &mut String, report: &SummaryFacts) {
    const MAX_LINES: usize = 60;
    let Some(result) = report.completed.as_ref().and_then(|d| d.result.as_ref()) else {
        return;
    };
    let text = serde_json::to_string_pretty(result).unwrap_or_else(|_| result.to_string());
    let lines: Vec<&str> = text.lines().collect();
    let mut shown = lines[..lines.len().min(MAX_LINES)].join("\n");
    if lines.len() > MAX_LINES {
        let _ = write!(shown, "\n… {} more lines", lines.len() - MAX_LINES);
    }
    let _ = writeln!(md, "### Result\n\n{}\n", block(&shown, "json"));
}

fn status_icon(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Passed => "✅",
        RunStatus::Failed | RunStatus::Error | RunStatus::ProviderUnavailable => "❌",
        RunStatus::BudgetExceeded => "⏱️",
        RunStatus::Interrupted => "⚠️",
    }
}
