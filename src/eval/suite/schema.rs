//! The JSON Schema of an eval suite file, generated from the raw structs
//! the suite loader parses ([`super::raw`]), so the schema editors use and
//! the loader cannot disagree. Shared value types (durations, flags) come
//! from [`crate::job::schema`]; this module describes, it validates nothing.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use super::raw::{RawFixture, RawSuite};

/// The JSON Schema of a suite file, as `agentci schema suite` prints it.
pub fn suite_schema() -> serde_json::Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<RawSuite>();
    schema.insert("title".into(), "agentci eval suite".into());
    schema.to_value()
}

impl JsonSchema for RawFixture {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Fixture")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "the repository a case starts from: a folder (relative to the suite \
                            file), or `{git: PATH_OR_URL, rev: REV}`",
            "anyOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {
                        "git": {"type": "string", "description": "a repository's path or URL"},
                        "rev": {"type": "string", "description": "the revision to check out"}
                    },
                    "required": ["git"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

/// An item of a judge's `sees:`, for the schema only (the checker reads any
/// YAML value there, to say what a wrong item should be).
pub(super) struct JudgeSees;

impl JsonSchema for JudgeSees {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("JudgeSees")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "what the judge is shown: `final_text`, `diff`, `result`, \
                            `trace_summary`, or `{files: [GLOB, …]}` (workspace files after \
                            the run)",
            "anyOf": [
                {"enum": ["final_text", "diff", "result", "trace_summary"]},
                {
                    "type": "object",
                    "properties": {
                        "files": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["files"],
                    "additionalProperties": false
                }
            ]
        })
    }
}
