//! Pushing a branch to a remote pinned before the run. An https remote gets
//! the token from the job's `token_env` as the password (the user name
//! GitHub expects for tokens), sent by agentci's own https transport
//! (`git::https`); an `http://` remote gets it through libgit2's
//! credential callback; a local path or `file://` remote needs none. The
//! token never appears in a message.
//!
//! The repository's configuration lives in the workspace, which the run can
//! change, so where a push goes is read once, before the model's first turn
//! ([`GitWorkspace::pin_remote`]), and the push itself never reads the
//! workspace's configuration again: it runs from a temporary bare
//! repository outside the workspace that borrows the workspace's objects
//! (an alternate object store) and has no configuration of its own, so the
//! workspace's `pushurl`, `url`, `insteadOf`/`pushInsteadOf`, credential
//! helpers and `include`s written during the run play no part. The token
//! goes only to the pinned URL's server.

use std::cell::{Cell, RefCell};

use git2::{Cred, CredentialType, Oid, PushOptions, Remote, RemoteCallbacks, Repository};

use super::https::{same_server, with_token};
use super::{GitError, GitWorkspace};

/// Where a push goes, resolved before the run and kept.
#[derive(Clone, Debug)]
pub struct PinnedRemote {
    /// The remote as the job names it (`origin`, or a URL), for messages.
    pub name: String,
    /// The URL git would push to before the run: the remote's `pushurl` or
    /// `url`, after the `insteadOf`/`pushInsteadOf` rules then in force.
    /// Never in a message: it may hold credentials.
    url: String,
}

impl GitWorkspace {
    /// The remote called `name`, or `name` itself when it is a URL or a path.
    fn remote(&self, name: &str) -> Result<Remote<'_>, GitError> {
        match self.repo.find_remote(name) {
            Ok(remote) => Ok(remote),
            Err(_) if looks_like_url(name) => {
                self.repo
                    .remote_anonymous(name)
                    .map_err(|e| GitError::BadRemote {
                        name: name.to_string(),
                        message: e.message().to_string(),
                    })
            }
            Err(_) => Err(GitError::NoRemote {
                root: self.root.clone(),
                name: name.to_string(),
            }),
        }
    }

    /// Where a push to `name` goes, as the repository says now: called
    /// before the run, so that what the run does to `.git/config` (or to
    /// the files it includes) cannot move it.
    pub fn pin_remote(&self, name: &str) -> Result<PinnedRemote, GitError> {
        let remote = self.remote(name)?;
        let url = push_url(&remote).ok_or_else(|| GitError::BadRemote {
            name: name.to_string(),
            message: "it has no URL (or one that is not UTF-8)".to_string(),
        })?;
        Ok(PinnedRemote {
            name: name.to_string(),
            url,
        })
    }

    /// Push `commit` as `branch` to `remote`, authenticating with `token`
    /// (read from the variable `token_env`): over https it goes with every
    /// request to the pinned server; over http when the server asks for a
    /// password.
    pub fn push(
        &self,
        remote: &PinnedRemote,
        branch: &str,
        commit: &str,
        token: Option<&str>,
        token_env: &str,
    ) -> Result<(), GitError> {
        super::ensure_network_setup();
        let staging = self.staging(branch, commit)?;
        let mut pushing =
            staging
                .repo
                .remote_anonymous(&remote.url)
                .map_err(|e| GitError::BadRemote {
                    name: remote.name.clone(),
                    message: e.message().to_string(),
                })?;
        // Only the user's global and system configuration is read here; if
        // its rewriting rules move the pinned URL again, push nowhere.
        if push_url(&pushing).as_deref() != Some(remote.url.as_str()) {
            return Err(GitError::PushUrlRewritten {
                remote: remote.name.clone(),
            });
        }
        let attempts = Cell::new(0);
        let rejected = RefCell::new(None);
        let mut callbacks = RemoteCallbacks::new();
        callbacks.credentials(|url, _user, allowed| {
            attempts.set(attempts.get() + 1);
            // libgit2 asks again after a refused login; a second try would loop.
            match token {
                Some(token)
                    if attempts.get() == 1
                        && allowed.contains(CredentialType::USER_PASS_PLAINTEXT)
                        && same_server(url, &remote.url) =>
                {
                    Cred::userpass_plaintext("x-access-token", token)
                }
                _ => Err(git2::Error::from_str("no usable credentials")),
            }
        });
        callbacks.push_update_reference(|reference, status| {
            if let Some(message) = status {
                *rejected.borrow_mut() = Some(format!("{reference}: {message}"));
            }
            Ok(())
        });
        let mut options = PushOptions::new();
        options.remote_callbacks(callbacks);
        let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
        // https goes through agentci's transport, which libgit2 does not ask
        // for credentials: the token is lent to it for this push.
        let (pushed, asked) = with_token(&remote.url, token, || {
            pushing.push(&[refspec.as_str()], Some(&mut options))
        });
        if let Err(e) = pushed {
            let asked = asked || attempts.get() > 0;
            let hint = match (asked, token) {
                (false, _) => String::new(),
                (true, None) => format!(
                    "; the remote asked for credentials and ${token_env} is not set (set it, or \
                     `outputs.push.token_env`)"
                ),
                (true, Some(_)) => format!("; the remote refused the token in ${token_env}"),
            };
            return Err(GitError::Push {
                branch: branch.to_string(),
                remote: remote.name.clone(),
                message: e.message().to_string(),
                hint,
            });
        }
        if let Some(why) = rejected.take() {
            return Err(GitError::Rejected {
                remote: remote.name.clone(),
                why,
            });
        }
        Ok(())
    }

    /// A bare repository in a new temporary folder whose only branch is
    /// `branch` at `commit`, reading its objects from the workspace's.
    fn staging(&self, branch: &str, commit: &str) -> Result<Staging, GitError> {
        let failed = |message: String| GitError::PushStaging { message };
        let git = |e: git2::Error| failed(e.message().to_string());
        let dir = tempfile::Builder::new()
            .prefix("agentci-push-")
            .tempdir()
            .map_err(|e| failed(e.to_string()))?;
        let repo = Repository::init_bare(dir.path()).map_err(git)?;
        let objects = self.repo.commondir().join("objects");
        let objects = objects
            .to_str()
            .ok_or_else(|| failed(format!("{} is not UTF-8", objects.display())))?;
        repo.odb()
            .map_err(git)?
            .add_disk_alternate(objects)
            .map_err(git)?;
        let commit = Oid::from_str(commit).map_err(git)?;
        repo.reference(
            &format!("refs/heads/{branch}"),
            commit,
            false,
            "agentci push",
        )
        .map_err(git)?;
        Ok(Staging { repo, _dir: dir })
    }
}

/// The repository a push runs from; its folder goes with it.
struct Staging {
    // Declared before `_dir`: the repository closes before its folder goes.
    repo: Repository,
    _dir: tempfile::TempDir,
}

/// Where `remote` pushes: its push URL, else its URL (both as libgit2
/// rewrote them with the configuration's `insteadOf`/`pushInsteadOf`).
fn push_url(remote: &Remote<'_>) -> Option<String> {
    match remote.pushurl() {
        Ok(Some(url)) => Some(url.to_string()),
        Ok(None) => remote.url().ok().map(str::to_string),
        Err(_) => None,
    }
}

fn looks_like_url(name: &str) -> bool {
    name.contains("://") || name.contains('/') || name.contains(':')
}
