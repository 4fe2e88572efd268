//! The tools of one run: the runner's tools (builtins the job's `tools`
//! names, plus any handed in, such as MCP servers' tools) ∩ the skill's
//! `allowed-tools`.
//!
//! The same set decides what the model is offered and what may execute, so
//! a call to a tool the model was not given is refused even if the model
//! names it anyway. Skill patterns with an argument (`exec(git diff *)`)
//! also restrict which calls of that tool may run. Which tools exist is
//! not decided here: [`crate::tools::catalog`] lists the builtins and the
//! runner assembles the run's tools.

use crate::policy::{SkillPrograms, ToolPattern, allowing_rules, call_subject, exec_hazard};
use crate::provider::ToolDefinition;
use std::sync::Arc;

use crate::tools::{BoxFuture, RuleArgument, Tool, catalog};

/// Tools the run cannot do without are gone (a required MCP server is
/// down); the text says which and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ToolsUnavailable(pub String);

pub struct ToolSet {
    /// The fixed tools, then the live ones (from `live_from` on).
    /// Shared, so a sub-agent's set can hold the parent's own tools.
    tools: Vec<Arc<dyn Tool>>,
    skill_patterns: Option<Vec<ToolPattern>>,
    live: Option<Arc<dyn LiveTools>>,
    live_from: usize,
}

/// Tools whose list can change during a run (a job's MCP servers'), asked
/// before each model turn.
pub trait LiveTools: Send + Sync {
    /// The tools now: `Ok(Some(tools))` when they changed since the last
    /// turn, `Ok(None)` when they did not, `Err(reason)` when the run
    /// cannot go on without them (a required server went down).
    fn before_turn(&self) -> BoxFuture<'_, LiveUpdate>;
}

/// What [`LiveTools::before_turn`] answers.
pub type LiveUpdate = Result<Option<Vec<Box<dyn Tool>>>, String>;

/// The tool is not in this run's set (or not in this phase); names what is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotOffered {
    pub available: Vec<String>,
}

/// The skill allows the tool only for some arguments; names the patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRefusal {
    pub allowed: Vec<String>,
    /// Why the patterns cannot vouch for this `exec` line whatever they
    /// name (a hazard such as a comment or a program outside the skill
    /// folders), when that is what refused it.
    pub why: Option<String>,
}

impl ToolSet {
    /// The builtins `job_tools` names (`None`: every builtin that is not
    /// opt-in) and nothing else; `skill_patterns`: `None` means the skill
    /// does not restrict tools.
    pub fn new(job_tools: Option<&[String]>, skill_patterns: Option<&[ToolPattern]>) -> Self {
        Self::from_tools(catalog::for_job(job_tools), skill_patterns)
    }

    /// `tools`, in the order given, less those the skill does not allow.
    pub fn from_tools(tools: Vec<Box<dyn Tool>>, skill_patterns: Option<&[ToolPattern]>) -> Self {
        let skill_patterns = skill_patterns.map(<[ToolPattern]>::to_vec);
        let tools = skill_allowed(tools, skill_patterns.as_deref());
        ToolSet {
            live_from: tools.len(),
            tools,
            skill_patterns,
            live: None,
        }
    }

    /// This set plus `tools` (less those the skill does not allow), which
    /// `live` replaces before a model turn when they change.
    pub fn with_live(
        mut self,
        tools: Vec<Box<dyn Tool>>,
        live: Option<Arc<dyn LiveTools>>,
    ) -> Self {
        self.live_from = self.tools.len();
        self.tools
            .extend(skill_allowed(tools, self.skill_patterns.as_deref()));
        self.live = live;
        self
    }

    /// The tools of this set named in `names`, in the set's order, with the
    /// same skill restriction: a sub-agent's set, holding the parent's own
    /// tools (a job's MCP tools too), whose list does not change under it.
    pub fn subset(&self, names: &[String]) -> ToolSet {
        let tools: Vec<Arc<dyn Tool>> = self
            .tools
            .iter()
            .filter(|t| names.contains(&t.spec().name))
            .cloned()
            .collect();
        ToolSet {
            live_from: tools.len(),
            tools,
            skill_patterns: self.skill_patterns.clone(),
            live: None,
        }
    }

    /// Asks the live tools what changed; `Ok(true)` when the set changed.
    pub async fn before_turn(&mut self) -> Result<bool, ToolsUnavailable> {
        let Some(live) = self.live.clone() else {
            return Ok(false);
        };
        let Some(tools) = live.before_turn().await.map_err(ToolsUnavailable)? else {
            return Ok(false);
        };
        self.tools.truncate(self.live_from);
        self.tools
            .extend(skill_allowed(tools, self.skill_patterns.as_deref()));
        Ok(true)
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name.clone()).collect()
    }

    /// The tools that may run while planning: those whose spec says read-only.
    pub fn read_only_names(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter(|t| t.spec().read_only)
            .map(|t| t.spec().name.clone())
            .collect()
    }

    /// The argument schemas of the tools, to compile ahead of the first call.
    pub fn argument_schemas(&self) -> Vec<serde_json::Value> {
        self.tools
            .iter()
            .map(|t| t.spec().parameters.clone())
            .collect()
    }

    /// Definitions for the model, in the set's order. Every phase offers
    /// all of them; [`ToolSet::get`] decides what may run now.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|t| {
                let spec = t.spec();
                ToolDefinition {
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    parameters: spec.parameters.clone(),
                }
            })
            .collect()
    }

    /// The tool called `name` if the model may call it in this phase.
    pub fn get(&self, name: &str, read_only_phase: bool) -> Result<&dyn Tool, NotOffered> {
        let found = self
            .tools
            .iter()
            .find(|t| t.spec().name == name)
            .filter(|t| !read_only_phase || t.spec().read_only);
        match found {
            Some(tool) => Ok(tool.as_ref()),
            None => Err(NotOffered {
                available: self
                    .tools
                    .iter()
                    .filter(|t| !read_only_phase || t.spec().read_only)
                    .map(|t| t.spec().name.clone())
                    .collect(),
            }),
        }
    }

    /// Does the skill's `allowed-tools` permit this particular call?
    /// `programs`: the loaded skills' folders, whose scripts the skill's
    /// patterns may name by absolute path.
    pub fn skill_permits(
        &self,
        tool: &str,
        args: &serde_json::Value,
        programs: &SkillPrograms,
    ) -> Result<(), SkillRefusal> {
        let Some(patterns) = &self.skill_patterns else {
            return Ok(());
        };
        let relevant: Vec<ToolPattern> = patterns
            .iter()
            .filter(|p| p.matches_tool(tool))
            .cloned()
            .collect();
        let kind = self
            .tools
            .iter()
            .find(|t| t.spec().name == tool)
            .map_or(RuleArgument::None, |t| t.spec().rule_argument);
        let subject = call_subject(kind, args);
        if allowing_rules(&relevant, tool, kind, subject.as_deref(), programs).is_some() {
            return Ok(());
        }
        let why = match (kind, subject.as_deref()) {
            (RuleArgument::Command, Some(line)) => exec_hazard(line, programs),
            _ => None,
        };
        Err(SkillRefusal {
            allowed: relevant.iter().map(|p| p.as_str().to_string()).collect(),
            why,
        })
    }
}

/// `tools` less those the skill's `allowed-tools` (if any) does not name.
fn skill_allowed(
    tools: Vec<Box<dyn Tool>>,
    skill_patterns: Option<&[ToolPattern]>,
) -> Vec<Arc<dyn Tool>> {
    tools
        .into_iter()
        .filter(|tool| {
            let name = &tool.spec().name;
            skill_patterns.is_none_or(|ps| ps.iter().any(|p| p.matches_tool(name)))
        })
        .map(Arc::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patterns(list: &[&str]) -> Vec<ToolPattern> {
        list.iter()
            .map(|p| ToolPattern::parse(p).unwrap())
            .collect()
    }

    #[test]
    fn intersection_of_job_and_skill() {
        let job = vec!["read".to_string(), "exec".to_string(), "edit".to_string()];
        let skill = patterns(&["read", "grep", "exec(cargo test *)"]);
        let set = ToolSet::new(Some(&job), Some(&skill));
        assert_eq!(set.names(), vec!["read", "exec"]);
        assert!(set.get("edit", false).is_err());
        assert!(set.get("grep", false).is_err());
    }

    #[test]
    fn skill_argument_patterns_restrict_calls() {
        let skill = patterns(&["exec(cargo test *)"]);
        let set = ToolSet::new(None, Some(&skill));
        assert!(
            set.skill_permits(
                "exec",
                &json!({"command": "cargo test"}),
                &SkillPrograms::default()
            )
            .is_ok()
        );
        assert!(
            set.skill_permits(
                "exec",
                &json!({"command": "rm -rf x"}),
                &SkillPrograms::default()
            )
            .is_err()
        );
        // Regression: a permitted command chained with another was permitted.
        assert!(
            set.skill_permits(
                "exec",
                &json!({"command": "cargo test && rm -rf x"}),
                &SkillPrograms::default()
            )
            .is_err()
        );
    }

    #[test]
    fn planning_runs_only_read_only_tools() {
        let set = ToolSet::new(None, None);
        assert_eq!(set.read_only_names(), vec!["read", "find", "grep", "ls"]);
        assert_eq!(set.definitions().len(), set.names().len());
        assert!(set.get("write", true).is_err());
        assert!(set.get("read", true).is_ok());
    }

    /// A tool handed in by the runner (as an MCP server's would be).
    struct Extra(crate::tools::ToolSpec);

    impl Tool for Extra {
        fn spec(&self) -> &crate::tools::ToolSpec {
            &self.0
        }
        fn call<'a>(
            &'a self,
            _args: serde_json::Value,
            _ctx: &'a crate::tools::ToolContext,
        ) -> crate::tools::BoxFuture<'a, crate::tools::ToolResult> {
            Box::pin(async { crate::tools::ToolResult::success("ok", "", json!(null)) })
        }
    }

    fn extra(name: &str, read_only: bool) -> Box<dyn Tool> {
        Box::new(Extra(crate::tools::ToolSpec {
            name: name.into(),
            description: "a tool from elsewhere".into(),
            parameters: json!({"type": "object"}),
            read_only,
            rule_argument: RuleArgument::None,
            changes_files: false,
        }))
    }

    #[test]
    fn tools_handed_in_join_the_builtins_and_planning_follows_their_spec() {
        let mut tools = catalog::for_job(Some(&["read".to_string()]));
        tools.push(extra("mcp__db__query", true));
        tools.push(extra("mcp__db__drop", false));
        let skill = patterns(&["read", "mcp__db__*"]);
        let set = ToolSet::from_tools(tools, Some(&skill));
        assert_eq!(set.names(), vec!["read", "mcp__db__query", "mcp__db__drop"]);
        assert_eq!(set.read_only_names(), vec!["read", "mcp__db__query"]);
        assert!(set.get("mcp__db__drop", true).is_err());
        assert!(
            set.skill_permits("mcp__db__drop", &json!({}), &SkillPrograms::default())
                .is_ok()
        );
        let narrow = patterns(&["mcp__db__query"]);
        let set = ToolSet::from_tools(vec![extra("mcp__db__drop", false)], Some(&narrow));
        assert!(set.names().is_empty());
    }
}
