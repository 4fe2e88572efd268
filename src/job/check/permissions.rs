//! The job's `tools:` and `permissions:` keys: which built-in tools the agent
//! gets, the permission default, and the allow and deny patterns (each
//! parsed, and warned about when it names no known tool).
//!
//! Only the validation; deciding a call against the rules is
//! [`crate::policy`]'s.

use serde_saphyr::Spanned;

use super::Checker;
use crate::job::PermissionsSpec;
use crate::job::load::pos_of;
use crate::job::raw::RawPermissions;
use crate::policy::{DefaultDecision, ToolPattern};
use crate::tools::catalog;

impl Checker<'_> {
    pub(super) fn tools(&mut self, tools: &[Spanned<String>]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for tool in tools {
            let pos = pos_of(&self.r, tool);
            let name = tool.value.trim();
            if !catalog::is_builtin(name) {
                let hint = crate::job::suggest::unknown_tool_hint(name);
                self.r.error(
                    pos,
                    format!(
                        "unknown tool `{name}`{hint}; expected one of: {}",
                        catalog::names().join(", ")
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

    pub(super) fn permissions(&mut self, raw: Option<&RawPermissions>) -> PermissionsSpec {
        let default = match raw.and_then(|p| p.default.as_ref()) {
            None => DefaultDecision::Deny,
            Some(d) => match d.value.as_str() {
                "allow" => DefaultDecision::Allow,
                "deny" => DefaultDecision::Deny,
                other => {
                    let pos = pos_of(&self.r, d);
                    self.r.error(
                        pos,
                        format!("unknown permission default `{other}`; expected `allow` or `deny`"),
                    );
                    DefaultDecision::Deny
                }
            },
        };
        let (allow, deny) = match raw {
            Some(p) => (self.patterns(&p.allow), self.patterns(&p.deny)),
            None => (Vec::new(), Vec::new()),
        };
        let allow_hard_links = self.optional_boolean(
            raw.and_then(|p| p.allow_hard_links.as_ref()),
            "permissions.allow_hard_links",
        );
        PermissionsSpec {
            default,
            allow,
            deny,
            allow_hard_links,
        }
    }

    fn patterns(&mut self, raw: &[Spanned<String>]) -> Vec<ToolPattern> {
        let mut out = Vec::new();
        for text in raw {
            let pos = pos_of(&self.r, text);
            match ToolPattern::parse(&text.value) {
                Ok(pattern) => {
                    if let Some(tool) = pattern.tool_name()
                        && !is_known_tool(tool)
                    {
                        self.r.warning(
                            pos,
                            format!(
                                "permission pattern `{}` names no known tool; tools are {} \
                                 and mcp__SERVER__TOOL",
                                text.value,
                                catalog::names().join(", ")
                            ),
                        );
                    }
                    out.push(pattern);
                }
                Err(e) => self.r.error(pos, e.to_string()),
            }
        }
        out
    }
}

fn is_known_tool(name: &str) -> bool {
    catalog::is_builtin(name)
        || name.starts_with("mcp__")
        || [
            crate::job::mcp::LIST_RESOURCES,
            crate::job::mcp::READ_RESOURCE,
        ]
        .contains(&name)
}
