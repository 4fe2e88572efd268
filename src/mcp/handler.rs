//! agentci's side of the requests and notifications a server sends: `ping`
//! is answered, `roots/list` gets the workspace folder when the server is
//! allowed `roots`, `sampling/createMessage` and `elicitation/create` are
//! declined (a run has nobody to ask, and no model call may happen outside
//! the run's budget), any other request is answered "method not found",
//! and `notifications/tools/list_changed` marks the server's tools stale.
//! Every request is recorded for the trace.
//!
//! The `initialize` request declares only what this handler implements:
//! `roots` when allowed, nothing else.
#![expect(
    deprecated,
    reason = "roots and sampling are deprecated for protocol 2026-07-28 (SEP-2577), but the \
              2025-11-25 servers this client speaks to still send them"
)]

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    CustomRequest, CustomResult, ElicitRequestParams, ElicitResult, ErrorCode, ErrorData,
    Implementation, ListRootsResult, ProtocolVersion, Root,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

use super::state::{ServerRequestRecord, ServerState};
use super::stdio::shorten;

/// The newest protocol version that still starts with `initialize`; the
/// reference servers and most servers in use speak it (rmcp's
/// `LATEST` uses `server/discover`, which they do not know).
pub(super) fn protocol_version() -> ProtocolVersion {
    ProtocolVersion::LATEST_WITH_INITIALIZE
}

#[derive(Clone)]
pub(super) struct AgentciClient {
    pub state: Arc<ServerState>,
    /// `file://` URI of the workspace when the server may ask for roots.
    pub root: Option<String>,
    /// Count `notifications/tools/list_changed` here; over stdio the stdout
    /// watcher counts them (it also sees those sent before `initialize` ends).
    pub counts_list_changed: bool,
}

impl AgentciClient {
    fn decline(&self, method: &str, why: &str) -> ErrorData {
        let message = format!("agentci declines `{method}`: {why}");
        self.state.record_request(ServerRequestRecord {
            method: method.to_string(),
            outcome: "declined",
            detail: why.to_string(),
        });
        ErrorData::new(ErrorCode::METHOD_NOT_FOUND, message, None)
    }
}

impl ClientHandler for AgentciClient {
    async fn ping(&self, _context: RequestContext<RoleClient>) -> Result<(), ErrorData> {
        self.state.record_request(ServerRequestRecord {
            method: "ping".to_string(),
            outcome: "answered",
            detail: String::new(),
        });
        Ok(())
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let Some(root) = &self.root else {
            return Err(self.decline(
                "roots/list",
                "this server is not allowed to see the workspace; set `roots: true` on it",
            ));
        };
        self.state.record_request(ServerRequestRecord {
            method: "roots/list".to_string(),
            outcome: "answered",
            detail: root.clone(),
        });
        let mut entry = Root::new(root.clone());
        entry.name = Some("workspace".to_string());
        Ok(ListRootsResult::new(vec![entry]))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Err(self.decline(
            "sampling/createMessage",
            "an unattended run does not let MCP servers call the model",
        ))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Err(self.decline(
            "elicitation/create",
            "an unattended run has nobody to answer questions",
        ))
    }

    /// Any other request (a method of a newer protocol, or one made up):
    /// answered "method not found" as rmcp would, but recorded, so the
    /// trace shows what the server tried.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, ErrorData> {
        let method = shorten(&request.method, 100);
        Err(self.decline(&method, "agentci does not implement this request"))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if self.counts_list_changed {
            self.state.note_tools_changed();
        }
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = match &self.root {
            Some(_) => serde_json::from_value(serde_json::json!({"roots": {"listChanged": false}}))
                .unwrap_or_default(),
            None => ClientCapabilities::default(),
        };
        let mut implementation = Implementation::default();
        implementation.name = "agentci".to_string();
        implementation.version = env!("CARGO_PKG_VERSION").to_string();
        ClientConfig::new(capabilities, implementation).with_protocol_version(protocol_version())
    }
}
