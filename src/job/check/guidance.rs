//! The job keys for standing guidance: `memory` (a file in the workspace,
//! or `auto` for `AGENTS.md` when there is one), `rules` (short strings)
//! and `rules_reminder`. Reading the memory file and writing the prompt are
//! the run's business ([`crate::agent::memory`], [`crate::agent::protocol`]).

use std::path::{Component, Path};

use serde_saphyr::Spanned;

use super::Checker;
use crate::job::load::pos_of;
use crate::job::raw::RawJob;
use crate::job::{GuidanceSpec, MemorySpec};

/// More rules than this is a document, which belongs in the memory file.
const MAX_RULES: usize = 50;
/// A rule is one instruction; a longer text belongs in the memory file.
const MAX_RULE_CHARS: usize = 500;

impl Checker<'_> {
    pub(super) fn guidance(&mut self, raw: &RawJob, workspace: Option<&Path>) -> GuidanceSpec {
        let memory = raw.memory.as_ref().and_then(|m| self.memory(m, workspace));
        let rules = self.rules(raw.rules.as_deref().unwrap_or_default());
        let rules_reminder = self.optional_boolean(raw.rules_reminder.as_ref(), "rules_reminder");
        if rules_reminder
            && rules.is_empty()
            && let Some(value) = &raw.rules_reminder
        {
            let pos = pos_of(&self.r, value);
            self.r.warning(
                pos,
                "`rules_reminder: true` without `rules`: there is nothing to remind the model of",
            );
        }
        GuidanceSpec {
            memory,
            rules,
            rules_reminder,
        }
    }

    fn memory(&mut self, value: &Spanned<String>, workspace: Option<&Path>) -> Option<MemorySpec> {
        let pos = pos_of(&self.r, value);
        let text = value.value.trim();
        if text == "auto" {
            return Some(MemorySpec::Auto);
        }
        let path = Path::new(text);
        let problem = if text.is_empty() {
            "`memory` is empty; write a file relative to the workspace (such as `AGENTS.md`) or \
             `auto`"
                .to_string()
        } else if path.is_absolute() {
            format!("`memory` `{text}` is absolute; write it relative to the workspace")
        } else if path.components().any(|c| c == Component::ParentDir) {
            format!(
                "`memory` `{text}` climbs out with `..`; the memory file must be inside the \
                 workspace"
            )
        } else {
            let Some(root) = workspace else {
                // The workspace itself is wrong, and reported; nothing to look in.
                return None;
            };
            let full = root.join(path);
            if full.is_file() {
                return Some(MemorySpec::File(text.to_string()));
            }
            format!(
                "memory file `{text}` does not exist (looked for {}; the path is relative to the \
                 workspace); create it, fix the path, or write `memory: auto` to use AGENTS.md \
                 when there is one",
                full.display()
            )
        };
        self.r.error(pos, problem);
        None
    }

    fn rules(&mut self, raw: &[Spanned<String>]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for rule in raw {
            let pos = pos_of(&self.r, rule);
            let text = rule.value.trim();
            if text.is_empty() {
                self.r.error(
                    pos,
                    "an entry of `rules` is empty; write the rule as a string",
                );
            } else if text.chars().count() > MAX_RULE_CHARS {
                self.r.error(
                    pos,
                    format!(
                        "a rule is longer than {MAX_RULE_CHARS} characters; keep rules short and \
                         put longer guidance in the `memory` file"
                    ),
                );
            } else if out.iter().any(|r| r == text) {
                self.r
                    .warning(pos, format!("rule `{text}` is listed twice in `rules`"));
            } else if out.len() == MAX_RULES {
                self.r.error(
                    pos,
                    format!(
                        "more than {MAX_RULES} rules; put longer guidance in the `memory` file"
                    ),
                );
                break;
            } else {
                out.push(text.to_string());
            }
        }
        out
    }
}
