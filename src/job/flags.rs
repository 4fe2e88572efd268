//! The job-shaping flags of `agentci run` (`--goal`, `--skill`, `--tools`,
//! `--allow`, `--deny`, `--check`, the budget flags, `--allow-dirty`): they
//! are written into the raw job before validation, so a job made or changed
//! on the command line goes through the same checks as a job file. An eval
//! case's overrides (its `goal` and `budget`) come the same way, named by
//! the case ([`JobFlags::case`]), so no validated job is ever edited.
//!
//! A value from a flag carries a made-up position far below any job file
//! ([`FLAG_LINE`] plus its index); after validation [`relocate`] turns a
//! problem found at such a position into a problem about that flag. This
//! module does not read files or decide what is valid.

use serde_saphyr::{Location, Spanned};

use super::diagnostic::Diagnostic;
use super::raw::{RawBudget, RawCheck, RawJob, RawPermissions, RawSkill, Scalar};

/// The first line number given to flag values. Job files are at most 1 MiB,
/// so no line of a file gets this far.
const FLAG_LINE: u32 = 1 << 30;

/// The flags that change the job itself; empty means "the job file as is".
#[derive(Clone, Debug, Default)]
pub struct JobFlags {
    /// `--goal TEXT` (already read from stdin for `--goal -`).
    pub goal: Option<String>,
    /// `--skill NAME` or `--skill DIR` (a value holding `/` or naming a folder is a path).
    pub skill: Option<String>,
    /// `--tools read,edit` (repeatable; replaces the job's `tools`).
    pub tools: Vec<String>,
    /// `--allow RULE` (repeatable; added to the job's `permissions.allow`).
    pub allow: Vec<String>,
    /// `--deny RULE` (repeatable; added to the job's `permissions.deny`).
    pub deny: Vec<String>,
    /// `--check CMD` (repeatable; added to the job's `checks`).
    pub checks: Vec<String>,
    pub max_turns: Option<String>,
    pub max_tool_calls: Option<String>,
    pub max_tokens: Option<String>,
    pub max_cost: Option<String>,
    pub timeout: Option<String>,
    /// `--checks-rounds N`.
    pub checks_rounds: Option<String>,
    /// `--allow-dirty`.
    pub allow_dirty: bool,
    /// `--result-schema FILE`: replaces the job's `result_schema`.
    pub result_schema: Option<std::path::PathBuf>,
    /// The eval case these values are the overrides of: a problem with one
    /// then names the case and its key (`case `x`: budget.max_turns`)
    /// rather than a flag. `None`: they come from the command line.
    pub case: Option<String>,
}

impl JobFlags {
    /// True when no flag changes the job.
    pub fn is_empty(&self) -> bool {
        self.goal.is_none()
            && self.skill.is_none()
            && self.tools.is_empty()
            && self.allow.is_empty()
            && self.deny.is_empty()
            && self.checks.is_empty()
            && self.max_turns.is_none()
            && self.max_tool_calls.is_none()
            && self.max_tokens.is_none()
            && self.max_cost.is_none()
            && self.timeout.is_none()
            && self.checks_rounds.is_none()
            && !self.allow_dirty
            && self.result_schema.is_none()
    }

    /// The flag texts that may use `${{ vars.NAME }}`.
    pub(super) fn texts(&self) -> impl Iterator<Item = &str> {
        self.goal.iter().chain(&self.checks).map(String::as_str)
    }
}

/// Which flag each made-up position stands for.
#[derive(Default)]
pub(super) struct FlagPlaces {
    flags: Vec<String>,
    /// Set for an eval case's overrides: places name the case's keys.
    case: Option<String>,
}

impl FlagPlaces {
    /// A value from `flag`, at a position that names it.
    fn spanned<T>(&mut self, flag: &'static str, value: T) -> Spanned<T> {
        let line = FLAG_LINE.saturating_add(u32::try_from(self.flags.len()).unwrap_or(0));
        self.flags.push(match &self.case {
            Some(case) => format!("case `{case}`: {}", case_key(flag)),
            None => flag.to_string(),
        });
        let location = flag_location(line);
        Spanned::new(value, location, location)
    }

    /// True when `line` is a flag's made-up position.
    pub fn is_flag(&self, line: u32) -> bool {
        self.flag_at(line).is_some()
    }

    /// The flag a diagnostic's line stands for, if it is one.
    fn flag_at(&self, line: u32) -> Option<&str> {
        let index = line.checked_sub(FLAG_LINE)?;
        self.flags
            .get(usize::try_from(index).ok()?)
            .map(String::as_str)
    }
}

/// The key of an eval case that sets what `flag` sets.
fn case_key(flag: &'static str) -> &'static str {
    match flag {
        "--max-turns" => "budget.max_turns",
        "--max-tool-calls" => "budget.max_tool_calls",
        "--max-tokens" => "budget.max_tokens",
        "--max-cost" => "budget.max_cost_usd",
        "--timeout" => "budget.timeout",
        other => other.trim_start_matches('-'),
    }
}

/// serde-saphyr builds locations only while parsing; its `Location` reads
/// itself from any serde map, which is how one is made here.
fn flag_location(line: u32) -> Location {
    serde_json::from_value(serde_json::json!({"line": line, "column": 1}))
        .unwrap_or(Location::UNKNOWN)
}

/// Writes the flags into `raw`; single values replace the job's, repeatable
/// rules and checks are added to its lists, `--tools` replaces the list.
pub(super) fn apply(raw: &mut RawJob, flags: &JobFlags, cwd: &std::path::Path) -> FlagPlaces {
    let mut places = FlagPlaces {
        flags: Vec::new(),
        case: flags.case.clone(),
    };
    if let Some(goal) = &flags.goal {
        raw.goal = Some(places.spanned("--goal", goal.clone()));
    }
    if let Some(skill) = &flags.skill {
        let value = if skill.contains('/') || cwd.join(skill).is_dir() {
            // A folder: relative to where the command runs, like other path flags.
            RawSkill::Path(cwd.join(skill).display().to_string())
        } else {
            RawSkill::Name(skill.clone())
        };
        raw.skill = Some(places.spanned("--skill", value));
    }
    if !flags.tools.is_empty() {
        let tools = flags
            .tools
            .iter()
            .flat_map(|t| t.split(','))
            .filter(|t| !t.trim().is_empty())
            .map(|t| places.spanned("--tools", t.trim().to_string()))
            .collect();
        raw.tools = Some(tools);
    }
    if !flags.allow.is_empty() || !flags.deny.is_empty() {
        let permissions = raw.permissions.get_or_insert(RawPermissions {
            default: None,
            allow: Vec::new(),
            deny: Vec::new(),
            allow_hard_links: None,
        });
        for rule in &flags.allow {
            permissions
                .allow
                .push(places.spanned("--allow", rule.clone()));
        }
        for rule in &flags.deny {
            permissions
                .deny
                .push(places.spanned("--deny", rule.clone()));
        }
    }
    if !flags.checks.is_empty() {
        let checks = raw.checks.get_or_insert_with(Vec::new);
        for command in &flags.checks {
            // The command names the check: it is what a reader of the JUnit file wants to see.
            let name: String = command
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(80)
                .collect();
            let check = RawCheck {
                name: Some(places.spanned("--check", name)),
                run: Some(places.spanned("--check", command.clone())),
                timeout: None,
            };
            checks.push(places.spanned("--check", check));
        }
    }
    apply_budget(raw, flags, &mut places);
    if let Some(rounds) = &flags.checks_rounds {
        raw.checks_rounds = Some(places.spanned("--checks-rounds", scalar(rounds)));
    }
    if flags.allow_dirty {
        raw.allow_dirty = Some(places.spanned("--allow-dirty", Scalar::Bool(true)));
    }
    if let Some(file) = &flags.result_schema {
        // Relative to where the command runs, like other path flags; the
        // flag wins over the job's own `result_schema`.
        let path = cwd.join(file).display().to_string();
        raw.result_schema = Some(places.spanned("--result-schema", path.into()));
    }
    places
}

/// A job made from flags alone (no job file) with no `--allow`: the
/// read-only tools are allowed, as `codex exec` and `claude -p` start out,
/// instead of a run where every call is denied. Returns the note that says
/// so and how to allow more; `None` when the flags name allow rules.
pub(super) fn allow_looking(
    raw: &mut RawJob,
    flags: &JobFlags,
    places: &mut FlagPlaces,
) -> Option<String> {
    if !flags.allow.is_empty() {
        return None;
    }
    // Only the read-only tools the run gets: `--tools edit` looks at nothing.
    let named: Vec<&str> = flags
        .tools
        .iter()
        .flat_map(|t| t.split(','))
        .map(str::trim)
        .collect();
    let looking: Vec<&str> = crate::tools::catalog::looking()
        .into_iter()
        .filter(|tool| named.is_empty() || named.contains(tool))
        .collect();
    if looking.is_empty() {
        return None;
    }
    let permissions = raw.permissions.get_or_insert(RawPermissions {
        default: None,
        allow: Vec::new(),
        deny: Vec::new(),
        allow_hard_links: None,
    });
    for tool in &looking {
        permissions
            .allow
            .push(places.spanned("--allow", (*tool).to_string()));
    }
    Some(format!(
        "none given: the agent may use the read-only tools ({}) and every other call is \
         denied; to let it change files add `--allow edit --allow write` (or narrower, \
         `--allow 'edit(src/**)'`), to run commands `--allow 'exec(cargo test *)'`",
        looking.join(", ")
    ))
}

fn apply_budget(raw: &mut RawJob, flags: &JobFlags, places: &mut FlagPlaces) {
    let budget_flags = [
        (&flags.max_turns, "--max-turns"),
        (&flags.max_tool_calls, "--max-tool-calls"),
        (&flags.max_tokens, "--max-tokens"),
        (&flags.max_cost, "--max-cost"),
        (&flags.timeout, "--timeout"),
    ];
    if budget_flags.iter().all(|(value, _)| value.is_none()) {
        return;
    }
    let budget = raw.budget.get_or_insert(RawBudget {
        max_turns: None,
        max_tool_calls: None,
        max_tokens: None,
        max_cost_usd: None,
        timeout: None,
    });
    for (value, flag) in budget_flags {
        let Some(value) = value else { continue };
        let spanned = Some(places.spanned(flag, scalar(value)));
        match flag {
            "--max-turns" => budget.max_turns = spanned,
            "--max-tool-calls" => budget.max_tool_calls = spanned,
            "--max-tokens" => budget.max_tokens = spanned,
            "--max-cost" => budget.max_cost_usd = spanned,
            _ => budget.timeout = spanned,
        }
    }
}

/// A flag value read as YAML would read it: a number when it is one.
fn scalar(text: &str) -> Scalar {
    if let Ok(n) = text.trim().parse::<i128>() {
        Scalar::Int(n)
    } else if let Ok(x) = text.trim().parse::<f64>() {
        Scalar::Float(x)
    } else {
        Scalar::Str(text.to_string())
    }
}

/// Turns problems found at a flag's made-up position into problems about that flag.
pub(super) fn relocate(diagnostics: &mut [Diagnostic], places: &FlagPlaces) {
    for d in diagnostics.iter_mut() {
        if let Some(flag) = places.flag_at(d.line) {
            d.file = flag.into();
            d.line = 0;
            d.column = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_positions_name_their_flag() {
        let mut places = FlagPlaces::default();
        let goal = places.spanned("--goal", "x".to_string());
        let check = places.spanned("--check", "y".to_string());
        let mut diagnostics = vec![
            Diagnostic::error("job.yaml", goal.referenced.line() as u32, 1, "a"),
            Diagnostic::error("job.yaml", check.referenced.line() as u32, 1, "b"),
            Diagnostic::error("job.yaml", 3, 1, "c"),
        ];
        relocate(&mut diagnostics, &places);
        assert_eq!(diagnostics[0].to_string(), "--goal: a");
        assert_eq!(diagnostics[1].to_string(), "--check: b");
        assert_eq!(diagnostics[2].to_string(), "job.yaml:3:1: c");
    }

    #[test]
    fn a_case_s_places_name_the_case_and_its_key() {
        let mut places = FlagPlaces {
            flags: Vec::new(),
            case: Some("fix".into()),
        };
        let turns = places.spanned("--max-turns", "0".to_string());
        let mut diagnostics = vec![Diagnostic::error(
            "job.yaml",
            turns.referenced.line() as u32,
            1,
            "a",
        )];
        relocate(&mut diagnostics, &places);
        assert_eq!(
            diagnostics[0].to_string(),
            "case `fix`: budget.max_turns: a"
        );
    }

    #[test]
    fn numbers_read_like_yaml() {
        assert_eq!(scalar("3"), Scalar::Int(3));
        assert_eq!(scalar("0.5"), Scalar::Float(0.5));
        assert_eq!(scalar("15m"), Scalar::Str("15m".into()));
    }
}
