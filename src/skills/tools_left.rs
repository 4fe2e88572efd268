//! Whether a skill, with a job's `tools`, leaves a run any tool at all.
//!
//! A run with no tools cannot do anything, yet nothing stops it: an empty
//! `allowed-tools`, one that names only tools agentci lacks
//! (`AskUserQuestion`, `WebFetch`), or job `tools` disjoint from the
//! skill's. This module words that case for `validate` and for the start
//! of a run; the tool set itself is built by the agent. So is its kin: a job
//! whose permission rules allow none of the tools it gets.

use super::Skill;
use crate::job::JobSpec;
use crate::policy::{PermissionPolicy, ToolAllowance};
use crate::tools::catalog;

/// The builtin tools a run of `skill` gets under the job's `tools`
/// (`None`: every builtin), in the order they are offered.
pub fn tools_left(job_tools: Option<&[String]>, skill: &Skill) -> Vec<&'static str> {
    catalog::names()
        .into_iter()
        .filter(|name| job_tools.is_none_or(|list| list.iter().any(|t| t == name)))
        .filter(|name| {
            skill
                .allowed_tools
                .as_ref()
                .is_none_or(|ps| ps.iter().any(|p| p.matches_tool(name)))
        })
        .collect()
}

/// Why the run would get no tools, or `None` when it gets some. A skill
/// that names MCP tools is not judged here: they come from the job's
/// servers, which only a run knows.
pub fn no_tools_warning(job_tools: Option<&[String]>, skill: &Skill) -> Option<String> {
    if !tools_left(job_tools, skill).is_empty() || names_mcp_tools(skill) {
        return None;
    }
    let unmapped = if skill.unmapped_tools.is_empty() {
        String::new()
    } else {
        format!(
            " (names that map to no agentci tool: {})",
            skill.unmapped_tools.join(", ")
        )
    };
    let skill_tools = tools_left(None, skill);
    let cause = if skill_tools.is_empty() {
        if skill.unmapped_tools.is_empty() {
            "its `allowed-tools` is empty".to_string()
        } else {
            format!("none of its `allowed-tools` is a tool agentci has{unmapped}")
        }
    } else {
        let job = job_tools.unwrap_or_default();
        format!(
            "the job's `tools` [{}] and the skill's allowed tools [{}] have none in common{unmapped}",
            job.join(", "),
            skill_tools.join(", ")
        )
    };
    Some(format!(
        "skill `{}` leaves the run no tools: {cause}; list the tools it needs in \
         `allowed-tools` (Read Grep Edit Bash(cmd:*) …) and in the job's `tools`, or drop \
         `allowed-tools` to allow every tool",
        skill.name
    ))
}

/// Why every call of the run would be denied: the job's permission rules
/// allow none of the builtin tools it gets, or `None`. A job with MCP
/// servers is not judged: their tools are known only once they run.
pub fn nothing_allowed_warning(job: &JobSpec, skill: &Skill) -> Option<String> {
    // Without `tools:` a run gets the builtins that are not opt-in.
    let offered: Vec<String> = catalog::for_job(job.tools.as_deref())
        .iter()
        .map(|tool| tool.spec().name.clone())
        .collect();
    let tools: Vec<&str> = tools_left(job.tools.as_deref(), skill)
        .into_iter()
        .filter(|name| offered.iter().any(|o| o == name))
        .collect();
    if tools.is_empty() || !job.mcp.servers.is_empty() {
        return None;
    }
    let policy = PermissionPolicy::new(&job.permissions.rules()).with_network(job.sandbox.network);
    let allowed = |tool: &&str| {
        policy.allowance(tool) != ToolAllowance::None
            && !policy.denials(tool).iter().any(|rule| rule == tool)
    };
    if tools.iter().any(allowed) {
        return None;
    }
    Some(format!(
        "the job's permission rules allow none of its tools ({}): every call the agent makes \
         will be denied; allow what the goal needs in `permissions.allow` (`read`, \
         `edit(src/**)`, `exec(cargo test *)`) or set `permissions.default: allow`",
        tools.join(", ")
    ))
}

/// Does the skill's `allowed-tools` name a server's tool or the MCP resource tools?
fn names_mcp_tools(skill: &Skill) -> bool {
    skill.allowed_tools.as_ref().is_some_and(|patterns| {
        patterns.iter().any(|p| {
            let name = p.tool_name().unwrap_or(p.as_str());
            name.starts_with("mcp__")
                || name == crate::job::mcp::LIST_RESOURCES
                || name == crate::job::mcp::READ_RESOURCE
        })
    })
}
