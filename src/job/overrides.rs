//! What replaces or extends a job file's values for one run: the job-shaping
//! flags of `agentci run` (`--goal`, `--skill`, `--tools`, `--allow`,
//! `--deny`, `--check`, the budget flags, `--checks-rounds`,
//! `--allow-dirty`, `--result-schema`) and an eval case's `goal`, `vars` and
//! `budget`.
//!
//! Each value is held as the job file would hold it (a budget value is a
//! [`Scalar`], as YAML reads it) together with where it was written
//! ([`Given`]): a flag, or a line and column of a suite file. [`merge`]
//! writes them into the raw job before the job's checks run, so they are
//! validated once, by the same checks as the file's own keys, and no
//! validated job is ever edited. Each merged value's YAML location names
//! its source by serde-saphyr's `source_id` (the job file is source 0), so
//! a problem with it is reported at the flag or the suite file's line and
//! column ([`super::diagnostic::Reporter`]). This module decides nothing
//! about what is valid.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_saphyr::{Location, Spanned};

use super::raw::{RawBudget, RawCheck, RawJob, RawPermissions, RawSkill, Scalar};

/// Where an override was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A command-line flag such as `--max-turns`.
    Flag(&'static str),
    /// A file other than the job file: an eval suite, as its path was given.
    File(PathBuf),
}

/// One value and where it was written (line and column are 0 for a flag).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Given<T> {
    pub value: T,
    pub source: Source,
    pub line: u32,
    pub column: u32,
}

impl<T> Given<T> {
    /// A value given by `flag`.
    pub fn flag(flag: &'static str, value: T) -> Self {
        Given {
            value,
            source: Source::Flag(flag),
            line: 0,
            column: 0,
        }
    }

    /// A value written in `file` at `location` (a suite file's key).
    pub fn in_file(file: &Path, location: &Location, value: T) -> Self {
        Given {
            value,
            source: Source::File(file.to_path_buf()),
            line: u32::try_from(location.line()).unwrap_or(u32::MAX),
            column: u32::try_from(location.column()).unwrap_or(u32::MAX),
        }
    }
}

/// Everything that changes a job for one run; the default changes nothing.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// Replaces the job's `goal`.
    pub(crate) goal: Option<Given<String>>,
    /// `--skill NAME` or `--skill DIR` (a value holding `/` or naming a folder is a path).
    pub(crate) skill: Option<Given<String>>,
    /// Replaces the job's `tools` (one entry per tool).
    pub(crate) tools: Vec<Given<String>>,
    /// Added to the job's `permissions.allow`.
    pub(crate) allow: Vec<Given<String>>,
    /// Added to the job's `permissions.deny`.
    pub(crate) deny: Vec<Given<String>>,
    /// Commands added to the job's `checks`, each named by its first line.
    pub(crate) checks: Vec<Given<String>>,
    /// Replace the job's `budget` keys of the same names.
    pub(crate) max_turns: Option<Given<Scalar>>,
    pub(crate) max_tool_calls: Option<Given<Scalar>>,
    pub(crate) max_tokens: Option<Given<Scalar>>,
    pub(crate) max_cost_usd: Option<Given<Scalar>>,
    pub(crate) timeout: Option<Given<Scalar>>,
    /// Replaces the job's `checks_rounds`.
    pub(crate) checks_rounds: Option<Given<Scalar>>,
    /// `--allow-dirty`.
    pub(crate) allow_dirty: Option<Given<bool>>,
    /// Replaces the job's `result_schema` (a path relative to where the command runs).
    pub(crate) result_schema: Option<Given<PathBuf>>,
    /// An eval case's vars; names already checked by the suite, so they
    /// override the job's `vars` as `--var` does.
    pub(crate) vars: BTreeMap<String, String>,
}

impl Overrides {
    /// True when any budget key is replaced.
    pub(crate) fn sets_budget(&self) -> bool {
        self.budget_values()
            .iter()
            .any(|(value, _)| value.is_some())
    }

    /// The budget values with the key each replaces.
    fn budget_values(&self) -> [(&Option<Given<Scalar>>, &'static str); 5] {
        [
            (&self.max_turns, "max_turns"),
            (&self.max_tool_calls, "max_tool_calls"),
            (&self.max_tokens, "max_tokens"),
            (&self.max_cost_usd, "max_cost_usd"),
            (&self.timeout, "timeout"),
        ]
    }

    /// Only the budget of these overrides (for checking a case's budget on its own).
    pub(crate) fn budget_only(&self) -> Overrides {
        Overrides {
            max_turns: self.max_turns.clone(),
            max_tool_calls: self.max_tool_calls.clone(),
            max_tokens: self.max_tokens.clone(),
            max_cost_usd: self.max_cost_usd.clone(),
            timeout: self.timeout.clone(),
            ..Overrides::default()
        }
    }

    /// The texts that may use `${{ vars.NAME }}`: the goal and the checks.
    pub(super) fn texts(&self) -> impl Iterator<Item = &str> {
        self.goal
            .iter()
            .chain(&self.checks)
            .map(|given| given.value.as_str())
    }
}

/// The sources of the values [`merge`] wrote: the value at source id `n`
/// (n ≥ 1) came from `sources[n - 1]`.
#[derive(Debug, Default)]
pub(crate) struct Sources(Vec<Source>);

impl Sources {
    /// Where source id `id` points, if it is an override's.
    pub fn get(&self, id: u32) -> Option<&Source> {
        let index = usize::try_from(id.checked_sub(1)?).ok()?;
        self.0.get(index)
    }

    /// `value` with a location that names where it was given.
    fn spanned<T, U>(&mut self, given: &Given<T>, value: U) -> Spanned<U> {
        let id = match self.0.iter().position(|s| *s == given.source) {
            Some(index) => index + 1,
            None => {
                self.0.push(given.source.clone());
                self.0.len()
            }
        };
        let location = location(given.line, given.column, u32::try_from(id).unwrap_or(0));
        Spanned::new(value, location, location)
    }
}

/// serde-saphyr builds locations only while parsing; its `Location` reads
/// itself from any serde map, which is how one is made here.
fn location(line: u32, column: u32, source_id: u32) -> Location {
    serde_json::from_value(serde_json::json!({
        "line": line,
        "column": column,
        "source_id": source_id,
    }))
    .unwrap_or(Location::UNKNOWN)
}

/// Writes the overrides into `raw`: single values replace the job's,
/// rules and checks are added to its lists, tools replace the list.
pub(super) fn merge(raw: &mut RawJob, overrides: &Overrides, cwd: &Path) -> Sources {
    let mut sources = Sources::default();
    if let Some(goal) = &overrides.goal {
        raw.goal = Some(sources.spanned(goal, goal.value.clone()));
    }
    if let Some(skill) = &overrides.skill {
        let value = if skill.value.contains('/') || cwd.join(&skill.value).is_dir() {
            // A folder: relative to where the command runs, like other path flags.
            RawSkill::Path(cwd.join(&skill.value).display().to_string())
        } else {
            RawSkill::Name(skill.value.clone())
        };
        raw.skill = Some(sources.spanned(skill, value));
    }
    if !overrides.tools.is_empty() {
        let tools = overrides
            .tools
            .iter()
            .map(|tool| sources.spanned(tool, tool.value.clone()))
            .collect();
        raw.tools = Some(tools);
    }
    merge_rules(raw, overrides, &mut sources);
    if !overrides.checks.is_empty() {
        let checks = raw.checks.get_or_insert_with(Vec::new);
        for command in &overrides.checks {
            // The command names the check: it is what a reader of the JUnit file wants to see.
            let name: String = command
                .value
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(80)
                .collect();
            let check = RawCheck {
                name: Some(sources.spanned(command, name)),
                run: Some(sources.spanned(command, command.value.clone())),
                timeout: None,
            };
            checks.push(sources.spanned(command, check));
        }
    }
    merge_budget(raw, overrides, &mut sources);
    if let Some(rounds) = &overrides.checks_rounds {
        raw.checks_rounds = Some(sources.spanned(rounds, rounds.value.clone()));
    }
    if let Some(dirty) = &overrides.allow_dirty {
        raw.allow_dirty = Some(sources.spanned(dirty, Scalar::Bool(dirty.value)));
    }
    if let Some(file) = &overrides.result_schema {
        // Relative to where the command runs, like other path flags; the
        // flag wins over the job's own `result_schema`.
        let path = cwd.join(&file.value).display().to_string();
        raw.result_schema = Some(sources.spanned(file, path.into()));
    }
    sources
}

fn merge_rules(raw: &mut RawJob, overrides: &Overrides, sources: &mut Sources) {
    if overrides.allow.is_empty() && overrides.deny.is_empty() {
        return;
    }
    let permissions = permissions(raw);
    for rule in &overrides.allow {
        permissions
            .allow
            .push(sources.spanned(rule, rule.value.clone()));
    }
    for rule in &overrides.deny {
        permissions
            .deny
            .push(sources.spanned(rule, rule.value.clone()));
    }
}

fn permissions(raw: &mut RawJob) -> &mut RawPermissions {
    raw.permissions.get_or_insert(RawPermissions {
        default: None,
        allow: Vec::new(),
        deny: Vec::new(),
        allow_hard_links: None,
    })
}

fn merge_budget(raw: &mut RawJob, overrides: &Overrides, sources: &mut Sources) {
    if !overrides.sets_budget() {
        return;
    }
    let budget = raw.budget.get_or_insert(RawBudget {
        max_turns: None,
        max_tool_calls: None,
        max_tokens: None,
        max_cost_usd: None,
        timeout: None,
    });
    for (value, key) in overrides.budget_values() {
        let Some(given) = value else { continue };
        let spanned = Some(sources.spanned(given, given.value.clone()));
        match key {
            "max_turns" => budget.max_turns = spanned,
            "max_tool_calls" => budget.max_tool_calls = spanned,
            "max_tokens" => budget.max_tokens = spanned,
            "max_cost_usd" => budget.max_cost_usd = spanned,
            _ => budget.timeout = spanned,
        }
    }
}

/// The built-in skill a job made from flags alone uses when no `--skill`
/// is given (its text is in `skills::builtin`).
pub const AD_HOC_SKILL: &str = "general";

/// A job made from flags alone with no `--skill` (an ad-hoc run, like
/// `codex exec "…"`): the built-in skill, and the tools every run is
/// offered (the read-only ones, `write`, `edit`, `exec`, or those `--tools`
/// names) allowed by a bare rule each, so `exec` runs any command. What
/// contains it is the sandbox, as in codex's default `workspace-write`
/// mode: children write only in the workspace and a private temp folder,
/// and reach no network. An `--allow` rule for a tool replaces that tool's
/// bare rule (`--allow 'exec(cargo test *)'` narrows exec to it); `--deny`
/// beats both. Returns the note that says what the run may do.
pub(super) fn ad_hoc_defaults(
    raw: &mut RawJob,
    overrides: &Overrides,
    sources: &mut Sources,
) -> String {
    let skill = Given::flag("--skill", ());
    raw.skill = Some(sources.spanned(&skill, RawSkill::Builtin(AD_HOC_SKILL.to_string())));
    let named: Vec<&str> = overrides.tools.iter().map(|t| t.value.as_str()).collect();
    let narrowed: Vec<&str> = overrides
        .allow
        .iter()
        .map(|rule| rule_tool(&rule.value))
        .collect();
    let offered = crate::tools::catalog::offered_by_default();
    let allowed: Vec<&str> = offered
        .iter()
        .copied()
        .filter(|tool| named.is_empty() || named.contains(tool))
        .filter(|tool| !narrowed.contains(tool))
        .collect();
    let permissions = permissions(raw);
    for tool in &allowed {
        let given = Given::flag("--allow", (*tool).to_string());
        permissions
            .allow
            .push(sources.spanned(&given, given.value.clone()));
    }
    let exec = if allowed.contains(&"exec") {
        "; exec runs any command, contained by the `workspace-write` sandbox (writes only in \
         the workspace, no network): narrow it with --allow 'exec(cargo test *)' or --deny"
    } else {
        ""
    };
    let allowed = if allowed.is_empty() {
        "nothing more".to_string()
    } else {
        allowed.join(", ")
    };
    format!(
        "no job file and no --skill: the built-in skill `{AD_HOC_SKILL}`, and allowed without \
         a rule: {allowed}{exec}"
    )
}

/// The tool an allow rule is for: `exec` of `exec(cargo test *)`.
fn rule_tool(rule: &str) -> &str {
    rule.split('(').next().unwrap_or(rule).trim()
}

/// A job made from flags alone (no job file) with no `--allow`: the
/// read-only tools are allowed, as `codex exec` and `claude -p` start out,
/// instead of a run where every call is denied. Returns the note that says
/// so and how to allow more; `None` when the flags name allow rules.
pub(super) fn allow_looking(
    raw: &mut RawJob,
    overrides: &Overrides,
    sources: &mut Sources,
) -> Option<String> {
    if !overrides.allow.is_empty() {
        return None;
    }
    // Only the read-only tools the run gets: `--tools edit` looks at nothing.
    let named: Vec<&str> = overrides.tools.iter().map(|t| t.value.as_str()).collect();
    let looking: Vec<&str> = crate::tools::catalog::looking()
        .into_iter()
        .filter(|tool| named.is_empty() || named.contains(tool))
        .collect();
    if looking.is_empty() {
        return None;
    }
    let permissions = permissions(raw);
    for tool in &looking {
        let given = Given::flag("--allow", (*tool).to_string());
        permissions
            .allow
            .push(sources.spanned(&given, given.value.clone()));
    }
    Some(format!(
        "none given: the agent may use the read-only tools ({}) and every other call is \
         denied; to let it change files add `--allow edit --allow write` (or narrower, \
         `--allow 'edit(src/**)'`), to run commands `--allow 'exec(cargo test *)'`",
        looking.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_numbers_read_like_yaml() {
        assert_eq!(Scalar::from_flag("3"), Scalar::Int(3));
        assert_eq!(Scalar::from_flag("0.5"), Scalar::Float(0.5));
        assert_eq!(Scalar::from_flag("15m"), Scalar::Str("15m".into()));
    }

    #[test]
    fn each_source_gets_one_id_and_keeps_its_place() {
        let mut sources = Sources::default();
        let turns = Given::flag("--max-turns", Scalar::Int(0));
        let goal = Given::flag("--goal", "x".to_string());
        let case = Given {
            value: Scalar::Str("abc".into()),
            source: Source::File("suite.yaml".into()),
            line: 7,
            column: 20,
        };
        let a = sources.spanned(&turns, ());
        let b = sources.spanned(&goal, ());
        let c = sources.spanned(&turns, ());
        let d = sources.spanned(&case, ());
        assert_eq!(a.referenced.source_id(), c.referenced.source_id());
        assert_ne!(a.referenced.source_id(), b.referenced.source_id());
        assert_ne!(a.referenced.source_id(), 0, "0 is the job file");
        assert_eq!(
            sources.get(d.referenced.source_id()),
            Some(&Source::File("suite.yaml".into()))
        );
        assert_eq!((d.referenced.line(), d.referenced.column()), (7, 20));
        assert_eq!(
            sources.get(b.referenced.source_id()),
            Some(&Source::Flag("--goal"))
        );
        assert_eq!(sources.get(0), None);
    }
}
