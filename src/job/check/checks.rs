//! The job's `checks:` key: each check's name (required, unique, `${vars}`
//! substituted), its shell command and its timeout (10m when not given).
//!
//! Only the validation; running the checks is the runner's.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_saphyr::Spanned;

use super::Checker;
use crate::job::CheckSpec;
use crate::job::diagnostic::Pos;
use crate::job::load::pos_of;
use crate::job::raw::RawCheck;

const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(600);

impl Checker<'_> {
    pub(super) fn checks(
        &mut self,
        raw: &[Spanned<RawCheck>],
        vars: &BTreeMap<String, String>,
    ) -> Vec<CheckSpec> {
        let mut out = Vec::new();
        let mut seen: HashMap<String, Pos> = HashMap::new();
        for check in raw {
            let at = pos_of(&self.r, check);
            let name = match &check.value.name {
                None => {
                    self.r.error(
                        at,
                        "check without a `name`; every check needs a unique name",
                    );
                    None
                }
                Some(n) => {
                    let text = self.substitute(n, vars);
                    let pos = pos_of(&self.r, n);
                    match text {
                        Some(t) if t.trim().is_empty() => {
                            self.r.error(pos, "check `name` is empty");
                            None
                        }
                        Some(t) => {
                            if let Some(first) = seen.get(&t) {
                                self.r.error(
                                    pos,
                                    format!(
                                        "duplicate check name `{t}` (first used at line {}); \
                                         check names must be unique",
                                        first.line
                                    ),
                                );
                            } else {
                                seen.insert(t.clone(), pos);
                            }
                            Some(t)
                        }
                        None => None,
                    }
                }
            };
            let run = match &check.value.run {
                None => {
                    self.r
                        .error(at, "check without `run`; expected a shell command");
                    None
                }
                Some(r) => match self.substitute(r, vars) {
                    Some(t) if t.trim().is_empty() => {
                        let pos = pos_of(&self.r, r);
                        self.r
                            .error(pos, "check `run` is empty; expected a shell command");
                        None
                    }
                    other => other,
                },
            };
            let timeout = match &check.value.timeout {
                None => Some(DEFAULT_CHECK_TIMEOUT),
                Some(t) => self.duration(t, "timeout"),
            };
            if let (Some(name), Some(run), Some(timeout)) = (name, run, timeout) {
                out.push(CheckSpec { name, run, timeout });
            }
        }
        out
    }
}
