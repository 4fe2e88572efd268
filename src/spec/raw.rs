//! The job file as written: private structs that serde fills from YAML.
//!
//! They only fix the shape (which keys exist, which are lists or mappings);
//! every value that needs a semantic check is `Spanned` so the loader can
//! point at it. Numbers and durations arrive as [`Scalar`] so that a wrong
//! value is reported with the other semantic problems instead of stopping
//! the parse. Unknown keys stop the parse with the list of valid keys.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_saphyr::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJob {
    pub version: Option<Spanned<Scalar>>,
    pub name: Option<Spanned<String>>,
    pub skill: Option<Spanned<RawSkill>>,
    pub goal: Option<Spanned<String>>,
    #[serde(default)]
    pub vars: BTreeMap<String, Spanned<Scalar>>,
    pub model: Option<Spanned<RawModel>>,
    pub tools: Option<Vec<Spanned<String>>>,
    pub permissions: Option<RawPermissions>,
    pub budget: Option<RawBudget>,
    pub workspace: Option<Spanned<String>>,
    pub checks: Option<Vec<Spanned<RawCheck>>>,
    pub outputs: Option<RawOutputs>,
    pub skills_path: Option<Vec<Spanned<String>>>,
    /// Further skills the model may read when it needs them.
    pub skills: Option<Vec<Spanned<String>>>,
    pub max_plan_turns: Option<Spanned<Scalar>>,
    pub secrets: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    pub env: BTreeMap<String, Spanned<Scalar>>,
    pub allow_dirty: Option<Spanned<Scalar>>,
    pub untrusted_inputs: Option<Vec<Spanned<String>>>,
    pub trust_workspace: Option<Spanned<Scalar>>,
    pub sandbox: Option<Spanned<RawSandbox>>,
    pub mcp: Option<Spanned<super::raw_mcp::RawMcp>>,
    pub max_parallel_tools: Option<Spanned<Scalar>>,
    pub tool_timeout: Option<Spanned<Scalar>>,
    pub tool_timeouts: Option<BTreeMap<String, Spanned<Scalar>>>,
    pub loop_guard: Option<RawLoopGuard>,
    pub task: Option<RawTask>,
    pub memory: Option<Spanned<String>>,
    pub rules: Option<Vec<Spanned<String>>>,
    pub rules_reminder: Option<Spanned<Scalar>>,
    pub checks_rounds: Option<Spanned<Scalar>>,
    /// An inline JSON Schema (a mapping) or the path of a `.json` file holding one.
    pub result_schema: Option<Spanned<serde_json::Value>>,
}

/// `task:`, the sub-agents the `task` tool starts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTask {
    pub max_turns: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoopGuard {
    pub repeats: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    pub provider: Option<Spanned<String>>,
    pub name: Option<Spanned<String>>,
    pub base_url: Option<Spanned<String>>,
    pub api_key_env: Option<Spanned<String>>,
    pub cassette: Option<Spanned<String>>,
    pub request_timeout: Option<Spanned<Scalar>>,
    pub stream: Option<Spanned<Scalar>>,
    pub retry: Option<Spanned<RawRetry>>,
    pub price: Option<Spanned<RawPrice>>,
    pub replay: Option<Spanned<RawReplay>>,
    pub context_window: Option<Spanned<Scalar>>,
    pub compact_at: Option<Spanned<Scalar>>,
    pub compact_with: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReplay {
    #[serde(rename = "match")]
    pub match_mode: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRetry {
    pub max_attempts_connect: Option<Spanned<Scalar>>,
    pub max_attempts_status: Option<Spanned<Scalar>>,
    pub initial_backoff: Option<Spanned<Scalar>>,
    pub max_backoff: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrice {
    pub input_per_mtok: Option<Spanned<Scalar>>,
    pub output_per_mtok: Option<Spanned<Scalar>>,
    pub cache_read_per_mtok: Option<Spanned<Scalar>>,
    pub cache_write_per_mtok: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPermissions {
    pub default: Option<Spanned<String>>,
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
    pub allow_hard_links: Option<Spanned<Scalar>>,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCheck {
    pub name: Option<Spanned<String>>,
    pub run: Option<Spanned<String>>,
    pub timeout: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOutputs {
    pub dir: Option<Spanned<String>>,
    pub trace: Option<Spanned<String>>,
    pub junit: Option<Spanned<String>>,
    pub patch: Option<Spanned<String>>,
    pub result: Option<Spanned<String>>,
    pub commit: Option<Spanned<RawCommit>>,
    pub push: Option<Spanned<RawPush>>,
    pub max_file_size: Option<Spanned<Scalar>>,
    pub include_binary: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCommit {
    pub branch: Option<Spanned<String>>,
    pub message: Option<Spanned<String>>,
    pub author: Option<Spanned<RawAuthor>>,
    pub on_failure: Option<Spanned<Scalar>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuthor {
    pub name: Option<Spanned<String>>,
    pub email: Option<Spanned<String>>,
}

/// `push: true` (origin, `GITHUB_TOKEN`), `push: false`, or `{remote, token_env}`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum RawPush {
    Enabled(bool),
    To {
        remote: Option<String>,
        token_env: Option<String>,
    },
}

const PUSH_KEYS: &[&str] = &["remote", "token_env"];

impl<'de> Deserialize<'de> for RawPush {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PushVisitor)
    }
}

struct PushVisitor;

impl<'de> Visitor<'de> for PushVisitor {
    type Value = RawPush;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`true` or a mapping `{remote: origin, token_env: GITHUB_TOKEN}`")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawPush, E> {
        Ok(RawPush::Enabled(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawPush, A::Error> {
        let (mut remote, mut token_env) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "remote" => remote = Some(map.next_value::<String>()?),
                "token_env" => token_env = Some(map.next_value::<String>()?),
                other => return Err(de::Error::unknown_field(other, PUSH_KEYS)),
            }
        }
        Ok(RawPush::To { remote, token_env })
    }
}

/// A YAML scalar of any type; the loader decides which types a key accepts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
}

impl Scalar {
    /// A positive duration written as `15m`, `1h30m`, `500ms` or whole
    /// seconds; `Err` is the message for the value of `key`.
    pub fn positive_duration(&self, key: &str) -> Result<std::time::Duration, String> {
        let parsed = match self {
            Scalar::Int(n) => u64::try_from(*n)
                .map(std::time::Duration::from_secs)
                .map_err(|_| format!("`{key}` must not be negative, found `{n}`")),
            Scalar::Str(text) => {
                super::duration::parse_duration(text).map_err(|e| format!("`{key}`: {e}"))
            }
            other => Err(format!(
                "`{key}` must be a duration such as `90s`, `15m` or `1h30m`, found {} `{}`",
                other.kind(),
                other.text()
            )),
        }?;
        if parsed.is_zero() {
            return Err(format!("`{key}` must be more than zero"));
        }
        Ok(parsed)
    }

    /// What the user wrote, for messages and for vars (`1` → "1", `true` → "true").
    pub fn text(&self) -> String {
        match self {
            Scalar::Null => String::new(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Str(s) => s.clone(),
        }
    }

    /// A short description of the type for "expected …, found …" messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Scalar::Null => "nothing",
            Scalar::Bool(_) => "a boolean",
            Scalar::Int(_) => "an integer",
            Scalar::Float(_) => "a decimal number",
            Scalar::Str(_) => "a string",
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, number or boolean")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }
}

/// `skill: NAME`, `skill: {path: DIR}` or `skill: {git: URL, rev: SHA, path: DIR}`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum RawSkill {
    Name(String),
    Path(String),
    /// A skill in a git repository; `rev` and `path` are checked by the loader.
    Git {
        url: String,
        rev: Option<String>,
        path: Option<String>,
    },
}

const SKILL_KEYS: &[&str] = &["path", "git", "rev"];

impl<'de> Deserialize<'de> for RawSkill {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkillVisitor)
    }
}

struct SkillVisitor;

impl<'de> Visitor<'de> for SkillVisitor {
    type Value = RawSkill;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a skill name, a mapping `{path: DIR}` or `{git: URL, rev: SHA, path: DIR}`")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSkill, E> {
        Ok(RawSkill::Name(v.to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawSkill, A::Error> {
        let (mut path, mut git, mut rev) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "path" => path = Some(map.next_value::<String>()?),
                "git" => git = Some(map.next_value::<String>()?),
                "rev" => rev = Some(map.next_value::<String>()?),
                other => return Err(de::Error::unknown_field(other, SKILL_KEYS)),
            }
        }
        match (git, path) {
            (Some(url), path) => Ok(RawSkill::Git { url, rev, path }),
            (None, _) if rev.is_some() => Err(de::Error::missing_field("git")),
            (None, Some(path)) => Ok(RawSkill::Path(path)),
            (None, None) => Err(de::Error::missing_field("path")),
        }
    }
}

/// `sandbox: PROFILE` or `sandbox: {profile, network, require, limits,
/// writable}`; values are checked by the loader.
#[derive(Debug, Default)]
pub(crate) struct RawSandbox {
    pub profile: Option<String>,
    pub network: Option<RawNetwork>,
    pub require: Option<Scalar>,
    pub limits: Option<RawLimits>,
    /// Folders, `~/` folders and presets, each where it was written.
    pub writable: Option<Vec<Spanned<Scalar>>>,
}

/// `sandbox.network`: `true`, `false`, or the hosts commands may reach
/// through agentci's proxy (each with its position, for errors).
#[derive(Debug)]
pub(crate) enum RawNetwork {
    Flag(Scalar),
    Hosts(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for RawNetwork {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NetworkVisitor)
    }
}

struct NetworkVisitor;

impl<'de> Visitor<'de> for NetworkVisitor {
    type Value = RawNetwork;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`true`, `false` or a list of hosts such as `[crates.io, preset:npm]`")
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawNetwork, A::Error> {
        let mut hosts = Vec::new();
        while let Some(host) = seq.next_element::<Spanned<String>>()? {
            hosts.push(host);
        }
        Ok(RawNetwork::Hosts(hosts))
    }
    fn visit_unit<E: de::Error>(self) -> Result<RawNetwork, E> {
        ScalarVisitor.visit_unit().map(RawNetwork::Flag)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Flag(Scalar::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Flag(Scalar::Int(v.into())))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Flag(Scalar::Int(v.into())))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Flag(Scalar::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Flag(Scalar::Str(v.to_string())))
    }
}

/// `sandbox.limits`: counts and sizes, checked by the loader.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    pub processes: Option<Spanned<Scalar>>,
    pub memory: Option<Spanned<Scalar>>,
    pub file_size: Option<Spanned<Scalar>>,
    pub open_files: Option<Spanned<Scalar>>,
}

const SANDBOX_KEYS: &[&str] = &["profile", "network", "require", "limits", "writable"];

impl<'de> Deserialize<'de> for RawSandbox {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SandboxVisitor)
    }
}

struct SandboxVisitor;

impl<'de> Visitor<'de> for SandboxVisitor {
    type Value = RawSandbox;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a profile (`workspace-write`, `read-only`, `off`) or a mapping \
             `{profile: workspace-write, network: false, require: false}`",
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSandbox, E> {
        Ok(RawSandbox {
            profile: Some(v.to_string()),
            ..RawSandbox::default()
        })
    }

    /// YAML 1.1 reads an unquoted `off` as `false`: `sandbox: off` is meant.
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawSandbox, E> {
        if v {
            return Err(E::custom(
                "`sandbox: true` names no profile; use `workspace-write` or `read-only`",
            ));
        }
        self.visit_str("off")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawSandbox, A::Error> {
        let mut raw = RawSandbox::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "profile" => raw.profile = Some(map.next_value::<ProfileName>()?.0),
                "network" => raw.network = Some(map.next_value::<RawNetwork>()?),
                "require" => raw.require = Some(map.next_value::<Scalar>()?),
                "limits" => raw.limits = map.next_value::<Option<RawLimits>>()?,
                "writable" => raw.writable = map.next_value::<Option<Vec<Spanned<Scalar>>>>()?,
                other => return Err(de::Error::unknown_field(other, SANDBOX_KEYS)),
            }
        }
        Ok(raw)
    }
}

/// A profile name, with YAML 1.1's `off` (read as `false`) taken as `off`.
struct ProfileName(String);

impl<'de> Deserialize<'de> for ProfileName {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = deserializer.deserialize_any(SandboxVisitor)?;
        Ok(ProfileName(raw.profile.unwrap_or_default()))
    }
}
