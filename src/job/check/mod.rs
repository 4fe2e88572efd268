//! Semantic validation of a parsed job: turns a [`RawJob`] into a
//! [`JobSpec`], reporting every problem at its own line and column.
//!
//! Defaults live here or in the submodule of their key (provider `openai`,
//! permission default `deny`, check timeout 10m, `max_plan_turns` 5). This
//! module walks the job's keys in order and builds the spec; the larger
//! keys are checked in submodules. Reading files and flags is
//! [`super::load`]'s job.

/// The largest `outputs.max_file_size` (1 TB): anything larger is a typo.
const MAX_FILE_SIZE_LIMIT: u64 = 1_000_000_000_000;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_saphyr::Spanned;

mod checks;
mod env;
mod git;
mod guidance;
pub(crate) mod mcp;
mod model;
mod model_options;
mod numbers;
mod permissions;
mod reasoning;
pub use reasoning::MIN_BUDGET_TOKENS;
mod result;
mod sandbox;
mod telemetry;
mod tool_loop;
mod untrusted;
mod writable;

pub(crate) use env::is_env_name;
pub(crate) use result::schema_file_problem;
pub(crate) use writable::kept_paths;

use crate::job::diagnostic::{Pos, Reporter};
use crate::job::load::{FlagValues, existing_dir, pos_of};
use crate::job::raw::{RawJob, RawOutputs, RawSkill, Scalar};
use crate::job::vars::{is_valid_name, substitute};
use crate::job::{Diagnostic, FurtherSkill, JobSpec, OutputsSpec, SkillRef};
use crate::tools::workspace::normalize;

const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
const DEFAULT_MAX_PLAN_TURNS: u32 = 5;
/// More rounds than this is a loop nobody meant: the budget is the real limit.
const MAX_CHECKS_ROUNDS: u64 = 20;

pub(super) struct Checker<'a> {
    pub r: Reporter<'a>,
    pub cwd: &'a Path,
    pub job_dir: &'a Path,
}

impl Checker<'_> {
    /// Validates the whole job. Returns the spec when nothing was wrong
    /// enough to build one, the skill's position, and all diagnostics.
    pub fn check(
        mut self,
        path: &Path,
        raw: RawJob,
        overrides: FlagValues,
    ) -> (Option<JobSpec>, Pos, Vec<Diagnostic>) {
        self.version(raw.version.as_ref());
        let vars = self.vars(&raw.vars, overrides.vars.clone());
        let name = self.required_text(raw.name.as_ref(), "name", "a short name for the job", &vars);
        let skill_position = raw
            .skill
            .as_ref()
            .map_or_else(|| self.r.start(), |s| pos_of(&self.r, s));
        let skill = self.skill(raw.skill.as_ref());
        let skills = self.further_skills(raw.skills.as_deref().unwrap_or_default());
        let goal = self.required_text(
            raw.goal.as_ref(),
            "goal",
            "what the agent should achieve",
            &vars,
        );
        let model = self.model(raw.model.as_ref(), &overrides, &vars);
        let tools = raw.tools.as_ref().map(|tools| self.tools(tools));
        let permissions = self.permissions(raw.permissions.as_ref());
        let budget = raw
            .budget
            .as_ref()
            .map(|b| self.budget(b))
            .unwrap_or_default();
        let workspace = self.workspace(raw.workspace.as_ref(), overrides.workspace);
        let checks = self.checks(raw.checks.as_deref().unwrap_or_default(), &vars);
        let outputs = workspace
            .as_deref()
            .map(|ws| self.outputs(raw.outputs.as_ref(), ws, &vars, name.as_deref()))
            .unwrap_or_default();
        let allow_dirty = self.optional_boolean(raw.allow_dirty.as_ref(), "allow_dirty");
        let untrusted_inputs =
            self.untrusted_inputs(raw.untrusted_inputs.as_deref().unwrap_or_default());
        let trust_workspace = raw
            .trust_workspace
            .as_ref()
            .and_then(|v| self.boolean(v, "trust_workspace"));
        let sandbox = raw
            .sandbox
            .as_ref()
            .map(|s| self.sandbox(s, &vars, workspace.as_deref(), &outputs))
            .unwrap_or_default();
        let skills_path = self.skills_path(raw.skills_path.as_deref().unwrap_or_default());
        let secrets = self.secrets(raw.secrets.as_deref().unwrap_or_default());
        let env = self.env(&raw.env, &secrets, &vars);
        let (max_plan_turns, checks_rounds) = self.turn_limits(&raw);
        let tool_loop = self.tool_loop(&raw);
        let guidance = self.guidance(&raw, workspace.as_deref());
        let result_schema = raw
            .result_schema
            .as_ref()
            .and_then(|s| self.result_schema(s));

        let mcp = self.mcp(raw.mcp.as_ref(), workspace.as_deref(), &vars);
        let telemetry = self.telemetry(raw.telemetry.as_ref(), &vars);

        let job = match (name, skill, goal, model, workspace) {
            (Some(name), Some(skill), Some(goal), Some(model), Some(workspace)) => Some(JobSpec {
                path: path.to_path_buf(),
                name,
                skill,
                skills,
                goal,
                vars,
                model,
                tools,
                permissions,
                budget,
                workspace,
                checks,
                outputs,
                skills_path,
                max_plan_turns,
                checks_rounds,
                secrets,
                env,
                allow_dirty,
                untrusted_inputs,
                trust_workspace,
                sandbox,
                mcp,
                tool_loop,
                guidance,
                result_schema,
                telemetry,
            }),
            _ => None,
        };
        (job, skill_position, self.r.diagnostics)
    }

    /// `max_plan_turns` (5 when not given) and `checks_rounds` (1).
    fn turn_limits(&mut self, raw: &RawJob) -> (u32, u32) {
        let max_plan_turns = raw
            .max_plan_turns
            .as_ref()
            .and_then(|v| self.positive(v, "max_plan_turns", u32::MAX.into()))
            .map_or(DEFAULT_MAX_PLAN_TURNS, |n| n as u32);
        let checks_rounds = raw
            .checks_rounds
            .as_ref()
            .and_then(|v| self.positive(v, "checks_rounds", MAX_CHECKS_ROUNDS))
            .map_or(1, |n| n as u32);
        (max_plan_turns, checks_rounds)
    }

    fn version(&mut self, version: Option<&Spanned<Scalar>>) {
        if let Some(v) = version
            && v.value != Scalar::Int(1)
        {
            let pos = pos_of(&self.r, v);
            self.r.error(
                pos,
                format!(
                    "unsupported version `{}`; this agentci reads `version: 1`",
                    v.value.text()
                ),
            );
        }
    }

    fn vars(
        &mut self,
        raw: &BTreeMap<String, Spanned<Scalar>>,
        flags: BTreeMap<String, String>,
    ) -> BTreeMap<String, String> {
        let mut vars = BTreeMap::new();
        for (name, value) in raw {
            let pos = pos_of(&self.r, value);
            if !is_valid_name(name) {
                self.r.error(
                    pos,
                    format!(
                        "`{name}` is not a valid var name; use letters, digits, `_` and `-`, \
                         starting with a letter"
                    ),
                );
            }
            if value.value == Scalar::Null && !flags.contains_key(name) {
                self.r.error(
                    pos,
                    format!("var `{name}` has no value; write `{name}: \"\"` for an empty string"),
                );
            }
            vars.insert(name.clone(), value.value.text());
        }
        vars.extend(flags);
        vars
    }

    /// A required string key with `${{ vars.NAME }}` substituted; must not be blank.
    fn required_text(
        &mut self,
        value: Option<&Spanned<String>>,
        key: &str,
        what: &str,
        vars: &BTreeMap<String, String>,
    ) -> Option<String> {
        let Some(value) = value else {
            let pos = self.r.start();
            self.r
                .error(pos, format!("missing required key `{key}` ({what})"));
            return None;
        };
        let text = self.substitute(value, vars)?;
        if text.trim().is_empty() {
            let pos = pos_of(&self.r, value);
            self.r
                .error(pos, format!("`{key}` is empty; expected {what}"));
            return None;
        }
        Some(text)
    }

    /// Substitutes vars, reporting each bad expression at its own position.
    fn substitute(
        &mut self,
        value: &Spanned<String>,
        vars: &BTreeMap<String, String>,
    ) -> Option<String> {
        match substitute(&value.value, vars) {
            Ok(text) => Some(text),
            Err(problems) => {
                for problem in problems {
                    let nth = value.value[..problem.start]
                        .matches(problem.expression.as_str())
                        .count();
                    let pos = self
                        .r
                        .pos_in_scalar(&value.referenced, &problem.expression, nth);
                    self.r.error(pos, problem.message);
                }
                None
            }
        }
    }

    fn skill(&mut self, skill: Option<&Spanned<RawSkill>>) -> Option<SkillRef> {
        let Some(skill) = skill else {
            let pos = self.r.start();
            self.r.error(
                pos,
                "missing required key `skill` (a skill name, `{path: DIR}`, `{git: URL, rev: SHA, path: DIR}` \
                 or `{builtin: general}`)",
            );
            return None;
        };
        let pos = pos_of(&self.r, skill);
        match &skill.value {
            RawSkill::Name(name) if name.trim().is_empty() => {
                self.r.error(
                    pos,
                    "`skill` is empty; expected a skill name or `{path: DIR}`",
                );
                None
            }
            RawSkill::Name(name) => Some(SkillRef::Name(name.trim().to_string())),
            RawSkill::Path(dir) => Some(SkillRef::Path(normalize(&self.job_dir.join(dir)))),
            RawSkill::Git { url, rev, path } => {
                self.git_skill(skill, url, rev.as_deref(), path.as_deref())
            }
            RawSkill::Builtin(name) if name.trim().is_empty() => {
                self.r.error(
                    pos,
                    "`skill.builtin` is empty; expected the name of a built-in skill: general",
                );
                None
            }
            // Whether agentci has it is the skill loader's question, as for a name.
            RawSkill::Builtin(name) => Some(SkillRef::Builtin(name.trim().to_string())),
        }
    }

    /// `skills: [name, …]`: names without duplicates. Whether each exists
    /// is the skill loader's question, asked by `validate` and `run`.
    fn further_skills(&mut self, names: &[Spanned<String>]) -> Vec<FurtherSkill> {
        let mut out: Vec<FurtherSkill> = Vec::new();
        for name in names {
            let pos = pos_of(&self.r, name);
            let (line, column) = (pos.line, pos.column);
            let text = name.value.trim();
            if text.is_empty() {
                self.r
                    .error(pos, "an entry of `skills` is empty; expected a skill name");
            } else if out.iter().any(|s| s.name == text) {
                self.r
                    .warning(pos, format!("skill `{text}` is listed twice in `skills`"));
            } else {
                out.push(FurtherSkill {
                    name: text.to_string(),
                    line,
                    column,
                });
            }
        }
        out
    }

    fn workspace(
        &mut self,
        raw: Option<&Spanned<String>>,
        flag: Option<PathBuf>,
    ) -> Option<PathBuf> {
        if flag.is_some() {
            return flag;
        }
        let Some(raw) = raw else {
            return match existing_dir(self.cwd) {
                Ok(dir) => Some(dir),
                Err(message) => {
                    let pos = self.r.start();
                    self.r.error(pos, format!("workspace: {message}"));
                    None
                }
            };
        };
        match existing_dir(&self.cwd.join(&raw.value)) {
            Ok(dir) => Some(dir),
            Err(message) => {
                let pos = pos_of(&self.r, raw);
                self.r.error(
                    pos,
                    format!(
                        "workspace `{}`: {message} (relative to the current directory, or pass \
                         --workspace DIR)",
                        raw.value
                    ),
                );
                None
            }
        }
    }

    fn outputs(
        &mut self,
        raw: Option<&RawOutputs>,
        workspace: &Path,
        vars: &BTreeMap<String, String>,
        job_name: Option<&str>,
    ) -> OutputsSpec {
        let resolve =
            |v: &Option<Spanned<String>>| v.as_ref().map(|p| normalize(&workspace.join(&p.value)));
        match raw {
            None => OutputsSpec::default(),
            Some(o) => {
                let commit = o
                    .commit
                    .as_ref()
                    .and_then(|c| self.commit(c, vars, job_name));
                let push = o
                    .push
                    .as_ref()
                    .and_then(|p| self.push(p, o.commit.is_some()));
                OutputsSpec {
                    dir: resolve(&o.dir),
                    trace: resolve(&o.trace),
                    junit: resolve(&o.junit),
                    patch: resolve(&o.patch),
                    result: resolve(&o.result),
                    commit,
                    push,
                    max_file_size: o.max_file_size.as_ref().and_then(|v| {
                        self.positive(v, "outputs.max_file_size", MAX_FILE_SIZE_LIMIT)
                    }),
                    include_binary: self
                        .optional_boolean(o.include_binary.as_ref(), "outputs.include_binary"),
                }
            }
        }
    }

    fn skills_path(&mut self, raw: &[Spanned<String>]) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for dir in raw {
            let path = normalize(&self.job_dir.join(&dir.value));
            if !path.is_dir() {
                let pos = pos_of(&self.r, dir);
                self.r.warning(
                    pos,
                    format!(
                        "skills_path `{}` is not a directory (looked for {}; relative paths start \
                         at the job file's folder)",
                        dir.value,
                        path.display()
                    ),
                );
            }
            out.push(path);
        }
        out
    }
}
