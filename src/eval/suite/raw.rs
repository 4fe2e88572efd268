//! The suite file as written: private structs that serde fills from YAML.
//!
//! Like [`crate::job`]'s raw job, they fix only the shape; values that need
//! a semantic check are `Spanned` so the checker can point at them, and
//! numbers arrive as [`Scalar`]s. Unknown keys stop the parse.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_saphyr::Spanned;

use crate::job::raw::{RawBudget, Scalar};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Suite")]
pub(super) struct RawSuite {
    /// The suite file format's version; only `1` exists.
    #[schemars(with = "Option<crate::job::schema::Version>")]
    pub version: Option<Spanned<Scalar>>,
    /// The suite's name, shown in reports.
    #[schemars(with = "Option<String>")]
    pub name: Option<Spanned<String>>,
    /// The job file every case runs (relative to the suite file).
    #[schemars(with = "Option<String>")]
    pub job: Option<Spanned<String>>,
    /// The share of runs (0 to 1) that must pass, or the build fails.
    #[schemars(with = "Option<crate::job::schema::Number>")]
    pub min_pass_rate: Option<Spanned<Scalar>>,
    /// The cases: each a fixture repository, a goal or vars, and assertions.
    #[schemars(with = "Option<Vec<RawCase>>")]
    pub cases: Option<Spanned<Vec<Spanned<RawCase>>>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Case")]
pub(super) struct RawCase {
    /// The case's name.
    #[schemars(with = "Option<String>")]
    pub name: Option<Spanned<String>>,
    /// The repository the case starts from: a folder, or `{git, rev}`.
    #[schemars(with = "Option<RawFixture>")]
    pub fixture: Option<Spanned<RawFixture>>,
    /// Overrides the job's goal.
    #[schemars(with = "Option<String>")]
    pub goal: Option<Spanned<String>>,
    /// Overrides the job's vars.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Scalar>")]
    pub vars: BTreeMap<String, Spanned<Scalar>>,
    /// `PROVIDER:NAME`; any YAML value, so that a mapping (as a job's
    /// `model:` is written) gets a message about case models.
    #[schemars(with = "Option<serde_json::Value>")]
    pub model: Option<Spanned<serde_json::Value>>,
    /// Overrides the job's budget.
    pub budget: Option<RawBudget>,
    /// A recorded session to replay instead of calling a model.
    #[schemars(with = "Option<String>")]
    pub cassette: Option<Spanned<String>>,
    /// Recorded sessions to replay, one per repeat.
    #[schemars(with = "Option<Vec<String>>")]
    pub cassettes: Option<Spanned<Vec<Spanned<String>>>>,
    /// This case's pass rate threshold.
    #[schemars(with = "Option<crate::job::schema::Number>")]
    pub min_pass_rate: Option<Spanned<Scalar>>,
    /// What must hold after the run, each a one-key mapping such as `run: cargo test` or `file_contains: {path, pattern}`.
    #[serde(default, rename = "assert")]
    #[schemars(with = "Vec<RawAssertion>")]
    pub assertions: Vec<Spanned<RawAssertion>>,
}

/// One entry of a case's `assert:` list: a mapping with exactly one key.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "Assertion")]
pub(super) enum RawAssertion {
    Run(String),
    FileContains(RawFilePattern),
    FileNotContains(RawFilePattern),
    FileUnchanged(String),
    DiffTouchesOnly(Vec<String>),
    ToolCalled(String),
    ToolNotCalled(String),
    MaxTurns(#[schemars(with = "crate::job::schema::Whole")] Scalar),
    MaxCostUsd(#[schemars(with = "crate::job::schema::Number")] Scalar),
    MaxDuration(#[schemars(with = "crate::job::schema::DurationText")] Scalar),
    Status(String),
    FinalTextMatches(String),
    /// A model grades the run against a rubric (see docs/eval.md, "Graded assertions").
    Judge(Box<RawJudge>),
}

/// `judge: {rubric, model, base_url, pass_score, judges, sees}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Judge")]
pub(super) struct RawJudge {
    /// What the judge grades against, in plain words.
    #[schemars(with = "Option<String>")]
    pub rubric: Option<Spanned<String>>,
    /// `PROVIDER:NAME` of the judging model; the job's model when absent.
    #[schemars(with = "Option<String>")]
    pub model: Option<Spanned<String>>,
    /// The judging model's server; the job's when absent.
    #[schemars(with = "Option<String>")]
    pub base_url: Option<Spanned<String>>,
    /// The median score (0 to 1) at or above which the assertion passes (default 0.7).
    #[schemars(with = "Option<crate::job::schema::Number>")]
    pub pass_score: Option<Spanned<Scalar>>,
    /// How many times the judge is asked; the median score decides (default 1).
    #[schemars(with = "Option<crate::job::schema::Whole>")]
    pub judges: Option<Spanned<Scalar>>,
    /// What the judge is shown: `final_text`, `diff`, `result`,
    /// `trace_summary`, `{files: [GLOB, …]}` (default `[final_text, diff]`).
    /// Any YAML value each, so the checker can say what a wrong item should be.
    #[schemars(with = "Option<Vec<super::schema::JudgeSees>>")]
    pub sees: Option<Spanned<Vec<Spanned<serde_json::Value>>>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "FilePattern")]
pub(super) struct RawFilePattern {
    pub path: String,
    pub pattern: String,
}

/// `fixture: DIR` or `fixture: {git: PATH_OR_URL, rev: REV}`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum RawFixture {
    Dir(String),
    Git { repo: String, rev: Option<String> },
}

const FIXTURE_KEYS: &[&str] = &["git", "rev"];

impl<'de> Deserialize<'de> for RawFixture {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FixtureVisitor)
    }
}

struct FixtureVisitor;

impl<'de> Visitor<'de> for FixtureVisitor {
    type Value = RawFixture;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a fixture folder or a mapping `{git: PATH_OR_URL, rev: REV}`")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawFixture, E> {
        Ok(RawFixture::Dir(v.to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFixture, A::Error> {
        let mut repo = None;
        let mut rev = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "git" => repo = Some(map.next_value::<String>()?),
                "rev" => rev = Some(map.next_value::<String>()?),
                other => return Err(de::Error::unknown_field(other, FIXTURE_KEYS)),
            }
        }
        match repo {
            Some(repo) => Ok(RawFixture::Git { repo, rev }),
            None => Err(de::Error::missing_field("git")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assertions_are_single_key_mappings() {
        let source = "cases:\n  - name: a\n    fixture: {git: ../r, rev: main}\n    assert:\n      - run: cargo test\n      - file_contains: {path: a, pattern: b}\n      - diff_touches_only: [src/**]\n      - max_turns: 4\n";
        let raw: RawSuite = serde_saphyr::from_str(source).unwrap();
        let cases = raw.cases.unwrap().value;
        let case = &cases[0].value;
        assert_eq!(case.assertions.len(), 4);
        assert!(matches!(case.assertions[0].value, RawAssertion::Run(ref c) if c == "cargo test"));
        assert!(matches!(
            case.assertions[3].value,
            RawAssertion::MaxTurns(Scalar::Int(4))
        ));
        assert_eq!(
            case.fixture.as_ref().unwrap().value,
            RawFixture::Git {
                repo: "../r".into(),
                rev: Some("main".into())
            }
        );
        let bad = "cases:\n  - name: a\n    assert:\n      - nope: 1\n";
        let err = serde_saphyr::from_str::<RawSuite>(bad).unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
    }
}
