//! The cap on one model answer's size on the wire (`model.max_response_bytes`):
//! a broken or hostile server must not make agentci hold an answer of any
//! size, nor spend the run's time and memory taking it apart.
//!
//! Bodies are counted while they are read, streamed or not, and never
//! buffered past the cap: a plain body whose `Content-Length` is over it is
//! refused before a byte is read, and a stream is cut at the first chunk
//! that would cross it. This module only counts; what the bytes mean is the
//! wire formats' business, and what the refusal says is [`super::http`]'s.

use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::{Stream, StreamExt};

/// The default cap on one answer: 16 MiB. The longest answer any provider
/// offers is 128k output tokens (GPT-5, Claude with the 128k-output beta);
/// streamed one token an event, an event with its framing is about 100 to
/// 130 bytes (Anthropic's `content_block_delta` is 110), so 128k × 128 bytes
/// = 16 MiB, and the same answer as one JSON body is under 2 MiB. Chat
/// Completions chunks are larger (about 250 bytes), so there 16 MiB holds
/// some 64k streamed tokens, more than any model of that API gives in one
/// answer within the default request timeout.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// Why a whole body was not read.
#[derive(Debug)]
pub(super) enum WholeBodyFailure {
    /// It is (or grew) larger than the cap.
    TooLarge,
    /// The connection failed while it arrived.
    Transport(reqwest::Error),
}

/// The body of `response` as text (JSON is UTF-8, RFC 8259; anything else
/// is replaced, as the parser will say), read chunk by chunk and refused as
/// soon as it would pass `limit` bytes.
pub(super) async fn read_whole(
    mut response: reqwest::Response,
    limit: u64,
) -> Result<String, WholeBodyFailure> {
    if response
        .content_length()
        .is_some_and(|length| length > limit)
    {
        return Err(WholeBodyFailure::TooLarge);
    }
    let mut body: Vec<u8> = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(WholeBodyFailure::Transport)?
    {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(WholeBodyFailure::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8(body)
        .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned()))
}

/// `body`, ended by an error at the first chunk that would take it past
/// `limit` bytes (that chunk is not passed on); `over` is set then, so the
/// reader can tell the cap from a broken connection. Errors of `body` pass
/// on as their text.
pub(super) fn capped<'a, S, B, E>(
    body: S,
    limit: u64,
    over: &'a AtomicBool,
) -> impl Stream<Item = Result<B, String>> + 'a
where
    S: Stream<Item = Result<B, E>> + 'a,
    B: AsRef<[u8]> + 'a,
    E: Display + 'a,
{
    body.scan((0u64, false), move |(seen, ended), item| {
        if *ended {
            // Nothing after the cap's error is read.
            return std::future::ready(None);
        }
        let next = match item {
            Ok(bytes) => {
                *seen = seen.saturating_add(bytes.as_ref().len() as u64);
                if *seen > limit {
                    over.store(true, Ordering::Relaxed);
                    *ended = true;
                    Err(format!("the answer passed {}", size_text(limit)))
                } else {
                    Ok(bytes)
                }
            }
            Err(err) => Err(err.to_string()),
        };
        std::future::ready(Some(next))
    })
}

/// A size as people write it: `16 MiB`, `512 KiB`, or bytes.
pub fn size_text(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    match bytes {
        n if n >= MIB && n.is_multiple_of(MIB) => format!("{} MiB", n / MIB),
        n if n >= KIB && n.is_multiple_of(KIB) => format!("{} KiB", n / KIB),
        n => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;

    fn collect(chunks: &[&[u8]], limit: u64) -> (Vec<Result<Vec<u8>, String>>, bool) {
        let over = AtomicBool::new(false);
        let body = stream::iter(
            chunks
                .iter()
                .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
                .collect::<Vec<_>>(),
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got = runtime.block_on(capped(body, limit, &over).collect());
        (got, over.load(Ordering::Relaxed))
    }

    #[test]
    fn a_body_within_the_cap_passes_whole() {
        let (got, over) = collect(&[b"abc", b"def"], 6);
        assert_eq!(got, vec![Ok(b"abc".to_vec()), Ok(b"def".to_vec())]);
        assert!(!over);
    }

    #[test]
    fn the_chunk_that_crosses_the_cap_is_not_passed_and_nothing_after_it() {
        let (got, over) = collect(&[b"abc", b"defg", b"h"], 6);
        assert_eq!(
            got,
            vec![
                Ok(b"abc".to_vec()),
                Err("the answer passed 6 bytes".to_string())
            ]
        );
        assert!(over);
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(size_text(DEFAULT_MAX_RESPONSE_BYTES), "16 MiB");
        assert_eq!(size_text(512 * 1024), "512 KiB");
        assert_eq!(size_text(1000), "1000 bytes");
    }
}
