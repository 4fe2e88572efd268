//! Anthropic extended thinking in the fake model server: scripted replies
//! that think (thinking blocks with a signature the fake computes, redacted
//! thinking whose data the fake can check), rendered as a Messages body or
//! as its stream (`thinking_delta`, `signature_delta`), and the refusals
//! the real API answers a thinking request with, each a 400
//! `invalid_request_error` with the real message. The rules are those of
//! https://docs.claude.com/en/docs/build-with-claude/extended-thinking.

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// What the fake signs thinking with; the real API's key is its own.
const SECRET: &[u8] = b"agentci fake model thinking key";
/// The docs every thinking refusal points at.
const DOCS: &str = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking";
/// The beta that lets manual thinking's budget exceed `max_tokens`.
const INTERLEAVED_BETA: &str = "interleaved-thinking-2025-05-14";

/// One block of a scripted reply's thinking.
#[derive(Clone, Debug)]
pub enum Thought {
    /// A `thinking` block with this text, signed by the fake.
    Thinking(String),
    /// A `redacted_thinking` block whose data the fake derives from this seed.
    Redacted(String),
}

/// The signature the fake gives a thinking block's text (base64 of an
/// HMAC-SHA256): a block sent back changed by one byte no longer matches.
pub fn sign(text: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET).expect("any key length");
    mac.update(text.as_bytes());
    data_encoding::BASE64.encode(&mac.finalize().into_bytes())
}

/// The `data` of a redacted block: its seed and the seed's signature, so the
/// fake can tell its own data from anything else.
pub fn redacted_data(seed: &str) -> String {
    format!(
        "{}.{}",
        data_encoding::BASE64.encode(seed.as_bytes()),
        sign(seed)
    )
}

fn redacted_is_genuine(data: &str) -> bool {
    let Some((seed, signature)) = data.split_once('.') else {
        return false;
    };
    let Ok(seed) = data_encoding::BASE64.decode(seed.as_bytes()) else {
        return false;
    };
    sign(&String::from_utf8_lossy(&seed)) == signature
}

/// The content blocks of `thoughts`, as a whole message carries them.
pub fn blocks(thoughts: &[Thought]) -> Vec<Value> {
    thoughts
        .iter()
        .map(|thought| match thought {
            Thought::Thinking(text) => {
                json!({"type": "thinking", "thinking": text, "signature": sign(text)})
            }
            Thought::Redacted(seed) => {
                json!({"type": "redacted_thinking", "data": redacted_data(seed)})
            }
        })
        .collect()
}

/// The stream events of `thoughts`, at indexes 0…: a thinking block starts
/// empty, its text comes in `thinking_delta`s and its signature in one
/// `signature_delta` just before it stops; a redacted block comes whole.
pub fn events(thoughts: &[Thought], piece: usize) -> Vec<(&'static str, Value)> {
    let mut events = Vec::new();
    for (index, thought) in thoughts.iter().enumerate() {
        match thought {
            Thought::Thinking(text) => {
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                ));
                let chars: Vec<char> = text.chars().collect();
                for part in chars.chunks(piece) {
                    events.push((
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "thinking_delta",
                                         "thinking": part.iter().collect::<String>()}}),
                    ));
                }
                events.push((
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index,
                           "delta": {"type": "signature_delta", "signature": sign(text)}}),
                ));
            }
            Thought::Redacted(seed) => events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                       "content_block": {"type": "redacted_thinking",
                                         "data": redacted_data(seed)}}),
            )),
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events
}

fn is_thinking(block: &Value) -> bool {
    matches!(
        block["type"].as_str(),
        Some("thinking" | "redacted_thinking")
    )
}

fn content(message: &Value) -> &[Value] {
    message["content"].as_array().map_or(&[], Vec::as_slice)
}

/// Why the real API refuses this thinking request, if it does; `beta` is
/// the `anthropic-beta` header.
pub fn refusal(body: &Value, beta: Option<&str>) -> Option<String> {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    if let Some(problem) = block_refusal(messages) {
        return Some(problem);
    }
    let thinking = &body["thinking"];
    let kind = thinking["type"].as_str();
    let on = matches!(kind, Some("enabled" | "adaptive"));
    match kind {
        None | Some("disabled" | "enabled" | "adaptive") => {}
        Some(other) => {
            return Some(format!(
                "thinking: Input tag '{other}' found using 'type' does not match any of the expected tags: 'disabled', 'enabled', 'adaptive'"
            ));
        }
    }
    if kind == Some("enabled") {
        // Manual thinking: "budget_tokens … Must be ≥1024 and less than
        // max_tokens" (Messages API reference), unless interleaved thinking
        // lets the budget span the whole turn ("Interleaved thinking").
        let budget = thinking["budget_tokens"].as_u64();
        let Some(budget) = budget else {
            return Some("thinking.enabled.budget_tokens: Field required".into());
        };
        if budget < 1024 {
            return Some(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                    .into(),
            );
        }
        let interleaved = beta.is_some_and(|b| b.split(',').any(|v| v.trim() == INTERLEAVED_BETA));
        let max_tokens = body["max_tokens"].as_u64().unwrap_or(0);
        if budget >= max_tokens && !interleaved {
            return Some(format!(
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at {DOCS}#max-tokens-and-context-window-size"
            ));
        }
        // "Thinking with tool use": tool_choice `any` or `tool` is refused
        // with manual thinking (adaptive thinking allows forced tool use).
        if matches!(body["tool_choice"]["type"].as_str(), Some("any" | "tool")) {
            return Some("Thinking may not be enabled when tool_choice forces tool use.".into());
        }
    }
    if kind == Some("adaptive") && thinking.get("budget_tokens").is_some() {
        // Adaptive thinking takes no budget: the model decides.
        return Some("thinking.adaptive.budget_tokens: Extra inputs are not permitted".into());
    }
    if on {
        // "Feature compatibility": thinking is not compatible with
        // temperature or top_k modifications.
        if body
            .get("temperature")
            .is_some_and(|t| t.as_f64() != Some(1.0))
        {
            return Some(format!(
                "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at {DOCS}#feature-compatibility"
            ));
        }
        if body.get("top_k").is_some() {
            return Some(format!(
                "`top_k` must be unset when thinking is enabled. Please consult our documentation at {DOCS}#feature-compatibility"
            ));
        }
        return turn_refusal(messages);
    }
    // "Toggling thinking modes in conversations": with thinking off, the
    // assistant message in the final position may hold no thinking.
    if let Some(last) = messages.last()
        && last["role"] == "assistant"
        && let Some(j) = content(last).iter().position(is_thinking)
    {
        return Some(format!(
            "messages.{}.content.{j}: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request.",
            messages.len() - 1
        ));
    }
    None
}

/// "Preserving thinking blocks": blocks come back unmodified (the signature
/// is checked), and thinking blocks cannot carry `cache_control` ("Thinking
/// blocks cannot be cached directly with cache_control").
fn block_refusal(messages: &[Value]) -> Option<String> {
    for (i, message) in messages.iter().enumerate() {
        for (j, block) in content(message).iter().enumerate() {
            let genuine = match block["type"].as_str() {
                Some("thinking") => {
                    let text = block["thinking"].as_str().unwrap_or_default();
                    block["signature"].as_str() == Some(sign(text).as_str())
                }
                Some("redacted_thinking") => {
                    redacted_is_genuine(block["data"].as_str().unwrap_or_default())
                }
                _ => continue,
            };
            if message["role"] != "assistant" {
                return Some(format!(
                    "messages.{i}.content.{j}: thinking blocks may only appear in `assistant` messages"
                ));
            }
            if !genuine {
                return Some(format!(
                    "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                ));
            }
            if block.get("cache_control").is_some() {
                return Some(format!(
                    "messages.{i}.content.{j}.{}.cache_control: Extra inputs are not permitted",
                    block["type"].as_str().unwrap_or_default()
                ));
            }
        }
    }
    None
}

/// "Toggling thinking modes in conversations": with thinking on, the
/// assistant turn in progress (which spans its tool-use loop, so it starts
/// after the last user message that is not only tool results) must start
/// with a thinking block. The message is the API's own.
fn turn_refusal(messages: &[Value]) -> Option<String> {
    let answers_tools = |m: &Value| content(m).iter().any(|b| b["type"] == "tool_result");
    let start = messages
        .iter()
        .rposition(|m| m["role"] == "user" && !answers_tools(m))
        .map_or(0, |i| i + 1);
    let i = (start..messages.len()).find(|&i| messages[i]["role"] == "assistant")?;
    let first = content(&messages[i]).first()?;
    if is_thinking(first) {
        return None;
    }
    Some(format!(
        "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at {DOCS}",
        first["type"].as_str().unwrap_or_default()
    ))
}
