//! The JSON Schema of the job file, generated from the raw structs the
//! loader parses (`super::raw`), so the schema editors use for completion
//! and the loader cannot disagree about which keys exist and where.
//!
//! The raw structs read numbers, flags and durations as a loose
//! `Scalar` so that a wrong value is reported with the other problems;
//! the schema says what the checks accept instead (the `with = …` types
//! below), so an editor flags `max_turns: ten` as you type. The hand-written
//! impls are for the raw types serde reads with a visitor (a value that may
//! be a string or a mapping). This module describes; it validates nothing.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use super::raw::{RawNetwork, RawPush, RawSandbox, RawSkill, Scalar};

/// The JSON Schema of a job file, as `agentci schema job` prints it.
pub fn job_schema() -> serde_json::Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<super::raw::RawJob>();
    schema.insert("title".into(), "agentci job".into());
    schema.to_value()
}

/// An item of `tools:`: one of the builtin tools, listed from the catalog,
/// so an editor completes them and a schema check refuses `tools: [bash]`
/// (the loader refuses any other name too).
pub(crate) struct ToolName;

impl JsonSchema for ToolName {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("ToolName")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names = crate::tools::catalog::names();
        json_schema!({"type": "string", "enum": names})
    }
}

/// `model.provider`: the providers a job can name.
pub(crate) struct ProviderName;

impl JsonSchema for ProviderName {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("ProviderName")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = super::ProviderKind::ALL
            .iter()
            .map(|p| p.as_str())
            .collect();
        json_schema!({"type": "string", "enum": names})
    }
}

macro_rules! schema_only {
    ($(#[doc = $doc:literal])* $name:ident, $id:literal, $schema:tt) => {
        $(#[doc = $doc])*
        pub(crate) struct $name;

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed($id)
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    };
}

schema_only!(
    /// A whole number of at least 1 (turns, calls, tokens, attempts).
    Whole,
    "Whole",
    {"type": "integer", "minimum": 1}
);
schema_only!(
    /// A number (a price, a fraction).
    Number,
    "Number",
    {"type": "number"}
);
schema_only!(
    /// A share of a whole: `0.8` or `80%`.
    Share,
    "Share",
    {
        "description": "a share such as `0.8` or `80%`",
        "anyOf": [{"type": "number"}, {"type": "string", "pattern": "^[0-9.]+%$"}]
    }
);
schema_only!(
    /// `true` or `false`.
    Flag,
    "Flag",
    {"type": "boolean"}
);
schema_only!(
    /// `15m`, `1h30m`, `500ms`, or whole seconds.
    DurationText,
    "Duration",
    {
        "description": "a duration such as `90s`, `15m`, `1h30m` or `500ms`, or whole seconds",
        "type": ["string", "integer"]
    }
);
schema_only!(
    /// `512MiB`, `4GiB`, or bytes.
    SizeText,
    "Size",
    {
        "description": "a size such as `512MiB` or `4GiB`, or a whole number of bytes",
        "type": ["string", "integer"]
    }
);
schema_only!(
    /// The only version there is.
    Version,
    "Version",
    {"description": "the job file format's version: 1", "const": 1}
);

impl JsonSchema for Scalar {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Scalar")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "text, a number or a boolean",
            "type": ["string", "number", "boolean", "null"]
        })
    }
}

impl JsonSchema for RawSkill {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Skill")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "a skill's name (a folder under a skills path), `{path: DIR}`, \
                            `{git: URL, rev: SHA, path: DIR}` for a skill in a git repository, or \
                            `{builtin: general}` for the skill built into agentci",
            "anyOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "the skill's folder (relative to the job file, or inside the repository)"},
                        "git": {"type": "string", "description": "the repository's URL"},
                        "rev": {"type": "string", "description": "the commit to use (a full SHA, or a tag or branch)"},
                        "builtin": {"type": "string", "enum": ["general"], "description": "a skill built into agentci: `general`, a careful general-purpose coding agent"}
                    },
                    "additionalProperties": false,
                    "anyOf": [{"required": ["git"]}, {"required": ["path"]}, {"required": ["builtin"]}]
                }
            ]
        })
    }
}

impl JsonSchema for RawPush {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Push")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "push the commit: `true` (to origin with GITHUB_TOKEN), or \
                            `{remote, token_env}`",
            "anyOf": [
                {"type": "boolean"},
                {
                    "type": "object",
                    "properties": {
                        "remote": {"type": "string"},
                        "token_env": {"type": "string", "description": "the environment variable holding the token"}
                    },
                    "additionalProperties": false
                }
            ]
        })
    }
}

impl JsonSchema for RawNetwork {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Network")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "whether commands may reach the network: `false`, `true`, or the \
                            hosts they may reach through agentci's proxy \
                            (`[crates.io, preset:npm]`)",
            "anyOf": [
                {"type": "boolean"},
                {"type": "array", "items": {"type": "string"}}
            ]
        })
    }
}

const PROFILES: [&str; 3] = ["workspace-write", "read-only", "off"];

impl JsonSchema for RawSandbox {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Sandbox")
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let network = generator.subschema_for::<RawNetwork>();
        let limits = generator.subschema_for::<Option<super::raw::RawLimits>>();
        let writable = generator.subschema_for::<Option<Vec<String>>>();
        json_schema!({
            "description": "how commands are confined: a profile, or \
                            `{profile, network, require, limits, writable}`",
            "anyOf": [
                {"enum": PROFILES},
                // YAML 1.1 reads an unquoted `off` as `false`.
                {"const": false},
                {
                    "type": "object",
                    "properties": {
                        "profile": {"anyOf": [{"enum": PROFILES}, {"const": false}]},
                        "network": network,
                        "require": {"type": "boolean", "default": true, "description": "refuse to start the run when this machine cannot enforce the whole profile (default true); false runs with the degraded sandbox and a warning"},
                        "limits": limits,
                        "writable": writable
                    },
                    "additionalProperties": false
                }
            ]
        })
    }
}
