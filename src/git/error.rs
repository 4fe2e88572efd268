//! What can go wrong in a git operation on the workspace, one variant per
//! operation. Messages are lowercase fragments that name the repository,
//! file, branch or remote, and say what to do when the user can do
//! something; libgit2's own message is kept as text, since its error codes
//! say little more than the message does.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error(
        "git refuses to open the repository of {} because another user owns it; trust it with \
         `git config --global --add safe.directory '*'` (or that path)",
        .workspace.display()
    )]
    NotOwned { workspace: PathBuf },
    #[error("cannot open the git repository of {}: {message}", .workspace.display())]
    Open { workspace: PathBuf, message: String },
    #[error("cannot read the git status of {}: {message}", .root.display())]
    Status { root: PathBuf, message: String },
    #[error("cannot read {}: {source}", .path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot diff the workspace: {message}")]
    Diff { message: String },
    #[error("cannot write the patch {}: {source}", .path.display())]
    WritePatch {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "branch `{branch}` already exists in {}; choose another `outputs.commit.branch` or \
         delete it",
        .root.display()
    )]
    BranchExists { branch: String, root: PathBuf },
    #[error("cannot commit: {message}")]
    Commit { message: String },
    #[error(
        "the repository {} has no remote `{name}`; add it (`git remote add {name} URL`) or set \
         `outputs.push.remote` to a remote name or URL",
        .root.display()
    )]
    NoRemote { root: PathBuf, name: String },
    #[error("cannot use the remote `{name}`: {message}")]
    BadRemote { name: String, message: String },
    #[error("cannot prepare the push in a temporary repository: {message}")]
    PushStaging { message: String },
    #[error(
        "not pushing to `{remote}`: the global or system git configuration rewrites the URL it \
         had before the run (`url.*.insteadOf` or `pushInsteadOf` rules that apply to each \
         other's result); agentci pushes only to that URL, so make the rules rewrite it once \
         or name the final URL in the remote"
    )]
    PushUrlRewritten { remote: String },
    /// `hint` says what to do about credentials, starting with `; `, or is empty.
    #[error("cannot push branch `{branch}` to `{remote}`: {message}{hint}")]
    Push {
        branch: String,
        remote: String,
        message: String,
        hint: String,
    },
    #[error("the remote `{remote}` rejected the push of {why}")]
    Rejected { remote: String, why: String },
}
