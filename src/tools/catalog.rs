//! The one table of builtin tools: their canonical names, in the order they
//! are offered, which are opt-in, and how each is made.
//!
//! Everything that needs to know which builtins exist (the tool set, job
//! validation, skill `allowed-tools`, the permission policy judging a
//! builtin by name) asks here. What a tool *is* (schema, read-only, which
//! argument rules match) is in its [`ToolSpec`]; this table only lists and
//! constructs. Adding a builtin is one line in [`BUILTINS`].

use std::sync::OnceLock;

use super::{RuleArgument, Tool, ToolSpec};
use super::{edit, exec, find, grep, ls, process, read, task, todo, web_fetch, write};

/// One builtin tool.
pub struct Builtin {
    /// The canonical name, as jobs, skills and rules write it.
    pub name: &'static str,
    /// Offered only when the job's `tools:` names it.
    pub opt_in: bool,
    /// A fresh instance for one run (some tools, like `todo`, keep state).
    pub make: fn() -> Box<dyn Tool>,
}

/// The builtin tools, in the order they are offered. `web_fetch` reaches
/// beyond the workspace, so a job opts in; `todo` is opt-in so that runs
/// which do not use it offer the same tools as before; `task` (sub-agents)
/// spends the run's budget on further model calls; `process` manages
/// background sessions of `exec`.
pub const BUILTINS: &[Builtin] = &[
    offered("read", || Box::new(read::ReadTool::new())),
    offered("write", || Box::new(write::WriteTool::new())),
    offered("edit", || Box::new(edit::EditTool::new())),
    offered("find", || Box::new(find::FindTool::new())),
    offered("grep", || Box::new(grep::GrepTool::new())),
    offered("ls", || Box::new(ls::LsTool::new())),
    offered("exec", || Box::new(exec::ExecTool::new())),
    opt_in("web_fetch", || Box::new(web_fetch::WebFetchTool::new())),
    opt_in("todo", || Box::new(todo::TodoTool::new())),
    opt_in("task", || Box::new(task::TaskTool::new())),
    opt_in("process", || Box::new(process::ProcessTool::new())),
];

/// A builtin every run gets unless the job's `tools:` leaves it out.
const fn offered(name: &'static str, make: fn() -> Box<dyn Tool>) -> Builtin {
    Builtin {
        name,
        opt_in: false,
        make,
    }
}

/// A builtin a run gets only when the job's `tools:` names it.
const fn opt_in(name: &'static str, make: fn() -> Box<dyn Tool>) -> Builtin {
    Builtin {
        name,
        opt_in: true,
        make,
    }
}

/// The canonical builtin names, in the order they are offered.
pub fn names() -> Vec<&'static str> {
    BUILTINS.iter().map(|b| b.name).collect()
}

/// The builtins every run gets that only look (`read`, `find`, `grep`,
/// `ls`): what a job made from flags allows when it names no rules.
pub fn looking() -> Vec<&'static str> {
    BUILTINS
        .iter()
        .filter(|b| !b.opt_in && spec(b.name).is_some_and(|s| s.read_only))
        .map(|b| b.name)
        .collect()
}

/// The builtins a run gets when the job's `tools:` does not say (every
/// one that is not opt-in).
pub fn offered_by_default() -> Vec<&'static str> {
    BUILTINS
        .iter()
        .filter(|b| !b.opt_in)
        .map(|b| b.name)
        .collect()
}

/// Is `name` a builtin tool?
pub fn is_builtin(name: &str) -> bool {
    BUILTINS.iter().any(|b| b.name == name)
}

/// What other coding agents call agentci's builtins (Claude Code, Codex,
/// Gemini CLI, OpenHands), compared without case: a job or suite written
/// with their names is told agentci's.
const OTHER_AGENTS_NAMES: &[(&str, &str)] = &[
    ("bash", "exec"),
    ("shell", "exec"),
    ("sh", "exec"),
    ("shell_command", "exec"),
    ("run_shell_command", "exec"),
    ("execute_command", "exec"),
    ("terminal", "exec"),
    ("cat", "read"),
    ("view", "read"),
    ("read_file", "read"),
    ("write_file", "write"),
    ("create_file", "write"),
    ("multiedit", "edit"),
    ("str_replace", "edit"),
    ("str_replace_editor", "edit"),
    ("str_replace_based_edit_tool", "edit"),
    ("apply_patch", "edit"),
    ("replace", "edit"),
    ("edit_file", "edit"),
    ("glob", "find"),
    ("find_files", "find"),
    ("search", "grep"),
    ("search_file_content", "grep"),
    ("rg", "grep"),
    ("list_directory", "ls"),
    ("list_dir", "ls"),
    ("webfetch", "web_fetch"),
    ("fetch", "web_fetch"),
    ("todowrite", "todo"),
    ("agent", "task"),
];

/// agentci's name for a tool another agent calls `name` (`Bash`, `shell`
/// → `exec`), when `name` is not already agentci's.
pub fn agentci_name_for(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    OTHER_AGENTS_NAMES
        .iter()
        .find(|(other, _)| *other == lower)
        .map(|(_, ours)| *ours)
        .filter(|ours| *ours != name)
}

/// A fresh instance of the builtin tool called `name`, if there is one.
pub fn builtin(name: &str) -> Option<Box<dyn Tool>> {
    BUILTINS.iter().find(|b| b.name == name).map(|b| (b.make)())
}

/// The builtins a run gets: those the job's `tools` names (`None`: every
/// builtin that is not opt-in), in the table's order.
pub fn for_job(job_tools: Option<&[String]>) -> Vec<Box<dyn Tool>> {
    let mut tools: Vec<Box<dyn Tool>> = BUILTINS
        .iter()
        .filter(|b| match job_tools {
            Some(list) => list.iter().any(|t| t == b.name),
            None => !b.opt_in,
        })
        .map(|b| (b.make)())
        .collect();
    // `exec` offers background sessions only where `process` can manage them.
    if tools.iter().any(|t| t.spec().name == "process")
        && let Some(exec) = tools.iter_mut().find(|t| t.spec().name == "exec")
    {
        *exec = Box::new(exec::ExecTool::with_background());
    }
    tools
}

/// The spec of the builtin called `name`; built once.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    static SPECS: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    SPECS
        .get_or_init(|| BUILTINS.iter().map(|b| (b.make)().spec().clone()).collect())
        .iter()
        .find(|s| s.name == name)
}

/// Which argument rules match for the builtin `name`; [`RuleArgument::None`]
/// for any other tool (an MCP tool is judged by its spec, not by name).
pub fn rule_argument(name: &str) -> RuleArgument {
    spec(name).map_or(RuleArgument::None, |s| s.rule_argument)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_makes_the_tool_it_names() {
        for b in BUILTINS {
            assert_eq!((b.make)().spec().name, b.name);
        }
        assert_eq!(
            names(),
            [
                "read",
                "write",
                "edit",
                "find",
                "grep",
                "ls",
                "exec",
                "web_fetch",
                "todo",
                "task",
                "process"
            ]
        );
    }
}
