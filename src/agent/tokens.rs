//! How big a request is in tokens, before it is sent, and how big the
//! model's context window is.
//!
//! Once the server has reported what the last request cost
//! (`usage.input_tokens`), the next request is estimated from its size in
//! bytes at that request's ratio of tokens to bytes: the server counted
//! everything sent before, so only what the turn added is estimated, and
//! no tokenizer is needed, however long the run (a tokenizer's table holds
//! 100,000 to 200,000 tokens and takes 24 to 45 MB once loaded). A report
//! too far from the request's size to be a count of it (a proxy or a fake
//! that reports a constant) is no ratio.
//!
//! Without a ratio, the count comes from a real tokenizer, offline
//! (`tiktoken-rs`: `o200k` for the newer OpenAI models, `cl100k` for the
//! rest, Claude included, whose tokenizer is not public), loaded lazily,
//! once, and only the one the model needs; scaled by a running ratio
//! learnt from the counts the server reported for earlier requests;
//! characters divided by four only when no tokenizer loads. A request whose
//! size in bytes already proves it is far below the mark (no token is
//! shorter than a byte) is not tokenized at all: a short run never loads
//! it. Once a request's size in bytes passes [`PREFETCH_SHARE`] of the
//! mark, the tokenizer loads on a background thread, so the turn that first
//! needs a count does not wait for it.
//! Per-message counts are kept, so each message is tokenized once while the
//! conversation only grows; whoever rewrites it says so ([`TokenEstimator::forget_counts`]).
//! Deciding what to do with the estimate is [`super::compaction`]'s job.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use tiktoken_rs::CoreBPE;

use crate::provider::{Message, ToolDefinition};

/// Tokens every message costs beyond its text (role, separators).
const MESSAGE_OVERHEAD: u64 = 4;
/// The window assumed for a model the table does not know: small enough
/// for most models served through OpenAI-compatible servers.
pub const DEFAULT_WINDOW: u64 = 32_000;
/// A reported count this far from the estimate is not a calibration: the
/// server (or a proxy, or a fake) does not count the request it got.
const MIN_RATIO: f64 = 0.5;
const MAX_RATIO: f64 = 2.0;
/// Tokens per byte a server's count may come to and still be a count of
/// the request: text runs three to five bytes a token, dense data (hex,
/// CJK) near one; ten bytes a token on average is a constant, not a count.
const MIN_TOKENS_PER_BYTE: f64 = 0.1;
const MAX_TOKENS_PER_BYTE: f64 = 1.5;
/// The share of the mark, in bytes, at which the tokenizer starts loading
/// in the background. A conversation grows by a few hundred to a few
/// thousand bytes a turn and the load takes about a tenth of a second, so
/// half the mark leaves many turns for it.
pub const PREFETCH_SHARE: f64 = 0.5;

/// The context window of `model` in tokens, from a built-in table; `None`
/// for a model it does not know. Input windows: where a model's output
/// shares the window (GPT-5), the input part.
pub fn builtin_window(model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    // Names go from the most specific to the least: `gpt-4o` before `gpt-4`.
    let table: &[(&str, u64)] = &[
        ("claude", 200_000),
        ("gpt-5", 272_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4-32k", 32_768),
        ("gpt-4", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("o1-mini", 128_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
    ];
    let name = m.rsplit('/').next().unwrap_or(&m);
    table
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, window)| *window)
}

/// The window a run works with: the job's `model.context_window`, else the table, else the default.
pub fn window_for(model: &str, configured: Option<u64>) -> u64 {
    configured
        .or_else(|| builtin_window(model))
        .unwrap_or(DEFAULT_WINDOW)
}

/// Which tokenizer counts a model's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    O200k,
    Cl100k,
}

impl Encoding {
    pub fn for_model(model: &str) -> Encoding {
        let m = model.to_ascii_lowercase();
        let name = m.rsplit('/').next().unwrap_or(&m);
        let newer = ["gpt-5", "gpt-4.1", "gpt-4o", "o1", "o3", "o4"];
        if newer.iter().any(|p| name.starts_with(p)) {
            Encoding::O200k
        } else {
            Encoding::Cl100k
        }
    }

    /// The tokenizer, loaded once per process; `None` if it does not load.
    /// A count that arrives while the background load is under way waits
    /// for it (the lock does), never loads a second copy.
    fn bpe(self) -> Option<&'static CoreBPE> {
        let (cell, _) = self.slot();
        cell.get_or_init(|| match self {
            Encoding::O200k => tiktoken_rs::o200k_base().ok(),
            Encoding::Cl100k => tiktoken_rs::cl100k_base().ok(),
        })
        .as_ref()
    }

    /// Whether the tokenizer is loaded (or known not to load).
    #[cfg(test)]
    fn is_loaded(self) -> bool {
        self.slot().0.get().is_some()
    }

    /// Start loading the tokenizer on a background thread, once per process.
    pub fn prefetch(self) {
        let (cell, started) = self.slot();
        if cell.get().is_some() || started.swap(true, Ordering::Relaxed) {
            return;
        }
        // Without a thread the first count loads it, as before.
        let _ = std::thread::Builder::new()
            .name("tokenizer".into())
            .spawn(move || self.bpe());
    }

    fn slot(self) -> (&'static OnceLock<Option<CoreBPE>>, &'static AtomicBool) {
        static O200K: (OnceLock<Option<CoreBPE>>, AtomicBool) =
            (OnceLock::new(), AtomicBool::new(false));
        static CL100K: (OnceLock<Option<CoreBPE>>, AtomicBool) =
            (OnceLock::new(), AtomicBool::new(false));
        let slot = match self {
            Encoding::O200k => &O200K,
            Encoding::Cl100k => &CL100K,
        };
        (&slot.0, &slot.1)
    }
}

/// Counts requests for one run; keeps per-message counts and the calibration.
#[derive(Debug)]
pub struct TokenEstimator {
    encoding: Encoding,
    /// Per message of the last estimate: its size in bytes and its raw token count.
    counted: Vec<(usize, u64)>,
    tools: Option<u64>,
    /// Sums over the calibrated calls: what the server reported, what was estimated.
    reported: u64,
    estimated: u64,
    /// The raw count of the last tokenized request, until its usage arrives.
    pending: Option<u64>,
    /// The size in bytes of the last estimated request, until its usage arrives.
    pending_bytes: Option<u64>,
    /// Tokens per byte of the last request the server counted plausibly;
    /// `None`: no count yet, or the last one was no count of the request.
    per_byte: Option<f64>,
    /// How the last estimate was made: per message, its size in bytes
    /// (with the overhead); and the tool definitions' size in bytes.
    sized: Vec<u64>,
    tool_bytes: Option<u64>,
    /// Whether the last estimate came from the sizes in bytes at `per_byte`.
    by_bytes: bool,
    /// This estimator's handle on its encoding's table, taken the first
    /// time it tokenizes (the table itself is loaded once per process).
    bpe: Table,
}

/// An estimator's handle on its encoding's table; its `Debug` says whether
/// it was taken, not the 100,000 tokens.
#[derive(Default)]
struct Table(OnceLock<Option<&'static CoreBPE>>);

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let taken = self.0.get().is_some();
        f.debug_struct("Table").field("taken", &taken).finish()
    }
}

/// What an estimate found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// Calibrated tokens (from the size in bytes when `counted` is false:
    /// at the server's ratio when it reported one, else an upper bound).
    pub tokens: u64,
    /// Whether the tokenizer counted (false: estimated from the size in bytes).
    pub counted: bool,
}

impl TokenEstimator {
    pub fn new(model: &str) -> Self {
        TokenEstimator {
            encoding: Encoding::for_model(model),
            counted: Vec::new(),
            tools: None,
            reported: 0,
            estimated: 0,
            pending: None,
            pending_bytes: None,
            per_byte: None,
            sized: Vec::new(),
            tool_bytes: None,
            by_bytes: false,
            bpe: Table::default(),
        }
    }

    /// Tokens per byte at which requests are estimated, once the server
    /// has reported a plausible count of the last one.
    pub fn tokens_per_byte(&self) -> Option<f64> {
        self.per_byte
    }

    /// Whether this estimator has used a tokenizer (and so loaded its table).
    pub fn has_tokenized(&self) -> bool {
        self.bpe.0.get().is_some()
    }

    /// `bytes` in tokens at the server's ratio, when the last estimate was made that way.
    fn at_byte_ratio(&self, bytes: u64) -> Option<u64> {
        match (self.by_bytes, self.per_byte) {
            (true, Some(ratio)) => Some((bytes as f64 * ratio).ceil() as u64),
            _ => None,
        }
    }

    /// The running ratio of reported to estimated tokens (1 until calibrated).
    pub fn ratio(&self) -> f64 {
        if self.estimated == 0 {
            1.0
        } else {
            self.reported as f64 / self.estimated as f64
        }
    }

    fn scaled(&self, raw: u64) -> u64 {
        (raw as f64 * self.ratio()).ceil() as u64
    }

    /// Tokens of `text` by the tokenizer, or characters / 4 when none loads.
    pub fn count_text(&self, text: &str) -> u64 {
        match self.bpe.0.get_or_init(|| self.encoding.bpe()) {
            Some(bpe) => bpe.encode_ordinary(text).len() as u64,
            None => text.chars().count().div_ceil(4) as u64,
        }
    }

    fn count_message(&self, message: &Message) -> u64 {
        MESSAGE_OVERHEAD
            + match message {
                Message::System { content }
                | Message::User { content }
                | Message::Tool { content, .. } => self.count_text(content),
                Message::Assistant {
                    reasoning,
                    content,
                    tool_calls,
                } => {
                    reasoning.iter().map(|r| r.chars() as u64 / 4).sum::<u64>()
                        + content.as_deref().map_or(0, |c| self.count_text(c))
                        + tool_calls
                            .iter()
                            .map(|c| {
                                MESSAGE_OVERHEAD
                                    + self.count_text(&c.name)
                                    + self.count_text(&c.arguments)
                            })
                            .sum::<u64>()
                }
            }
    }

    /// The request's calibrated size in tokens. When its size in bytes
    /// (calibrated) is below `skip_below`, it is returned as an upper bound
    /// without tokenizing.
    pub fn estimate(
        &mut self,
        messages: &[Message],
        tools: &[ToolDefinition],
        skip_below: u64,
    ) -> Estimate {
        let tool_bytes = *self.tool_bytes.get_or_insert_with(|| {
            tools
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
                .sum::<usize>() as u64
        });
        self.sized.clear();
        self.sized.extend(
            messages
                .iter()
                .map(|m| bytes(m) as u64 + MESSAGE_OVERHEAD * (1 + calls(m))),
        );
        let size = self.sized.iter().sum::<u64>() + tool_bytes;
        self.pending_bytes = Some(size);
        self.by_bytes = self.per_byte.is_some();
        if let Some(tokens) = self.at_byte_ratio(size) {
            self.pending = None;
            return Estimate {
                tokens,
                counted: false,
            };
        }
        // No token is shorter than a byte, so this is an upper bound.
        let bound = (size as f64 * self.ratio().max(1.0)).ceil() as u64;
        if bound < skip_below {
            if near_mark(bound, skip_below) {
                self.encoding.prefetch();
            }
            self.pending = None;
            return Estimate {
                tokens: bound,
                counted: false,
            };
        }
        let tools_raw = match self.tools {
            Some(n) => n,
            None => {
                let n = tools
                    .iter()
                    .map(|t| {
                        self.count_text(&t.name)
                            + self.count_text(&t.description)
                            + self.count_text(&t.parameters.to_string())
                    })
                    .sum();
                self.tools = Some(n);
                n
            }
        };
        let mut raw = tools_raw;
        let mut counted = std::mem::take(&mut self.counted);
        for (i, message) in messages.iter().enumerate() {
            let size = bytes(message);
            match counted.get(i) {
                Some((s, n)) if *s == size => raw += n,
                _ => {
                    counted.truncate(i);
                    let n = self.count_message(message);
                    counted.push((size, n));
                    raw += n;
                }
            }
        }
        counted.truncate(messages.len());
        self.counted = counted;
        self.pending = Some(raw);
        Estimate {
            tokens: self.scaled(raw),
            counted: true,
        }
    }

    /// The calibrated tokens of each message of the last counted estimate.
    pub fn weights(&self) -> Vec<u64> {
        if self.at_byte_ratio(0).is_some() {
            return self
                .sized
                .iter()
                .filter_map(|n| self.at_byte_ratio(*n))
                .collect();
        }
        self.counted.iter().map(|(_, n)| self.scaled(*n)).collect()
    }

    /// The calibrated tokens of the tool definitions (0 before the first count).
    pub fn tools_tokens(&self) -> u64 {
        if let Some(tokens) = self.at_byte_ratio(self.tool_bytes.unwrap_or(0)) {
            return tokens;
        }
        self.scaled(self.tools.unwrap_or(0))
    }

    /// The calibrated tokens of `text`.
    pub fn text_tokens(&self, text: &str) -> u64 {
        if let Some(tokens) = self.at_byte_ratio(text.len() as u64) {
            return tokens;
        }
        self.scaled(self.count_text(text))
    }

    /// Forget the per-message counts: the conversation was rewritten, not
    /// appended to (a message of the same size at the same place may be
    /// another message now).
    pub fn forget_counts(&mut self) {
        self.counted.clear();
        self.pending = None;
        self.pending_bytes = None;
    }

    /// The server's count for the request last estimated: it calibrates
    /// later estimates, unless it is too far off to be a count of that
    /// request. Its ratio to the request's size in bytes is the one the
    /// next requests are estimated at; a count that is no count of the
    /// request (or none) puts the tokenizer back in charge.
    pub fn calibrate(&mut self, reported_input_tokens: u64) {
        if let Some(size) = self.pending_bytes.take() {
            let per_byte = reported_input_tokens as f64 / size.max(1) as f64;
            self.per_byte = (MIN_TOKENS_PER_BYTE..=MAX_TOKENS_PER_BYTE)
                .contains(&per_byte)
                .then_some(per_byte);
        }
        let Some(raw) = self.pending.take() else {
            return;
        };
        if raw == 0 || reported_input_tokens == 0 {
            return;
        }
        let ratio = reported_input_tokens as f64 / raw as f64;
        if (MIN_RATIO..=MAX_RATIO).contains(&ratio) {
            self.reported += reported_input_tokens;
            self.estimated += raw;
        }
    }
}

/// Whether a request whose size in bytes is `bound`, not counted because
/// it is below `skip_below`, is near enough to start loading the tokenizer.
fn near_mark(bound: u64, skip_below: u64) -> bool {
    bound as f64 >= skip_below as f64 * PREFETCH_SHARE
}

/// A message's size in bytes, the cache key of its count.
fn bytes(message: &Message) -> usize {
    match message {
        Message::System { content } | Message::User { content } => content.len(),
        Message::Tool {
            content,
            tool_call_id,
        } => content.len() + tool_call_id.len(),
        Message::Assistant {
            reasoning,
            content,
            tool_calls,
        } => {
            reasoning.iter().map(|r| r.chars()).sum::<usize>()
                + content.as_deref().map_or(0, str::len)
                + tool_calls
                    .iter()
                    .map(|c| c.id.len() + c.name.len() + c.arguments.len())
                    .sum::<usize>()
        }
    }
}

fn calls(message: &Message) -> u64 {
    match message {
        Message::Assistant { tool_calls, .. } => tool_calls.len() as u64,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        Message::User {
            content: text.to_string(),
        }
    }

    #[test]
    fn windows_by_family() {
        assert_eq!(builtin_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(builtin_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(builtin_window("gpt-4"), Some(8_192));
        assert_eq!(builtin_window("openai/gpt-4.1"), Some(1_047_576));
        assert_eq!(builtin_window("llama3"), None);
        assert_eq!(window_for("llama3", None), DEFAULT_WINDOW);
        assert_eq!(window_for("claude-x", Some(5_000)), 5_000);
        assert_eq!(Encoding::for_model("gpt-4o"), Encoding::O200k);
        assert_eq!(Encoding::for_model("claude-3"), Encoding::Cl100k);
    }

    #[test]
    fn counts_with_the_tokenizer_and_skips_small_requests() {
        let mut e = TokenEstimator::new("gpt-4o");
        let text = "fn main() { println!(\"hello\"); }\n".repeat(50);
        let messages = vec![user(&text)];
        let small = e.estimate(&messages, &[], u64::MAX);
        assert!(!small.counted && small.tokens >= text.len() as u64);
        let real = e.estimate(&messages, &[], 0);
        assert!(real.counted);
        // Code is between two and six characters a token.
        assert!(
            real.tokens * 2 < text.len() as u64 && real.tokens * 6 > text.len() as u64,
            "{real:?}"
        );
    }

    #[test]
    fn a_request_past_part_of_the_mark_loads_the_tokenizer_in_the_background() {
        assert!(!near_mark(100, 1_000));
        assert!(near_mark(600, 1_000));
        assert!(!near_mark(u64::MAX / 4, u64::MAX));
        let mut e = TokenEstimator::new("claude-prefetch-test");
        let messages = vec![user(&"word ".repeat(200))];
        let near = e.estimate(&messages, &[], 1_500);
        assert!(!near.counted, "{near:?}");
        for _ in 0..600 {
            if Encoding::Cl100k.is_loaded() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(Encoding::Cl100k.is_loaded());
    }

    #[test]
    fn calibration_follows_the_server_within_reason() {
        let mut e = TokenEstimator::new("claude-sonnet-4");
        let messages = vec![user(&"word ".repeat(1000))];
        let first = e.estimate(&messages, &[], 0).tokens;
        e.calibrate(first * 3 / 2);
        let second = e.estimate(&messages, &[], 0).tokens;
        assert!(second.abs_diff(first * 3 / 2) <= 2, "{first} {second}");
        // A server that reports 100 tokens for anything calibrates nothing.
        e.calibrate(100);
        let third = e.estimate(&messages, &[], 0).tokens;
        e.calibrate(100);
        assert_eq!(third, second);
        assert_eq!(e.estimate(&messages, &[], 0).tokens, second);
    }

    #[test]
    fn a_changed_message_is_counted_again() {
        let mut e = TokenEstimator::new("gpt-4o");
        let mut messages = vec![user("one two three"), user("four")];
        let before = e.estimate(&messages, &[], 0).tokens;
        messages[1] = user(&"four ".repeat(100));
        let after = e.estimate(&messages, &[], 0).tokens;
        assert!(after > before + 50, "{before} {after}");
        messages.truncate(1);
        assert!(e.estimate(&messages, &[], 0).tokens < before);
    }

    /// Sizes in bytes the way the estimator measures them, for the tests.
    fn size_of(messages: &[Message]) -> u64 {
        messages
            .iter()
            .map(|m| bytes(m) as u64 + MESSAGE_OVERHEAD * (1 + calls(m)))
            .sum()
    }

    #[test]
    fn the_estimate_follows_the_servers_tokens_per_byte() {
        let mut e = TokenEstimator::new("claude-ratio-test");
        let mut messages = vec![user(&"some words of text ".repeat(100))];
        let first = size_of(&messages);
        assert!(!e.estimate(&messages, &[], u64::MAX).counted);
        assert_eq!(e.tokens_per_byte(), None);
        // The server counted the request at a third of a token a byte.
        e.calibrate(first / 3);
        let ratio = (first / 3) as f64 / first as f64;
        assert_eq!(e.tokens_per_byte(), Some(ratio));
        messages.push(user(&"more text ".repeat(300)));
        let size = size_of(&messages);
        // Even a request that must be counted exactly (skip_below 0) is
        // estimated at that ratio, and no tokenizer is taken.
        let estimate = e.estimate(&messages, &[], 0);
        assert_eq!(
            estimate,
            Estimate {
                tokens: (size as f64 * ratio).ceil() as u64,
                counted: false
            }
        );
        let weights = e.weights();
        assert_eq!(weights.len(), 2);
        assert!(weights.iter().sum::<u64>().abs_diff(estimate.tokens) <= 2);
        assert_eq!(e.text_tokens("abcdefghi"), 3);
        assert!(!e.has_tokenized(), "{e:?}");
        // The next report sets the ratio again: the last one counts.
        e.calibrate(size / 4);
        assert_eq!(
            e.estimate(&messages, &[], 0).tokens,
            (size as f64 * ((size / 4) as f64 / size as f64)).ceil() as u64
        );
    }

    #[test]
    fn a_count_that_is_no_count_of_the_request_puts_the_tokenizer_back() {
        let mut e = TokenEstimator::new("claude-constant-test");
        let messages = vec![user(&"word ".repeat(2_000))];
        e.estimate(&messages, &[], 0);
        // A fake or a proxy that reports 100 tokens for anything.
        e.calibrate(100);
        assert_eq!(e.tokens_per_byte(), None);
        let counted = e.estimate(&messages, &[], 0);
        assert!(counted.counted && e.has_tokenized(), "{counted:?}");
        // A plausible count after a ratio, then a constant: the ratio goes.
        e.calibrate(2_500);
        assert!(e.tokens_per_byte().is_some());
        e.estimate(&messages, &[], 0);
        e.calibrate(10);
        assert_eq!(e.tokens_per_byte(), None);
    }

    #[test]
    fn a_session_whose_server_counts_never_loads_the_table() {
        // Short, with a server that reports nothing plausible: far below the mark.
        let mut short = TokenEstimator::new("claude-short-test");
        let mut messages = vec![user("Read every file.")];
        for turn in 0..5 {
            short.estimate(&messages, &[], 25_600);
            short.calibrate(100);
            messages.push(user(&format!("line {turn} of a file\n").repeat(20)));
        }
        assert!(!short.has_tokenized(), "{short:?}");
        // Long, past the mark many times, with a server that counts: every
        // estimate (compaction's included) comes from the sizes in bytes.
        let mut long = TokenEstimator::new("gpt-4o-long-test");
        let mut messages = vec![user("Read every file.")];
        for turn in 0..1_000 {
            let estimate = long.estimate(&messages, &[], 2_000);
            if estimate.tokens >= 2_000 {
                messages.drain(1..messages.len() / 2);
                long.forget_counts();
                assert!(long.estimate(&messages, &[], 0).tokens < 2_000);
                assert!(!long.weights().is_empty());
            }
            long.calibrate(size_of(&messages) / 4);
            messages.push(user(&format!("line {turn} of a file\n").repeat(10)));
        }
        assert!(!long.has_tokenized(), "{long:?}");
    }
}
