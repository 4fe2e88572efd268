//! The SKILL.md frontmatter as written, before any value is checked:
//! deserialized by hand so that keys agentci does not read are collected
//! with their positions (they become warnings) instead of rejected, and so
//! that `allowed-tools` may be a string or a list. Checking the values is
//! the parent module's job.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use crate::spec::raw::Scalar;

/// The keys the frontmatter is read for; every other key is a warning.
pub(super) const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
    "model",
    "max-turns",
];

/// The frontmatter as written. Deserialized by hand so unknown keys can be
/// collected (with their positions) instead of rejected.
#[derive(Default)]
pub(super) struct RawFrontmatter {
    // `Spanned<Option<_>>`: a key written with no value (`description:`)
    // is present and empty, at its own line, not missing.
    pub(super) name: Option<Spanned<Option<String>>>,
    pub(super) description: Option<Spanned<Option<String>>>,
    pub(super) license: Option<Spanned<Option<String>>>,
    pub(super) compatibility: Option<Spanned<Option<String>>>,
    pub(super) metadata: Option<BTreeMap<String, Scalar>>,
    pub(super) allowed_tools: Option<Spanned<AllowedTools>>,
    pub(super) model: Option<Spanned<Option<String>>>,
    pub(super) max_turns: Option<Spanned<Scalar>>,
    pub(super) unknown: Vec<Spanned<String>>,
}

impl<'de> Deserialize<'de> for RawFrontmatter {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FrontmatterVisitor)
    }
}

struct FrontmatterVisitor;

impl<'de> Visitor<'de> for FrontmatterVisitor {
    type Value = RawFrontmatter;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping of frontmatter keys (name, description, …)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFrontmatter, A::Error> {
        let mut raw = RawFrontmatter::default();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            match key.value.as_str() {
                "name" => raw.name = Some(map.next_value()?),
                "description" => raw.description = Some(map.next_value()?),
                "license" => raw.license = Some(map.next_value()?),
                "compatibility" => raw.compatibility = Some(map.next_value()?),
                "metadata" => raw.metadata = map.next_value()?,
                "allowed-tools" => raw.allowed_tools = map.next_value()?,
                "model" => raw.model = Some(map.next_value()?),
                "max-turns" => raw.max_turns = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    raw.unknown.push(key);
                }
            }
        }
        Ok(raw)
    }
}

/// `allowed-tools: Read Grep Bash(git diff:*)` or a YAML list; `allowed-tools:`
/// with no value is the empty string (it allows nothing, as `""` does).
pub(super) enum AllowedTools {
    Text(String),
    List(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for AllowedTools {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AllowedToolsVisitor)
    }
}

struct AllowedToolsVisitor;

impl<'de> Visitor<'de> for AllowedToolsVisitor {
    type Value = AllowedTools;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("space-separated tool names or a list of them")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<AllowedTools, E> {
        Ok(AllowedTools::Text(v.to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<AllowedTools, E> {
        Ok(AllowedTools::Text(String::new()))
    }

    fn visit_none<E: de::Error>(self) -> Result<AllowedTools, E> {
        Ok(AllowedTools::Text(String::new()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AllowedTools, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<String>>()? {
            items.push(item);
        }
        Ok(AllowedTools::List(items))
    }
}
