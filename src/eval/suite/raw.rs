//! The suite file as written: private structs that serde fills from YAML.
//!
//! Like [`crate::spec`]'s raw job, they fix only the shape; values that need
//! a semantic check are `Spanned` so the checker can point at them, and
//! numbers arrive as [`Scalar`]s. Unknown keys stop the parse.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_saphyr::Spanned;

use crate::spec::raw::Scalar;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSuite {
    pub version: Option<Spanned<Scalar>>,
    pub name: Option<Spanned<String>>,
    pub job: Option<Spanned<String>>,
    pub min_pass_rate: Option<Spanned<Scalar>>,
    pub cases: Option<Spanned<Vec<Spanned<RawCase>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCase {
    pub name: Option<Spanned<String>>,
    pub fixture: Option<Spanned<RawFixture>>,
    pub goal: Option<Spanned<String>>,
    #[serde(default)]
    pub vars: BTreeMap<String, Spanned<Scalar>>,
    /// `PROVIDER:NAME`; any YAML value, so that a mapping (as a job's
    /// `model:` is written) gets a message about case models.
    pub model: Option<Spanned<serde_json::Value>>,
    pub budget: Option<RawBudget>,
    pub cassette: Option<Spanned<String>>,
    pub cassettes: Option<Spanned<Vec<Spanned<String>>>>,
    pub min_pass_rate: Option<Spanned<Scalar>>,
    #[serde(default, rename = "assert")]
    pub assertions: Vec<Spanned<RawAssertion>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBudget {
    pub max_turns: Option<Spanned<Scalar>>,
    pub max_tool_calls: Option<Spanned<Scalar>>,
    pub max_tokens: Option<Spanned<Scalar>>,
    pub max_cost_usd: Option<Spanned<Scalar>>,
    pub timeout: Option<Spanned<Scalar>>,
}

/// One entry of a case's `assert:` list: a mapping with exactly one key.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum RawAssertion {
    Run(String),
    FileContains(RawFilePattern),
    FileNotContains(RawFilePattern),
    FileUnchanged(String),
    DiffTouchesOnly(Vec<String>),
    ToolCalled(String),
    ToolNotCalled(String),
    MaxTurns(Scalar),
    MaxCostUsd(Scalar),
    MaxDuration(Scalar),
    Status(String),
    FinalTextMatches(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
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
