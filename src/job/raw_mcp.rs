//! The `mcp:` key as written: which MCP servers a job brings, before any
//! value is checked. Validation is [`super::check`]'s job (`check/mcp.rs`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::raw::Scalar;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Mcp")]
pub(super) struct RawMcp {
    /// The servers by name; their tools are called `mcp__NAME__TOOL`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawMcpServer>")]
    pub servers: BTreeMap<String, Spanned<RawMcpServer>>,
}

/// One server: a stdio one (`command`, `args`, `env`, `cwd`) or a remote one
/// (`url`, `headers`); the loader refuses a mix.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "McpServer")]
pub(super) struct RawMcpServer {
    #[schemars(with = "Option<String>")]
    pub command: Option<Spanned<String>>,
    #[schemars(with = "Option<Vec<Scalar>>")]
    pub args: Option<Vec<Spanned<Scalar>>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Scalar>")]
    pub env: BTreeMap<String, Spanned<Scalar>>,
    #[schemars(with = "Option<String>")]
    pub cwd: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub url: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Scalar>")]
    pub headers: BTreeMap<String, Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::DurationText>")]
    pub timeout: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::DurationText>")]
    pub startup_timeout: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<Vec<String>>")]
    pub tools: Option<Vec<Spanned<String>>>,
    #[schemars(with = "Option<super::schema::Flag>")]
    pub required: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::Flag>")]
    pub roots: Option<Spanned<Scalar>>,
    #[schemars(with = "Option<super::schema::Flag>")]
    pub sampling: Option<Spanned<Scalar>>,
}
