//! One-line descriptions of events that several displays show the same
//! way (the progress log and bar, `agentci trace show`): written once here
//! so they cannot say different things.

use crate::event::{ContextCompacted, McpStartOutcome, McpStartup};
use crate::sink::progress::{plural, secs, thousands};

/// What a compaction did, in the words of what happened: how many earlier
/// messages a summary or a digest replaced, how many long tool outputs
/// were shortened, and the request's size before and after.
pub fn describe_compaction(c: &ContextCompacted) -> String {
    let mut done = Vec::new();
    if c.replaced_messages > 0 {
        let messages = plural(c.replaced_messages as u64, "earlier message");
        done.push(match c.method.as_str() {
            "summary" => format!("{messages} summarised by the model"),
            _ => format!("{messages} replaced by a digest of the calls made"),
        });
    }
    if c.shortened_outputs > 0 {
        done.push(format!(
            "{} shortened",
            plural(c.shortened_outputs as u64, "long tool output")
        ));
    }
    if done.is_empty() {
        done.push("nothing replaced or shortened".to_string());
    }
    format!(
        "{} (~{} to ~{} tokens of {})",
        done.join(" and "),
        thousands(c.tokens_before),
        thousands(c.tokens_after),
        thousands(c.window)
    )
}

/// How the MCP servers started: the whole start-up, then each server.
pub fn describe_mcp_startup(startup: &McpStartup) -> String {
    let servers: Vec<String> = startup
        .servers
        .iter()
        .map(|s| {
            let took = secs(s.duration_ms);
            match s.outcome {
                McpStartOutcome::Started => format!("`{}` started in {took}", s.server),
                McpStartOutcome::Failed => format!("`{}` failed after {took}", s.server),
                McpStartOutcome::TimedOut => format!(
                    "`{}` not ready when budget.timeout ran out ({took})",
                    s.server
                ),
            }
        })
        .collect();
    format!(
        "MCP start-up took {}: {}",
        secs(startup.duration_ms),
        servers.join(", ")
    )
}
