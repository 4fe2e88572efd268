//! The validated `mcp:` key: the MCP servers a job brings, how to reach
//! each (a command to start, or a URL), and its limits.
//!
//! Values that come from agentci's environment (`${{ env.NAME }}` in a
//! server's `env` or `headers`) stay references here, as an
//! [`EnvTemplate`]; they are read when the server starts, so a token never
//! sits in the spec. Starting and talking to servers is [`crate::mcp`]'s job.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Time allowed for one tool call when the server sets no `timeout`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Time allowed from starting a server to its tools being listed.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest server name: `mcp__<server>__<tool>` must stay within the 64
/// characters model APIs allow for a tool name, with room for the tool.
pub const MAX_SERVER_NAME: usize = 24;
/// The name of the tool (served by [`crate::mcp`]) that lists the servers' resources.
pub const LIST_RESOURCES: &str = "mcp_list_resources";
/// The name of the tool that reads one resource.
pub const READ_RESOURCE: &str = "mcp_read_resource";

/// `mcp:` of a job; empty when the job has no such key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpSpec {
    /// In the order of the job file's mapping (sorted by name).
    pub servers: Vec<McpServerSpec>,
}

/// One entry of `mcp.servers`.
#[derive(Clone, Debug, PartialEq)]
pub struct McpServerSpec {
    /// The key in `mcp.servers`; tools are offered as `mcp__<name>__<tool>`.
    pub name: String,
    pub transport: McpTransport,
    /// Time allowed for one call (`timeout`).
    pub timeout: Duration,
    /// Time allowed to start, initialize and list tools (`startup_timeout`).
    pub startup_timeout: Duration,
    /// `tools`: the server's tools the job may use; `None` means all.
    pub tools: Option<Vec<String>>,
    /// `required`: a run cannot go on without this server.
    pub required: bool,
    /// `roots`: answer the server's `roots/list` with the workspace folder.
    pub roots: bool,
    /// `sampling`: answer the server's `sampling/createMessage` with one
    /// completion of the run's model.
    pub sampling: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum McpTransport {
    /// A local server spoken to over its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Variables set for the server on top of the scrubbed environment.
        env: Vec<(String, EnvTemplate)>,
        /// Absolute; `None` means the workspace.
        cwd: Option<PathBuf>,
    },
    /// A remote server reached over MCP's Streamable HTTP transport.
    Http {
        url: String,
        headers: Vec<(String, EnvTemplate)>,
    },
}

/// Text with `${{ env.NAME }}` references, read when a server starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvTemplate {
    parts: Vec<TemplatePart>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum TemplatePart {
    Text(String),
    Env(String),
}

impl EnvTemplate {
    /// The template as a job file writes it (`${{ env.NAME }}` kept), or
    /// `None` when its text holds `${{` (from a var's value), which a job
    /// file would read back as an expression.
    pub fn written(&self) -> Option<String> {
        let mut text = String::new();
        for part in &self.parts {
            match part {
                TemplatePart::Text(t) if t.contains("${{") => return None,
                TemplatePart::Text(t) => text.push_str(t),
                TemplatePart::Env(name) => text.push_str(&format!("${{{{ env.{name} }}}}")),
            }
        }
        Some(text)
    }

    /// A template that is plain text.
    pub fn text(text: impl Into<String>) -> Self {
        EnvTemplate {
            parts: vec![TemplatePart::Text(text.into())],
        }
    }

    /// Parses `text`, substituting `${{ vars.NAME }}` from `vars`; `Err`
    /// names the first expression that is neither that nor `${{ env.NAME }}`.
    pub fn parse(text: &str, vars: &BTreeMap<String, String>) -> Result<Self, McpValueError> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${{") {
            if start > 0 {
                parts.push(TemplatePart::Text(rest[..start].to_string()));
            }
            let after = &rest[start + 3..];
            let Some(close) = after.find("}}") else {
                return Err(McpValueError::Unclosed);
            };
            let inner = after[..close].trim();
            if let Some(name) = inner.strip_prefix("vars.")
                && let Some(value) = vars.get(name)
            {
                parts.push(TemplatePart::Text(value.clone()));
                rest = &after[close + 2..];
                continue;
            }
            match inner.strip_prefix("env.") {
                Some(name) if super::check::is_env_name(name) => {
                    parts.push(TemplatePart::Env(name.to_string()));
                }
                _ => {
                    return Err(McpValueError::Unsupported {
                        inner: inner.to_string(),
                    });
                }
            }
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(TemplatePart::Text(rest.to_string()));
        }
        Ok(EnvTemplate { parts })
    }

    /// The value with every reference looked up; `Err` names the first
    /// variable `lookup` does not know ([`McpValueError::Unset`]).
    pub fn resolve(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, McpValueError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                TemplatePart::Text(text) => out.push_str(text),
                TemplatePart::Env(name) => {
                    let value = lookup(name).ok_or_else(|| McpValueError::Unset(name.clone()))?;
                    out.push_str(&value);
                }
            }
        }
        Ok(out)
    }

    /// The names of the environment variables this value reads.
    pub fn env_names(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            TemplatePart::Env(name) => Some(name.as_str()),
            TemplatePart::Text(_) => None,
        })
    }
}

/// A server name fits in `mcp__<server>__<tool>`: letters, digits, `-` and
/// single `_`, not starting or ending with `_`, at most [`MAX_SERVER_NAME`]
/// characters. `Err` says what is wrong.
pub fn check_server_name(name: &str) -> Result<(), McpValueError> {
    if name.is_empty() {
        return Err(McpValueError::EmptyServerName);
    }
    if name.chars().count() > MAX_SERVER_NAME {
        return Err(McpValueError::LongServerName {
            name: name.to_string(),
        });
    }
    let allowed = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !allowed || name.contains("__") || name.starts_with('_') || name.ends_with('_') {
        return Err(McpValueError::BadServerName {
            name: name.to_string(),
        });
    }
    Ok(())
}

/// A value of an MCP server's settings that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum McpValueError {
    #[error("unclosed `${{{{`; expected `${{{{ env.NAME }}}}`")]
    Unclosed,
    #[error(
        "unsupported expression `${{{{ {inner} }}}}`; values of MCP servers may use \
         `${{{{ env.NAME }}}}` (read when the server starts) and `${{{{ vars.NAME }}}}` of the \
         job's vars"
    )]
    Unsupported { inner: String },
    /// An environment variable a value reads is not set; the text is its name.
    #[error("{0}")]
    Unset(String),
    #[error("an MCP server name must not be empty")]
    EmptyServerName,
    #[error(
        "MCP server name `{name}` is longer than {MAX_SERVER_NAME} characters; tools are \
         offered as `mcp__<server>__<tool>` and model APIs allow 64 characters"
    )]
    LongServerName { name: String },
    #[error(
        "`{name}` is not a valid MCP server name; use letters, digits, `-` and single `_` \
         (tools are offered as `mcp__{name}__<tool>`, so `__` would be ambiguous)"
    )]
    BadServerName { name: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_is_written_back_as_the_job_wrote_it_unless_a_var_brought_an_expression() {
        let vars = BTreeMap::from([
            ("who".to_string(), "me".to_string()),
            ("odd".to_string(), "${{ env.X }}".to_string()),
        ]);
        let template = EnvTemplate::parse("Bearer ${{ env.TOKEN }} for ${{ vars.who }}", &vars);
        assert_eq!(
            template.unwrap().written().as_deref(),
            Some("Bearer ${{ env.TOKEN }} for me")
        );
        let odd = EnvTemplate::parse("x ${{ vars.odd }}", &vars).unwrap();
        assert_eq!(odd.written(), None, "it would read back as a reference");
    }

    #[test]
    fn templates_read_the_environment_when_resolved() {
        let vars = BTreeMap::from([("who".to_string(), "me".to_string())]);
        let t = EnvTemplate::parse("Bearer ${{ env.TOKEN }}!${{ vars.who }}", &vars).unwrap();
        let lookup = |n: &str| (n == "TOKEN").then(|| "abc".to_string());
        assert_eq!(t.resolve(&lookup).unwrap(), "Bearer abc!me");
        assert_eq!(t.env_names().collect::<Vec<_>>(), ["TOKEN"]);
        let missing = EnvTemplate::parse("${{env.NOPE}}", &vars).unwrap();
        assert_eq!(
            missing.resolve(&lookup).unwrap_err(),
            McpValueError::Unset("NOPE".into())
        );
        assert_eq!(
            EnvTemplate::parse("${{ env.X", &vars)
                .unwrap_err()
                .to_string(),
            "unclosed `${{`; expected `${{ env.NAME }}`"
        );
        assert!(EnvTemplate::parse("${{ secrets.X }}", &vars).is_err());
        assert!(EnvTemplate::parse("${{ env.X", &vars).is_err());
    }

    #[test]
    fn server_names_fit_the_tool_prefix() {
        assert!(check_server_name("github").is_ok());
        assert!(check_server_name("my-db_2").is_ok());
        for bad in [
            "",
            "a__b",
            "_a",
            "a_",
            "a b",
            "a.b",
            "x".repeat(25).as_str(),
        ] {
            assert!(check_server_name(bad).is_err(), "{bad}");
        }
    }
}
