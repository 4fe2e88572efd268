//! Server-sent events: a streamed HTTP body as a sequence of `(event, data)`
//! pairs, on top of the `eventsource-stream` crate.
//!
//! This module only splits the byte stream into events and says how it
//! ended; what an event means belongs to the wire format that reads it
//! ([`super::openai`], [`super::anthropic`]). A body that stops before its
//! format's final event is the reader's to call a broken stream.

use std::fmt::Display;

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};

/// One event: its `event:` name (`message` when the server sent none, as
/// the SSE standard says) and its `data:` lines joined with newlines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Why a stream of events stopped early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseError {
    /// The connection failed or timed out while the body was arriving.
    Transport(String),
    /// The bytes were not UTF-8 or not event-stream lines.
    Malformed(String),
}

impl Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseError::Transport(message) => write!(f, "the connection failed: {message}"),
            SseError::Malformed(message) => write!(f, "the event stream is malformed: {message}"),
        }
    }
}

/// The events of a streamed body, in order. Comments and keep-alive lines
/// are dropped by the parser; events with no data are kept (Anthropic's
/// `ping` has data, some servers send bare `event:` lines).
pub fn events<S, B, E>(body: S) -> impl Stream<Item = Result<SseEvent, SseError>>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: Display,
{
    body.eventsource().map(|item| match item {
        Ok(event) => Ok(SseEvent {
            event: event.event,
            data: event.data,
        }),
        Err(EventStreamError::Transport(err)) => Err(SseError::Transport(err.to_string())),
        Err(EventStreamError::Utf8(err)) => Err(SseError::Malformed(err.to_string())),
        Err(EventStreamError::Parser(err)) => Err(SseError::Malformed(err.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;

    fn parse(chunks: &[&str]) -> Vec<Result<SseEvent, SseError>> {
        let body = stream::iter(
            chunks
                .iter()
                .map(|c| Ok::<_, std::io::Error>(c.as_bytes().to_vec()))
                .collect::<Vec<_>>(),
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(events(body).collect())
    }

    fn event(event: &str, data: &str) -> Result<SseEvent, SseError> {
        Ok(SseEvent {
            event: event.to_string(),
            data: data.to_string(),
        })
    }

    #[test]
    fn events_split_across_chunks_are_joined() {
        let got = parse(&["data: {\"a\":", "1}\n", "\ndata: [DONE]\n\n"]);
        assert_eq!(
            got,
            vec![event("message", "{\"a\":1}"), event("message", "[DONE]")]
        );
    }

    #[test]
    fn named_events_and_multiline_data() {
        let got = parse(&[
            "event: message_start\ndata: one\ndata: two\n\n: keep-alive\n\nevent: ping\ndata: {}\n\n",
        ]);
        assert_eq!(
            got,
            vec![event("message_start", "one\ntwo"), event("ping", "{}")]
        );
    }

    #[test]
    fn crlf_line_endings_are_accepted() {
        let got = parse(&["data: x\r\n\r\ndata: y\r\n\r\n"]);
        assert_eq!(got, vec![event("message", "x"), event("message", "y")]);
    }

    #[test]
    fn an_event_without_its_blank_line_is_not_delivered() {
        // A cut stream: the last event never completed.
        let got = parse(&["data: whole\n\ndata: half"]);
        assert_eq!(got, vec![event("message", "whole")]);
    }

    #[test]
    fn a_split_multibyte_character_survives() {
        let text = "data: héllo\n\n";
        let bytes = text.as_bytes();
        let split = text.find('é').unwrap() + 1;
        let body = stream::iter(vec![
            Ok::<_, std::io::Error>(bytes[..split].to_vec()),
            Ok(bytes[split..].to_vec()),
        ]);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got: Vec<_> = runtime.block_on(events(body).collect());
        assert_eq!(got, vec![event("message", "héllo")]);
    }

    #[test]
    fn transport_errors_are_reported() {
        let body = stream::iter(vec![
            Ok(b"data: a\n\n".to_vec()),
            Err(std::io::Error::other("connection reset")),
        ]);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got: Vec<_> = runtime.block_on(events(body).collect());
        assert_eq!(got[0], event("message", "a"));
        assert_eq!(
            got[1],
            Err(SseError::Transport("connection reset".to_string()))
        );
    }
}
