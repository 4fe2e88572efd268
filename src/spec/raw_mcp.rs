//! The `mcp:` key as written: which MCP servers a job brings, before any
//! value is checked. Validation is [`super::check`]'s job (`check/mcp.rs`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::raw::Scalar;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMcp {
    #[serde(default)]
    pub servers: BTreeMap<String, Spanned<RawMcpServer>>,
}

/// One server: a stdio one (`command`, `args`, `env`, `cwd`) or a remote one
/// (`url`, `headers`); the loader refuses a mix.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMcpServer {
    pub command: Option<Spanned<String>>,
    pub args: Option<Vec<Spanned<Scalar>>>,
    #[serde(default)]
    pub env: BTreeMap<String, Spanned<Scalar>>,
    pub cwd: Option<Spanned<String>>,
    pub url: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<Scalar>>,
    pub timeout: Option<Spanned<Scalar>>,
    pub startup_timeout: Option<Spanned<Scalar>>,
    pub tools: Option<Vec<Spanned<String>>>,
    pub required: Option<Spanned<Scalar>>,
    pub roots: Option<Spanned<Scalar>>,
    pub sampling: Option<Spanned<Scalar>>,
}
