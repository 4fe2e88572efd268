//! Semantic validation of a parsed suite: turns a [`RawSuite`] into a
//! [`SuiteSpec`], reporting every problem at its own line and column.
//!
//! Paths in a suite (the job, fixtures, cassettes) are relative to the suite
//! file's folder. The base job is loaded here too, so a broken job is
//! reported before any case runs; running cases is not this module's job.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{Glob, GlobSetBuilder};
use regex::Regex;
use serde_saphyr::Spanned;

use super::raw::{RawAssertion, RawCase, RawFixture, RawSuite};
use super::{Assertion, CaseSpec, ExpectedStatus, Fixture, SuiteSpec, is_valid_case_name};
use crate::job::diagnostic::{Pos, Reporter};
use crate::job::load::parse_model_flag;
use crate::job::raw::{RawBudget, Scalar};
use crate::job::vars::is_valid_name;
use crate::job::{BudgetSpec, Diagnostic, Given, LoadOptions, Overrides};
use crate::tools::workspace::normalize;

/// How long a `run:` assertion may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(600);

pub(super) struct SuiteChecker<'a> {
    pub r: Reporter<'a>,
    /// The suite file's folder, absolute.
    pub dir: &'a Path,
    pub cwd: &'a Path,
    pub record: bool,
}

/// What `--record` saved for a case that names no cassette:
/// `cassettes/<case>.jsonl`, then `<case>-2.jsonl`, `<case>-3.jsonl`, … as
/// long as they exist, so the next run replays them. Empty: the case runs live.
fn recorded_defaults(first: &Path) -> Vec<PathBuf> {
    let stem = first.with_extension("");
    let mut found = Vec::new();
    let mut next = first.to_path_buf();
    while next.is_file() {
        found.push(next);
        next = PathBuf::from(format!("{}-{}.jsonl", stem.display(), found.len() + 1));
    }
    found
}

/// What a case changes in the job: its goal, vars and budget, each at its
/// place in the suite file (`path`, as given), checked with the job.
fn case_overrides(
    path: &Path,
    case: &RawCase,
    goal: Option<&String>,
    vars: &BTreeMap<String, String>,
) -> Overrides {
    let given =
        |value: &Spanned<Scalar>| Given::in_file(path, &value.referenced, value.value.clone());
    let budget = case.budget.as_ref();
    let value = |pick: fn(&RawBudget) -> &Option<Spanned<Scalar>>| {
        budget.and_then(|b| pick(b).as_ref()).map(given)
    };
    let mut overrides = Overrides {
        max_turns: value(|b| &b.max_turns),
        max_tool_calls: value(|b| &b.max_tool_calls),
        max_tokens: value(|b| &b.max_tokens),
        max_cost_usd: value(|b| &b.max_cost_usd),
        timeout: value(|b| &b.timeout),
        vars: vars.clone(),
        ..Overrides::default()
    };
    if let (Some(goal), Some(raw)) = (goal, &case.goal) {
        overrides.goal = Some(Given::in_file(path, &raw.referenced, goal.clone()));
    }
    overrides
}

impl SuiteChecker<'_> {
    pub fn check(mut self, path: &Path, raw: RawSuite) -> (Option<SuiteSpec>, Vec<Diagnostic>) {
        if let Some(v) = &raw.version
            && v.value != Scalar::Int(1)
        {
            let pos = self.r.pos(&v.referenced);
            self.r.error(
                pos,
                format!(
                    "unsupported version `{}`; this agentci reads `version: 1`",
                    v.value.text()
                ),
            );
        }
        let name = self.suite_name(raw.name.as_ref());
        let job = self.job(raw.job.as_ref());
        let min_pass_rate = raw
            .min_pass_rate
            .as_ref()
            .and_then(|v| self.rate(v, "min_pass_rate"));
        let cases = self.cases(path, job.as_deref(), raw.cases.as_ref());
        let suite = match (name, job, cases) {
            (Some(name), Some(job), Some(cases)) => Some(SuiteSpec {
                path: path.to_path_buf(),
                name,
                job,
                min_pass_rate,
                cases,
            }),
            _ => None,
        };
        (suite, self.r.diagnostics)
    }

    fn suite_name(&mut self, raw: Option<&Spanned<String>>) -> Option<String> {
        let (name, pos) = match raw {
            Some(name) => (name.value.trim().to_string(), self.r.pos(&name.referenced)),
            None => (
                self.dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                self.r.start(),
            ),
        };
        if is_valid_case_name(&name) {
            return Some(name);
        }
        self.r.error(
            pos,
            format!(
                "suite name `{name}` cannot be used as a folder name; use letters, digits, `.`, \
                 `_` and `-` (set `name:`)"
            ),
        );
        None
    }

    /// The base job: it must exist and load (with the suite's folder standing in
    /// for the workspace, which every case replaces).
    fn job(&mut self, raw: Option<&Spanned<String>>) -> Option<PathBuf> {
        let Some(raw) = raw else {
            let start = self.r.start();
            self.r.error(
                start,
                "missing required key `job`; name the job file every case runs, e.g. \
                 `job: ../../workflows/fix-failing-test.yaml`",
            );
            return None;
        };
        let pos = self.r.pos(&raw.referenced);
        let job = normalize(&self.dir.join(&raw.value));
        if !job.is_file() {
            self.r
                .error(pos, format!("job file {} does not exist", job.display()));
            return None;
        }
        let options = LoadOptions {
            cwd: self.cwd.to_path_buf(),
            workspace: Some(self.dir.to_path_buf()),
            ..LoadOptions::default()
        };
        if let Err(problems) = crate::job::load_job(&job, &options) {
            self.r.diagnostics.extend(problems);
            return None;
        }
        Some(job)
    }

    /// The cases; `job` is the base job when it loaded, to check each
    /// case's budget with.
    fn cases(
        &mut self,
        path: &Path,
        job: Option<&Path>,
        raw: Option<&Spanned<Vec<Spanned<RawCase>>>>,
    ) -> Option<Vec<CaseSpec>> {
        let Some(raw) = raw else {
            let start = self.r.start();
            self.r.error(
                start,
                "missing required key `cases`; list at least one case",
            );
            return None;
        };
        if raw.value.is_empty() {
            let pos = self.r.pos(&raw.referenced);
            self.r
                .error(pos, "`cases` is empty; list at least one case");
            return None;
        }
        let mut seen = HashSet::new();
        let mut cases = Vec::new();
        let mut complete = true;
        for (index, case) in raw.value.iter().enumerate() {
            match self.case(path, job, index, case, &mut seen) {
                Some(case) => cases.push(case),
                None => complete = false,
            }
        }
        complete.then_some(cases)
    }

    fn case(
        &mut self,
        path: &Path,
        job: Option<&Path>,
        index: usize,
        raw: &Spanned<RawCase>,
        seen: &mut HashSet<String>,
    ) -> Option<CaseSpec> {
        let at = self.r.pos(&raw.referenced);
        let case = &raw.value;
        let name = self.case_name(case.name.as_ref(), at, seen);
        let fixture = self.fixture(case.fixture.as_ref(), at);
        let goal = case.goal.as_ref().and_then(|g| {
            if g.value.trim().is_empty() {
                let pos = self.r.pos(&g.referenced);
                self.r
                    .error(pos, "`goal` is empty; leave it out to keep the job's goal");
                None
            } else {
                Some(g.value.clone())
            }
        });
        let vars = self.vars(&case.vars);
        let model = case.model.as_ref().and_then(|m| self.model(m));
        let overrides = case_overrides(path, case, goal.as_ref(), &vars);
        let budget = job.and_then(|job| self.case_budget(job, &overrides));
        let cassettes = self.cassettes(case);
        let min_pass_rate = case
            .min_pass_rate
            .as_ref()
            .and_then(|v| self.rate(v, "min_pass_rate"));
        let assertions = self.assertions(&case.assertions);
        let name = name?;
        let default_cassette = self.dir.join("cassettes").join(format!("{name}.jsonl"));
        let cassettes = cassettes.map(|named| {
            if named.is_empty() && !self.record {
                recorded_defaults(&default_cassette)
            } else {
                named
            }
        });
        Some(CaseSpec {
            default_cassette,
            name,
            index,
            fixture: fixture?,
            goal,
            vars,
            model,
            budget: budget?,
            overrides,
            cassettes: cassettes?,
            min_pass_rate,
            assertions: assertions?,
        })
    }

    fn case_name(
        &mut self,
        raw: Option<&Spanned<String>>,
        at: Pos,
        seen: &mut HashSet<String>,
    ) -> Option<String> {
        let Some(raw) = raw else {
            self.r.error(at, "missing required key `name` in this case");
            return None;
        };
        let pos = self.r.pos(&raw.referenced);
        let name = raw.value.trim().to_string();
        if !is_valid_case_name(&name) {
            self.r.error(
                pos,
                format!(
                    "case name `{name}` cannot be used as a folder name; use letters, digits, \
                     `.`, `_` and `-`"
                ),
            );
            return None;
        }
        if !seen.insert(name.clone()) {
            self.r.error(
                pos,
                format!("case name `{name}` is used twice; every case needs its own name"),
            );
            return None;
        }
        Some(name)
    }

    fn fixture(&mut self, raw: Option<&Spanned<RawFixture>>, at: Pos) -> Option<Fixture> {
        let Some(raw) = raw else {
            self.r.error(
                at,
                "missing required key `fixture`; give a folder or `{git: PATH_OR_URL, rev: REV}`",
            );
            return None;
        };
        let pos = self.r.pos(&raw.referenced);
        match &raw.value {
            RawFixture::Dir(dir) => {
                let dir = normalize(&self.dir.join(dir));
                if dir.is_dir() {
                    Some(Fixture::Dir(dir))
                } else {
                    let hint = sibling_folder_hint(&dir);
                    self.r.error(
                        pos,
                        format!("fixture folder {} does not exist{hint}", dir.display()),
                    );
                    None
                }
            }
            RawFixture::Git { repo, rev } => {
                let rev = rev.clone().unwrap_or_else(|| "HEAD".to_string());
                if repo.contains("://") || repo.starts_with("git@") {
                    return Some(Fixture::Git {
                        repo: repo.clone(),
                        rev,
                    });
                }
                let path = normalize(&self.dir.join(repo));
                if path.exists() {
                    Some(Fixture::Git {
                        repo: path.display().to_string(),
                        rev,
                    })
                } else {
                    self.r.error(
                        pos,
                        format!("git fixture {} does not exist", path.display()),
                    );
                    None
                }
            }
        }
    }

    /// A case's budget, checked by the job's own checks over the base job,
    /// so each limit has one rule and one message; a problem is reported at
    /// the case's key. Returns the limits the case sets, as the job holds them.
    fn case_budget(&mut self, job: &Path, overrides: &Overrides) -> Option<BudgetSpec> {
        if !overrides.sets_budget() {
            return Some(BudgetSpec::default());
        }
        let options = LoadOptions {
            cwd: self.cwd.to_path_buf(),
            workspace: Some(self.dir.to_path_buf()),
            overrides: overrides.budget_only(),
            ..LoadOptions::default()
        };
        match crate::job::load_job(job, &options) {
            Ok((spec, _)) => {
                let budget = spec.budget;
                let set = |value: &Option<_>| value.is_some();
                Some(BudgetSpec {
                    max_turns: budget.max_turns.filter(|_| set(&overrides.max_turns)),
                    max_tool_calls: budget
                        .max_tool_calls
                        .filter(|_| set(&overrides.max_tool_calls)),
                    max_tokens: budget.max_tokens.filter(|_| set(&overrides.max_tokens)),
                    max_cost_usd: budget.max_cost_usd.filter(|_| set(&overrides.max_cost_usd)),
                    timeout: budget.timeout.filter(|_| set(&overrides.timeout)),
                })
            }
            Err(problems) => {
                // The base job loaded without them: every error is the case's.
                self.r
                    .diagnostics
                    .extend(problems.into_iter().filter(Diagnostic::is_error));
                None
            }
        }
    }

    fn vars(&mut self, raw: &BTreeMap<String, Spanned<Scalar>>) -> BTreeMap<String, String> {
        let mut vars = BTreeMap::new();
        for (name, value) in raw {
            if !is_valid_name(name) {
                let pos = self.r.pos(&value.referenced);
                self.r.error(
                    pos,
                    format!(
                        "`{name}` is not a valid var name; use letters, digits, `_` and `-`, \
                         starting with a letter"
                    ),
                );
            }
            vars.insert(name.clone(), value.value.text());
        }
        vars
    }

    fn model(&mut self, raw: &Spanned<serde_json::Value>) -> Option<String> {
        let pos = self.r.pos(&raw.referenced);
        let Some(written) = raw.value.as_str() else {
            let found = match &raw.value {
                serde_json::Value::Object(_) => "not a mapping like a job's `model:`".to_string(),
                serde_json::Value::Array(_) => "not a list".to_string(),
                other => format!("found `{other}`"),
            };
            self.r.error(
                pos,
                format!(
                    "a case's `model` is one string, PROVIDER:NAME (such as \
                     `openai:gpt-4.1-mini`), {found}; the server's address comes from the job's \
                     `model.base_url` or `--base-url`"
                ),
            );
            return None;
        };
        // The same rules as `--model`, so every provider agentci has is accepted.
        match parse_model_flag(written) {
            Ok(_) => Some(written.to_string()),
            Err(e) => {
                self.r.error(
                    pos,
                    format!("model: {e}; replayed cases name a `cassette` instead"),
                );
                None
            }
        }
    }

    fn cassettes(&mut self, case: &RawCase) -> Option<Vec<PathBuf>> {
        let listed: Vec<&Spanned<String>> = match (&case.cassette, &case.cassettes) {
            (Some(one), Some(many)) => {
                let pos = self.r.pos(&many.referenced);
                self.r.error(
                    pos,
                    "give either `cassette` or `cassettes` (one per attempt), not both",
                );
                let _ = one;
                return None;
            }
            (Some(one), None) => vec![one],
            (None, Some(many)) => many.value.iter().collect(),
            (None, None) => Vec::new(),
        };
        let mut paths = Vec::new();
        let mut ok = true;
        for cassette in listed {
            let path = normalize(&self.dir.join(&cassette.value));
            if !self.record && !path.is_file() {
                let pos = self.r.pos(&cassette.referenced);
                self.r.error(
                    pos,
                    format!(
                        "cassette {} does not exist; record it with `agentci eval --record`",
                        path.display()
                    ),
                );
                ok = false;
            }
            paths.push(path);
        }
        ok.then_some(paths)
    }

    fn assertions(&mut self, raw: &[Spanned<RawAssertion>]) -> Option<Vec<Assertion>> {
        let mut out = Vec::new();
        let mut ok = true;
        let mut has_status = false;
        for item in raw {
            if matches!(item.value, RawAssertion::Status(_)) {
                if has_status {
                    let pos = self.r.pos(&item.referenced);
                    self.r.error(pos, "a case takes one `status` assertion");
                    ok = false;
                    continue;
                }
                has_status = true;
            }
            match self.assertion(item) {
                Some(a) => out.push(a),
                None => ok = false,
            }
        }
        if !has_status {
            // A case without `status:` expects the job to pass, checks and all.
            out.insert(0, Assertion::Status(ExpectedStatus::Passed));
        }
        ok.then_some(out)
    }

    fn assertion(&mut self, item: &Spanned<RawAssertion>) -> Option<Assertion> {
        let pos = self.r.pos(&item.referenced);
        let regex = |this: &mut Self, key: &str, pattern: &str| match Regex::new(pattern) {
            Ok(re) => Some(re),
            Err(e) => {
                this.r
                    .error(pos, format!("`{key}`: invalid regular expression: {e}"));
                None
            }
        };
        Some(match &item.value {
            RawAssertion::Run(command) if command.trim().is_empty() => {
                self.r.error(pos, "`run` needs a command");
                return None;
            }
            RawAssertion::Run(command) => Assertion::Run {
                command: command.clone(),
                timeout: RUN_TIMEOUT,
            },
            RawAssertion::FileContains(f) => Assertion::FileContains {
                path: self.relative_path(&f.path, "file_contains", pos)?,
                pattern: regex(self, "file_contains", &f.pattern)?,
            },
            RawAssertion::FileNotContains(f) => Assertion::FileNotContains {
                path: self.relative_path(&f.path, "file_not_contains", pos)?,
                pattern: regex(self, "file_not_contains", &f.pattern)?,
            },
            RawAssertion::FileUnchanged(path) => Assertion::FileUnchanged {
                path: self.relative_path(path, "file_unchanged", pos)?,
            },
            RawAssertion::DiffTouchesOnly(globs) => {
                let mut builder = GlobSetBuilder::new();
                for glob in globs {
                    match Glob::new(glob) {
                        Ok(g) => {
                            builder.add(g);
                        }
                        Err(e) => {
                            self.r
                                .error(pos, format!("`diff_touches_only`: bad glob `{glob}`: {e}"));
                            return None;
                        }
                    }
                }
                let set = builder.build().ok()?;
                Assertion::DiffTouchesOnly {
                    globs: globs.clone(),
                    set,
                }
            }
            RawAssertion::ToolCalled(tool) => {
                Assertion::ToolCalled(self.tool_name(tool, "tool_called", pos)?)
            }
            RawAssertion::ToolNotCalled(tool) => {
                Assertion::ToolNotCalled(self.tool_name(tool, "tool_not_called", pos)?)
            }
            RawAssertion::MaxTurns(n) => {
                Assertion::MaxTurns(self.whole(n, item, "max_turns", u32::MAX.into())? as u32)
            }
            RawAssertion::MaxCostUsd(c) => Assertion::MaxCostUsd(self.cost(c, item)?),
            RawAssertion::MaxDuration(d) => {
                Assertion::MaxDuration(self.duration(d, item, "max_duration")?)
            }
            RawAssertion::Status(status) => Assertion::Status(match status.as_str() {
                "passed" => ExpectedStatus::Passed,
                "failed" => ExpectedStatus::Failed,
                "budget_exceeded" => ExpectedStatus::BudgetExceeded,
                other => {
                    self.r.error(
                        pos,
                        format!(
                            "unknown status `{other}`; expected one of: passed, failed, \
                             budget_exceeded"
                        ),
                    );
                    return None;
                }
            }),
            RawAssertion::FinalTextMatches(pattern) => {
                Assertion::FinalTextMatches(regex(self, "final_text_matches", pattern)?)
            }
            RawAssertion::Judge(judge) => Assertion::Judge(self.judge(judge, pos)?),
        })
    }

    /// A tool a run could call: a builtin, an MCP tool (`mcp__SERVER__TOOL`,
    /// `mcp_list_resources`, `mcp_read_resource`) or one of agentci's own
    /// (`submit_plan`, `step_done`, `update_plan`, `submit_result`). Any
    /// other name could never be called, so the assertion could never
    /// judge anything.
    fn tool_name(&mut self, tool: &str, key: &str, pos: Pos) -> Option<String> {
        let tool = tool.trim();
        let own = [
            crate::agent::protocol::SUBMIT_PLAN,
            crate::agent::protocol::STEP_DONE,
            crate::agent::protocol::UPDATE_PLAN,
            crate::agent::result::SUBMIT_RESULT,
        ];
        if crate::tools::catalog::is_builtin(tool)
            || tool.starts_with("mcp_")
            || own.contains(&tool)
        {
            return Some(tool.to_string());
        }
        self.r.error(
            pos,
            format!(
                "`{key}`: no tool is called `{tool}`{}; name a builtin ({}), an MCP tool as \
                 `mcp__SERVER__TOOL`, or one of {}",
                crate::job::suggest::unknown_tool_hint(tool),
                crate::tools::catalog::names().join(", "),
                own.join(", ")
            ),
        );
        None
    }

    /// A path inside the workspace: relative, no `..`.
    fn relative_path(&mut self, path: &str, key: &str, pos: Pos) -> Option<String> {
        let p = Path::new(path);
        if path.is_empty()
            || p.is_absolute()
            || p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            self.r.error(
                pos,
                format!("`{key}`: `{path}` must be a path relative to the workspace, without `..`"),
            );
            return None;
        }
        Some(path.trim_start_matches("./").to_string())
    }
}

/// ` (did you mean `NAME`?)` for the folder beside a missing fixture folder
/// whose name is closest to its name (a typo in `fixture:`), else nothing.
fn sibling_folder_hint(missing: &Path) -> String {
    let (Some(parent), Some(name)) = (missing.parent(), missing.file_name()) else {
        return String::new();
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return String::new();
    };
    let folders: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    crate::job::suggest::did_you_mean(&name.to_string_lossy(), folders.iter().map(String::as_str))
}
