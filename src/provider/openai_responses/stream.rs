//! A streamed Responses answer: typed events up to `response.completed`
//! (or `response.incomplete`). Text deltas go to the observer as they
//! arrive; each finished output item (`response.output_item.done`) is kept
//! whole, so reasoning items keep their encrypted content and summary and
//! function calls their complete arguments; the usage and the response id
//! come with the last event. `response.failed` and `error` events are the
//! server's failure; a stream that ends before its last event is incomplete.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::Value;

use super::response::{WireItem, WireResponse, answer, failure, finish_reason};
use crate::provider::answer_error::AnswerError;
use crate::provider::http::StreamDecoder;
use crate::provider::sse::SseEvent;
use crate::provider::{ChatResponse, ProviderObserver, Usage};

/// The fields of the events this decoder reads; every event names its
/// `type` in the data (the `event:` line repeats it).
#[derive(Deserialize)]
struct WireEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    /// On `error` events.
    #[serde(default)]
    message: Option<String>,
}

/// A function call whose arguments are still arriving.
#[derive(Default)]
struct PartialCall {
    call_id: String,
    name: String,
    arguments: String,
}

/// Assembles a streamed answer; the response id goes to `id_out`, which
/// the provider reads to chain the next request.
pub(super) struct EventDecoder<'a> {
    done: BTreeMap<usize, WireItem>,
    partial: BTreeMap<usize, PartialCall>,
    last: Option<WireResponse>,
    id_out: &'a Mutex<Option<String>>,
}

impl<'a> EventDecoder<'a> {
    pub(super) fn new(id_out: &'a Mutex<Option<String>>) -> Self {
        Self {
            done: BTreeMap::new(),
            partial: BTreeMap::new(),
            last: None,
            id_out,
        }
    }
}

impl StreamDecoder for EventDecoder<'_> {
    fn event(
        &mut self,
        event: &SseEvent,
        observer: &dyn ProviderObserver,
    ) -> Result<bool, AnswerError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(false);
        }
        let wire: WireEvent =
            serde_json::from_str(data).map_err(|source| AnswerError::NotJson {
                what: "an event",
                format: "Responses",
                source,
            })?;
        let index = wire.output_index.unwrap_or(0);
        match wire.kind.as_str() {
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(delta) = wire.delta.filter(|d| !d.is_empty()) {
                    observer.partial_text(&delta);
                }
            }
            "response.output_item.added" => {
                if let Some(item) = wire.item
                    && item["type"] == "function_call"
                {
                    let text = |key: &str| item[key].as_str().unwrap_or_default().to_string();
                    self.partial.insert(
                        index,
                        PartialCall {
                            call_id: text("call_id"),
                            name: text("name"),
                            arguments: String::new(),
                        },
                    );
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(call), Some(delta)) = (self.partial.get_mut(&index), wire.delta) {
                    call.arguments.push_str(&delta);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(call), Some(arguments)) =
                    (self.partial.get_mut(&index), wire.arguments)
                {
                    call.arguments = arguments;
                }
            }
            "response.output_item.done" => {
                let Some(item) = wire.item else {
                    return Ok(false);
                };
                let item: WireItem =
                    serde_json::from_value(item).map_err(|source| AnswerError::NotJson {
                        what: "an output item",
                        format: "Responses",
                        source,
                    })?;
                self.partial.remove(&index);
                self.done.insert(index, item);
            }
            "response.completed" | "response.incomplete" => {
                let response = wire.response.unwrap_or(Value::Null);
                let response: WireResponse =
                    serde_json::from_value(response).map_err(|source| AnswerError::NotJson {
                        what: "a final event",
                        format: "Responses",
                        source,
                    })?;
                self.last = Some(response);
                return Ok(true);
            }
            "response.failed" => {
                let error = wire.response.as_ref().and_then(|r| r.get("error"));
                return Err(failure(error));
            }
            "error" => {
                return Err(AnswerError::Reported {
                    message: wire
                        .message
                        .unwrap_or_else(|| "an error event without a message".to_string()),
                });
            }
            _ => {}
        }
        Ok(false)
    }

    fn finish(mut self) -> Result<ChatResponse, AnswerError> {
        let Some(mut last) = self.last.take() else {
            return Err(AnswerError::Reported {
                message: "the stream ended without its final event".to_string(),
            });
        };
        if let Ok(mut slot) = self.id_out.lock() {
            *slot = last.id.take();
        }
        let finish = finish_reason(&last);
        let usage = last
            .usage
            .take()
            .map_or_else(Usage::default, |u| u.neutral());
        // Calls whose `output_item.done` never came still count, in order.
        for (index, call) in std::mem::take(&mut self.partial) {
            self.done.insert(
                index,
                WireItem::FunctionCall {
                    call_id: call.call_id,
                    name: call.name,
                    arguments: call.arguments,
                },
            );
        }
        // The final event repeats the output; the items seen one by one
        // are the same, and are used when a server sends only those.
        let items = match self.done.is_empty() {
            true => std::mem::take(&mut last.output),
            false => self.done.into_values().collect(),
        };
        Ok(answer(items, usage, finish))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Reasoning;
    use crate::provider::http::{StreamFailure, decode_stream};

    struct Collect(Mutex<String>);
    impl ProviderObserver for Collect {
        fn partial_text(&self, delta: &str) {
            self.0.lock().unwrap().push_str(delta);
        }
    }

    fn decode(
        body: &str,
        chunk: usize,
    ) -> (Result<ChatResponse, StreamFailure>, String, Option<String>) {
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> = body
            .as_bytes()
            .chunks(chunk)
            .map(|c| Ok(c.to_vec()))
            .collect();
        let seen = Collect(Mutex::new(String::new()));
        let id = Mutex::new(None);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let result = runtime.block_on(decode_stream(
            futures_util::stream::iter(pieces),
            EventDecoder::new(&id),
            &seen,
            crate::provider::answer_cap::DEFAULT_MAX_RESPONSE_BYTES,
        ));
        (
            result,
            seen.0.into_inner().unwrap(),
            id.into_inner().unwrap(),
        )
    }

    fn event(data: &str) -> String {
        let kind: Value = serde_json::from_str(data).unwrap();
        format!(
            "event: {}\ndata: {data}\n\n",
            kind["type"].as_str().unwrap()
        )
    }

    fn stream() -> String {
        [
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_9","status":"in_progress","output":[]}}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_9","summary":[]}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"Plan."}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_9","encrypted_content":"gAAA9","summary":[{"type":"summary_text","text":"Plan."}]}}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"message","id":"msg_9","role":"assistant","content":[]}}"#,
            r#"{"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"Look"}"#,
            r#"{"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"ing."}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"message","id":"msg_9","role":"assistant","content":[{"type":"output_text","text":"Looking.","annotations":[]}]}}"#,
            r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_9","call_id":"call_9","name":"ls","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":2,"item_id":"fc_9","delta":"{\"pa"}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":2,"item_id":"fc_9","delta":"th\":\".\"}"}"#,
            r#"{"type":"response.function_call_arguments.done","output_index":2,"item_id":"fc_9","arguments":"{\"path\":\".\"}"}"#,
            r#"{"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","id":"fc_9","call_id":"call_9","name":"ls","arguments":"{\"path\":\".\"}"}}"#,
            r#"{"type":"response.completed","response":{"id":"resp_9","status":"completed","output":[],"usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":10},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":3}}}}"#,
        ]
        .iter()
        .map(|d| event(d))
        .collect()
    }

    #[test]
    fn a_stream_gives_reasoning_text_calls_usage_and_id() {
        let body = stream();
        for chunk in [1, 9, 100, body.len()] {
            let (result, seen, id) = decode(&body, chunk);
            let response = result.unwrap();
            assert_eq!(seen, "Looking.", "chunk {chunk}");
            assert_eq!(id.as_deref(), Some("resp_9"));
            assert_eq!(response.text.as_deref(), Some("Looking."));
            assert_eq!(
                response.reasoning,
                vec![Reasoning::Item {
                    id: "rs_9".into(),
                    encrypted_content: Some("gAAA9".into()),
                    summary: vec!["Plan.".into()],
                }]
            );
            assert_eq!(response.tool_calls[0].id, "call_9");
            assert_eq!(response.tool_calls[0].arguments, r#"{"path":"."}"#);
            assert_eq!(
                (
                    response.usage.input_tokens,
                    response.usage.cache_read_tokens,
                    response.usage.output_tokens,
                    response.usage.reasoning_tokens
                ),
                (50, 10, 7, 3)
            );
        }
    }

    #[test]
    fn a_cut_stream_is_incomplete_and_failures_are_reported() {
        let body = stream();
        let cut = &body[..body.find("response.completed").unwrap() - 7];
        let (result, _, _) = decode(cut, 64);
        assert!(matches!(result, Err(StreamFailure::Incomplete { .. })));
        let failed = event(
            r#"{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"server_error","message":"The model broke."}}}"#,
        );
        let (result, _, _) = decode(&failed, 64);
        assert!(
            matches!(result, Err(StreamFailure::Malformed(m)) if m.contains("The model broke."))
        );
        let error = event(
            r#"{"type":"error","code":"rate_limit_exceeded","message":"Slow down.","param":null}"#,
        );
        let (result, _, _) = decode(&error, 64);
        assert!(matches!(result, Err(StreamFailure::Malformed(m)) if m.contains("Slow down.")));
    }
}
