//! How a `run.resumed` event reads for a person, in one line: from which
//! turn the run went on, how the stopped run had ended, and which limits the
//! resume changed. Shared by `agentci trace show` and the step summary so
//! both say the same; where the line goes is theirs.

use std::fmt::Write as _;

use crate::event::{BudgetInEffect, RunResumed};

/// `resumed after turn 3 (the stopped run had ended budget_exceeded: …); max_turns 3 → 10`.
pub fn describe_resume(resumed: &RunResumed) -> String {
    let mut line = format!("resumed after turn {}", resumed.from_turn);
    if let Some(step) = resumed.from_step {
        let _ = write!(line, ", in step {}", step + 1);
    }
    match (&resumed.previous_status, &resumed.previous_reason) {
        (Some(status), Some(reason)) => {
            let _ = write!(
                line,
                " (the stopped run had ended {}: {reason})",
                status.as_str()
            );
        }
        (Some(status), None) => {
            let _ = write!(line, " (the stopped run had ended {})", status.as_str());
        }
        // No run.completed: the run was killed before it could say.
        (None, _) => line.push_str(" (the stopped run was killed before it ended)"),
    }
    let changes: Vec<String> = resumed
        .budget_changed
        .iter()
        .map(|key| {
            format!(
                "{key} {} → {}",
                limit(&resumed.budget_before, key),
                limit(&resumed.budget, key)
            )
        })
        .collect();
    if changes.is_empty() {
        line.push_str("; budget unchanged");
    } else {
        let _ = write!(line, "; budget changed: {}", changes.join(", "));
    }
    line
}

/// One limit of `budget` by its key, `none` when it has none.
fn limit(budget: &BudgetInEffect, key: &str) -> String {
    let shown = match key {
        "max_turns" => Some(budget.max_turns.to_string()),
        "max_tool_calls" => budget.max_tool_calls.map(|n| n.to_string()),
        "max_tokens" => budget.max_tokens.map(|n| n.to_string()),
        "max_cost_usd" => budget.max_cost_usd.map(|usd| format!("${usd:.2}")),
        "timeout_secs" => budget.timeout_secs.map(|s| format!("{s}s")),
        _ => Some("?".to_string()),
    };
    shown.unwrap_or_else(|| "none".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::RunStatus;

    fn budget(max_turns: u32, max_cost_usd: Option<f64>) -> BudgetInEffect {
        BudgetInEffect {
            max_turns,
            max_tool_calls: None,
            max_tokens: None,
            max_cost_usd,
            timeout_secs: None,
        }
    }

    #[test]
    fn says_where_the_run_went_on_how_it_had_ended_and_what_was_raised() {
        let resumed = RunResumed {
            from_turn: 3,
            from_step: Some(1),
            round: 1,
            previous_status: Some(RunStatus::BudgetExceeded),
            previous_reason: Some("max_turns is 3".into()),
            budget_before: budget(3, None),
            budget: budget(10, Some(1.5)),
            budget_changed: vec!["max_turns".into(), "max_cost_usd".into()],
            events_dropped: 2,
            torn_line_dropped: false,
        };
        assert_eq!(
            describe_resume(&resumed),
            "resumed after turn 3, in step 2 (the stopped run had ended budget_exceeded: \
             max_turns is 3); budget changed: max_turns 3 → 10, max_cost_usd none → $1.50"
        );
    }

    #[test]
    fn a_killed_run_had_no_end_to_tell() {
        let resumed = RunResumed {
            from_turn: 0,
            from_step: None,
            round: 1,
            previous_status: None,
            previous_reason: None,
            budget_before: budget(5, None),
            budget: budget(5, None),
            budget_changed: Vec::new(),
            events_dropped: 0,
            torn_line_dropped: true,
        };
        assert_eq!(
            describe_resume(&resumed),
            "resumed after turn 0 (the stopped run was killed before it ended); budget unchanged"
        );
    }
}
