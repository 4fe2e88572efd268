//! `sandbox.writable`: the words of each entry — an absolute folder, a
//! `~/` folder or a preset — checked where the job file writes them.
//!
//! What can be judged from the job alone is judged here: a relative path,
//! `..`, an unknown preset, a system folder, a folder holding the
//! workspace or inside its `.git`, `.agentci` or the job's outputs. Where
//! `~/` and the presets lead depends on the environment of the run, so
//! those folders are resolved and judged again at run start
//! ([`crate::sandbox::writable`]).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_saphyr::Spanned;

use super::Checker;
use crate::job::OutputsSpec;
use crate::job::diagnostic::Pos;
use crate::job::load::pos_of;
use crate::job::raw::Scalar;
use crate::sandbox::SandboxProfile;
use crate::sandbox::writable::{
    CachePreset, KeptPaths, Refusal, WritablePath, WritableRoot, normalize, system_folder,
};

/// What an entry is judged against: the workspace and the job's outputs,
/// when the workspace is known.
pub(super) struct Places<'a> {
    pub workspace: Option<&'a Path>,
    pub outputs: &'a OutputsSpec,
    pub profile: SandboxProfile,
}

impl Checker<'_> {
    pub(super) fn writable(
        &mut self,
        entries: &[Spanned<Scalar>],
        vars: &BTreeMap<String, String>,
        places: &Places<'_>,
    ) -> Vec<WritableRoot> {
        if let Some(first) = entries.first() {
            self.writable_profile(first, places.profile);
        }
        let kept = places.workspace.map(|ws| kept_paths(ws, places.outputs));
        let mut roots: Vec<WritableRoot> = Vec::new();
        for entry in entries {
            let pos = pos_of(&self.r, entry);
            let (line, column) = (pos.line, pos.column);
            let Some(text) = self.writable_text(entry, vars) else {
                continue;
            };
            let Some(path) = self.writable_path(text.trim(), pos, kept.as_ref()) else {
                continue;
            };
            if roots.iter().any(|r| r.path == path) {
                self.r.warning(
                    pos,
                    format!("`{path}` is listed twice in `sandbox.writable`"),
                );
                continue;
            }
            roots.push(WritableRoot { path, line, column });
        }
        roots
    }

    /// An entry's text with vars substituted; `None` after reporting an
    /// entry that is not text (YAML reads a bare `~` as null).
    fn writable_text(
        &mut self,
        entry: &Spanned<Scalar>,
        vars: &BTreeMap<String, String>,
    ) -> Option<String> {
        let text = match &entry.value {
            Scalar::Str(text) => text.clone(),
            Scalar::Null => {
                let pos = pos_of(&self.r, entry);
                self.r.error(
                    pos,
                    "an entry of `sandbox.writable` is empty (YAML reads a bare `~` as \
                     nothing); name a folder, quoted when it starts with `~`: \
                     `\"~/.cache/tool\"`",
                );
                return None;
            }
            other => {
                let pos = pos_of(&self.r, entry);
                self.r.error(
                    pos,
                    format!(
                        "an entry of `sandbox.writable` must be a path or a preset ({}), \
                         found {} `{}`",
                        CachePreset::listed(),
                        other.kind(),
                        other.text()
                    ),
                );
                return None;
            }
        };
        let spanned = Spanned {
            value: text,
            referenced: entry.referenced,
            defined: entry.defined,
        };
        self.substitute(&spanned, vars)
    }

    /// Extra writable folders mean something only under `workspace-write`.
    fn writable_profile(&mut self, first: &Spanned<Scalar>, profile: SandboxProfile) {
        let pos = pos_of(&self.r, first);
        match profile {
            SandboxProfile::WorkspaceWrite => {}
            SandboxProfile::ReadOnly => self.r.error(
                pos,
                "`sandbox.writable` needs the `workspace-write` profile: under `read-only` \
                 commands write only their temporary folder; remove `writable` or use \
                 `profile: workspace-write`",
            ),
            SandboxProfile::Off => self.r.warning(
                pos,
                "`sandbox.writable` has no effect under `sandbox: off`, where commands may \
                 write anywhere",
            ),
        }
    }

    /// One entry, substituted and trimmed; `None` after reporting why it is wrong.
    fn writable_path(
        &mut self,
        text: &str,
        pos: Pos,
        kept: Option<&KeptPaths>,
    ) -> Option<WritablePath> {
        let problem = |what: &str| format!("`sandbox.writable` entry `{text}` {what}");
        if text.is_empty() {
            self.r.error(
                pos,
                format!(
                    "an entry of `sandbox.writable` is empty; write an absolute path, a path \
                     starting with `~/`, or a preset ({})",
                    CachePreset::listed()
                ),
            );
            return None;
        }
        if let Some(name) = text.strip_prefix("preset:") {
            let preset = CachePreset::parse(name.trim());
            if preset.is_none() {
                self.r.error(
                    pos,
                    format!(
                        "unknown preset `{text}` in `sandbox.writable`; use one of {}",
                        CachePreset::listed()
                    ),
                );
            }
            return preset.map(WritablePath::Preset);
        }
        if Path::new(text)
            .components()
            .any(|c| c == Component::ParentDir)
        {
            self.r
                .error(pos, problem("holds `..`; write the folder's own path"));
            return None;
        }
        if text == "~" || text == "~/" {
            self.r.error(
                pos,
                problem(
                    "is the home folder itself, whose shell, git and ssh configuration later \
                     workflow steps obey; name the cache folder inside it (`~/.cache/tool`)",
                ),
            );
            return None;
        }
        if let Some(rest) = text.strip_prefix("~/") {
            return Some(WritablePath::Home(normalize(Path::new(
                rest.trim_start_matches('/'),
            ))));
        }
        if text.starts_with('~') {
            self.r.error(
                pos,
                problem(
                    "names another user's home folder; write `~/…` (the home folder of the \
                     user agentci runs as) or an absolute path",
                ),
            );
            return None;
        }
        let path = normalize(Path::new(text));
        if !path.is_absolute() {
            self.r.error(
                pos,
                problem(
                    "is a relative path; write an absolute path or one starting with `~/` \
                     (the workspace is writable already)",
                ),
            );
            return None;
        }
        self.judge_absolute(&path, text, pos, kept)
            .then_some(WritablePath::Absolute(path))
    }

    /// Whether an absolute entry may be writable, as far as the job tells.
    fn judge_absolute(
        &mut self,
        path: &Path,
        text: &str,
        pos: Pos,
        kept: Option<&KeptPaths>,
    ) -> bool {
        let refusal = match kept {
            Some(kept) => kept.refusal(path),
            // Without a workspace only the system folders can be judged.
            None => system_folder(path).map(|reason| Refusal::System { reason }),
        };
        if let Some(refusal) = refusal {
            self.r
                .error(pos, format!("`sandbox.writable` entry `{text}` {refusal}"));
            return false;
        }
        if kept.is_some_and(|k| path.starts_with(&k.workspace)) {
            self.r.warning(
                pos,
                format!(
                    "`sandbox.writable` entry `{text}` is inside the workspace, which is \
                     writable already; remove it"
                ),
            );
        }
        true
    }
}

/// What an entry must keep clear of, as the job tells: the workspace's
/// `.git` and `.agentci` (the default run folder) and the job's outputs.
pub(crate) fn kept_paths(workspace: &Path, outputs: &OutputsSpec) -> KeptPaths {
    let own = [
        &outputs.dir,
        &outputs.trace,
        &outputs.junit,
        &outputs.patch,
        &outputs.result,
    ];
    let mut own_paths: Vec<PathBuf> = vec![workspace.join(".agentci")];
    own_paths.extend(own.into_iter().flatten().cloned());
    KeptPaths {
        workspace: workspace.to_path_buf(),
        own: own_paths,
        read_only: vec![workspace.join(".git")],
        home: None,
    }
}
