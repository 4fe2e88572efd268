//! Checking a `judge:` assertion (a model grades the run against a rubric):
//! its rubric, model, server, pass score, sample count and what it sees,
//! each problem reported at its own line and column with the fix. Calling
//! the judge is [`crate::eval::judge`]'s job.

use globset::{Glob, GlobSetBuilder};
use serde_json::Value;
use serde_saphyr::Spanned;

use super::check::SuiteChecker;
use super::raw::RawJudge;
use super::{JudgeSees, JudgeSpec};
use crate::job::diagnostic::Pos;
use crate::job::load::{check_base_url, parse_model_flag};
use crate::job::raw::Scalar;

/// The default `pass_score`.
const PASS_SCORE: f64 = 0.7;
/// The most samples one assertion may take (each is a model call).
const MAX_JUDGES: u64 = 15;
const SEES_NAMES: &str = "final_text, diff, result, trace_summary or {files: [GLOB, …]}";

impl SuiteChecker<'_> {
    pub(super) fn judge(&mut self, raw: &RawJudge, pos: Pos) -> Option<JudgeSpec> {
        let rubric = match &raw.rubric {
            Some(r) if !r.value.trim().is_empty() => Some(r.value.trim().to_string()),
            Some(r) => {
                let at = self.r.pos(&r.referenced);
                self.r.error(
                    at,
                    "`judge.rubric` is empty; say what the judge grades against, e.g. \
                     `rubric: The fix keeps the public API unchanged`",
                );
                None
            }
            None => {
                self.r.error(
                    pos,
                    "`judge` needs a `rubric`: what the judge grades against, e.g. \
                     `rubric: The fix keeps the public API unchanged`",
                );
                None
            }
        };
        let model = raw.model.as_ref().and_then(|m| {
            let at = self.r.pos(&m.referenced);
            match parse_model_flag(m.value.trim()) {
                Ok(_) => Some(Some(m.value.trim().to_string())),
                Err(e) => {
                    self.r.error(
                        at,
                        format!(
                            "`judge.model`: {e}; or leave it out to judge with the job's model"
                        ),
                    );
                    None
                }
            }
        });
        let base_url = raw.base_url.as_ref().and_then(|u| {
            let at = self.r.pos(&u.referenced);
            match check_base_url(u.value.trim()) {
                Ok(()) => Some(Some(u.value.trim().to_string())),
                Err(e) => {
                    self.r.error(at, format!("`judge.base_url`: {e}"));
                    None
                }
            }
        });
        let pass_score = match &raw.pass_score {
            Some(v) => self.score(v),
            None => Some(PASS_SCORE),
        };
        let judges = match &raw.judges {
            Some(v) => self
                .whole(&v.value, v, "judge.judges", MAX_JUDGES)
                .map(|n| n as u32),
            None => Some(1),
        };
        let sees = match &raw.sees {
            Some(sees) => self.sees(sees),
            None => Some(vec![JudgeSees::FinalText, JudgeSees::Diff]),
        };
        Some(JudgeSpec {
            rubric: rubric?,
            model: raw.model.as_ref().map_or(Some(None), |_| model)?,
            base_url: raw.base_url.as_ref().map_or(Some(None), |_| base_url)?,
            pass_score: pass_score?,
            judges: judges?,
            sees: sees?,
        })
    }

    /// `pass_score`: a number from 0 to 1.
    fn score(&mut self, value: &Spanned<Scalar>) -> Option<f64> {
        let n = match value.value {
            Scalar::Int(n) => Some(n as f64),
            Scalar::Float(f) => Some(f),
            _ => None,
        };
        match n {
            Some(n) if (0.0..=1.0).contains(&n) => Some(n),
            _ => {
                let at = self.r.pos(&value.referenced);
                self.r.error(
                    at,
                    format!(
                        "`judge.pass_score` must be a number from 0 to 1 such as 0.7 (the \
                         median score at or above which the assertion passes), found {} `{}`",
                        value.value.kind(),
                        value.value.text()
                    ),
                );
                None
            }
        }
    }

    fn sees(&mut self, raw: &Spanned<Vec<Spanned<Value>>>) -> Option<Vec<JudgeSees>> {
        if raw.value.is_empty() {
            let at = self.r.pos(&raw.referenced);
            self.r.error(
                at,
                format!("`judge.sees` is empty; list what the judge is shown: {SEES_NAMES}"),
            );
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for item in &raw.value {
            match self.seen(item) {
                Some(seen) => out.push(seen),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn seen(&mut self, item: &Spanned<Value>) -> Option<JudgeSees> {
        let at = self.r.pos(&item.referenced);
        let globs = match &item.value {
            Value::String(name) => {
                return match name.as_str() {
                    "final_text" => Some(JudgeSees::FinalText),
                    "diff" => Some(JudgeSees::Diff),
                    "result" => Some(JudgeSees::Result),
                    "trace_summary" => Some(JudgeSees::TraceSummary),
                    other => {
                        self.r.error(
                            at,
                            format!("unknown `judge.sees` item `{other}`; expected {SEES_NAMES}"),
                        );
                        None
                    }
                };
            }
            Value::Object(map) if map.len() == 1 && map.contains_key("files") => &map["files"],
            other => {
                let found = match other {
                    Value::Object(map) => format!(
                        "a mapping with {}",
                        map.keys()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    other => format!("`{other}`"),
                };
                self.r.error(
                    at,
                    format!("unknown `judge.sees` item, {found}; expected {SEES_NAMES}"),
                );
                return None;
            }
        };
        let globs: Option<Vec<String>> = globs.as_array().and_then(|items| {
            items
                .iter()
                .map(|g| g.as_str().map(str::to_string))
                .collect()
        });
        let Some(globs) = globs.filter(|g| !g.is_empty()) else {
            self.r.error(
                at,
                "`judge.sees`: `files` takes a list of workspace globs, e.g. \
                 `{files: [src/**/*.rs]}`",
            );
            return None;
        };
        let mut builder = GlobSetBuilder::new();
        for glob in &globs {
            match Glob::new(glob.trim_start_matches("./")) {
                Ok(g) => {
                    builder.add(g);
                }
                Err(e) => {
                    self.r.error(
                        at,
                        format!("`judge.sees`: bad glob `{glob}` in `files`: {e}"),
                    );
                    return None;
                }
            }
        }
        let set = builder.build().ok()?;
        Some(JudgeSees::Files { globs, set })
    }
}
