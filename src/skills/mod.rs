//! Skills in the Agent Skills format: a folder named after the skill holding
//! `SKILL.md` (YAML frontmatter + Markdown instructions).
//!
//! This module finds a skill by name in the skills paths, parses and
//! validates its frontmatter, and maps Claude Code tool names to agentci's
//! canonical ones. It does not decide which tools a run gets; the agent
//! intersects the skill's patterns with the job's tools. Skills from git
//! are fetched into a cache by [`git`] and then loaded like any folder.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::event::SkillSource;
use crate::policy::ToolPattern;

pub mod builtin;
pub mod discover;
pub mod frontmatter;
pub mod git;
pub mod in_workspace;
pub mod placeholders;
pub mod tool_names;
pub mod tools_left;

pub use discover::{
    SkillError, check_workspace_trust, find_skill, find_skill_dir, find_skill_in_trusted,
    load_skill_dir, read_skill_dir, skill_search_paths,
};

/// A loaded, validated skill.
#[derive(Clone, Debug)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The folder holding `SKILL.md`, absolute, as the user gave it: a
    /// symlinked folder keeps the link's path (the model is told this one).
    pub dir: PathBuf,
    /// The Markdown body: the skill's instructions to the model, with
    /// folder placeholders ([`placeholders`]) replaced.
    pub instructions: String,
    /// Canonical tool patterns from `allowed-tools` (`read`, `exec(git diff *)`);
    /// `None` when the skill does not restrict tools.
    pub allowed_tools: Option<Vec<ToolPattern>>,
    /// `allowed-tools` entries, as written, that give no tool agentci has
    /// (unknown names, `AskUserQuestion`, `WebFetch`, `mcp__…`).
    pub unmapped_tools: Vec<String>,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub metadata: BTreeMap<String, String>,
    /// agentci's own `model` key: a model name the skill prefers.
    pub model: Option<String>,
    /// agentci's own `max-turns` key.
    pub max_turns: Option<u32>,
    /// Problems that did not stop loading, such as an unknown tool name.
    pub warnings: Vec<String>,
    /// For a skill from git: the repository, revision and the commit it resolved to.
    pub source: Option<SkillSource>,
    /// For a built-in skill: the temporary folder `dir` lies in, removed
    /// when the last clone of the skill is dropped ([`builtin`]).
    pub folder_holder: Option<std::sync::Arc<tempfile::TempDir>>,
}
