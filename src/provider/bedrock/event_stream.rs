//! Bedrock's streamed answer: the AWS event stream binary format
//! (`application/vnd.amazon.eventstream`,
//! <https://docs.aws.amazon.com/transcribe/latest/dg/event-stream.html>).
//! Each message is a prelude (total length, headers length, CRC32 of the
//! two), headers, a payload and a CRC32 of everything before it; both CRCs
//! are checked, so a corrupted frame is a broken stream, not a wrong answer.
//!
//! A `chunk` event's payload is `{"bytes": BASE64}`, and the bytes are one
//! Anthropic Messages stream event, fed to the Messages decoder as if it
//! had come over SSE. An `exception` message (throttlingException,
//! validationException, …) ends the stream with the HTTP status the same
//! exception has outside a stream, so retrying treats both alike.

use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::{Stream, StreamExt};
use serde::Deserialize;

use crate::provider::answer_cap;
use crate::provider::http::{StreamDecoder, StreamFailure};
use crate::provider::sse::SseEvent;
use crate::provider::{ChatResponse, ProviderObserver};

/// The prelude: total length, headers length, prelude CRC.
const PRELUDE: usize = 12;
/// A frame larger than this is garbage, not an answer (Bedrock's are small).
const MAX_FRAME: usize = 16 * 1024 * 1024;

/// Why a Bedrock stream gave no answer.
#[derive(Debug, PartialEq)]
pub enum EventStreamFailure {
    /// Broken framing, a broken connection or an unreadable event.
    Stream(StreamFailure),
    /// Bedrock sent an exception event.
    Exception {
        /// `:exception-type`, e.g. `throttlingException`.
        kind: String,
        message: String,
    },
}

/// Why bytes are not an event stream message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("an event stream prelude whose checksum does not match")]
    PreludeChecksum,
    #[error("an event stream message of impossible length {0}")]
    Length(usize),
    #[error("an event stream message whose checksum does not match")]
    MessageChecksum,
    #[error("an event stream header that runs past its message")]
    HeaderPastEnd,
    #[error("an event stream header of unknown type {0}")]
    HeaderType(u8),
}

/// One decoded message.
#[derive(Debug, PartialEq)]
pub struct Frame {
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl Frame {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Takes one whole message off the front of `buffer`; `None` until one has
/// arrived.
pub fn next_frame(buffer: &mut Vec<u8>) -> Result<Option<Frame>, FrameError> {
    if buffer.len() < PRELUDE {
        return Ok(None);
    }
    let word = |at: usize| {
        u32::from_be_bytes([buffer[at], buffer[at + 1], buffer[at + 2], buffer[at + 3]])
    };
    let total = word(0) as usize;
    let headers_len = word(4) as usize;
    if crc32fast::hash(&buffer[..8]) != word(8) {
        return Err(FrameError::PreludeChecksum);
    }
    if total > MAX_FRAME || total < PRELUDE + headers_len + 4 {
        return Err(FrameError::Length(total));
    }
    if buffer.len() < total {
        return Ok(None);
    }
    if crc32fast::hash(&buffer[..total - 4]) != word(total - 4) {
        return Err(FrameError::MessageChecksum);
    }
    let headers = parse_headers(&buffer[PRELUDE..PRELUDE + headers_len])?;
    let payload = buffer[PRELUDE + headers_len..total - 4].to_vec();
    buffer.drain(..total);
    Ok(Some(Frame { headers, payload }))
}

/// Headers as (name, value); string values are kept, other types are
/// skipped over (Bedrock sends only strings).
fn parse_headers(mut bytes: &[u8]) -> Result<Vec<(String, String)>, FrameError> {
    let short = || FrameError::HeaderPastEnd;
    let mut headers = Vec::new();
    while !bytes.is_empty() {
        let name_len = usize::from(bytes[0]);
        let name = bytes.get(1..1 + name_len).ok_or_else(short)?;
        let name = String::from_utf8_lossy(name).into_owned();
        let kind = *bytes.get(1 + name_len).ok_or_else(short)?;
        let rest = &bytes[2 + name_len..];
        let fixed = |n: usize| rest.get(..n).map(|_| n).ok_or_else(short);
        let used = match kind {
            0 | 1 => 0,
            2 => fixed(1)?,
            3 => fixed(2)?,
            4 => fixed(4)?,
            5 | 8 => fixed(8)?,
            9 => fixed(16)?,
            6 | 7 => {
                let len = rest.get(..2).ok_or_else(short)?;
                let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
                let value = rest.get(2..2 + len).ok_or_else(short)?;
                if kind == 7 {
                    headers.push((name, String::from_utf8_lossy(value).into_owned()));
                }
                2 + len
            }
            other => return Err(FrameError::HeaderType(other)),
        };
        bytes = &rest[used..];
    }
    Ok(headers)
}

#[derive(Deserialize)]
struct Chunk {
    bytes: String,
}

#[derive(Deserialize, Default)]
struct ExceptionBody {
    #[serde(default, alias = "Message")]
    message: Option<String>,
}

/// Reads a Bedrock stream through the Messages `decoder` until its final
/// event; more than `limit` bytes is [`StreamFailure::TooLarge`].
pub async fn decode<S, B, E, D>(
    body: S,
    mut decoder: D,
    observer: &dyn ProviderObserver,
    limit: u64,
) -> Result<ChatResponse, EventStreamFailure>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
    D: StreamDecoder,
{
    let malformed = |m: String| EventStreamFailure::Stream(StreamFailure::Malformed(m));
    let over = AtomicBool::new(false);
    let body = answer_cap::capped(body, limit, &over);
    futures_util::pin_mut!(body);
    let mut buffer = Vec::new();
    let mut seen = 0;
    while let Some(piece) = body.next().await {
        let piece = piece.map_err(|message| {
            EventStreamFailure::Stream(match over.load(Ordering::Relaxed) {
                true => StreamFailure::TooLarge,
                false => StreamFailure::Transport(message),
            })
        })?;
        buffer.extend_from_slice(piece.as_ref());
        while let Some(frame) = next_frame(&mut buffer).map_err(|e| malformed(e.to_string()))? {
            seen += 1;
            match frame.header(":message-type") {
                Some("event") if frame.header(":event-type") == Some("chunk") => {
                    let chunk: Chunk = serde_json::from_slice(&frame.payload)
                        .map_err(|e| malformed(format!("a chunk that is not JSON ({e})")))?;
                    let bytes = data_encoding::BASE64
                        .decode(chunk.bytes.as_bytes())
                        .map_err(|e| {
                            malformed(format!("a chunk whose bytes are not base64 ({e})"))
                        })?;
                    let event = SseEvent {
                        event: "chunk".into(),
                        data: String::from_utf8(bytes).unwrap_or_else(|err| {
                            String::from_utf8_lossy(err.as_bytes()).into_owned()
                        }),
                    };
                    if decoder
                        .event(&event, observer)
                        .map_err(|e| malformed(e.to_string()))?
                    {
                        drain_ready(body.as_mut());
                        return decoder.finish().map_err(|e| malformed(e.to_string()));
                    }
                }
                Some("exception") => {
                    let body: ExceptionBody =
                        serde_json::from_slice(&frame.payload).unwrap_or_default();
                    return Err(EventStreamFailure::Exception {
                        kind: frame
                            .header(":exception-type")
                            .unwrap_or("exception")
                            .to_string(),
                        message: body.message.unwrap_or_else(|| {
                            String::from_utf8_lossy(&frame.payload).into_owned()
                        }),
                    });
                }
                Some("error") => {
                    return Err(EventStreamFailure::Exception {
                        kind: frame.header(":error-code").unwrap_or("error").to_string(),
                        message: frame.header(":error-message").unwrap_or("").to_string(),
                    });
                }
                // Other events (`initial-response`) carry nothing for the answer.
                _ => {}
            }
        }
    }
    Err(EventStreamFailure::Stream(StreamFailure::Incomplete {
        events: seen,
    }))
}

/// Reads what is left of the body that has already arrived (the end of the
/// stream, after the last event), so the connection goes back to the pool
/// instead of being closed with unread bytes; never waits for more.
fn drain_ready<S: Stream + ?Sized>(mut body: std::pin::Pin<&mut S>) {
    use futures_util::FutureExt;
    while let Some(Some(_)) = body.next().now_or_never() {}
}

/// The HTTP status Bedrock gives each exception when it is not streamed
/// (<https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html>).
pub fn exception_status(kind: &str) -> u16 {
    match kind
        .trim_end_matches("Exception")
        .to_ascii_lowercase()
        .as_str()
    {
        "throttling" => 429,
        "validation" => 400,
        "accessdenied" => 403,
        "resourcenotfound" => 404,
        "modeltimeout" => 408,
        "modelstreamerror" => 424,
        "servicequotaexceeded" => 400,
        "serviceunavailable" => 503,
        "modelnotready" => 429,
        _ => 500,
    }
}

/// One message in the event stream format; the inverse of [`next_frame`],
/// for tests and benchmarks.
pub fn encode_frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(name.len() as u8);
        head.extend_from_slice(name.as_bytes());
        head.push(7);
        head.extend_from_slice(&(value.len() as u16).to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = (PRELUDE + head.len() + payload.len() + 4) as u32;
    let mut frame = Vec::with_capacity(total as usize);
    frame.extend_from_slice(&total.to_be_bytes());
    frame.extend_from_slice(&(head.len() as u32).to_be_bytes());
    frame.extend_from_slice(&crc32fast::hash(&frame).to_be_bytes());
    frame.extend_from_slice(&head);
    frame.extend_from_slice(payload);
    frame.extend_from_slice(&crc32fast::hash(&frame).to_be_bytes());
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(event: &str) -> Vec<u8> {
        let payload = serde_json::json!({"bytes": data_encoding::BASE64.encode(event.as_bytes()), "p": "abc"});
        encode_frame(
            &[
                (":event-type", "chunk"),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.to_string().as_bytes(),
        )
    }

    fn run(body: Vec<u8>, piece: usize) -> Result<ChatResponse, EventStreamFailure> {
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
            body.chunks(piece).map(|c| Ok(c.to_vec())).collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(decode(
            futures_util::stream::iter(pieces),
            crate::provider::anthropic::cloud_stream_decoder(),
            &crate::provider::Unobserved,
            answer_cap::DEFAULT_MAX_RESPONSE_BYTES,
        ))
    }

    fn answer() -> Vec<u8> {
        [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":12,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#,
            r#"{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":12}}"#,
        ]
        .iter()
        .flat_map(|event| chunk(event))
        .collect()
    }

    #[test]
    fn frames_in_any_pieces_make_the_answer() {
        for piece in [1, 7, 100, 10_000] {
            let response = run(answer(), piece).unwrap();
            assert_eq!(response.text.as_deref(), Some("hello"));
            assert_eq!(response.usage.input_tokens, 12);
            assert_eq!(response.usage.output_tokens, 3);
        }
    }

    #[test]
    fn a_bad_checksum_or_a_cut_is_a_broken_stream() {
        let mut body = answer();
        let last = body.len() - 1;
        body[last] ^= 1;
        assert!(matches!(
            run(body, 50),
            Err(EventStreamFailure::Stream(StreamFailure::Malformed(m))) if m.contains("checksum")
        ));
        let body = answer();
        assert!(matches!(
            run(body[..body.len() - 10].to_vec(), 50),
            Err(EventStreamFailure::Stream(StreamFailure::Incomplete {
                events: 4
            }))
        ));
    }

    #[test]
    fn exceptions_carry_their_kind_and_status() {
        let mut body = chunk(r#"{"type":"message_start","message":{}}"#);
        body.extend(encode_frame(
            &[
                (":exception-type", "throttlingException"),
                (":content-type", "application/json"),
                (":message-type", "exception"),
            ],
            br#"{"message":"Too many requests, please wait before trying again."}"#,
        ));
        let failure = run(body, 9).unwrap_err();
        assert_eq!(
            failure,
            EventStreamFailure::Exception {
                kind: "throttlingException".into(),
                message: "Too many requests, please wait before trying again.".into()
            }
        );
        assert_eq!(exception_status("throttlingException"), 429);
        assert_eq!(exception_status("validationException"), 400);
        assert_eq!(exception_status("modelStreamErrorException"), 424);
        assert_eq!(exception_status("internalServerException"), 500);
    }
}
