//! Skills from git: `skill: {git: URL, rev: REV, path: DIR}`.
//!
//! The repository is cloned once (bare) into the cache, under a key made
//! from its URL. A revision already in the clone is used without touching
//! the network, so a pinned skill keeps working when its host does not
//! answer; only a revision the clone lacks triggers a fetch. The skill's
//! folder at that commit is exported to a folder of its own, named after
//! the commit, and moved into place with one rename, so parallel runs never
//! see a half-written skill. Parsing the skill is [`super::discover`]'s job.
//!
//! Layout: `<cache>/git/<key>/repo` (the bare clone) and
//! `<cache>/git/<key>/trees/<commit>-<path key>/<folder>/` (the skill).

use std::path::{Path, PathBuf};

use git2::{ErrorCode, FetchOptions, Oid, Repository, Tree, build::RepoBuilder};
use sha2::{Digest, Sha256};

use super::Skill;
use super::discover::{SkillError, load_skill_dir};
use crate::event::SkillSource;
use crate::job::GitSkillRef;

/// Why a skill from git could not be fetched; each names the repository,
/// revision or cache folder, and what to change.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GitSkillError {
    #[error("no cache folder for skills from git: set AGENTCI_CACHE (or HOME)")]
    NoCache,
    #[error(
        "the cached clone of {url} at {} cannot be opened: {message}; delete that folder to \
         clone again",
        path.display()
    )]
    CachedClone {
        url: String,
        path: PathBuf,
        message: String,
    },
    #[error("cannot create the skill cache {}: {message}", path.display())]
    CreateCache { path: PathBuf, message: String },
    #[error(
        "cannot clone the skill repository {url}: {message}; check the `git` URL and that it is \
         reachable"
    )]
    Clone { url: String, message: String },
    #[error("cannot open the clone of {url}: {message}")]
    OpenClone { url: String, message: String },
    #[error(
        "revision `{rev}` is not in the cached clone of {url} and fetching it failed: {message}"
    )]
    Fetch {
        url: String,
        rev: String,
        message: String,
    },
    #[error(
        "revision `{rev}` does not exist in {url} (looked at its commits, branches and tags); set \
         `rev` to a commit id or tag of that repository"
    )]
    NoRevision { url: String, rev: String },
    #[error("cannot lock the skill cache {}: {message}", path.display())]
    Lock { path: PathBuf, message: String },
    #[error("cannot read commit {commit}: {message}")]
    Commit { commit: String, message: String },
    #[error(
        "no folder `{path}` in {url} at `{rev}` ({commit}); set `path` to the folder holding \
         SKILL.md"
    )]
    NoFolder {
        url: String,
        rev: String,
        commit: String,
        path: String,
    },
    #[error("cannot read `{path}`: {message}")]
    ReadFolder { path: String, message: String },
    #[error("cannot write the skill to the cache {}: {message}", dir.display())]
    Export { dir: PathBuf, message: String },
    #[error("cannot move the skill into the cache at {}", dir.display())]
    Move { dir: PathBuf },
}

/// The cache folder: `$AGENTCI_CACHE`, else `$XDG_CACHE_HOME/agentci`, else
/// `~/.cache/agentci`, looked up in `env`; `None` when none of them is set.
pub fn default_cache_dir(env: &crate::run_env::RunEnv) -> Option<PathBuf> {
    let var = |name| env.var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("AGENTCI_CACHE") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("agentci"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".cache").join("agentci"))
}

/// Fetch (or reuse) the skill `source` names and load it; the skill's
/// [`Skill::source`] records the commit it resolved to.
pub fn load_git_skill(source: &GitSkillRef, cache: &Path) -> Result<Skill, SkillError> {
    let (dir, lock) = fetch_skill(source, cache).map_err(SkillError::Git)?;
    let mut skill = load_skill_dir(&dir)?;
    skill.source = Some(lock);
    Ok(skill)
}

/// The exported skill folder for `source`, and its lock.
pub fn fetch_skill(
    source: &GitSkillRef,
    cache: &Path,
) -> Result<(PathBuf, SkillSource), GitSkillError> {
    let home = cache.join("git").join(short_hash(&source.url));
    let repo = open_or_clone(&source.url, &home)?;
    let commit = resolve(&repo, source, &home)?;
    let tree = skill_tree(&repo, commit, source)?;
    let folder = match source.path.rsplit('/').next() {
        Some(last) if !last.is_empty() => last.to_string(),
        _ => repository_name(&source.url),
    };
    let export = home
        .join("trees")
        .join(format!("{commit}-{}", short_hash(&source.path)));
    if !export.join(&folder).is_dir() {
        export_atomically(&repo, &tree, &export, &folder)?;
    }
    let lock = SkillSource {
        git: source.url.clone(),
        rev: source.rev.clone(),
        commit: commit.to_string(),
        path: source.path.clone(),
    };
    Ok((export.join(folder), lock))
}

/// The cached bare clone, cloned first when missing.
fn open_or_clone(url: &str, home: &Path) -> Result<Repository, GitSkillError> {
    let path = home.join("repo");
    if path.is_dir() {
        return Repository::open_bare(&path).map_err(|e| GitSkillError::CachedClone {
            url: url.to_string(),
            path: path.clone(),
            message: e.message().to_string(),
        });
    }
    std::fs::create_dir_all(home).map_err(|e| GitSkillError::CreateCache {
        path: home.to_path_buf(),
        message: e.to_string(),
    })?;
    let staging = home.join(format!(".clone-{}", uuid::Uuid::new_v4().simple()));
    let cloned = RepoBuilder::new()
        .bare(true)
        .fetch_options(fetch_options())
        .clone(url, &staging);
    if let Err(e) = cloned {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(GitSkillError::Clone {
            url: url.to_string(),
            message: e.message().to_string(),
        });
    }
    // Another run may have finished its clone first; then keep that one.
    if std::fs::rename(&staging, &path).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    Repository::open_bare(&path).map_err(|e| GitSkillError::OpenClone {
        url: url.to_string(),
        message: e.message().to_string(),
    })
}

/// The commit `rev` names, fetching only when the clone does not have it.
fn resolve(repo: &Repository, source: &GitSkillRef, home: &Path) -> Result<Oid, GitSkillError> {
    if let Some(oid) = find_commit(repo, &source.rev) {
        return Ok(oid);
    }
    let _lock = lock_fetches(home)?;
    // Another run may have fetched it while this one waited for the lock.
    if let Some(oid) = find_commit(repo, &source.rev) {
        return Ok(oid);
    }
    let mut refspecs = vec![
        "+refs/heads/*:refs/heads/*".to_string(),
        "+refs/tags/*:refs/tags/*".to_string(),
    ];
    let fetch = |refspecs: &[String]| {
        repo.remote_anonymous(&source.url)
            .and_then(|mut remote| remote.fetch(refspecs, Some(&mut fetch_options()), None))
    };
    fetch(&refspecs).map_err(|e| GitSkillError::Fetch {
        url: source.url.clone(),
        rev: source.rev.clone(),
        message: e.message().to_string(),
    })?;
    if find_commit(repo, &source.rev).is_none() && is_hex(&source.rev) && source.rev.len() == 40 {
        // A commit on no branch or tag; servers that allow it send it by id.
        refspecs = vec![source.rev.clone()];
        let _ = fetch(&refspecs);
    }
    find_commit(repo, &source.rev).ok_or_else(|| GitSkillError::NoRevision {
        url: source.url.clone(),
        rev: source.rev.clone(),
    })
}

/// Held while fetching into the cached clone, released when dropped. Two
/// runs fetching into one clone at once fail on libgit2's ref lock files,
/// so fetches take turns (an advisory exclusive lock on `<home>/fetch.lock`,
/// std's [`File::lock`](std::fs::File::lock), which is `flock` on Unix).
struct FetchLock(#[expect(dead_code, reason = "held for its file descriptor")] std::fs::File);

fn lock_fetches(home: &Path) -> Result<FetchLock, GitSkillError> {
    let path = home.join("fetch.lock");
    let failed = |e: std::io::Error| GitSkillError::Lock {
        path: path.clone(),
        message: e.to_string(),
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(failed)?;
    loop {
        match file.lock() {
            Ok(()) => return Ok(FetchLock(file)),
            // A signal handled while waiting: wait again, as before.
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(failed(error)),
        }
    }
}

fn find_commit(repo: &Repository, rev: &str) -> Option<Oid> {
    let object = repo
        .revparse_single(rev)
        .or_else(|_| repo.revparse_single(&format!("refs/tags/{rev}")))
        .ok()?;
    object.peel_to_commit().ok().map(|c| c.id())
}

/// The tree of the skill's folder at `commit`.
fn skill_tree<'r>(
    repo: &'r Repository,
    commit: Oid,
    source: &GitSkillRef,
) -> Result<Tree<'r>, GitSkillError> {
    let root = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(|e| GitSkillError::Commit {
            commit: commit.to_string(),
            message: e.message().to_string(),
        })?;
    if source.path.is_empty() {
        return Ok(root);
    }
    let missing = || GitSkillError::NoFolder {
        url: source.url.clone(),
        rev: source.rev.clone(),
        commit: commit.to_string(),
        path: source.path.clone(),
    };
    let entry = root.get_path(Path::new(&source.path)).map_err(|e| {
        if e.code() == ErrorCode::NotFound {
            missing()
        } else {
            GitSkillError::ReadFolder {
                path: source.path.clone(),
                message: e.message().to_string(),
            }
        }
    })?;
    entry
        .to_object(repo)
        .ok()
        .and_then(|o| o.into_tree().ok())
        .ok_or_else(missing)
}

/// Write `tree` to `<export>/<folder>/` by building it beside and renaming.
fn export_atomically(
    repo: &Repository,
    tree: &Tree<'_>,
    export: &Path,
    folder: &str,
) -> Result<(), GitSkillError> {
    let parent = export.parent().unwrap_or(export);
    let staging = parent.join(format!(".export-{}", uuid::Uuid::new_v4().simple()));
    let written = std::fs::create_dir_all(staging.join(folder))
        .map_err(|e| e.to_string())
        .and_then(|()| write_tree(repo, tree, &staging.join(folder)));
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(GitSkillError::Export {
            dir: parent.to_path_buf(),
            message: e,
        });
    }
    // When another run renamed its copy first, that copy is complete too.
    if std::fs::rename(&staging, export).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
        if !export.join(folder).is_dir() {
            return Err(GitSkillError::Move {
                dir: export.to_path_buf(),
            });
        }
    }
    Ok(())
}

fn write_tree(repo: &Repository, tree: &Tree<'_>, dir: &Path) -> Result<(), String> {
    for entry in tree.iter() {
        let Ok(name) = entry.name() else { continue };
        if name.contains('/') || name == ".." || name == "." {
            continue;
        }
        // Submodules (commits) are left out: they are other repositories.
        if entry.kind() == Some(git2::ObjectType::Commit) {
            continue;
        }
        let target = dir.join(name);
        let object = entry.to_object(repo).map_err(|e| e.message().to_string())?;
        let mode = entry.filemode();
        if let Some(subtree) = object.as_tree() {
            std::fs::create_dir(&target).map_err(|e| e.to_string())?;
            write_tree(repo, subtree, &target)?;
        } else if let Some(blob) = object.as_blob() {
            if mode == 0o120000 {
                #[cfg(unix)]
                {
                    let link = String::from_utf8_lossy(blob.content()).into_owned();
                    std::os::unix::fs::symlink(link, &target).map_err(|e| e.to_string())?;
                }
            } else {
                std::fs::write(&target, blob.content()).map_err(|e| e.to_string())?;
                #[cfg(unix)]
                if mode == 0o100755 {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                        .map_err(|e| e.to_string())?;
                }
            }
        }
    }
    Ok(())
}

fn fetch_options<'a>() -> FetchOptions<'a> {
    crate::git::ensure_network_setup();
    let mut options = FetchOptions::new();
    options.download_tags(git2::AutotagOption::All);
    options
}

/// The last segment of a URL or path without `.git`: the folder name of a
/// skill at the repository's root.
fn repository_name(url: &str) -> String {
    let last = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()
        .unwrap_or(url);
    last.strip_suffix(".git").unwrap_or(last).to_string()
}

fn short_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn is_hex(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_names_drop_the_git_suffix() {
        assert_eq!(repository_name("https://github.com/o/lint.git"), "lint");
        assert_eq!(repository_name("/srv/skills/lint/"), "lint");
        assert_eq!(repository_name("git@github.com:lint.git"), "lint");
    }

    #[test]
    fn cache_keys_differ_by_url() {
        assert_ne!(short_hash("/a.git"), short_hash("/b.git"));
        assert_eq!(short_hash("/a.git").len(), 16);
    }

    /// While one fetch holds the lock, another descriptor of `fetch.lock`
    /// cannot take it (flock locks belong to the open file, so this holds
    /// within one process as between runs); once dropped, it can.
    #[test]
    fn a_fetch_lock_excludes_others_until_dropped() {
        let home = tempfile::tempdir().unwrap();
        let held = lock_fetches(home.path()).unwrap();
        let other = std::fs::File::open(home.path().join("fetch.lock")).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        other.try_lock().unwrap();
    }
}
