//! The fake server's OpenAI Responses API (`POST /v1/responses`): scripted
//! replies rendered as a reasoning model answers, as one JSON response
//! object or as the API's typed server-sent events, and the refusals the
//! real API makes when reasoning or tool calls come back wrong.
//!
//! Every answer starts with a reasoning item, as a reasoning model's do
//! (https://platform.openai.com/docs/guides/reasoning): its
//! `encrypted_content` only when the request's `include` asks for
//! `reasoning.encrypted_content`, its summary only when `reasoning.summary`
//! asks for one. The server remembers what it issued: the encrypted content
//! of each reasoning item, which reasoning item preceded each function
//! call, and, for requests with `store: true`, each response's whole
//! conversation, which `previous_response_id` continues.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::{FakeUsage, Prepared, PreparedKind, Rendered, pieces};

/// What the server issued and stored, across requests.
#[derive(Default)]
pub struct ResponsesState {
    /// Responses stored (`store: true`): their conversation, input and output items.
    stored: HashMap<String, Vec<Value>>,
    /// The encrypted content issued for each reasoning item id.
    encrypted: HashMap<String, String>,
    /// Each function call's `call_id` → (its item id, the reasoning item before it).
    reasoning_before: HashMap<String, (String, String)>,
}

/// A 400 in the API's error shape
/// (https://platform.openai.com/docs/guides/error-codes: `{"error": {message, type, param, code}}`).
fn invalid(status: u16, message: String, param: &str, code: Option<&str>) -> (u16, Value) {
    (
        status,
        json!({"error": {"message": message, "type": "invalid_request_error",
                         "param": param, "code": code}}),
    )
}

/// Why the real API would refuse this request, with its status and body.
pub fn refusal(body: &Value, state: &ResponsesState) -> Option<(u16, Value)> {
    // https://platform.openai.com/docs/api-reference/responses/create: `model` is required.
    if body.get("model").and_then(Value::as_str).is_none() {
        return Some(invalid(
            400,
            "Missing required parameter: 'model'.".into(),
            "model",
            Some("missing_required_parameter"),
        ));
    }
    // Function tools take an object schema, as in Chat Completions
    // (https://platform.openai.com/docs/guides/function-calling).
    for tool in body["tools"].as_array().into_iter().flatten() {
        if tool["type"] == "function" && tool["parameters"]["type"] != "object" {
            return Some(invalid(
                400,
                format!(
                    "Invalid schema for function '{}': schema must be a JSON Schema of 'type: \"object\"', got 'type: {}'.",
                    tool["name"].as_str().unwrap_or_default(),
                    tool["parameters"]["type"]
                ),
                "tools",
                Some("invalid_function_parameters"),
            ));
        }
    }
    let mut history: Vec<Value> = Vec::new();
    // `previous_response_id` must name a stored response
    // (https://platform.openai.com/docs/guides/conversation-state); the API
    // answers an unknown one with this 400.
    if let Some(previous) = body.get("previous_response_id").and_then(Value::as_str) {
        match state.stored.get(previous) {
            Some(items) => history.clone_from(items),
            None => {
                return Some(invalid(
                    400,
                    format!("Previous response with id '{previous}' not found."),
                    "previous_response_id",
                    Some("previous_response_not_found"),
                ));
            }
        }
    }
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let store = body["store"].as_bool().unwrap_or(true);
    let earlier = history.len();
    history.extend(input);
    for (i, item) in history.iter().enumerate().skip(earlier) {
        let before = &history[..i];
        match item["type"].as_str() {
            // Function calling guide: every `function_call_output` answers
            // a `function_call` earlier in the conversation, by `call_id`.
            Some("function_call_output") => {
                let call_id = item["call_id"].as_str().unwrap_or_default();
                let asked = before
                    .iter()
                    .any(|b| b["type"] == "function_call" && b["call_id"] == call_id);
                if !asked {
                    return Some(invalid(
                        400,
                        format!(
                            "No tool call found for function call output with call_id {call_id}."
                        ),
                        "input",
                        None,
                    ));
                }
            }
            // Reasoning guide, "Keeping reasoning items in context": with
            // `store: false` the reasoning item that preceded a function
            // call must come back with it (encrypted), or the API refuses.
            Some("function_call") if !store => {
                let call_id = item["call_id"].as_str().unwrap_or_default();
                if let Some((item_id, reasoning_id)) = state.reasoning_before.get(call_id) {
                    let kept = before
                        .iter()
                        .any(|b| b["type"] == "reasoning" && b["id"] == reasoning_id.as_str());
                    if !kept {
                        return Some(invalid(
                            400,
                            format!(
                                "Item '{item_id}' of type 'function_call' was provided without its required 'reasoning' item: '{reasoning_id}'."
                            ),
                            "input",
                            None,
                        ));
                    }
                }
            }
            Some("reasoning") => {
                let id = item["id"].as_str().unwrap_or_default();
                let encrypted = item["encrypted_content"].as_str();
                // Without `store`, a reasoning item lives only in its
                // encrypted content; one without it is looked up and missing
                // (the API's 404 for zero-data-retention requests).
                if !store && encrypted.is_none() && !was_stored(state, id) {
                    return Some(invalid(
                        404,
                        format!(
                            "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
                        ),
                        "input",
                        None,
                    ));
                }
                // Encrypted content is checked: a modified one does not decrypt.
                if let (Some(sent), Some(issued)) = (encrypted, state.encrypted.get(id))
                    && sent != issued
                {
                    return Some(invalid(
                        400,
                        format!("The encrypted content for item {id} could not be verified."),
                        "input",
                        Some("invalid_encrypted_content"),
                    ));
                }
                // A reasoning item comes back with the item it led to.
                let follows = history[i + 1..]
                    .iter()
                    .find(|next| next["type"] != "reasoning")
                    .is_some_and(|next| {
                        matches!(next["type"].as_str(), Some("function_call" | "message"))
                            && (next["type"] != "message" || next["role"] == "assistant")
                    });
                if !follows {
                    return Some(invalid(
                        400,
                        format!(
                            "Item '{id}' of type 'reasoning' was provided without its required following item."
                        ),
                        "input",
                        None,
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

fn was_stored(state: &ResponsesState, id: &str) -> bool {
    state
        .stored
        .values()
        .flatten()
        .any(|item| item["type"] == "reasoning" && item["id"] == id)
}

/// The output items of scripted reply `number` for this request.
fn output(
    number: usize,
    text: &Option<String>,
    calls: &[(String, String, String)],
    request: &Value,
) -> Vec<Value> {
    let mut reasoning = json!({"type": "reasoning", "id": format!("rs_fake_{number}"),
                               "summary": []});
    let summary = request["reasoning"]["summary"].as_str();
    if matches!(summary, Some("auto" | "concise" | "detailed")) {
        reasoning["summary"] = json!([{"type": "summary_text",
                                       "text": format!("Reasoning summary {number}.")}]);
    }
    let include = request["include"].as_array().cloned().unwrap_or_default();
    if include.iter().any(|i| i == "reasoning.encrypted_content") {
        reasoning["encrypted_content"] = json!(encrypted(number));
    }
    let mut items = vec![reasoning];
    if let Some(text) = text {
        items.push(
            json!({"type": "message", "id": format!("msg_fake_{number}"),
                          "status": "completed", "role": "assistant",
                          "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        );
    }
    for (i, (call_id, name, arguments)) in calls.iter().enumerate() {
        items.push(
            json!({"type": "function_call", "id": format!("fc_fake_{number}_{i}"),
                          "call_id": call_id, "name": name, "arguments": arguments,
                          "status": "completed"}),
        );
    }
    items
}

fn encrypted(number: usize) -> String {
    format!("gAAAAfake-encrypted-reasoning-{number}")
}

/// Records what serving `reply` to `request` issues: reasoning items,
/// the calls they preceded, and the conversation when stored.
pub fn issue(state: &mut ResponsesState, reply: &Prepared, request: &Value) {
    let PreparedKind::Chat { text, calls, .. } = &reply.kind else {
        return;
    };
    let items = output(reply.number, text, calls, request);
    let reasoning_id = format!("rs_fake_{}", reply.number);
    state
        .encrypted
        .insert(reasoning_id.clone(), encrypted(reply.number));
    for item in items.iter().filter(|i| i["type"] == "function_call") {
        state.reasoning_before.insert(
            item["call_id"].as_str().unwrap_or_default().to_string(),
            (
                item["id"].as_str().unwrap_or_default().to_string(),
                reasoning_id.clone(),
            ),
        );
    }
    if request["store"].as_bool().unwrap_or(true) {
        let mut conversation = request["previous_response_id"]
            .as_str()
            .and_then(|id| state.stored.get(id).cloned())
            .unwrap_or_default();
        conversation.extend(request["input"].as_array().cloned().unwrap_or_default());
        conversation.extend(items);
        state.stored.insert(response_id(reply.number), conversation);
    }
}

fn response_id(number: usize) -> String {
    format!("resp_fake_{number}")
}

fn usage(usage: FakeUsage) -> Value {
    json!({
        "input_tokens": usage.prompt,
        "input_tokens_details": {"cached_tokens": usage.cache_read},
        "output_tokens": usage.completion,
        "output_tokens_details": {"reasoning_tokens": usage.completion / 4},
        "total_tokens": usage.prompt + usage.completion,
    })
}

/// The response object (https://platform.openai.com/docs/api-reference/responses/object).
fn response_object(number: usize, request: &Value, status: &str, output: Vec<Value>) -> Value {
    json!({
        "id": response_id(number),
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": request["model"],
        "output": output,
        "previous_response_id": request["previous_response_id"],
        "store": request["store"].as_bool().unwrap_or(true),
        "error": null,
        "incomplete_details": null,
    })
}

/// `reply` as this API sends it.
pub fn render(reply: &Prepared, request: &Value, stream: bool) -> Rendered {
    match &reply.kind {
        PreparedKind::Chat {
            text,
            calls,
            usage: fake_usage,
        } => {
            let items = output(reply.number, text, calls, request);
            let mut done = response_object(reply.number, request, "completed", items.clone());
            done["usage"] = usage(*fake_usage);
            match stream {
                false => Rendered::Json(200, done),
                true => Rendered::Events(events(reply.number, request, &items, done)),
            }
        }
        // The Responses API's context error
        // (https://platform.openai.com/docs/guides/error-codes).
        PreparedKind::ContextTooLong => Rendered::Json(
            400,
            json!({"error": {"message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                             "type": "invalid_request_error", "param": "input",
                             "code": "context_length_exceeded"}}),
        ),
        _ => reply.render(super::Api::OpenAi, stream),
    }
}

/// The streaming event sequence
/// (https://platform.openai.com/docs/api-reference/responses-streaming).
fn events(number: usize, request: &Value, items: &[Value], done: Value) -> Vec<String> {
    let started = response_object(number, request, "in_progress", Vec::new());
    let mut out: Vec<Value> = vec![
        json!({"type": "response.created", "response": started.clone()}),
        json!({"type": "response.in_progress", "response": started}),
    ];
    for (index, item) in items.iter().enumerate() {
        let id = item["id"].clone();
        let mut added = item.clone();
        match item["type"].as_str() {
            Some("message") => added["content"] = json!([]),
            Some("function_call") => added["arguments"] = json!(""),
            Some("reasoning") => added["summary"] = json!([]),
            _ => {}
        }
        out.push(
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        );
        match item["type"].as_str() {
            Some("reasoning") => {
                for (s, part) in item["summary"].as_array().into_iter().flatten().enumerate() {
                    let text = part["text"].as_str().unwrap_or_default();
                    out.push(
                        json!({"type": "response.reasoning_summary_part.added", "item_id": id,
                                    "output_index": index, "summary_index": s,
                                    "part": {"type": "summary_text", "text": ""}}),
                    );
                    for piece in pieces(text) {
                        out.push(
                            json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                                        "output_index": index, "summary_index": s, "delta": piece}),
                        );
                    }
                    out.push(
                        json!({"type": "response.reasoning_summary_text.done", "item_id": id,
                                    "output_index": index, "summary_index": s, "text": text}),
                    );
                    out.push(
                        json!({"type": "response.reasoning_summary_part.done", "item_id": id,
                                    "output_index": index, "summary_index": s, "part": part}),
                    );
                }
            }
            Some("message") => {
                let text = item["content"][0]["text"].as_str().unwrap_or_default();
                out.push(json!({"type": "response.content_part.added", "item_id": id,
                                "output_index": index, "content_index": 0,
                                "part": {"type": "output_text", "text": "", "annotations": []}}));
                for piece in pieces(text) {
                    out.push(json!({"type": "response.output_text.delta", "item_id": id,
                                    "output_index": index, "content_index": 0, "delta": piece}));
                }
                out.push(json!({"type": "response.output_text.done", "item_id": id,
                                "output_index": index, "content_index": 0, "text": text}));
                out.push(json!({"type": "response.content_part.done", "item_id": id,
                                "output_index": index, "content_index": 0,
                                "part": item["content"][0]}));
            }
            Some("function_call") => {
                let arguments = item["arguments"].as_str().unwrap_or_default();
                for piece in pieces(arguments) {
                    out.push(
                        json!({"type": "response.function_call_arguments.delta", "item_id": id,
                                    "output_index": index, "delta": piece}),
                    );
                }
                out.push(
                    json!({"type": "response.function_call_arguments.done", "item_id": id,
                                "output_index": index, "arguments": arguments}),
                );
            }
            _ => {}
        }
        out.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    }
    out.push(json!({"type": "response.completed", "response": done}));
    out.into_iter()
        .enumerate()
        .map(|(seq, mut event)| {
            event["sequence_number"] = json!(seq);
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or_default()
            )
        })
        .collect()
}
