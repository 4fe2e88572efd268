//! The run's answer to `sampling/createMessage` from a server the job lets
//! sample: one completion of the job's model (same provider, base URL,
//! key and retry policy as the run), with the request's system prompt and
//! messages, no tools, and at most the request's `maxTokens`.
//!
//! What the call used is told to the server's request record (and so the
//! trace); it is not counted in the run's budget, which the agent keeps,
//! so a run answers at most [`MAX_SAMPLING_ANSWERS`] of them: a server
//! asking in a loop cannot spend without end. A replay has no recorded
//! answers for such calls, so it refuses them.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::job::{ModelSpec, ProviderKind};
use crate::mcp::{Sampler, SamplingAnswer, SamplingRequest};
use crate::provider::{ChatRequest, Message, ModelProvider, ToolChoice};
use crate::tools::BoxFuture;

use super::super::provider_setup::served_provider;

/// Sampling requests one run answers, all its servers together.
pub const MAX_SAMPLING_ANSWERS: u32 = 20;

/// Answers sampling requests with the job's model.
pub struct RunSampler {
    model: ModelSpec,
    /// Built when the run starts, before the model can act: its credentials
    /// (a key, a cloud's credentials file) are read then, never after the
    /// model could have changed a file they come from.
    provider: Result<Box<dyn ModelProvider>, String>,
    /// Model calls made (or tried) for servers so far.
    calls: AtomicU32,
}

impl RunSampler {
    /// Builds the model's provider now, with the key in `env`.
    pub fn new(model: &ModelSpec, env: &crate::run_env::RunEnv) -> RunSampler {
        let provider = match model.provider {
            ProviderKind::Replay => Err("the run's model is a replay, which holds no answers \
                                         for sampling requests"
                .to_string()),
            _ => served_provider(model, env).map_err(|e| e.to_string()),
        };
        RunSampler {
            model: model.clone(),
            provider,
            calls: AtomicU32::new(0),
        }
    }
}

impl Sampler for RunSampler {
    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<SamplingAnswer, String>> {
        Box::pin(async move {
            if self.calls.fetch_add(1, Ordering::SeqCst) >= MAX_SAMPLING_ANSWERS {
                return Err(format!(
                    "this run already answered {MAX_SAMPLING_ANSWERS} sampling requests, the \
                     most one run answers (they are not counted in its budget)"
                ));
            }
            let provider = self.provider.as_ref().map_err(Clone::clone)?;
            let chat = chat_request(&self.model.name, &request);
            let response = provider
                .complete(&chat)
                .await
                .map_err(|e| format!("the run's model failed: {e}"))?;
            let stop_reason = match response.finish_reason.as_deref() {
                // OpenAI says `length`, Anthropic `max_tokens`.
                Some("length" | "max_tokens") => "maxTokens",
                _ => "endTurn",
            };
            Ok(SamplingAnswer {
                model: self.model.name.clone(),
                text: response.text.unwrap_or_default(),
                stop_reason: Some(stop_reason.to_string()),
                detail: format!(
                    "answered by {} with {} input and {} output tokens (at most {}); not counted \
                     in the run's budget",
                    self.model.name,
                    response.usage.input_tokens,
                    response.usage.output_tokens,
                    request.max_tokens
                ),
            })
        })
    }
}

/// The server's conversation as a chat request without tools.
fn chat_request(model: &str, request: &SamplingRequest) -> ChatRequest {
    let system = request
        .system_prompt
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| Message::System { content: s.clone() });
    let turns = request.messages.iter().map(|turn| match turn.assistant {
        true => Message::Assistant {
            reasoning: Vec::new(),
            content: Some(turn.text.clone()),
            tool_calls: Vec::new(),
        },
        false => Message::User {
            content: turn.text.clone(),
        },
    });
    ChatRequest {
        model: model.to_string(),
        messages: system.chain(turns).collect(),
        tools: Vec::new(),
        tool_choice: ToolChoice::Auto,
        max_output_tokens: Some(request.max_tokens),
    }
}
