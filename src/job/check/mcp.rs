//! The `mcp` key: each server in `mcp.servers` is either a command to start
//! (`command`, `args`, `env`, `cwd`) or a remote URL (`url`, `headers`),
//! with `timeout`, `startup_timeout`, `tools`, `required`, `roots` and
//! `sampling`.
//!
//! Server names must fit the `mcp__<server>__<tool>` tool names; values of
//! `env` and `headers` may read agentci's environment with
//! `${{ env.NAME }}` when the server starts (never stored in the spec).

use std::collections::BTreeMap;
use std::path::Path;

use serde_saphyr::Spanned;

use super::Checker;
use crate::job::load::pos_of;
use crate::job::mcp::{DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, check_server_name};
use crate::job::raw::Scalar;
use crate::job::raw_mcp::{RawMcp, RawMcpServer};
use crate::job::{EnvTemplate, McpServerSpec, McpSpec, McpTransport};
use crate::tools::workspace::normalize;

impl Checker<'_> {
    pub(super) fn mcp(
        &mut self,
        raw: Option<&Spanned<RawMcp>>,
        workspace: Option<&Path>,
        vars: &BTreeMap<String, String>,
    ) -> McpSpec {
        let Some(raw) = raw else {
            return McpSpec::default();
        };
        let mut servers = Vec::new();
        for (name, server) in &raw.value.servers {
            let pos = pos_of(&self.r, server);
            if let Err(message) = check_server_name(name) {
                self.r.error(pos, message.to_string());
                continue;
            }
            if let Some(spec) = self.mcp_server(name, server, workspace, vars) {
                servers.push(spec);
            }
        }
        McpSpec { servers }
    }

    fn mcp_server(
        &mut self,
        name: &str,
        server: &Spanned<RawMcpServer>,
        workspace: Option<&Path>,
        vars: &BTreeMap<String, String>,
    ) -> Option<McpServerSpec> {
        let at = pos_of(&self.r, server);
        let raw = &server.value;
        let transport = match (&raw.command, &raw.url) {
            (Some(_), Some(url)) => {
                let pos = pos_of(&self.r, url);
                self.r.error(
                    pos,
                    format!(
                        "MCP server `{name}` has both `command` and `url`; give `command` for a \
                         local server or `url` for a remote one"
                    ),
                );
                None
            }
            (None, None) => {
                self.r.error(
                    at,
                    format!(
                        "MCP server `{name}` needs `command` (a local server started by \
                         agentci) or `url` (a remote server)"
                    ),
                );
                None
            }
            (Some(command), None) => self.stdio(name, command, raw, workspace, vars),
            (None, Some(url)) => self.http(name, url, raw, vars),
        };
        let timeout = raw
            .timeout
            .as_ref()
            .map_or(Some(DEFAULT_CALL_TIMEOUT), |t| self.duration(t, "timeout"));
        let startup_timeout = raw
            .startup_timeout
            .as_ref()
            .map_or(Some(DEFAULT_STARTUP_TIMEOUT), |t| {
                self.duration(t, "startup_timeout")
            });
        let tools = raw.tools.as_ref().map(|tools| self.mcp_tools(name, tools));
        let required = self.optional_boolean(raw.required.as_ref(), "required");
        let roots = self.optional_boolean(raw.roots.as_ref(), "roots");
        let sampling = self.optional_boolean(
            raw.sampling.as_ref(),
            &format!("mcp.servers.{name}.sampling"),
        );
        Some(McpServerSpec {
            name: name.to_string(),
            transport: transport?,
            timeout: timeout?,
            startup_timeout: startup_timeout?,
            tools,
            required,
            roots,
            sampling,
        })
    }

    fn stdio(
        &mut self,
        name: &str,
        command: &Spanned<String>,
        raw: &RawMcpServer,
        workspace: Option<&Path>,
        vars: &BTreeMap<String, String>,
    ) -> Option<McpTransport> {
        if !raw.headers.is_empty() {
            let pos = pos_of(&self.r, command);
            self.r.error(
                pos,
                format!(
                    "MCP server `{name}` is started with `command`; `headers` is only for `url`"
                ),
            );
        }
        let program = self.substitute(command, vars)?;
        if program.trim().is_empty() {
            let pos = pos_of(&self.r, command);
            self.r
                .error(pos, format!("MCP server `{name}`: `command` is empty"));
            return None;
        }
        let mut args = Vec::new();
        for arg in raw.args.as_deref().unwrap_or_default() {
            let text = Spanned {
                value: arg.value.text(),
                referenced: arg.referenced,
                defined: arg.defined,
            };
            args.push(self.substitute(&text, vars)?);
        }
        let env = self.templates(name, &raw.env, "env", vars, true)?;
        let cwd = match &raw.cwd {
            None => None,
            Some(dir) => {
                let text = self.substitute(dir, vars)?;
                let base = workspace.unwrap_or(self.cwd);
                let path = normalize(&base.join(text));
                if !path.is_dir() {
                    let pos = pos_of(&self.r, dir);
                    self.r.error(
                        pos,
                        format!(
                            "MCP server `{name}`: `cwd` {} is not a directory (relative paths \
                             start at the workspace)",
                            path.display()
                        ),
                    );
                    return None;
                }
                Some(path)
            }
        };
        Some(McpTransport::Stdio {
            command: program,
            args,
            env,
            cwd,
        })
    }

    fn http(
        &mut self,
        name: &str,
        url: &Spanned<String>,
        raw: &RawMcpServer,
        vars: &BTreeMap<String, String>,
    ) -> Option<McpTransport> {
        let pos = pos_of(&self.r, url);
        let stdio_keys = [
            ("args", raw.args.is_some()),
            ("env", !raw.env.is_empty()),
            ("cwd", raw.cwd.is_some()),
        ];
        if let Some((key, _)) = stdio_keys.iter().find(|(_, set)| *set) {
            self.r.error(
                pos,
                format!(
                    "MCP server `{name}` is reached at `url`; `{key}` is only for servers started \
                     with `command`"
                ),
            );
        }
        let text = self.substitute(url, vars)?;
        let scheme_ok = text.starts_with("http://") || text.starts_with("https://");
        if !scheme_ok || reqwest::Url::parse(&text).is_err() {
            self.r.error(
                pos,
                format!(
                    "MCP server `{name}`: `url` `{text}` is not an http(s) URL such as \
                     `https://example.com/mcp`"
                ),
            );
            return None;
        }
        let headers = self.templates(name, &raw.headers, "headers", vars, false)?;
        Some(McpTransport::Http { url: text, headers })
    }

    /// `env` or `headers` values; `env` names must be shell names.
    fn templates(
        &mut self,
        server: &str,
        raw: &BTreeMap<String, Spanned<Scalar>>,
        key: &str,
        vars: &BTreeMap<String, String>,
        env_names: bool,
    ) -> Option<Vec<(String, EnvTemplate)>> {
        let mut out = Vec::new();
        let mut ok = true;
        for (name, value) in raw {
            let pos = pos_of(&self.r, value);
            let valid_name = if env_names {
                super::env::is_env_name(name)
            } else {
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
            };
            if !valid_name {
                self.r.error(
                    pos,
                    format!("MCP server `{server}`: `{name}` is not a valid name in `{key}`"),
                );
                ok = false;
                continue;
            }
            if value.value == Scalar::Null {
                self.r.error(
                    pos,
                    format!(
                        "MCP server `{server}`: `{key}.{name}` has no value; write `\"\"` for an \
                         empty one"
                    ),
                );
                ok = false;
                continue;
            }
            match EnvTemplate::parse(&value.value.text(), vars) {
                Ok(template) => out.push((name.clone(), template)),
                Err(message) => {
                    self.r.error(
                        pos,
                        format!("MCP server `{server}`, `{key}.{name}`: {message}"),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    fn mcp_tools(&mut self, server: &str, raw: &[Spanned<String>]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for tool in raw {
            let name = tool.value.trim();
            let pos = pos_of(&self.r, tool);
            if name.is_empty() || name.starts_with("mcp__") {
                self.r.error(
                    pos,
                    format!(
                        "MCP server `{server}`: `tools` lists the server's own tool names (such \
                         as `search`), found `{name}`"
                    ),
                );
            } else if out.iter().any(|t| t == name) {
                self.r
                    .warning(pos, format!("tool `{name}` is listed more than once"));
            } else {
                out.push(name.to_string());
            }
        }
        out
    }
}
