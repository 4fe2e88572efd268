//! agentci's side of the requests and notifications a server sends: `ping`
//! is answered, `roots/list` gets the workspace folder when the server is
//! allowed `roots`, `sampling/createMessage` is answered by the
//! [`Sampler`] when the server is allowed `sampling` (declined otherwise:
//! no model call happens unless the job asks for it), `elicitation/create`
//! is always declined (an unattended run has nobody to ask), any other
//! request is answered "method not found", and
//! `notifications/tools/list_changed` marks the server's tools stale.
//! Every request is recorded for the trace, with its params summarised.
//!
//! The `initialize` request declares only what this handler implements:
//! `roots` and `sampling` when allowed, nothing else.
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
    Implementation, ListRootsResult, ProtocolVersion, Role, Root, SamplingMessage,
    SamplingMessageContentBlock,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

use super::sampling::{Sampler, sampling_request};
use super::state::{ServerRequestRecord, ServerState};

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
    /// The server's name, for messages that tell the user what to set.
    pub server: String,
    /// Answers `sampling/createMessage`; `None` unless the job set
    /// `sampling: true` on this server.
    pub sampler: Option<Arc<dyn Sampler>>,
    /// The job set `sampling: true` on this server (without a sampler, as in
    /// the `agentci mcp` commands, there is no model to answer with).
    pub sampling_allowed: bool,
}

impl AgentciClient {
    fn decline(&self, method: &str, why: &str, params: &impl serde::Serialize) -> ErrorData {
        let message = format!("agentci declines `{method}`: {why}");
        self.state
            .record_request(ServerRequestRecord::new(method, "declined", why, params));
        ErrorData::new(ErrorCode::METHOD_NOT_FOUND, message, None)
    }

    fn answered(&self, method: &str, detail: impl Into<String>, params: &impl serde::Serialize) {
        self.state
            .record_request(ServerRequestRecord::new(method, "answered", detail, params));
    }
}

impl ClientHandler for AgentciClient {
    async fn ping(&self, _context: RequestContext<RoleClient>) -> Result<(), ErrorData> {
        self.answered("ping", "", &());
        Ok(())
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let Some(root) = &self.root else {
            let why = format!(
                "this server is not allowed to see the workspace; set mcp.servers.{}.roots: true",
                self.server
            );
            return Err(self.decline("roots/list", &why, &()));
        };
        self.answered("roots/list", root.clone(), &());
        let mut entry = Root::new(root.clone());
        entry.name = Some("workspace".to_string());
        Ok(ListRootsResult::new(vec![entry]))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        const METHOD: &str = "sampling/createMessage";
        let Some(sampler) = &self.sampler else {
            let why = if self.sampling_allowed {
                "there is no model to answer with outside `agentci run`".to_string()
            } else {
                format!(
                    "sampling is off for server {0}; set mcp.servers.{0}.sampling: true to let it \
                 call the run's model",
                    self.server
                )
            };
            return Err(self.decline(METHOD, &why, &params));
        };
        let request = match sampling_request(&self.server, &params) {
            Ok(request) => request,
            Err(why) => return Err(self.decline(METHOD, &why, &params)),
        };
        match sampler.sample(request).await {
            Ok(answer) => {
                self.answered(METHOD, answer.detail.clone(), &params);
                let message = SamplingMessage::new(
                    Role::Assistant,
                    SamplingMessageContentBlock::text(answer.text),
                );
                let mut result = CreateMessageResult::new(message, answer.model);
                result.stop_reason = answer.stop_reason;
                Ok(result)
            }
            Err(why) => {
                let message = format!("agentci could not answer `{METHOD}`: {why}");
                self.state
                    .record_request(ServerRequestRecord::new(METHOD, "failed", why, &params));
                Err(ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None))
            }
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Err(self.decline(
            "elicitation/create",
            "an unattended CI run has nobody to answer questions; elicitation is always declined",
            &request,
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
        let method = crate::inert::clip(&request.method, 100);
        Err(self.decline(
            &method,
            "agentci does not implement this request",
            &request.params,
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if self.counts_list_changed {
            self.state.note_tools_changed();
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut declared = serde_json::Map::new();
        if self.root.is_some() {
            declared.insert("roots".into(), serde_json::json!({"listChanged": false}));
        }
        if self.sampler.is_some() {
            declared.insert("sampling".into(), serde_json::json!({}));
        }
        let capabilities: ClientCapabilities =
            serde_json::from_value(serde_json::Value::Object(declared)).unwrap_or_default();
        let mut implementation = Implementation::default();
        implementation.name = "agentci".to_string();
        implementation.version = env!("CARGO_PKG_VERSION").to_string();
        ClientConfig::new(capabilities, implementation).with_protocol_version(protocol_version())
    }
}
