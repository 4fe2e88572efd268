//! Loading what a run needs before anything runs: the job (with flag
//! overrides), its skill, the further skills it lists, its workspace and
//! its untrusted input. Every problem is returned as a line for the user,
//! with its severity and
//! position where there is one.

use crate::agent::memory::{Memory, load_memory};
use crate::skills::{self, Skill, SkillError};
use crate::spec::{self, JobSpec, LoadOptions, SkillRef};
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
}

/// Load `job_file` with `options`; `Err` holds every problem, one line each.
pub fn prepare(job_file: &std::path::Path, options: &LoadOptions) -> Result<Prepared, Vec<String>> {
    prepare_for_event(job_file, options, None)
}

/// [`prepare`] for a run started by a GitHub Actions `event`: its free text
/// becomes untrusted input, and a pull request event makes the workspace
/// untrusted unless the job sets `trust_workspace`.
pub fn prepare_for_event(
    job_file: &std::path::Path,
    options: &LoadOptions,
    event: Option<&GithubEvent>,
) -> Result<Prepared, Vec<String>> {
    let loaded = spec::load_job_detailed(job_file, options).map_err(|diagnostics| {
        diagnostics
            .iter()
            .map(|d| d.with_severity().to_string())
            .collect::<Vec<_>>()
    })?;
    let (line, column) = loaded.skill_position;
    let skill_file = loaded.skill_file;
    let (job, load_warnings) = (loaded.job, loaded.warnings);
    let untrusted_because = untrusted_because(&job, event);
    let untrusted_because = untrusted_because.as_deref();
    let search_paths = skills::skill_search_paths(&job, &options.skills_path);
    let skill = match &job.skill {
        SkillRef::Name(name) => {
            skills::find_skill_in_trusted(name, &search_paths, &job.workspace, untrusted_because)
        }
        SkillRef::Path(dir) => skills::load_skill_dir(dir).and_then(|skill| {
            skills::check_workspace_trust(&skill.name, dir, &job.workspace, untrusted_because)
                .map(|()| skill)
        }),
        SkillRef::Git(source) => match skills::git::default_cache_dir() {
            Some(cache) => skills::git::load_git_skill(source, &cache),
            None => Err(skills::SkillError::Git {
                message: "no cache folder for skills from git: set AGENTCI_CACHE (or HOME)"
                    .to_string(),
            }),
        },
    }
    // Where the skill was named, as `agentci validate` says it.
    .map_err(|e| {
        let hint = match &e {
            skills::SkillError::NotFound { name, searched } => {
                spec::suggest::similar_skill(name, searched)
            }
            _ => String::new(),
        };
        e.diagnostics(&skill_file, line, column)
            .iter()
            .map(|d| format!("{}{hint}", d.with_severity()))
            .collect::<Vec<_>>()
    })?;
    let mut problems = Vec::new();
    let mut further_skills = Vec::new();
    for entry in &job.skills {
        match skills::find_skill_in_trusted(
            &entry.name,
            &search_paths,
            &job.workspace,
            untrusted_because,
        ) {
            Ok(found) => further_skills.push(found),
            Err(e) => problems.extend(further_skill_problems(&job, entry, &e)),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let workspace = Workspace::new(&job.workspace)
        .and_then(|ws| {
            std::iter::once(&skill)
                .chain(&further_skills)
                .try_fold(ws, |ws, s| ws.with_skill_folder(&s.dir))
        })
        .map_err(|e| {
            vec![format!(
                "error: workspace {} cannot be used: {e}; create it or pass --workspace DIR",
                job.workspace.display()
            )]
        })?;
    let mut warnings: Vec<String> = load_warnings.iter().map(ToString::to_string).collect();
    // A skill that alone leaves no tools already warns at its allowed-tools.
    if !skills::tools_left::tools_left(None, &skill).is_empty()
        && let Some(message) = skills::tools_left::no_tools_warning(job.tools.as_deref(), &skill)
    {
        warnings.push(message);
    }
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
    .map_err(|problem| vec![format!("error: {}: {problem}", job.path.display())])?;
    warnings.extend(memory_warnings);
    Ok(Prepared {
        memory,
        warnings,
        job,
        skill,
        further_skills,
        workspace,
        untrusted,
    })
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
        (None, _) => None,
    }
}

/// A further skill that cannot be loaded, placed at its entry in the job.
fn further_skill_problems(
    job: &JobSpec,
    entry: &spec::FurtherSkill,
    error: &SkillError,
) -> Vec<String> {
    error
        .diagnostics(&job.path, entry.line, entry.column)
        .iter()
        .map(|d| d.with_severity().to_string())
        .collect()
}
