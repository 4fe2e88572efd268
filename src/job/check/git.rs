//! The job keys about git: `allow_dirty`, `outputs.patch`, `outputs.commit`,
//! `outputs.push` and `skill: {git: …}`. Only their shape and values are
//! checked here; whether the workspace is a repository, or the revision
//! exists, is found out when the job runs.

use std::collections::BTreeMap;
use std::path::Path;

use serde_saphyr::Spanned;

use super::Checker;
use crate::job::load::pos_of;
use crate::job::raw::{RawCommit, RawPush, RawSkill};
use crate::job::{CommitSpec, GitSkillRef, PushSpec, SkillRef};
use crate::tools::workspace::normalize;

pub(super) const DEFAULT_AUTHOR_NAME: &str = "agentci";
pub(super) const DEFAULT_AUTHOR_EMAIL: &str = "agentci@users.noreply.github.com";
const DEFAULT_REMOTE: &str = "origin";
const DEFAULT_TOKEN_ENV: &str = "GITHUB_TOKEN";

impl Checker<'_> {
    /// `skill: {git: URL, rev: REV, path: DIR}`; a local path is made absolute
    /// against the job file's folder, like `skill: {path: DIR}`.
    pub(super) fn git_skill(
        &mut self,
        skill: &Spanned<RawSkill>,
        url: &str,
        rev: Option<&str>,
        path: Option<&str>,
    ) -> Option<SkillRef> {
        let pos = pos_of(&self.r, skill);
        let url = url.trim();
        if url.is_empty() {
            self.r.error(
                pos,
                "skill `git` is empty; expected a repository URL or path",
            );
            return None;
        }
        let Some(rev) = rev.map(str::trim).filter(|r| !r.is_empty()) else {
            self.r.error(
                pos,
                "a skill from git needs `rev` (a commit id or tag), so every run uses the same \
                 files: `skill: {git: URL, rev: SHA, path: DIR}`",
            );
            return None;
        };
        let path = path.unwrap_or("").trim().trim_matches('/');
        if Path::new(path).is_absolute()
            || path.split('/').any(|part| part == "..")
            || path.contains('\\')
        {
            self.r.error(
                pos,
                format!(
                    "skill `path` `{path}` must be a folder inside the repository, relative and \
                     without `..`"
                ),
            );
            return None;
        }
        let path = path
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect::<Vec<_>>()
            .join("/");
        Some(SkillRef::Git(GitSkillRef {
            url: absolute_url(url, self.job_dir),
            rev: rev.to_string(),
            path,
        }))
    }

    pub(super) fn commit(
        &mut self,
        raw: &Spanned<RawCommit>,
        vars: &BTreeMap<String, String>,
        job_name: Option<&str>,
    ) -> Option<CommitSpec> {
        let at = pos_of(&self.r, raw);
        let commit = &raw.value;
        let branch = match &commit.branch {
            None => {
                self.r.error(
                    at,
                    "`outputs.commit` needs `branch`, the new branch to commit on",
                );
                None
            }
            Some(b) => self.substitute(b, vars).and_then(|name| {
                let name = name.trim().to_string();
                if git2::Reference::is_valid_name(&format!("refs/heads/{name}")) {
                    Some(name)
                } else {
                    let pos = pos_of(&self.r, b);
                    self.r.error(
                        pos,
                        format!(
                            "`{name}` is not a valid branch name; use letters, digits, `-`, `_`, \
                             `.` and `/` (for example `agentci/fix-lint`)"
                        ),
                    );
                    None
                }
            }),
        };
        let message = match &commit.message {
            None => Some(format!("agentci: {}", job_name.unwrap_or("job"))),
            Some(m) => self.substitute(m, vars).and_then(|text| {
                if text.trim().is_empty() {
                    let pos = pos_of(&self.r, m);
                    self.r.error(
                        pos,
                        "commit `message` is empty; leave it out for the default",
                    );
                    None
                } else {
                    Some(text.trim().to_string())
                }
            }),
        };
        let (author_name, author_email) = match &commit.author {
            None => (
                Some(DEFAULT_AUTHOR_NAME.to_string()),
                Some(DEFAULT_AUTHOR_EMAIL.to_string()),
            ),
            Some(author) => {
                let at = pos_of(&self.r, author);
                let name = self.author_part(author.value.name.as_ref(), at, "name");
                let email = self.author_part(author.value.email.as_ref(), at, "email");
                (name, email)
            }
        };
        let on_failure = self.optional_boolean(commit.on_failure.as_ref(), "on_failure");
        Some(CommitSpec {
            branch: branch?,
            message: message?,
            author_name: author_name?,
            author_email: author_email?,
            on_failure,
        })
    }

    fn author_part(
        &mut self,
        value: Option<&Spanned<String>>,
        at: crate::job::diagnostic::Pos,
        key: &str,
    ) -> Option<String> {
        match value {
            Some(v) if !v.value.trim().is_empty() && !v.value.contains(['<', '>', '\n']) => {
                Some(v.value.trim().to_string())
            }
            Some(v) => {
                let pos = pos_of(&self.r, v);
                self.r.error(
                    pos,
                    format!("commit author `{key}` must be a non-empty line without `<` or `>`"),
                );
                None
            }
            None => {
                self.r.error(
                    at,
                    format!("commit `author` needs `{key}` (or leave `author` out for agentci)"),
                );
                None
            }
        }
    }

    /// `push: true`, `push: false` or `{remote, token_env}`; `None` when not pushing.
    pub(super) fn push(&mut self, raw: &Spanned<RawPush>, has_commit: bool) -> Option<PushSpec> {
        let pos = pos_of(&self.r, raw);
        let (remote, token_env) = match &raw.value {
            RawPush::Enabled(false) => return None,
            RawPush::Enabled(true) => (None, None),
            RawPush::To { remote, token_env } => (remote.clone(), token_env.clone()),
        };
        if !has_commit {
            self.r.error(
                pos,
                "`outputs.push` needs `outputs.commit`: the branch it pushes is the commit's",
            );
            return None;
        }
        let remote = remote.map_or(DEFAULT_REMOTE.to_string(), |r| r.trim().to_string());
        let token_env = token_env.map_or(DEFAULT_TOKEN_ENV.to_string(), |t| t.trim().to_string());
        if remote.is_empty() {
            self.r.error(
                pos,
                "push `remote` is empty; expected a remote name such as `origin` or a URL",
            );
            return None;
        }
        let valid_env = !token_env.is_empty()
            && !token_env.starts_with(|c: char| c.is_ascii_digit())
            && token_env
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_env {
            self.r.error(
                pos,
                format!(
                    "push `token_env` `{token_env}` is not an environment variable name; it names \
                     the variable holding the token (for example `GITHUB_TOKEN`), not the token"
                ),
            );
            return None;
        }
        Some(PushSpec { remote, token_env })
    }
}

/// A URL stays as written; a local path (no `scheme://`, not `user@host:path`)
/// becomes absolute against `base`.
fn absolute_url(url: &str, base: &Path) -> String {
    let scp_like = url.contains(':') && !url.starts_with('/') && !url.starts_with('.');
    if url.contains("://") || scp_like {
        url.to_string()
    } else {
        normalize(&base.join(url)).display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::absolute_url;
    use crate::job::{GitSkillRef, LoadOptions, SkillRef, load_job};
    use std::path::Path;

    fn load(yaml: &str) -> crate::job::JobSpec {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("job.yaml"), yaml).unwrap();
        let options = LoadOptions {
            cwd: dir.path().to_path_buf(),
            ..LoadOptions::default()
        };
        load_job(&dir.path().join("job.yaml"), &options).unwrap().0
    }

    #[test]
    fn push_true_and_commit_defaults() {
        let job = load(
            "name: bump\nskill: s\ngoal: g\nmodel: {name: m}\nvars: {dep: serde}\n\
             allow_dirty: true\n\
             outputs: {patch: out/p.diff, commit: {branch: 'agentci/bump-${{ vars.dep }}'}, push: true}\n",
        );
        assert!(job.allow_dirty);
        assert!(job.outputs.patch.unwrap().ends_with("out/p.diff"));
        let commit = job.outputs.commit.unwrap();
        assert_eq!(commit.branch, "agentci/bump-serde");
        assert_eq!(commit.message, "agentci: bump");
        assert_eq!(commit.author_name, "agentci");
        assert_eq!(commit.author_email, "agentci@users.noreply.github.com");
        assert!(!commit.on_failure);
        let push = job.outputs.push.unwrap();
        assert_eq!(
            (push.remote.as_str(), push.token_env.as_str()),
            ("origin", "GITHUB_TOKEN")
        );
    }

    #[test]
    fn git_skills_keep_urls_and_clean_paths() {
        let job = load(
            "name: j\nskill: {git: 'https://github.com/o/s.git', rev: v1, path: ./skills/lint/}\n\
             goal: g\nmodel: {name: m}\n",
        );
        assert_eq!(
            job.skill,
            SkillRef::Git(GitSkillRef {
                url: "https://github.com/o/s.git".into(),
                rev: "v1".into(),
                path: "skills/lint".into(),
            })
        );
        assert!(!job.allow_dirty);
        assert_eq!(job.outputs.push, None);
    }

    #[test]
    fn local_paths_are_made_absolute_and_urls_kept() {
        let base = Path::new("/jobs");
        assert_eq!(absolute_url("../skills.git", base), "/skills.git");
        assert_eq!(absolute_url("/srv/s.git", base), "/srv/s.git");
        assert_eq!(
            absolute_url("https://github.com/o/s.git", base),
            "https://github.com/o/s.git"
        );
        assert_eq!(absolute_url("file:///srv/s.git", base), "file:///srv/s.git");
        assert_eq!(
            absolute_url("git@github.com:o/s.git", base),
            "git@github.com:o/s.git"
        );
    }
}
