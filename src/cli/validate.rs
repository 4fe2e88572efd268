//! `agentci validate [PATH...]`: check job files and skills without running
//! anything, printing every problem of every file in one pass.
//!
//! A path is a job file (`.yaml`/`.yml`), an eval suite file (top-level
//! `cases:`; its cases, fixtures and cassettes, and its job), a
//! `SKILL.md`, a skill folder, or a folder searched recursively for all of
//! these. The search skips
//! `.git`, `.github` (workflows are YAML too), `.agentci`, `target`,
//! `node_modules`, whatever `.gitignore` and `.agentciignore` files exclude,
//! and YAML files that do not look like jobs (no top-level `goal:` or
//! `skill:`). A job's skill is found and validated too; a skill from git is
//! fetched into the cache for that. Output goes to
//! stdout: `FILE:LINE:COLUMN: error: message` per problem and
//! `ok   FILE (…)` per valid file, followed for a job by the folders its
//! `sandbox.writable` leads to here; the exit code is 2 when anything is wrong.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

use super::args::ValidateArgs;
use super::{CliError, Exit};
use crate::eval::suite::{SuiteLoadOptions, load_suite};
use crate::job::{Diagnostic, JobSpec, LoadOptions, Severity, SkillRef, load_job_with_problems};
use crate::skills::discover::misnamed_skill_file;
use crate::skills::git::{GitSkillError, default_cache_dir, fetch_skill};
use crate::skills::tools_left::{no_tools_warning, nothing_allowed_warning, tools_left};
use crate::skills::{Skill, SkillError, find_skill_dir, read_skill_dir, skill_search_paths};

/// Warnings about a job whose runs cannot show much: one without checks
/// (only what the agent did decides it), one whose rules deny every call.
fn unjudged(file: &Path, job: &JobSpec, skill: Option<&Skill>) -> Vec<Diagnostic> {
    let mut warnings = Vec::new();
    if job.checks.is_empty() {
        warnings.push(Diagnostic::warning(
            file,
            0,
            0,
            "the job has no checks: nothing but the agent's own account decides a run (it \
             fails only when no call could run or a step ended failed or blocked); add \
             `checks:` with the commands that show the work is right",
        ));
    }
    if let Some(message) = skill.and_then(|skill| nothing_allowed_warning(job, skill)) {
        warnings.push(Diagnostic::warning(file, 0, 0, message));
    }
    warnings
}

/// Folders never searched for job files and skills.
const SKIPPED_DIRS: &[&str] = &[".git", ".github", ".agentci", "target", "node_modules"];

pub fn validate(args: ValidateArgs, env: &crate::run_env::RunEnv) -> Result<Exit, CliError> {
    let stdout = std::io::stdout();
    let mut validation = Validation {
        out: stdout.lock(),
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        skills_path: Vec::new(),
        vars: args.vars.clone(),
        model: args.model.clone(),
        skills: HashMap::new(),
        jobs: HashSet::new(),
        github: github_config(),
        skill_cache: default_cache_dir(env),
        files: 0,
        errors: 0,
        warnings: 0,
    };
    for dir in &args.skills_path {
        if validation.cwd.join(dir).is_dir() {
            validation.skills_path.push(dir.clone());
        } else {
            validation.report(vec![Diagnostic::flag(
                "--skills-path",
                format!("{} is not a directory", dir.display()),
            )]);
        }
    }
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths
    };
    for path in &paths {
        validation.path(path);
    }
    let summary = format!(
        "validated {} file{}: {} error{}, {} warning{}",
        validation.files,
        plural(validation.files),
        validation.errors,
        plural(validation.errors),
        validation.warnings,
        plural(validation.warnings),
    );
    let _ = writeln!(std::io::stderr(), "{summary}");
    if validation.errors > 0 {
        Err(CliError::Reported)
    } else {
        Ok(Exit::Success)
    }
}

/// Where annotations point under GitHub Actions (`GITHUB_ACTIONS=true`):
/// paths relative to the checkout; `None` elsewhere.
fn github_config() -> Option<crate::sink::GithubConfig> {
    if !std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true") {
        return None;
    }
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    Some(crate::sink::GithubConfig {
        log: None,
        step_summary: None,
        output: None,
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        repo_root: env("GITHUB_WORKSPACE").map(PathBuf::from),
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

struct Validation<W: Write> {
    out: W,
    cwd: PathBuf,
    skills_path: Vec<PathBuf>,
    /// `--var` and `--model`, applied to every job as `agentci run` would.
    vars: Vec<String>,
    model: Option<String>,
    /// Skill folders already validated (by their real path), with the skill when it was valid.
    skills: HashMap<PathBuf, Option<Skill>>,
    /// Job files already validated.
    jobs: HashSet<PathBuf>,
    /// Set under GitHub Actions: problems become annotations too.
    github: Option<crate::sink::GithubConfig>,
    /// Where git skills are cached, as a run would find it.
    skill_cache: Option<PathBuf>,
    files: usize,
    errors: usize,
    warnings: usize,
}

enum Target {
    Job(PathBuf),
    /// An eval suite file (top-level `cases:`).
    Suite(PathBuf),
    /// A skill folder.
    Skill(PathBuf),
}

impl<W: Write> Validation<W> {
    fn path(&mut self, path: &Path) {
        let targets = match targets(path) {
            Ok(targets) => targets,
            Err(message) => {
                self.report(vec![Diagnostic::error(path, 0, 0, message)]);
                return;
            }
        };
        for target in targets {
            match target {
                Target::Job(file) => self.job(&file),
                Target::Suite(file) => self.suite(&file),
                Target::Skill(dir) => {
                    self.skill(&dir);
                }
            }
        }
    }

    /// A suite: its cases, fixtures and cassettes, and its job with that job's skill.
    fn suite(&mut self, file: &Path) {
        self.files += 1;
        let options = SuiteLoadOptions {
            cwd: self.cwd.clone(),
            record: false,
        };
        match load_suite(file, &options) {
            Ok(suite) => {
                let line = format!(
                    "ok   {} (suite {}, {} case{})",
                    self.shown(file).display(),
                    suite.name,
                    suite.cases.len(),
                    plural(suite.cases.len())
                );
                let _ = writeln!(self.out, "{}", crate::inert::terminal(&line));
                self.job(&suite.job);
            }
            Err(diagnostics) => self.report(diagnostics),
        }
    }

    fn job(&mut self, file: &Path) {
        let key = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        if !self.jobs.insert(key) {
            // Named by a suite and found in a folder too: one report is enough.
            return;
        }
        self.files += 1;
        let options = LoadOptions {
            cwd: self.cwd.clone(),
            vars: self.vars.clone(),
            model: self.model.clone(),
            // As `agentci run` does: a `--var` the job never uses is a typo
            // that `run` would refuse, so `validate` must not say ok.
            reject_unused_vars: true,
            ..LoadOptions::default()
        };
        // A job with wrong keys still gets its skill looked for, so a missing
        // skill shows up in the same pass as the other problems.
        let (loaded, diagnostics) = load_job_with_problems(file, &options);
        let job_ok = !diagnostics.iter().any(|d| d.severity == Severity::Error);
        self.report(diagnostics);
        let Some(loaded) = loaded else { return };
        let job = &loaded.job;
        let (line, column) = loaded.skill_position;
        let skill = if let SkillRef::Builtin(name) = &job.skill {
            // Built into the binary: only its name can be wrong.
            match crate::skills::builtin::load(name) {
                Ok(skill) => Some(skill),
                Err(e) => {
                    self.report(e.diagnostics(file, line, column));
                    return;
                }
            }
        } else {
            let Some(dir) = self.skill_dir(file, job, (line, column)) else {
                return;
            };
            self.skill(&dir)
        };
        let further_ok = self.further_skills(file, job);
        if let Some(skill) = &skill
            && !tools_left(None, skill).is_empty()
            && let Some(message) = no_tools_warning(job.tools.as_deref(), skill)
        {
            self.report(vec![Diagnostic::warning(file, line, column, message)]);
        }
        // A job with errors may lack checks or rules only because a broken entry was dropped.
        if job_ok {
            self.report(unjudged(file, job, skill.as_ref()));
        }
        if !job_ok || !further_ok {
            return;
        }
        if let Some(skill) = skill {
            let line = format!(
                "ok   {} (job {}, skill {})",
                self.shown(file).display(),
                job.name,
                skill.name
            );
            let _ = writeln!(self.out, "{}", crate::inert::terminal(&line));
            let (roots, warnings) = super::writable_roots::writable_roots(job);
            for root in roots {
                let _ = writeln!(self.out, "     {}", crate::inert::terminal(&root));
            }
            self.report(warnings);
        } else {
            let message = format!(
                "skill {} is invalid (see above)",
                self.skill_label(&job.skill)
            );
            self.report(vec![Diagnostic::error(file, line, column, message)]);
        }
    }

    /// The folder of the job's main skill: found by name, given as a path,
    /// or fetched from git into the cache. `None` when it cannot be had,
    /// after reporting why at the job's `skill:`.
    fn skill_dir(
        &mut self,
        file: &Path,
        job: &JobSpec,
        (line, column): (u32, u32),
    ) -> Option<PathBuf> {
        let dir = match &job.skill {
            SkillRef::Name(name) => {
                find_skill_dir(name, &skill_search_paths(job, &self.skills_path))
            }
            SkillRef::Path(dir) if dir.join("SKILL.md").is_file() => Ok(dir.clone()),
            SkillRef::Path(dir) => {
                let message = format!(
                    "skill folder {} has no SKILL.md (relative paths start at the job file's folder)",
                    self.shown(dir).display()
                );
                self.report(vec![Diagnostic::error(file, line, column, message)]);
                return None;
            }
            // Resolving fills the cache, so the run that follows needs no network.
            SkillRef::Git(source) => match &self.skill_cache {
                Some(cache) => fetch_skill(source, cache)
                    .map(|(dir, _)| dir)
                    .map_err(SkillError::Git),
                None => Err(SkillError::Git(GitSkillError::NoCache)),
            },
            // Loaded from the binary by the caller; it has no folder of its own.
            SkillRef::Builtin(_) => return None,
        };
        match dir {
            Ok(dir) => Some(dir),
            Err(e) => {
                let hint = match &e {
                    SkillError::NotFound { name, searched } => {
                        crate::job::suggest::similar_skill(name, searched)
                    }
                    _ => String::new(),
                };
                let mut diagnostics = e.diagnostics(file, line, column);
                diagnostics
                    .iter_mut()
                    .for_each(|d| d.message.push_str(&hint));
                self.report(diagnostics);
                None
            }
        }
    }

    /// The job's further `skills`, found and validated like the main one;
    /// false when one is missing or invalid.
    fn further_skills(&mut self, file: &Path, job: &JobSpec) -> bool {
        let search_paths = skill_search_paths(job, &self.skills_path);
        let mut ok = true;
        for entry in &job.skills {
            let (line, column) = (entry.line, entry.column);
            match find_skill_dir(&entry.name, &search_paths) {
                Ok(dir) => {
                    if self.skill(&dir).is_none() {
                        let message = format!("skill `{}` is invalid (see above)", entry.name);
                        self.report(vec![Diagnostic::error(file, line, column, message)]);
                        ok = false;
                    }
                }
                Err(e) => {
                    self.report(e.diagnostics(file, line, column));
                    ok = false;
                }
            }
        }
        ok
    }

    /// Validates a skill folder once; returns the skill when it is valid.
    /// Problems are reported by the path the user gave (a symlinked folder
    /// by the link), while a folder reached twice is checked once.
    fn skill(&mut self, dir: &Path) -> Option<Skill> {
        let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if let Some(done) = self.skills.get(&key) {
            return done.clone();
        }
        self.files += 1;
        let file = dir.join("SKILL.md");
        let skill = match read_skill_dir(dir) {
            Ok((skill, warnings)) => {
                self.report(warnings);
                let shown = self.shown(&self.cwd.join(&file));
                let _ = writeln!(self.out, "ok   {} (skill {})", shown.display(), skill.name);
                Some(skill)
            }
            Err(e) => {
                self.report(e.diagnostics(&self.cwd.join(&file), 0, 0));
                None
            }
        };
        self.skills.insert(key, skill.clone());
        skill
    }

    /// Prints problems sorted by position, with file paths relative to the current directory.
    fn report(&mut self, mut diagnostics: Vec<Diagnostic>) {
        diagnostics.sort_by_key(|d| (d.file.clone(), d.line, d.column));
        for mut d in diagnostics {
            match d.severity {
                Severity::Error => self.errors += 1,
                Severity::Warning => self.warnings += 1,
            }
            // Under GitHub Actions each problem is also an annotation at its
            // place, as `agentci run` makes them.
            if let Some(github) = &self.github {
                let _ = writeln!(self.out, "{}", crate::sink::problem_annotation(github, &d));
            }
            d.file = self.shown(&d.file);
            // A diagnostic quotes the file: shown inert.
            let _ = writeln!(
                self.out,
                "{}",
                crate::inert::terminal(&d.with_severity().to_string())
            );
        }
    }

    fn skill_label(&self, skill: &SkillRef) -> String {
        match skill {
            SkillRef::Name(name) => format!("`{name}`"),
            SkillRef::Path(dir) => self.shown(dir).display().to_string(),
            SkillRef::Git(source) => {
                format!("`{}` at `{}` in {}", source.path, source.rev, source.url)
            }
            SkillRef::Builtin(name) => format!("`{name}` (built in)"),
        }
    }

    /// `path` as users should see it: relative to the current directory when inside it.
    fn shown(&self, path: &Path) -> PathBuf {
        let relative = path.strip_prefix(&self.cwd).unwrap_or(path);
        let relative = relative.strip_prefix(".").unwrap_or(relative);
        if relative.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            relative.to_path_buf()
        }
    }
}

/// What to validate for one command-line path.
fn targets(path: &Path) -> Result<Vec<Target>, String> {
    if path.is_file() {
        let skill_file = path
            .file_name()
            .is_some_and(|n| n.eq_ignore_ascii_case("SKILL.md"));
        return if skill_file {
            let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
            Ok(vec![Target::Skill(
                dir.unwrap_or(Path::new(".")).to_path_buf(),
            )])
        } else if is_yaml(path) && looks_like_suite(path) {
            Ok(vec![Target::Suite(path.to_path_buf())])
        } else if is_yaml(path) {
            Ok(vec![Target::Job(path.to_path_buf())])
        } else {
            Err("not a job file (.yaml, .yml), a SKILL.md or a folder".to_string())
        };
    }
    if !path.is_dir() {
        return Err("no such file or folder".to_string());
    }
    if path.join("SKILL.md").is_file() || misnamed_skill_file(path).is_some() {
        return Ok(vec![Target::Skill(path.to_path_buf())]);
    }
    let targets = scan(path);
    if targets.is_empty() {
        return Err("no job files or skills found in this folder".to_string());
    }
    Ok(targets)
}

/// Job files and skill folders under `dir`, in a stable order.
fn scan(dir: &Path) -> Vec<Target> {
    let walker = WalkBuilder::new(dir)
        .hidden(false)
        .require_git(false)
        // Skill folders are often links (`.claude/skills/x -> ../../skills/x`);
        // the walker detects link loops.
        .follow_links(true)
        .add_custom_ignore_filename(".agentciignore")
        .filter_entry(|entry| {
            let skipped = entry.depth() > 0
                && entry.file_type().is_some_and(|t| t.is_dir())
                && SKIPPED_DIRS.iter().any(|s| entry.file_name() == *s);
            !skipped
        })
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    let mut targets = Vec::new();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        // `skill.md` in another case is reported with "rename it to SKILL.md".
        if path
            .file_name()
            .is_some_and(|n| n.eq_ignore_ascii_case("SKILL.md"))
        {
            if let Some(parent) = path.parent() {
                targets.push(Target::Skill(parent.to_path_buf()));
            }
        } else if is_yaml(path) && looks_like_suite(path) {
            targets.push(Target::Suite(path.to_path_buf()));
        } else if is_yaml(path) && looks_like_job(path) {
            targets.push(Target::Job(path.to_path_buf()));
        }
    }
    targets
}

/// An eval suite has a top-level `cases:` (a missing `job:` is then reported).
fn looks_like_suite(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let top_level = |key: &str| text.lines().any(|line| line.starts_with(key));
    top_level("cases:")
}

fn is_yaml(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}

/// A job file has a top-level `goal:` or `skill:`; GitHub workflows (`on:`,
/// `jobs:`) and eval suites (`cases:`) do not count.
fn looks_like_job(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let top_level = |key: &str| text.lines().any(|line| line.starts_with(key));
    (top_level("goal:") || top_level("skill:"))
        && !top_level("cases:")
        && !top_level("jobs:")
        && !top_level("on:")
}
