//! Loading what a run needs before anything runs: the job (with flag
//! overrides), its skill, the further skills it lists and its workspace.
//! Every problem is returned as a line for the user, with its severity and
//! position where there is one.

use crate::skills::{self, Skill, SkillError};
use crate::spec::{self, JobSpec, LoadOptions, SkillRef};
use crate::tools::Workspace;

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
}

/// Load `job_file` with `options`; `Err` holds every problem, one line each.
pub fn prepare(job_file: &std::path::Path, options: &LoadOptions) -> Result<Prepared, Vec<String>> {
    let (job, load_warnings) = spec::load_job(job_file, options).map_err(|diagnostics| {
        diagnostics
            .iter()
            .map(|d| d.with_severity().to_string())
            .collect::<Vec<_>>()
    })?;
    let search_paths = skills::skill_search_paths(&job, &options.skills_path);
    let skill = match &job.skill {
        SkillRef::Name(name) => skills::find_skill(name, &search_paths),
        SkillRef::Path(dir) => skills::load_skill_dir(dir),
        SkillRef::Git(source) => match skills::git::default_cache_dir() {
            Some(cache) => skills::git::load_git_skill(source, &cache),
            None => Err(skills::SkillError::Git {
                message: "no cache folder for skills from git: set AGENTCI_CACHE (or HOME)"
                    .to_string(),
            }),
        },
    }
    .map_err(|e| vec![format!("error: {e}")])?;
    let mut problems = Vec::new();
    let mut further_skills = Vec::new();
    for entry in &job.skills {
        match skills::find_skill(&entry.name, &search_paths) {
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
    Ok(Prepared {
        warnings,
        job,
        skill,
        further_skills,
        workspace,
    })
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
