//! The tools of one run: builtin ∩ job `tools` ∩ skill `allowed-tools`.
//!
//! The same set decides what the model is offered and what may execute, so
//! a call to a tool the model was not given is refused even if the model
//! names it anyway. Skill patterns with an argument (`exec(git diff *)`)
//! also restrict which calls of that tool may run.

use crate::policy::{ToolPattern, allowing_rules, call_subject};
use crate::provider::ToolDefinition;
use crate::tools::{self, BUILTIN_TOOLS, OPT_IN_TOOLS, READ_ONLY_TOOLS, Tool};

pub struct ToolSet {
    tools: Vec<Box<dyn Tool>>,
    skill_patterns: Option<Vec<ToolPattern>>,
}

/// The tool is not in this run's set (or not in this phase); names what is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotOffered {
    pub available: Vec<String>,
}

/// The skill allows the tool only for some arguments; names the patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRefusal {
    pub allowed: Vec<String>,
}

impl ToolSet {
    /// `job_tools`: `None` means every builtin; `skill_patterns`: `None`
    /// means the skill does not restrict tools.
    pub fn new(job_tools: Option<&[String]>, skill_patterns: Option<&[ToolPattern]>) -> Self {
        let mut tools: Vec<Box<dyn Tool>> = BUILTIN_TOOLS
            .iter()
            .filter(|name| match job_tools {
                Some(list) => list.iter().any(|t| t == *name),
                None => !OPT_IN_TOOLS.contains(name),
            })
            .filter(|name| skill_patterns.is_none_or(|ps| ps.iter().any(|p| p.matches_tool(name))))
            .filter_map(|name| tools::builtin(name))
            .collect();
        // `exec` offers background sessions only where `process` can manage them.
        if tools.iter().any(|t| t.spec().name == "process")
            && let Some(exec) = tools.iter_mut().find(|t| t.spec().name == "exec")
        {
            *exec = Box::new(tools::exec::ExecTool::with_background());
        }
        ToolSet {
            tools,
            skill_patterns: skill_patterns.map(<[ToolPattern]>::to_vec),
        }
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name.clone()).collect()
    }

    /// The tools that may run while planning (the read-only ones).
    pub fn read_only_names(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter(|t| READ_ONLY_TOOLS.contains(&t.spec().name.as_str()))
            .map(|t| t.spec().name.clone())
            .collect()
    }

    /// Definitions for the model, in the builtin order. Every phase offers
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
    pub fn skill_permits(&self, tool: &str, args: &serde_json::Value) -> Result<(), SkillRefusal> {
        let Some(patterns) = &self.skill_patterns else {
            return Ok(());
        };
        let relevant: Vec<ToolPattern> = patterns
            .iter()
            .filter(|p| p.matches_tool(tool))
            .cloned()
            .collect();
        let subject = call_subject(tool, args);
        if allowing_rules(&relevant, tool, subject.as_deref()).is_some() {
            Ok(())
        } else {
            Err(SkillRefusal {
                allowed: relevant.iter().map(|p| p.as_str().to_string()).collect(),
            })
        }
    }
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
            set.skill_permits("exec", &json!({"command": "cargo test"}))
                .is_ok()
        );
        assert!(
            set.skill_permits("exec", &json!({"command": "rm -rf x"}))
                .is_err()
        );
        // Regression: a permitted command chained with another was permitted.
        assert!(
            set.skill_permits("exec", &json!({"command": "cargo test && rm -rf x"}))
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
}
