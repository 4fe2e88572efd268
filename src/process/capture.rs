//! Capturing a child's output with bounded memory: the start and the end
//! of each stream are kept and the middle is cut with a note saying how
//! much; secrets are masked before the cut so none shows in part.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::redact::Redactor;

/// How long to keep reading output after the command was killed; only a
/// process that escaped the kill can keep the pipes open.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// One stream's output with bounded memory: the first `keep` bytes, the
/// last `keep` bytes after those, and how many there were in all.
#[derive(Debug, Default)]
pub(super) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    keep: usize,
    pub total: u64,
}

impl Capture {
    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.keep {
            let take = bytes.len().min(self.keep - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.keep);
        self.tail.drain(..excess);
    }

    /// The stream shown within `budget` bytes: whole, or its start and end
    /// around a note; and how many bytes were cut. Secrets are masked
    /// before the cut, so none is shown in part.
    fn shown(&self, budget: usize, name: &str, secrets: &Redactor) -> (String, u64) {
        let kept = self.head.len() + self.tail.len();
        let dropped = self.total > kept as u64;
        let mask = |bytes: &[u8]| secrets.redact(&String::from_utf8_lossy(bytes)).into_owned();
        let (head, end) = if dropped {
            // The middle is gone: start and end are separate texts.
            let tail: Vec<u8> = self.tail.iter().copied().collect();
            (mask(&self.head), mask(&tail))
        } else {
            let mut all = self.head.clone();
            all.extend(self.tail.iter());
            let all = mask(&all);
            if all.len() <= budget {
                return (all, 0);
            }
            (all.clone(), all)
        };
        let front = budget / 2;
        let back = budget - front;
        let head = &head[..floor_char_boundary(&head, front.min(head.len()))];
        let end = &end[ceil_char_boundary(&end, end.len().saturating_sub(back))..];
        let cut = self.total.saturating_sub((head.len() + end.len()) as u64);
        let text = format!(
            "{head}\n[... {cut} of {} bytes of {name} cut ...]\n{end}",
            self.total
        );
        (text, cut)
    }
}

/// The largest char boundary of `text` at or before `index`.
fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The smallest char boundary of `text` at or after `index`.
fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

pub(super) type SharedCapture = (Arc<Mutex<Capture>>, tokio::task::JoinHandle<()>);

pub(super) fn capture<R: AsyncRead + Unpin + Send + 'static>(
    mut pipe: R,
    keep: usize,
) -> SharedCapture {
    let shared = Arc::new(Mutex::new(Capture {
        keep,
        ..Capture::default()
    }));
    let sink = Arc::clone(&shared);
    let task = tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(&buf[..n]);
        }
    });
    (shared, task)
}

/// Wait briefly for the reader to reach end of file, then take what it has.
pub(super) async fn finish_capture(capture: Option<SharedCapture>) -> Capture {
    let Some((shared, mut task)) = capture else {
        return Capture::default();
    };
    if tokio::time::timeout(DRAIN_GRACE, &mut task).await.is_err() {
        task.abort();
    }
    std::mem::take(&mut *shared.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Both streams within `max` bytes: each keeps what it needs if the other
/// is short, otherwise they share the budget evenly.
pub(super) fn render(
    stdout: &Capture,
    stderr: &Capture,
    max: usize,
    secrets: &Redactor,
) -> (String, u64) {
    let out_len = usize::try_from(stdout.total).unwrap_or(usize::MAX);
    let err_len = usize::try_from(stderr.total).unwrap_or(usize::MAX);
    let half = max / 2;
    let out_budget = if err_len < half {
        max - err_len
    } else if out_len < half {
        out_len
    } else {
        half
    };
    let err_budget = max - out_budget.min(max);
    let (out, out_cut) = stdout.shown(out_budget, "stdout", secrets);
    let (err, err_cut) = stderr.shown(err_budget, "stderr", secrets);
    let text = match (out.is_empty(), err.is_empty()) {
        (_, true) => out,
        (true, false) => err,
        (false, false) => format!("{}\n[stderr]\n{err}", out.trim_end_matches('\n')),
    };
    (text, out_cut + err_cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(bytes: &[u8], keep: usize) -> Capture {
        let mut c = Capture {
            keep,
            ..Capture::default()
        };
        for chunk in bytes.chunks(3) {
            c.push(chunk);
        }
        c
    }

    #[test]
    fn capture_keeps_start_and_end() {
        let c = captured(b"0123456789abcdefghij", 4);
        assert_eq!(c.head, b"0123");
        assert_eq!(c.tail.iter().copied().collect::<Vec<_>>(), b"ghij");
        let (text, cut) = c.shown(6, "stdout", &Redactor::default());
        assert_eq!(text, "012\n[... 14 of 20 bytes of stdout cut ...]\nhij");
        assert_eq!(cut, 14);
    }

    #[test]
    fn short_output_is_whole() {
        let c = captured(b"hello\n", 100);
        assert_eq!(
            c.shown(100, "stdout", &Redactor::default()),
            ("hello\n".to_string(), 0)
        );
        // End taken partly from head when the tail is short.
        let c = captured(b"0123456789", 8);
        assert_eq!(
            c.shown(6, "x", &Redactor::default()).0,
            "012\n[... 4 of 10 bytes of x cut ...]\n789"
        );
    }

    // Regression: the secret was masked only after the cut, so a secret
    // straddling it showed its first or last characters everywhere.
    #[test]
    fn a_secret_across_the_cut_is_masked_not_halved() {
        let secrets = Redactor::new(["SECRET-VALUE"]);
        let filler = "x".repeat(60);
        // With 8 bytes to show, 4 from the start and 4 from the end.
        for text in [
            format!("aSECRET-VALUE{filler}"),
            format!("{filler}SECRET-VALUEb"),
        ] {
            for keep in [30, 100] {
                let c = captured(text.as_bytes(), keep);
                let (shown, _) = c.shown(8, "stdout", &secrets);
                for part in ["SEC", "LUE"] {
                    assert!(!shown.contains(part), "keep {keep}: {shown}");
                }
            }
        }
        // Output shown whole is masked later, by the event bus; nothing is cut.
        let c = captured(b"xSECRET-VALUEx", 40);
        assert_eq!(c.shown(40, "stdout", &secrets).1, 0);
    }

    #[test]
    fn a_quiet_stream_leaves_its_budget_to_the_other() {
        let out = captured(&[b'o'; 50], 100);
        let err = captured(b"e", 100);
        let (text, cut) = render(&out, &err, 40, &Redactor::default());
        assert_eq!(cut, 11);
        assert!(text.ends_with("\n[stderr]\ne"), "{text}");
    }
}
