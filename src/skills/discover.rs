//! Finding skills: by name in an ordered list of folders, or by folder.
//!
//! The search order is the job's `skills_path`, then `--skills-path`, then
//! the workspace's `skills/`, `.agents/skills/` and `.claude/skills/`; the
//! first `<folder>/<name>/SKILL.md` wins. Parsing the file is
//! [`super::frontmatter`]'s job.
//!
//! A skill inside the workspace is refused when the run does not trust the
//! workspace ([`check_workspace_trust`]): a pull request can add or change
//! one, and a skill's instructions go into the system prompt.

use std::fmt;
use std::path::{Path, PathBuf};

use super::Skill;
use super::frontmatter::{check_skill_name, parse_skill};
use crate::job::load::read_source;
use crate::job::{Diagnostic, JobSpec};

/// Why a skill could not be loaded.
#[derive(Debug, Clone)]
pub enum SkillError {
    /// No `<folder>/<name>/SKILL.md` in any search folder.
    NotFound {
        name: String,
        searched: Vec<PathBuf>,
    },
    /// The name cannot be a skill's name (and must not become a path).
    BadName {
        name: String,
        reason: super::frontmatter::BadSkillName,
    },
    /// The skill exists but is invalid; every problem, with its position.
    Invalid { diagnostics: Vec<Diagnostic> },
    /// A skill from git could not be fetched (clone, revision, folder).
    Git(super::git::GitSkillError),
    /// The skill lies inside a workspace the run does not trust.
    Untrusted {
        name: String,
        dir: PathBuf,
        /// Why the workspace is not trusted, as a sentence fragment.
        reason: String,
    },
    /// A built-in skill that is unknown or could not be put in its folder;
    /// the message names the skill.
    Builtin { message: String },
}

impl SkillError {
    /// The problems as diagnostics; those without a file of their own are
    /// placed at `file:line:column` (where the job names the skill).
    pub fn diagnostics(&self, file: &Path, line: u32, column: u32) -> Vec<Diagnostic> {
        match self {
            SkillError::Invalid { diagnostics } => diagnostics.clone(),
            other => vec![Diagnostic::error(file, line, column, other.to_string())],
        }
    }
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillError::NotFound { name, searched } => {
                write!(f, "skill `{name}` not found; looked for ")?;
                if searched.is_empty() {
                    return write!(f, "it in no folder (no skills path)");
                }
                let places: Vec<String> = searched
                    .iter()
                    .map(|p| p.join(name).join("SKILL.md").display().to_string())
                    .collect();
                write!(
                    f,
                    "{}; add a skills path with `skills_path` or --skills-path",
                    places.join(", ")
                )
            }
            SkillError::BadName { name, reason } => {
                write!(f, "`{name}` is not a valid skill name: {reason}")
            }
            SkillError::Git(error) => write!(f, "{error}"),
            SkillError::Builtin { message } => f.write_str(message),
            SkillError::Untrusted { name, dir, reason } => write!(
                f,
                "skill `{name}` is in the workspace ({}), and this run does not trust the \
                 workspace: {reason}; keep the skill outside the workspace (`skills_path`, \
                 --skills-path or `skill: {{git: URL, rev: SHA}}`), or set \
                 `trust_workspace: true` in the job if whoever can change the workspace may \
                 also instruct the agent",
                dir.display()
            ),
            SkillError::Invalid { diagnostics } => {
                let lines: Vec<String> = diagnostics
                    .iter()
                    .filter(|d| d.is_error())
                    .map(ToString::to_string)
                    .collect();
                f.write_str(&lines.join("\n"))
            }
        }
    }
}

impl std::error::Error for SkillError {}

/// Finds skill `name` in `search_paths` (the first match wins) and loads it.
pub fn find_skill(name: &str, search_paths: &[PathBuf]) -> Result<Skill, SkillError> {
    find_skill_dir(name, search_paths).and_then(|dir| load_skill_dir(&dir))
}

/// The folder of skill `name`: the first `<path>/<name>/` holding a SKILL.md.
pub fn find_skill_dir(name: &str, search_paths: &[PathBuf]) -> Result<PathBuf, SkillError> {
    check_skill_name(name).map_err(|reason| SkillError::BadName {
        name: name.to_string(),
        reason,
    })?;
    let dirs = || search_paths.iter().map(|path| path.join(name));
    if let Some(dir) = dirs().find(|dir| dir.join("SKILL.md").is_file()) {
        return Ok(dir);
    }
    // `skill.md` in another case: say what to rename rather than "not found".
    if let Some((dir, found)) = dirs().find_map(|d| misnamed_skill_file(&d).map(|f| (d, f))) {
        return Err(SkillError::Invalid {
            diagnostics: vec![Diagnostic::error(
                dir.join(&found),
                0,
                0,
                format!("the skill file is named `{found}`; rename it to SKILL.md"),
            )],
        });
    }
    Err(SkillError::NotFound {
        name: name.to_string(),
        searched: search_paths.to_vec(),
    })
}

/// Loads the skill in `dir` (which holds SKILL.md); warnings are in [`Skill::warnings`].
pub fn load_skill_dir(dir: &Path) -> Result<Skill, SkillError> {
    read_skill_dir(dir).map(|(skill, _)| skill)
}

/// [`load_skill_dir`], also returning the warnings as diagnostics.
///
/// The folder keeps the path it was given (made absolute, not resolved):
/// a symlinked skill is named, judged and reported by the link.
pub fn read_skill_dir(dir: &Path) -> Result<(Skill, Vec<Diagnostic>), SkillError> {
    let dir = absolute(dir);
    let file = dir.join("SKILL.md");
    if !file.is_file() {
        let message = match misnamed_skill_file(&dir) {
            Some(found) => format!(
                "the skill file is named `{found}`; rename it to SKILL.md (the name is \
                 case-sensitive)"
            ),
            None => "no SKILL.md in this folder; a skill is a folder holding SKILL.md".to_string(),
        };
        return Err(SkillError::Invalid {
            diagnostics: vec![Diagnostic::error(&dir, 0, 0, message)],
        });
    }
    let text = read_source(&file).map_err(|d| SkillError::Invalid {
        diagnostics: vec![d],
    })?;
    parse_skill(&file, &text, &dir).map_err(|diagnostics| SkillError::Invalid { diagnostics })
}

/// [`find_skill`] for a run that does not trust the workspace (`untrusted`
/// says why; `None`: it does). Folders inside the workspace are not
/// searched; a skill found only there is refused with
/// [`SkillError::Untrusted`], which names `trust_workspace`.
pub fn find_skill_in_trusted(
    name: &str,
    search_paths: &[PathBuf],
    workspace: &Path,
    untrusted: Option<&str>,
) -> Result<Skill, SkillError> {
    let Some(reason) = untrusted else {
        return find_skill(name, search_paths);
    };
    let outside: Vec<PathBuf> = search_paths
        .iter()
        .filter(|path| !is_inside(path, workspace))
        .cloned()
        .collect();
    match find_skill_dir(name, &outside) {
        Ok(dir) => {
            check_workspace_trust(name, &dir, workspace, untrusted)?;
            load_skill_dir(&dir)
        }
        Err(SkillError::NotFound { .. }) => {
            let dir = find_skill_dir(name, search_paths)?;
            Err(SkillError::Untrusted {
                name: name.to_string(),
                dir,
                reason: reason.to_string(),
            })
        }
        Err(other) => Err(other),
    }
}

/// `Err` when the workspace is not trusted (`untrusted` says why) and the
/// skill folder `dir` lies inside it, symlinks resolved.
pub fn check_workspace_trust(
    name: &str,
    dir: &Path,
    workspace: &Path,
    untrusted: Option<&str>,
) -> Result<(), SkillError> {
    match untrusted {
        Some(reason) if is_inside(dir, workspace) => Err(SkillError::Untrusted {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            reason: reason.to_string(),
        }),
        _ => Ok(()),
    }
}

fn is_inside(path: &Path, workspace: &Path) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canonical(path).starts_with(canonical(workspace))
}

/// A file in `dir` called `skill.md` in another case (`skill.md`,
/// `Skill.md`): clients look for `SKILL.md` exactly, so it is never found.
pub fn misnamed_skill_file(dir: &Path) -> Option<String> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        (name != "SKILL.md" && name.eq_ignore_ascii_case("SKILL.md")).then_some(name)
    })
}

/// `path` made absolute against the current directory, `.` and `..`
/// folded lexically, symlinks left as they are.
fn absolute(path: &Path) -> PathBuf {
    let joined = std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf());
    crate::tools::workspace::normalize(&joined)
}

/// Where to look for a job's skill, in order, without duplicates: the job's
/// `skills_path`, then `extra` (`--skills-path`), then the workspace's
/// `skills/`, `.agents/skills/` and `.claude/skills/`.
pub fn skill_search_paths(job: &JobSpec, extra: &[PathBuf]) -> Vec<PathBuf> {
    let workspace = &job.workspace;
    let mut paths: Vec<PathBuf> = Vec::new();
    let candidates = job
        .skills_path
        .iter()
        .cloned()
        .chain(extra.iter().cloned())
        .chain([
            workspace.join("skills"),
            workspace.join(".agents").join("skills"),
            workspace.join(".claude").join("skills"),
        ]);
    for path in candidates {
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_skill(root: &Path, name: &str, description: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nDo it.\n"),
        )
        .unwrap();
        dir
    }

    #[test]
    fn first_search_path_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        write_skill(&a, "lint", "from a");
        write_skill(&b, "lint", "from b");
        let skill = find_skill("lint", &[b.clone(), a.clone()]).unwrap();
        assert_eq!(skill.description, "from b");
        let skill = find_skill("lint", &[tmp.path().join("none"), a]).unwrap();
        assert_eq!(skill.description, "from a");
    }

    #[test]
    fn a_lowercase_skill_file_is_named_not_missed() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("lint")).unwrap();
        std::fs::write(tmp.path().join("lint/skill.md"), "---\n").unwrap();
        let e = find_skill("lint", &[tmp.path().to_path_buf()]).unwrap_err();
        assert!(e.to_string().contains("rename it to SKILL.md"), "{e}");
    }

    #[test]
    fn not_found_lists_where_it_looked() {
        let e = find_skill("lint", &[PathBuf::from("/x"), PathBuf::from("/y")]).unwrap_err();
        let message = e.to_string();
        assert!(
            message.contains("/x/lint/SKILL.md, /y/lint/SKILL.md"),
            "{message}"
        );
        let e = find_skill("../etc", &[PathBuf::from("/x")]).unwrap_err();
        assert!(matches!(e, SkillError::BadName { .. }));
    }

    #[test]
    fn invalid_skill_reports_file_positions() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = write_skill(tmp.path(), "lint", "''");
        let e = load_skill_dir(&dir).unwrap_err();
        let diagnostics = e.diagnostics(Path::new("job.yaml"), 1, 1);
        assert_eq!(diagnostics[0].line, 3);
        assert!(diagnostics[0].file.ends_with("lint/SKILL.md"));
    }
}
