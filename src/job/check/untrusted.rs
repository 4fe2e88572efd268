//! The job's keys about untrusted input: `untrusted_inputs` (paths or globs
//! relative to the workspace whose contents reach the model fenced and
//! cleaned) and `trust_workspace` (whether skills found in the workspace
//! may load; unset means "unless the run comes from a pull request").

use std::path::{Component, Path};

use globset::GlobBuilder;
use serde_saphyr::Spanned;

use super::Checker;
use crate::job::load::pos_of;

impl Checker<'_> {
    /// Each entry must be a relative path or glob that stays inside the workspace.
    pub(super) fn untrusted_inputs(&mut self, raw: &[Spanned<String>]) -> Vec<String> {
        let mut out = Vec::new();
        for entry in raw {
            let pos = pos_of(&self.r, entry);
            let text = entry.value.trim();
            let path = Path::new(text);
            let problem = if text.is_empty() {
                Some("an entry of `untrusted_inputs` is empty; write a path or glob such as `notes/*.md`".to_string())
            } else if path.is_absolute() {
                Some(format!(
                    "`untrusted_inputs` entry `{text}` is absolute; write it relative to the workspace"
                ))
            } else if path.components().any(|c| c == Component::ParentDir) {
                Some(format!(
                    "`untrusted_inputs` entry `{text}` climbs out with `..`; untrusted inputs are \
                     files inside the workspace"
                ))
            } else if let Err(e) = GlobBuilder::new(text).literal_separator(true).build() {
                Some(format!(
                    "`untrusted_inputs` entry `{text}` is not a valid glob: {e}"
                ))
            } else {
                None
            };
            match problem {
                Some(message) => self.r.error(pos, message),
                None => out.push(text.to_string()),
            }
        }
        out
    }
}
