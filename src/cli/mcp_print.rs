//! What `agentci mcp list` and `agentci mcp call` print: text for people
//! on stdout (problems on stderr), or with `--json` one JSON document on
//! stdout that scripts can read. A job's secrets are masked in all of it,
//! as a run masks them in its trace: a server may echo its own token.

use std::io::Write;

use serde::Serialize;
use serde_json::json;

use crate::redact::Redactor;

use crate::mcp::{
    McpResource, McpServer, McpTool, ServerDown, ServerIdentity, ServerRequestRecord, ToolOutput,
};

/// Longest description shown in the text listing.
const DESCRIPTION_WIDTH: usize = 100;

/// One server of `mcp list`.
pub enum ServerReport {
    Up(Box<UpServer>),
    Down(ServerDown),
}

#[derive(Serialize)]
pub struct UpServer {
    pub name: String,
    pub server: ServerIdentity,
    pub tools: Vec<McpTool>,
    pub resources: Vec<McpResource>,
    pub resource_templates: Vec<McpResource>,
    /// The server announced `notifications/tools/list_changed` and its tools were listed again.
    pub tools_refreshed: bool,
    /// Names in the job's `tools` allow-list that the server does not offer.
    pub missing_allowed_tools: Vec<String>,
    /// Requests the server sent to agentci.
    pub requests: Vec<ServerRequestRecord>,
}

impl ServerReport {
    /// Lists what a started server offers.
    pub async fn describe(server: &McpServer) -> ServerReport {
        let resources = server.list_resources().await;
        let templates = server.list_resource_templates().await;
        let mut tools_refreshed = false;
        if let Err(down) = server.settle().await {
            return ServerReport::Down(down);
        }
        if server.tools_stale() {
            tools_refreshed = true;
            if let Err(down) = server.refresh_tools().await {
                return ServerReport::Down(down);
            }
        }
        let (resources, resource_templates) = match (resources, templates) {
            (Ok(r), Ok(t)) => (r, t),
            (Err(down), _) | (_, Err(down)) => return ServerReport::Down(down),
        };
        ServerReport::Up(Box::new(UpServer {
            name: server.name().to_string(),
            server: server.identity().clone(),
            tools: server.tools(),
            resources,
            resource_templates,
            tools_refreshed,
            missing_allowed_tools: server
                .missing_allowed_tools()
                .into_iter()
                .map(str::to_string)
                .collect(),
            requests: server.take_requests(),
        }))
    }
}

pub fn print_list(reports: &[ServerReport], as_json: bool, secrets: &Redactor) {
    let mut out = std::io::stdout().lock();
    if as_json {
        let servers: Vec<_> = reports
            .iter()
            .map(|r| match r {
                ServerReport::Up(up) => {
                    let mut value = serde_json::to_value(up).unwrap_or_default();
                    value["status"] = json!("up");
                    value
                }
                ServerReport::Down(down) => json!({
                    "name": down.server,
                    "status": "down",
                    "reason": down.reason,
                    "stderr": down.stderr,
                }),
            })
            .collect();
        let mut value = json!({ "servers": servers });
        secrets.redact_json(&mut value);
        let _ = writeln!(out, "{value:#}");
        return;
    }
    for (i, report) in reports.iter().enumerate() {
        if i > 0 {
            let _ = writeln!(out);
        }
        match report {
            ServerReport::Up(up) => {
                // Names and descriptions are the server's: shown inert.
                let mut text = Vec::new();
                print_up(&mut text, up);
                let text = crate::inert::terminal(&String::from_utf8_lossy(&text));
                let _ = out.write_all(secrets.redact(&text).as_bytes());
            }
            ServerReport::Down(down) => print_down(down, secrets),
        }
    }
}

fn print_up(out: &mut impl Write, up: &UpServer) {
    let id = &up.server;
    let who = match (&id.name, &id.version) {
        (Some(name), Some(version)) => format!("{name} {version}, "),
        (Some(name), None) => format!("{name}, "),
        _ => String::new(),
    };
    let _ = writeln!(out, "{}: {who}protocol {}", up.name, id.protocol_version);
    let _ = writeln!(out, "  tools ({}):", up.tools.len());
    let width = up.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for tool in &up.tools {
        let hint = if tool.read_only {
            "read-only"
        } else {
            "         "
        };
        let _ = writeln!(
            out,
            "    {:width$}  {hint}  {}",
            tool.name,
            first_line(&tool.description)
        );
    }
    for (title, items) in [
        ("resources", &up.resources),
        ("resource templates", &up.resource_templates),
    ] {
        if items.is_empty() {
            continue;
        }
        let _ = writeln!(out, "  {title} ({}):", items.len());
        for item in items {
            let mime = item
                .mime_type
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            let _ = writeln!(out, "    {}  {}{mime}", item.uri, item.name);
        }
    }
    if up.tools_refreshed {
        let _ = writeln!(
            out,
            "  note: the server announced a changed tool list (notifications/tools/list_changed); \
             the tools above are from listing them again"
        );
    }
    if !up.missing_allowed_tools.is_empty() {
        let _ = writeln!(
            out,
            "  warning: the job's `tools` allow-list names tools the server does not offer: {}",
            up.missing_allowed_tools.join(", ")
        );
    }
    for request in &up.requests {
        let _ = writeln!(
            out,
            "  the server sent `{}`: {} {}",
            request.method, request.outcome, request.detail
        );
    }
}

fn print_down(down: &ServerDown, secrets: &Redactor) {
    let mut text = format!("error: {}\n", crate::inert::terminal(&down.to_string()));
    if !down.stderr.is_empty() {
        text.push_str("  last lines of its stderr:\n");
        for line in &down.stderr {
            text.push_str(&format!("  | {}\n", crate::inert::line(line)));
        }
    }
    let _ = std::io::stderr()
        .lock()
        .write_all(secrets.redact(&text).as_bytes());
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(DESCRIPTION_WIDTH) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// The outcome of `mcp call`.
pub struct CallReport {
    pub server: String,
    pub tool: String,
    pub output: Option<ToolOutput>,
    pub down: Option<ServerDown>,
    pub requests: Vec<ServerRequestRecord>,
}

impl CallReport {
    pub fn new(
        server: &str,
        tool: &str,
        outcome: Result<ToolOutput, ServerDown>,
        requests: Vec<ServerRequestRecord>,
    ) -> Self {
        let (output, down) = match outcome {
            Ok(output) => (Some(output), None),
            Err(down) => (None, Some(down)),
        };
        CallReport {
            server: server.to_string(),
            tool: tool.to_string(),
            output,
            down,
            requests,
        }
    }

    pub fn down(server: &str, tool: &str, down: ServerDown) -> Self {
        CallReport::new(server, tool, Err(down), Vec::new())
    }

    fn status(&self) -> &'static str {
        match (&self.output, &self.down) {
            (_, Some(_)) => "server_down",
            (Some(o), None) if o.is_error => "tool_error",
            _ => "ok",
        }
    }
}

pub fn print_call(report: &CallReport, as_json: bool, secrets: &Redactor) {
    let mut out = std::io::stdout().lock();
    if as_json {
        let mut value = json!({
            "server": report.server,
            "tool": report.tool,
            "status": report.status(),
            "requests": report.requests,
        });
        if let Some(output) = &report.output {
            value["is_error"] = json!(output.is_error);
            value["text"] = json!(output.text);
            value["structured_content"] = output.structured.clone().unwrap_or_default();
            value["content"] = json!(output.content);
        }
        if let Some(down) = &report.down {
            value["down"] = json!({"reason": down.reason, "stderr": down.stderr});
        }
        secrets.redact_json(&mut value);
        let _ = writeln!(out, "{value:#}");
        return;
    }
    if let Some(down) = &report.down {
        print_down(down, secrets);
        return;
    }
    let Some(output) = &report.output else { return };
    if !output.text.is_empty() {
        let text = crate::inert::terminal(&output.text);
        let _ = writeln!(out, "{}", secrets.redact(&text));
    }
    if let Some(structured) = &output.structured {
        let mut structured = structured.clone();
        secrets.redact_json(&mut structured);
        let _ = writeln!(out, "structured content:\n{structured:#}");
    }
    for request in &report.requests {
        let note = format!(
            "note: the server sent `{}`: {} {}",
            crate::inert::line(&request.method),
            request.outcome,
            crate::inert::line(&request.detail)
        );
        let _ = writeln!(std::io::stderr(), "{}", secrets.redact(&note));
    }
    if output.is_error {
        let _ = writeln!(
            std::io::stderr(),
            "error: tool `{}` of server `{}` returned an error",
            report.tool,
            report.server
        );
    }
}

#[cfg(test)]
mod identity_tests {
    use super::*;

    // Regression: a server reporting an empty version printed `name , protocol`.
    #[test]
    fn an_empty_version_is_left_out_of_the_server_line() {
        let up = |version: &str| UpServer {
            name: "files".into(),
            server: ServerIdentity::said(Some("fs"), Some(version), "2025-06-18".into()),
            tools: Vec::new(),
            resources: Vec::new(),
            resource_templates: Vec::new(),
            tools_refreshed: false,
            missing_allowed_tools: Vec::new(),
            requests: Vec::new(),
        };
        let line = |version: &str| {
            let mut out = Vec::new();
            print_up(&mut out, &up(version));
            String::from_utf8(out)
                .unwrap()
                .lines()
                .next()
                .unwrap()
                .to_string()
        };
        assert_eq!(line(""), "files: fs, protocol 2025-06-18");
        assert_eq!(line(" "), "files: fs, protocol 2025-06-18");
        assert_eq!(line("1.2.0"), "files: fs 1.2.0, protocol 2025-06-18");
    }
}
