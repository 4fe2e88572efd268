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
use crate::spec::GitSkillRef;

/// The cache folder: `$AGENTCI_CACHE`, else `$XDG_CACHE_HOME/agentci`, else
/// `~/.cache/agentci`; `None` when none of them is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
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
    let (dir, lock) = fetch_skill(source, cache).map_err(|message| SkillError::Git { message })?;
    let mut skill = load_skill_dir(&dir)?;
    skill.source = Some(lock);
    Ok(skill)
}

/// The exported skill folder for `source`, and its lock.
pub fn fetch_skill(source: &GitSkillRef, cache: &Path) -> Result<(PathBuf, SkillSource), String> {
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
fn open_or_clone(url: &str, home: &Path) -> Result<Repository, String> {
    let path = home.join("repo");
    if path.is_dir() {
        return Repository::open_bare(&path).map_err(|e| {
            format!(
                "the cached clone of {url} at {} cannot be opened: {}; delete that folder to \
                 clone again",
                path.display(),
                e.message()
            )
        });
    }
    std::fs::create_dir_all(home)
        .map_err(|e| format!("cannot create the skill cache {}: {e}", home.display()))?;
    let staging = home.join(format!(".clone-{}", uuid::Uuid::new_v4().simple()));
    let cloned = RepoBuilder::new()
        .bare(true)
        .fetch_options(fetch_options())
        .clone(url, &staging);
    if let Err(e) = cloned {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(format!(
            "cannot clone the skill repository {url}: {}; check the `git` URL and that it is \
             reachable",
            e.message()
        ));
    }
    // Another run may have finished its clone first; then keep that one.
    if std::fs::rename(&staging, &path).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    Repository::open_bare(&path)
        .map_err(|e| format!("cannot open the clone of {url}: {}", e.message()))
}

/// The commit `rev` names, fetching only when the clone does not have it.
fn resolve(repo: &Repository, source: &GitSkillRef, home: &Path) -> Result<Oid, String> {
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
    fetch(&refspecs).map_err(|e| {
        format!(
            "revision `{}` is not in the cached clone of {} and fetching it failed: {}",
            source.rev,
            source.url,
            e.message()
        )
    })?;
    if find_commit(repo, &source.rev).is_none() && is_hex(&source.rev) && source.rev.len() == 40 {
        // A commit on no branch or tag; servers that allow it send it by id.
        refspecs = vec![source.rev.clone()];
        let _ = fetch(&refspecs);
    }
    find_commit(repo, &source.rev).ok_or_else(|| {
        format!(
            "revision `{}` does not exist in {} (looked at its commits, branches and tags); set \
             `rev` to a commit id or tag of that repository",
            source.rev, source.url
        )
    })
}

/// Held while fetching into the cached clone, released when dropped. Two
/// runs fetching into one clone at once fail on libgit2's ref lock files,
/// so fetches take turns (an advisory `flock` on `<home>/fetch.lock`).
struct FetchLock(#[expect(dead_code, reason = "held for its file descriptor")] std::fs::File);

fn lock_fetches(home: &Path) -> Result<FetchLock, String> {
    use std::os::fd::AsRawFd;
    let path = home.join("fetch.lock");
    let failed = |e: std::io::Error| format!("cannot lock the skill cache {}: {e}", path.display());
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(failed)?;
    loop {
        // SAFETY: flock only takes a lock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(FetchLock(file));
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(failed(error));
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
) -> Result<Tree<'r>, String> {
    let root = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(|e| format!("cannot read commit {commit}: {}", e.message()))?;
    if source.path.is_empty() {
        return Ok(root);
    }
    let missing = || {
        format!(
            "no folder `{}` in {} at `{}` ({commit}); set `path` to the folder holding SKILL.md",
            source.path, source.url, source.rev
        )
    };
    let entry = root.get_path(Path::new(&source.path)).map_err(|e| {
        if e.code() == ErrorCode::NotFound {
            missing()
        } else {
            format!("cannot read `{}`: {}", source.path, e.message())
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
) -> Result<(), String> {
    let parent = export.parent().unwrap_or(export);
    let staging = parent.join(format!(".export-{}", uuid::Uuid::new_v4().simple()));
    let written = std::fs::create_dir_all(staging.join(folder))
        .map_err(|e| e.to_string())
        .and_then(|()| write_tree(repo, tree, &staging.join(folder)));
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(format!(
            "cannot write the skill to the cache {}: {e}",
            parent.display()
        ));
    }
    // When another run renamed its copy first, that copy is complete too.
    if std::fs::rename(&staging, export).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
        if !export.join(folder).is_dir() {
            return Err(format!(
                "cannot move the skill into the cache at {}",
                export.display()
            ));
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
    crate::git::ensure_network_timeouts();
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
}
