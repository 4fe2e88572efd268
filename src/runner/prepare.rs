//! Loading what a run needs before anything runs: the job (with flag
//! overrides), its skill and its workspace. Every problem is returned as a
//! line for the user, with its severity and position where there is one.

use crate::skills::{self, Skill};
use crate::spec::{self, JobSpec, LoadOptions, SkillRef};
use crate::tools::Workspace;

/// A job that loaded, with its skill and workspace.
pub struct Prepared {
    pub job: JobSpec,
    pub skill: Skill,
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
    // Until runs start MCP servers, a job that needs them must not run without
    // their tools as if nothing were missing.
    if !job.mcp.servers.is_empty() {
        return Err(vec![format!(
            "error: {}: MCP servers are not yet available in runs; use `agentci mcp list/call` \
             to try the job's servers",
            job_file.display()
        )]);
    }
    let skill = match &job.skill {
        SkillRef::Name(name) => skills::find_skill(
            name,
            &skills::skill_search_paths(&job, &options.skills_path),
        ),
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
    let workspace = Workspace::new(&job.workspace).map_err(|e| {
        vec![format!(
            "error: workspace {} cannot be used: {e}; create it or pass --workspace DIR",
            job.workspace.display()
        )]
    })?;
    Ok(Prepared {
        warnings: load_warnings.iter().map(ToString::to_string).collect(),
        job,
        skill,
        workspace,
    })
}
