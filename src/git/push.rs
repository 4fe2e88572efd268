//! Pushing a branch to a remote. An https remote gets the token from the
//! job's `token_env` as the password (the user name GitHub expects for
//! tokens); a local path or `file://` remote needs none. The token never
//! appears in a message.

use std::cell::{Cell, RefCell};

use git2::{Cred, CredentialType, PushOptions, Remote, RemoteCallbacks};

use super::{GitError, GitWorkspace};

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

    /// Fails when `push` could not find `name`; checked before the run.
    pub fn check_remote(&self, name: &str) -> Result<(), GitError> {
        self.remote(name).map(|_| ())
    }

    /// Push `branch` to the remote `name`, authenticating with `token` (read
    /// from the variable `token_env`) when the remote asks for a password.
    pub fn push(
        &self,
        name: &str,
        branch: &str,
        token: Option<&str>,
        token_env: &str,
    ) -> Result<(), GitError> {
        super::ensure_network_timeouts();
        let mut remote = self.remote(name)?;
        let attempts = Cell::new(0);
        let rejected = RefCell::new(None);
        let mut callbacks = RemoteCallbacks::new();
        callbacks.credentials(|_url, _user, allowed| {
            attempts.set(attempts.get() + 1);
            // libgit2 asks again after a refused login; a second try would loop.
            match token {
                Some(token)
                    if attempts.get() == 1
                        && allowed.contains(CredentialType::USER_PASS_PLAINTEXT) =>
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
        let pushed = remote.push(&[refspec.as_str()], Some(&mut options));
        if let Err(e) = pushed {
            let hint = match (attempts.get(), token) {
                (0, _) => String::new(),
                (_, None) => format!(
                    "; the remote asked for credentials and ${token_env} is not set (set it, or \
                     `outputs.push.token_env`)"
                ),
                (_, Some(_)) => format!("; the remote refused the token in ${token_env}"),
            };
            return Err(GitError::Push {
                branch: branch.to_string(),
                remote: name.to_string(),
                message: e.message().to_string(),
                hint,
            });
        }
        if let Some(why) = rejected.take() {
            return Err(GitError::Rejected {
                remote: name.to_string(),
                why,
            });
        }
        Ok(())
    }
}

fn looks_like_url(name: &str) -> bool {
    name.contains("://") || name.contains('/') || name.contains(':')
}
