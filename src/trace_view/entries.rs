//! The timeline lines for events that are neither a model turn, a tool call
//! nor the plan: warnings, budget, git output, MCP servers, context changes,
//! and the events shown as written (rounds, sub-agents). Each is one event's
//! own lines; the state that ties events together is in `super::fold`.

use serde_json::Value;

use super::view::Entry;
use crate::event::{Event, EventKind};

/// The timeline lines for what is neither a turn, a call nor the plan:
/// warnings, budget, git output, MCP servers, context and the rest.
pub(super) fn timeline_entries(event: &Event) -> Vec<Entry> {
    let warning = |source: String, message: String| vec![Entry::Warning { source, message }];
    match &event.kind {
        EventKind::SkillLoaded(skill) => skill
            .warnings
            .iter()
            .map(|text| Entry::Warning {
                source: format!("skill {}", skill.name),
                message: text.clone(),
            })
            .collect(),
        EventKind::Warning { source, message } => warning(source.clone(), message.clone()),
        EventKind::RunResumed(resumed) => vec![Entry::Resumed {
            line: crate::sink::describe_resume(resumed),
            events_dropped: resumed.events_dropped,
        }],
        EventKind::SandboxDegraded(report) => warning(
            "sandbox".into(),
            format!("not enforced here: {}", report.missing.join(", ")),
        ),
        EventKind::NetworkRequest(record) => vec![Entry::Network {
            line: crate::sink::describe_network(record),
        }],
        EventKind::BudgetExceeded { limit, used, max } => vec![Entry::Budget {
            limit: *limit,
            used: *used,
            max: *max,
        }],
        EventKind::GitPatch(_) | EventKind::GitCommit { .. } | EventKind::GitPush { .. } => {
            vec![Entry::Git {
                line: git_line(&event.kind),
            }]
        }
        EventKind::McpServerDown {
            server,
            reason,
            stderr,
            required,
        } => warning(
            format!("mcp server {server}"),
            format!(
                "down{}: {reason}{}",
                if *required { " (required)" } else { "" },
                stderr
                    .last()
                    .map(|line| format!(" (stderr: {line})"))
                    .unwrap_or_default()
            ),
        ),
        // A request agentci did not answer is what a user looks for
        // when a server's tool misbehaves; answered ones are detail.
        EventKind::McpServerRequest {
            server,
            method,
            outcome,
            detail,
            ..
        } if outcome != "answered" => warning(
            format!("mcp server {server}"),
            format!("{outcome} its request `{method}`: {detail}"),
        ),
        EventKind::ContextCompacted(c) => {
            warning("context".to_string(), crate::sink::describe_compaction(c))
        }
        EventKind::McpStartup(startup) => vec![Entry::Mcp {
            line: crate::sink::describe_mcp_startup(startup),
        }],
        EventKind::ReplayDrift(drift) => warning("replay".to_string(), drift.summary()),
        // Rounds are shown as written; the checks of every round stay in `checks`.
        EventKind::SubagentStarted(_)
        | EventKind::SubagentCompleted(_)
        | EventKind::RoundStarted { .. }
        | EventKind::RoundCompleted { .. }
        | EventKind::McpToolsRefreshed { .. }
        | EventKind::McpServerRequest { .. } => vec![other_entry(event)],
        _ => Vec::new(),
    }
}

/// What git did, in one line.
fn git_line(kind: &EventKind) -> String {
    match kind {
        EventKind::GitPatch(patch) => format!(
            "patch {}: {} files changed, +{} -{}",
            patch.path, patch.files_changed, patch.insertions, patch.deletions
        ),
        EventKind::GitCommit { branch, sha } => format!(
            "committed {} on branch {branch}",
            sha.get(..12).unwrap_or(sha)
        ),
        EventKind::GitPush { remote, branch } => format!("pushed branch {branch} to {remote}"),
        _ => String::new(),
    }
}

/// An event shown as written: its type and its fields, with the sub-agent it came from.
fn other_entry(event: &Event) -> Entry {
    let mut fields = serde_json::to_value(&event.kind).unwrap_or_default();
    let name = fields
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(map) = fields.as_object_mut() {
        map.remove("type");
        if let Some(agent) = &event.agent {
            map.insert("agent".into(), Value::String(agent.id.clone()));
        }
    }
    Entry::Other {
        event: name,
        fields,
    }
}
