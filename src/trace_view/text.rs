//! `agentci trace show` for people: a [`RunView`] as plain text, one line
//! per turn, tool call and step, and with `--full` what the model was sent.
//! Lines that show text from the run start with agentci's own marks (`│`,
//! `|`), never with the text, and the CLI makes the whole inert
//! ([`crate::inert::terminal`]) before printing it.

use std::fmt::Write as _;

use super::view::{CallView, Entry, MCP_STARTUP_PHASE, RunView, TurnView};
use crate::event::{CheckOutcome, Decision, Phase, SentDelta, StepStatus};
use crate::provider::Message;
use crate::sink::progress::{budget_amount, describe_call, one_line, plural, secs, thousands};

/// The run as text; `full` adds what the model was sent and whole check outputs.
pub fn render_text(view: &RunView, full: bool) -> String {
    let mut out = String::new();
    header(&mut out, view);
    plan(&mut out, view);
    timeline(&mut out, view, full);
    checks(&mut out, view, full);
    numbers(&mut out, view);
    if let Some(summary) = view.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        out.push_str("\nSummary\n");
        for line in summary.trim().lines() {
            let _ = writeln!(out, "  │ {line}");
        }
    }
    result(&mut out, view);
    if !view.notes.is_empty() {
        out.push_str("\nNotes\n");
        for note in &view.notes {
            let _ = writeln!(out, "  ! {note}");
        }
    }
    out
}

fn header(out: &mut String, view: &RunView) {
    let name = view.started.as_ref().map_or("?", |s| s.job_name.as_str());
    let exit = view
        .exit_code
        .map_or_else(String::new, |code| format!(" (exit {code})"));
    let _ = writeln!(out, "run {name}: {}{exit}", view.status);
    let _ = writeln!(out, "  {}", crate::inert::line(&view.reason));
    for resumed in &view.resumed {
        let _ = writeln!(
            out,
            "  {}",
            one_line(&crate::sink::describe_resume(resumed), 300)
        );
    }
    let Some(run) = &view.started else {
        return;
    };
    let _ = writeln!(
        out,
        "  skill {} · model {}:{} · agentci {} · trace schema {}",
        run.skill, run.model.provider, run.model.name, run.agentci_version, run.schema_version
    );
    let _ = writeln!(out, "  goal: {}", one_line(&run.goal, 160));
    let _ = writeln!(out, "  workspace {}", run.workspace);
    let _ = writeln!(out, "  tools: {}", run.tools.join(", "));
    if let Some(budget) = &run.budget {
        let mut limits = vec![plural(u64::from(budget.max_turns), "turn")];
        if let Some(n) = budget.max_tool_calls {
            limits.push(plural(u64::from(n), "tool call"));
        }
        if let Some(n) = budget.max_tokens {
            limits.push(format!("{} tokens", thousands(n)));
        }
        if let Some(usd) = budget.max_cost_usd {
            limits.push(format!("${usd:.2}"));
        }
        if let Some(s) = budget.timeout_secs {
            limits.push(format!("timeout {}", secs((s * 1000.0) as u64)));
        }
        let _ = writeln!(out, "  budget: {}", limits.join(", "));
    }
    if let Some(permissions) = &run.permissions {
        let mut line = format!("  permissions: default {}", permissions.default);
        if !permissions.allow.is_empty() {
            let _ = write!(line, "; allow {}", permissions.allow.join(", "));
        }
        if !permissions.deny.is_empty() {
            let _ = write!(line, "; deny {}", permissions.deny.join(", "));
        }
        let _ = writeln!(out, "{line}");
    }
    let sandbox = &run.sandbox;
    if !sandbox.profile.is_empty() {
        let mut line = format!(
            "  sandbox: {}, network {}",
            sandbox.profile,
            if sandbox.network { "on" } else { "off" }
        );
        if !sandbox.writable.is_empty() {
            let folders: Vec<&str> = sandbox.writable.iter().map(|w| w.path.as_str()).collect();
            let _ = write!(line, "; also writable: {}", folders.join(", "));
        }
        if !sandbox.missing.is_empty() {
            let _ = write!(line, "; not enforced here: {}", sandbox.missing.join(", "));
        }
        let _ = writeln!(out, "{line}");
    }
}

fn plan(out: &mut String, view: &RunView) {
    if view.plan.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nPlan ({})", plural(view.plan.len() as u64, "step"));
    for (i, step) in view.plan.iter().enumerate() {
        let mark = match step.outcome.as_str() {
            "done" => "✓",
            "not reached" => "·",
            "blocked" => "⛔",
            _ => "✗",
        };
        let _ = write!(out, "  {mark} {}. {}", i + 1, one_line(&step.title, 100));
        match &step.summary {
            Some(summary) if step.outcome == "done" => {
                let _ = write!(out, " — {}", one_line(summary, 120));
            }
            Some(summary) => {
                let _ = write!(out, " — {}: {}", step.outcome, one_line(summary, 120));
            }
            None => {
                let _ = write!(out, " — {}", step.outcome);
            }
        }
        out.push('\n');
    }
}

fn timeline(out: &mut String, view: &RunView, full: bool) {
    out.push_str("\nTimeline\n");
    let plan_len = view.plan.len();
    for entry in &view.timeline {
        match entry {
            Entry::Plan { steps, from_index } => {
                let _ = match from_index {
                    None => writeln!(out, "  plan: {}", plural(*steps as u64, "step")),
                    Some(from) => writeln!(
                        out,
                        "  plan updated from step {}: {}",
                        from + 1,
                        plural(*steps as u64, "step")
                    ),
                };
            }
            Entry::Step { index, title } => {
                let _ = writeln!(
                    out,
                    "  ── step {}/{plan_len}: {}",
                    index + 1,
                    one_line(title, 100)
                );
            }
            Entry::StepDone {
                index,
                status,
                summary,
            } => {
                let word = match status {
                    StepStatus::Done => "done",
                    StepStatus::Failed => "failed",
                    StepStatus::Blocked => "blocked",
                };
                let _ = writeln!(
                    out,
                    "  step {} {word}: {}",
                    index + 1,
                    one_line(summary, 140)
                );
            }
            Entry::Turn(turn) => turn_lines(out, turn, full),
            Entry::ToolCall(call) => call_line(out, call),
            Entry::Warning { source, message } => {
                let _ = writeln!(out, "  ! warning ({source}): {}", one_line(message, 200));
            }
            Entry::Budget { limit, used, max } => {
                let _ = writeln!(
                    out,
                    "  ! budget exceeded: {} used {} of {}",
                    limit.key(),
                    budget_amount(*limit, *used),
                    budget_amount(*limit, *max)
                );
            }
            Entry::Git { line } => {
                let _ = writeln!(out, "  git: {line}");
            }
            Entry::Network { line } => {
                let _ = writeln!(out, "  network: {line}");
            }
            Entry::Mcp { line } => {
                let _ = writeln!(out, "  {line}");
            }
            Entry::Resumed {
                line,
                events_dropped,
            } => {
                let _ = writeln!(out, "  ══ {}", one_line(line, 300));
                if *events_dropped > 0 {
                    let _ = writeln!(
                        out,
                        "    {} of the stopped run after its checkpoint dropped: that turn ran again",
                        plural(*events_dropped, "event")
                    );
                }
            }
            Entry::Other { event, fields } => other_line(out, event, fields),
        }
    }
}

fn turn_lines(out: &mut String, turn: &TurnView, full: bool) {
    let phase = match turn.phase {
        Phase::Plan => "plan",
        Phase::Execute => "execute",
        Phase::Summary => "summary",
    };
    let step = turn
        .step
        .map_or_else(String::new, |s| format!(" · step {}", s + 1));
    let _ = writeln!(
        out,
        "  turn {} · {phase}{step} · {}",
        turn.turn,
        plural(turn.messages as u64, "message")
    );
    if full && let Some(sent) = &turn.sent {
        sent_lines(out, sent);
    }
    for retry in &turn.retries {
        let _ = writeln!(
            out,
            "    retry: attempt {} of {} failed: {}; waited {}",
            retry.attempt,
            retry.max_attempts,
            one_line(&retry.reason, 160),
            secs(retry.wait_ms)
        );
    }
    if let Some(trim) = &turn.trimmed {
        let _ = writeln!(
            out,
            "    context trimmed: {} → {} messages (~{} → ~{} tokens)",
            trim.messages_before,
            trim.messages_after,
            thousands(trim.estimated_tokens_before),
            thousands(trim.estimated_tokens_after)
        );
        if full && let Some(sent) = &trim.sent {
            sent_lines(out, sent);
        }
    }
    if !turn.answered {
        out.push_str("    model: no answer in the trace\n");
        return;
    }
    let mut said = Vec::new();
    if let Some(text) = turn.text.as_deref().filter(|t| !t.trim().is_empty()) {
        said.push(format!("\"{}\"", one_line(text, 100)));
    }
    if !turn.tool_calls.is_empty() {
        said.push(format!("calls {}", turn.tool_calls.join(", ")));
    }
    let mut line = format!(
        "    model: {} · {} in / {} out tokens",
        if said.is_empty() {
            "no text".to_string()
        } else {
            said.join(" · ")
        },
        thousands(turn.input_tokens),
        thousands(turn.output_tokens)
    );
    if turn.reasoning_tokens > 0 {
        let _ = write!(line, " ({} reasoning)", thousands(turn.reasoning_tokens));
    }
    if let Some(cost) = turn.cost_usd {
        let _ = write!(line, " · ${cost:.4}");
    }
    if let Some(ms) = turn.latency_ms {
        let _ = write!(line, " · {}", secs(ms));
    }
    let _ = writeln!(out, "{line}");
    if full && let Some(thought) = turn.reasoning.as_deref() {
        out.push_str("      thought:\n");
        for line in thought.lines() {
            let _ = writeln!(out, "      ┆ {line}");
        }
    }
    if full && let Some(text) = turn.text.as_deref().filter(|t| t.lines().count() > 1) {
        for line in text.lines() {
            let _ = writeln!(out, "      │ {line}");
        }
    }
}

/// What one request sent beyond the previous one, every message whole.
fn sent_lines(out: &mut String, sent: &SentDelta) {
    let mut line = format!(
        "    sent: {} kept, {} new",
        sent.kept,
        sent.messages_added.len()
    );
    if sent.messages_dropped > 0 {
        let _ = write!(
            line,
            ", {} of the previous request's dropped (conversation rewritten)",
            sent.messages_dropped
        );
    }
    let _ = writeln!(out, "{line}");
    if let Some(tools) = &sent.tools_offered {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let _ = writeln!(out, "      tools offered: {}", names.join(", "));
    }
    for message in &sent.messages_added {
        let (role, content, calls) = match message {
            Message::System { content } => ("system".to_string(), content.as_str(), None),
            Message::User { content } => ("user".to_string(), content.as_str(), None),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => (
                "assistant".to_string(),
                content.as_deref().unwrap_or(""),
                Some(tool_calls),
            ),
            Message::Tool {
                tool_call_id,
                content,
            } => (
                format!("tool result {tool_call_id}"),
                content.as_str(),
                None,
            ),
        };
        let _ = writeln!(out, "      [{role}]");
        for line in content.lines() {
            let _ = writeln!(out, "      │ {line}");
        }
        for call in calls.into_iter().flatten() {
            let _ = writeln!(out, "      → {} {} {}", call.id, call.name, call.arguments);
        }
    }
}

fn call_line(out: &mut String, call: &CallView) {
    let mark = match (call.decision, call.ok) {
        (Some(Decision::Deny), _) => "⛔",
        (_, Some(true)) => "✓",
        (_, Some(false)) => "✗",
        (_, None) => "…",
    };
    let decision = match (call.decision, &call.rule) {
        (Some(Decision::Allow), Some(rule)) => format!("allowed ({rule})"),
        (Some(Decision::Deny), Some(rule)) => format!("denied ({rule})"),
        _ => "no decision".to_string(),
    };
    let result = match (&call.summary, &call.error_code) {
        (Some(summary), Some(code)) => format!("{code}: {}", one_line(summary, 120)),
        (Some(summary), None) => one_line(summary, 120),
        (None, _) => "no result in the trace".to_string(),
    };
    let time = call
        .duration_ms
        .map_or_else(String::new, |ms| format!(" ({})", secs(ms)));
    let _ = writeln!(
        out,
        "    {mark} {} [{decision}] → {result}{time}",
        describe_call(&call.tool, &call.arguments)
    );
}

/// An event shown as written: `round.started` gets a heading, the rest their fields.
fn other_line(out: &mut String, event: &str, fields: &serde_json::Value) {
    let round = fields.get("round").and_then(serde_json::Value::as_u64);
    match (event, round) {
        ("round.started", Some(round)) => {
            let _ = writeln!(out, "  ══ round {round}");
        }
        _ => {
            let _ = writeln!(out, "  {event}: {}", one_line(&fields.to_string(), 200));
        }
    }
}

fn checks(out: &mut String, view: &RunView, full: bool) {
    if view.checks.is_empty() {
        return;
    }
    out.push_str("\nChecks\n");
    for check in &view.checks {
        let (mark, word) = match check.outcome {
            CheckOutcome::Passed => ("✓", "passed"),
            CheckOutcome::Failed => ("✗", "failed"),
            CheckOutcome::TimedOut => ("✗", "timed out"),
            CheckOutcome::Skipped => ("·", "skipped"),
        };
        let code = check
            .exit_code
            .map_or_else(String::new, |c| format!(", exit {c}"));
        let _ = writeln!(
            out,
            "  {mark} {}: {word}{code} ({}) — {}",
            check.name,
            secs(check.duration_ms),
            one_line(&check.command, 100)
        );
        if matches!(check.outcome, CheckOutcome::Failed | CheckOutcome::TimedOut) {
            let lines: Vec<&str> = check.output.lines().collect();
            let shown = if full {
                &lines[..]
            } else {
                &lines[lines.len().saturating_sub(10)..]
            };
            for line in shown {
                let _ = writeln!(out, "      | {line}");
            }
        }
    }
}

/// The structured result, pretty JSON cut at 40 lines (the whole of it is
/// in `run.completed` and the run's `result.json`).
fn result(out: &mut String, view: &RunView) {
    const MAX_LINES: usize = 40;
    let Some(result) = &view.result else {
        return;
    };
    let text = serde_json::to_string_pretty(result).unwrap_or_else(|_| result.to_string());
    let lines: Vec<&str> = text.lines().collect();
    out.push_str("\nResult\n");
    for line in &lines[..lines.len().min(MAX_LINES)] {
        let _ = writeln!(out, "  {line}");
    }
    if lines.len() > MAX_LINES {
        let _ = writeln!(out, "  … {} more lines", lines.len() - MAX_LINES);
    }
}

fn numbers(out: &mut String, view: &RunView) {
    let t = &view.totals;
    let cost = t
        .cost_usd
        .map_or_else(|| "cost unknown".to_string(), |c| format!("${c:.4}"));
    let _ = writeln!(
        out,
        "\nTotals: {}, {}, {} tokens ({} in, {} out), {cost}, {}",
        plural(u64::from(t.turns), "turn"),
        plural(u64::from(t.tool_calls), "tool call"),
        thousands(t.input_tokens + t.output_tokens),
        thousands(t.input_tokens),
        thousands(t.output_tokens),
        secs(t.duration_ms)
    );
    const ORDER: [(&str, &str); 7] = [
        (MCP_STARTUP_PHASE, "MCP start-up"),
        ("setup", "setup"),
        ("plan", "plan"),
        ("execute", "execute"),
        ("summary", "summary"),
        ("checks", "checks"),
        ("git", "git"),
    ];
    let phases: Vec<String> = ORDER
        .iter()
        .filter_map(|(key, label)| {
            view.phases_ms
                .get(*key)
                .map(|ms| format!("{label} {}", secs(*ms)))
        })
        .collect();
    if !phases.is_empty() {
        let _ = writeln!(out, "Time per phase: {}", phases.join(", "));
    }
}
