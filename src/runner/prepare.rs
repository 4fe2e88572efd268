//! Loading what a run needs before anything runs: the job (with flag
//! overrides), its skill, the further skills it lists, its workspace and
//! its untrusted input. Every problem is returned as a [`PrepareError`]
//! that keeps each problem's file, line and column, so the CLI and the
//! GitHub annotations place it without reading it back from text.

use std::path::PathBuf;

use crate::agent::memory::{Memory, load_memory};
use crate::job::{self, Diagnostic, JobSpec, LoadOptions, SkillRef};
use crate::run_env::RunEnv;
use crate::skills::{self, Skill, SkillError};
use crate::tools::Workspace;
use crate::untrusted::{GithubEvent, UntrustedText, read_untrusted_files};

/// A job that loaded, with its skills and workspace.
pub struct Prepared {
    pub job: JobSpec,
    pub skill: Skill,
    /// The job's `skills`, in order: listed to the model, read on demand.
    pub further_skills: Vec<Skill>,
    /// The workspace, with every skill's folder readable (and read-only).
    pub workspace: Workspace,
    /// Problems that do not stop the run; they go into the trace.
    pub warnings: Vec<String>,
    /// What the model gets fenced as untrusted: the job's `untrusted_inputs`
    /// and the free text of the GitHub event that started the run.
    pub untrusted: Vec<UntrustedText>,
    /// The job's memory file (`memory:`), untrusted when the workspace is.
    pub memory: Option<Memory>,
    /// The workspace is untrusted because the run was started by a pull
    /// request event (not because the job says so).
    pub event_untrusts_workspace: bool,
}

/// Why a job could not be prepared for a run.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The job file, or the flags that shape the job.
    #[error("{}", joined(.0))]
    Job(Vec<Diagnostic>),
    /// The job's skill or one of its further skills, placed where the job names it.
    #[error("{}", joined(.0))]
    Skill(Vec<Diagnostic>),
    #[error(
        "workspace {} cannot be used: {source}; create it or pass --workspace DIR",
        .dir.display()
    )]
    Workspace {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The job's memory file (`memory:`).
    #[error("{}: {problem}", .job.display())]
    Memory { job: PathBuf, problem: String },
}

impl PrepareError {
    /// Every problem as a diagnostic, placed at its file, line and column
    /// where it has one, in the order they are printed.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            PrepareError::Job(diagnostics) | PrepareError::Skill(diagnostics) => {
                diagnostics.clone()
            }
            other => vec![Diagnostic::unplaced(other.to_string())],
        }
    }
}

/// The problems as `agentci validate` prints them, on one line.
fn joined(diagnostics: &[Diagnostic]) -> String {
    let lines: Vec<String> = diagnostics
        .iter()
        .map(|d| d.with_severity().to_string())
        .collect();
    lines.join("; ")
}

/// Load `job_file` with `options`; `Err` holds every problem. `env` is
/// the run's environment (where a git skill's cache is).
pub fn prepare(
    job_file: &std::path::Path,
    options: &LoadOptions,
    env: &RunEnv,
) -> Result<Prepared, PrepareError> {
    prepare_for_event(job_file, options, env, None)
}

/// [`prepare`] for a run started by a GitHub Actions `event`: its free text
/// becomes untrusted input, and a pull request event (or a `workflow_run`)
/// makes the workspace untrusted unless the job sets `trust_workspace`.
pub fn prepare_for_event(
    job_file: &std::path::Path,
    options: &LoadOptions,
    env: &RunEnv,
    event: Option<&GithubEvent>,
) -> Result<Prepared, PrepareError> {
    let loaded = job::load_job_detailed(job_file, options).map_err(PrepareError::Job)?;
    let (line, column) = loaded.skill_position;
    let skill_file = loaded.skill_file;
    let (job, load_warnings) = (loaded.job, loaded.warnings);
    let untrusted_because = untrusted_because(&job, event);
    let event_untrusts_workspace =
        job.trust_workspace.is_none() && event.is_some_and(GithubEvent::untrusts_workspace);
    let untrusted_because = untrusted_because.as_deref();
    let search_paths = skills::skill_search_paths(&job, &options.skills_path);
    let skill = find_skill(
        &job,
        env,
        &search_paths,
        untrusted_because,
        &skill_file,
        (line, column),
    )?;
    let further_skills = find_further_skills(&job, &search_paths, untrusted_because)?;
    let workspace = Workspace::new(&job.workspace)
        .and_then(|ws| {
            std::iter::once(&skill)
                .chain(&further_skills)
                .try_fold(ws, |ws, s| ws.with_skill_folder(&s.dir))
        })
        .map_err(|source| PrepareError::Workspace {
            dir: job.workspace.clone(),
            source,
        })?;
    let mut warnings: Vec<String> = load_warnings.iter().map(ToString::to_string).collect();
    // A skill that alone leaves no tools already warns at its allowed-tools.
    if !skills::tools_left::tools_left(None, &skill).is_empty()
        && let Some(message) = skills::tools_left::no_tools_warning(job.tools.as_deref(), &skill)
    {
        warnings.push(message);
    }
    // A --goal run without --allow is given the read-only tools, so this is a job file's.
    warnings.extend(skills::tools_left::nothing_allowed_warning(&job, &skill));
    for further in &further_skills {
        warnings.extend(further.warnings.iter().cloned());
    }
    let (mut untrusted, file_warnings) = read_untrusted_files(&workspace, &job.untrusted_inputs);
    warnings.extend(file_warnings);
    untrusted.extend(event.map(GithubEvent::free_text).unwrap_or_default());
    crate::untrusted::limit_total(&mut untrusted);
    let (memory, memory_warnings) = load_memory(
        job.guidance.memory.as_ref(),
        &workspace,
        untrusted_because.is_some(),
    )
    .map_err(|problem| PrepareError::Memory {
        job: job.path.clone(),
        problem,
    })?;
    warnings.extend(memory_warnings);
    Ok(Prepared {
        memory,
        warnings,
        job,
        skill,
        further_skills,
        workspace,
        untrusted,
        event_untrusts_workspace,
    })
}

/// The job's skill, found where the job names it; an error is placed where
/// the job file names the skill, as `agentci validate` places it.
fn find_skill(
    job: &JobSpec,
    env: &RunEnv,
    search_paths: &[PathBuf],
    untrusted_because: Option<&str>,
    skill_file: &std::path::Path,
    (line, column): (u32, u32),
) -> Result<Skill, PrepareError> {
    match &job.skill {
        SkillRef::Name(name) => {
            skills::find_skill_in_trusted(name, search_paths, &job.workspace, untrusted_because)
        }
        SkillRef::Path(dir) => skills::load_skill_dir(dir).and_then(|skill| {
            skills::check_workspace_trust(&skill.name, dir, &job.workspace, untrusted_because)
                .map(|()| skill)
        }),
        SkillRef::Git(source) => match skills::git::default_cache_dir(env) {
            Some(cache) => skills::git::load_git_skill(source, &cache),
            None => Err(skills::SkillError::Git(skills::git::GitSkillError::NoCache)),
        },
        SkillRef::Builtin(name) => skills::builtin::load(name),
    }
    // Where the skill was named, as `agentci validate` says it.
    .map_err(|e| {
        let hint = match &e {
            skills::SkillError::NotFound { name, searched } => {
                job::suggest::similar_skill(name, searched)
            }
            _ => String::new(),
        };
        let placed = e.diagnostics(skill_file, line, column).into_iter();
        PrepareError::Skill(
            placed
                .map(|mut d| {
                    d.message.push_str(&hint);
                    d
                })
                .collect(),
        )
    })
}

/// The job's `skills`, each found like the main one by name.
fn find_further_skills(
    job: &JobSpec,
    search_paths: &[PathBuf],
    untrusted_because: Option<&str>,
) -> Result<Vec<Skill>, PrepareError> {
    let mut problems = Vec::new();
    let mut further_skills = Vec::new();
    for entry in &job.skills {
        match skills::find_skill_in_trusted(
            &entry.name,
            search_paths,
            &job.workspace,
            untrusted_because,
        ) {
            Ok(found) => further_skills.push(found),
            Err(e) => problems.extend(further_skill_problems(job, entry, &e)),
        }
    }
    if !problems.is_empty() {
        return Err(PrepareError::Skill(problems));
    }
    Ok(further_skills)
}

/// Why the run does not trust the workspace, or `None` when it does.
fn untrusted_because(job: &JobSpec, event: Option<&GithubEvent>) -> Option<String> {
    match (job.trust_workspace, event) {
        (Some(true), _) => None,
        (Some(false), _) => Some("the job sets `trust_workspace: false`".to_string()),
        (None, Some(event)) if event.is_pull_request() => Some(format!(
            "the run was started by a GitHub `{}` event on a pull request, which can add or \
             change skills",
            event.name
        )),
        (None, Some(event)) if event.follows_another_workflow() => Some(format!(
            "the run was started by a GitHub `{}` event, which works on what another \
             workflow (a pull request's too) left in the workspace",
            event.name
        )),
        (None, _) => None,
    }
}

/// A further skill that cannot be loaded, placed at its entry in the job.
fn further_skill_problems(
    job: &JobSpec,
    entry: &job::FurtherSkill,
    error: &SkillError,
) -> Vec<Diagnostic> {
    error.diagnostics(&job.path, entry.line, entry.column)
}
