//! The `grep` tool's compiled patterns, kept for the run: an agent greps for
//! the same few patterns again and again, and on a small tree compiling the
//! pattern was most of a call.
//!
//! A matcher is built from a [`MatcherKey`] and nothing else, so two calls
//! with equal keys match the same lines, and a call whose arguments change
//! the matching (the pattern, `case_sensitive`) has a different key. A
//! pattern is compiled by `lean` (grep-regex's reading of it, without the
//! full DFA grep-regex would build); one `lean` leaves alone goes to
//! grep-regex, which builds it or words the error. The cache holds at most
//! [`MAX_ENTRIES`] matchers, dropping the one used least recently, and only
//! those whose compiled pattern holds at most [`CACHED_BYTES`] of heap; a
//! larger one serves its call alone, as every pattern did before. A call
//! gets a clone of the cached matcher, which shares the compiled pattern but
//! has its own search caches (the lazy DFA's, which grow as it searches, up
//! to [`LAZY_DFA_BYTES`] each), dropped with the call: what the cache keeps
//! never grows after it is built.

use std::sync::Mutex;

use grep_matcher::{ByteSet, LineMatchKind, LineTerminator, Match, Matcher, NoCaptures, NoError};
use grep_regex::{Error, RegexMatcher, RegexMatcherBuilder};

use super::lean::LeanMatcher;

/// Matchers kept at once.
pub(super) const MAX_ENTRIES: usize = 16;
/// The most heap a kept matcher's compiled pattern may hold (its NFAs and
/// literal prefilter): a pattern of a few hundred characters with Unicode
/// classes takes tens of KB.
pub(super) const CACHED_BYTES: usize = 512 << 10;
/// The most each lazy DFA cache may grow to while a call searches (one per
/// search thread). When a pattern needs more, the regex engine falls back
/// to a slower engine that finds the same matches. grep-regex's default is
/// 1,000 MB, which a pathological pattern on a large tree could reach on
/// every thread.
const LAZY_DFA_BYTES: usize = 16 << 20;

/// Everything that shapes a matcher: [`Matchers::get`] reads nothing else,
/// so a tool argument that changes the matching must be a field here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct MatcherKey {
    pub pattern: String,
    pub case_insensitive: bool,
}

impl MatcherKey {
    fn lean(&self) -> Option<LeanMatcher> {
        LeanMatcher::build(&self.pattern, self.case_insensitive, LAZY_DFA_BYTES)
    }

    fn grep_regex(&self) -> Result<RegexMatcher, Error> {
        RegexMatcherBuilder::new()
            .case_insensitive(self.case_insensitive)
            .line_terminator(Some(b'\n'))
            .dfa_size_limit(LAZY_DFA_BYTES)
            .build(&self.pattern)
    }
}

/// A compiled `grep` pattern: the lean one, or grep-regex's for a pattern
/// the lean one leaves alone.
#[derive(Clone, Debug)]
pub(super) enum GrepMatcher {
    Lean(LeanMatcher),
    GrepRegex(RegexMatcher),
}

/// What the searcher asks of a matcher, passed through; the tool never
/// asks for capture groups.
impl Matcher for GrepMatcher {
    type Captures = NoCaptures;
    type Error = NoError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, NoError> {
        match self {
            GrepMatcher::Lean(m) => m.find_at(haystack, at),
            GrepMatcher::GrepRegex(m) => m.find_at(haystack, at),
        }
    }

    fn new_captures(&self) -> Result<NoCaptures, NoError> {
        Ok(NoCaptures::new())
    }

    fn shortest_match_at(&self, haystack: &[u8], at: usize) -> Result<Option<usize>, NoError> {
        match self {
            GrepMatcher::Lean(m) => m.shortest_match_at(haystack, at),
            GrepMatcher::GrepRegex(m) => m.shortest_match_at(haystack, at),
        }
    }

    fn find_candidate_line(&self, haystack: &[u8]) -> Result<Option<LineMatchKind>, NoError> {
        match self {
            GrepMatcher::Lean(m) => m.find_candidate_line(haystack),
            GrepMatcher::GrepRegex(m) => m.find_candidate_line(haystack),
        }
    }

    fn non_matching_bytes(&self) -> Option<&ByteSet> {
        match self {
            GrepMatcher::Lean(m) => m.non_matching_bytes(),
            GrepMatcher::GrepRegex(m) => m.non_matching_bytes(),
        }
    }

    fn line_terminator(&self) -> Option<LineTerminator> {
        match self {
            GrepMatcher::Lean(m) => m.line_terminator(),
            GrepMatcher::GrepRegex(m) => m.line_terminator(),
        }
    }
}

/// The matchers one `grep` tool has built, most recently used last.
#[derive(Default)]
pub(super) struct Matchers {
    entries: Mutex<Vec<(MatcherKey, LeanMatcher)>>,
}

impl Matchers {
    /// A matcher for `key`: the kept one's clone, or a new one (kept when
    /// it is small enough).
    pub(super) fn get(&self, key: &MatcherKey) -> Result<GrepMatcher, Error> {
        {
            let mut entries = self.lock();
            if let Some(at) = entries.iter().position(|(k, _)| k == key) {
                let entry = entries.remove(at);
                let matcher = entry.1.clone();
                entries.push(entry);
                return Ok(GrepMatcher::Lean(matcher));
            }
        }
        // Built outside the lock: another call may build the same pattern
        // meanwhile, and the second one in replaces the first.
        let Some(matcher) = key.lean() else {
            return key.grep_regex().map(GrepMatcher::GrepRegex);
        };
        if matcher.memory_usage() <= CACHED_BYTES {
            let mut entries = self.lock();
            entries.retain(|(k, _)| k != key);
            if entries.len() >= MAX_ENTRIES {
                entries.remove(0);
            }
            entries.push((key.clone(), matcher.clone()));
        }
        Ok(GrepMatcher::Lean(matcher))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(MatcherKey, LeanMatcher)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    fn keys(&self) -> Vec<MatcherKey> {
        self.lock().iter().map(|(k, _)| k.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::Bytes};
    use proptest::prelude::*;

    fn key(pattern: &str, case_insensitive: bool) -> MatcherKey {
        MatcherKey {
            pattern: pattern.into(),
            case_insensitive,
        }
    }

    fn matches(matcher: &GrepMatcher, text: &str) -> bool {
        matcher.is_match(text.as_bytes()).unwrap_or(false)
    }

    /// The lines `matcher` finds in `text`, as the tool's searcher finds them.
    fn lines<M: Matcher>(matcher: M, text: &[u8]) -> Vec<(u64, String)> {
        let mut found = Vec::new();
        SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .build()
            .search_slice(
                matcher,
                text,
                Bytes(|n, line| {
                    found.push((n, String::from_utf8_lossy(line).into_owned()));
                    Ok(true)
                }),
            )
            .unwrap();
        found
    }

    #[test]
    fn a_key_that_differs_in_case_gets_its_own_matcher() {
        let matchers = Matchers::default();
        let exact = matchers.get(&key("Needle", false)).unwrap();
        let folded = matchers.get(&key("Needle", true)).unwrap();
        assert!(!matches(&exact, "a needle"));
        assert!(matches(&folded, "a needle"));
        // Served from the cache, each still matches as its key says.
        let exact = matchers.get(&key("Needle", false)).unwrap();
        let folded = matchers.get(&key("Needle", true)).unwrap();
        assert!(!matches(&exact, "a needle"));
        assert!(matches(&folded, "a needle"));
        assert_eq!(matchers.keys().len(), 2);
    }

    #[test]
    fn the_cache_keeps_the_most_recently_used_within_its_bound() {
        let matchers = Matchers::default();
        for i in 0..MAX_ENTRIES + 5 {
            matchers.get(&key(&format!("p{i}"), false)).unwrap();
            // The first pattern stays in use, so it is never the one dropped.
            matchers.get(&key("p0", false)).unwrap();
        }
        let keys = matchers.keys();
        assert_eq!(keys.len(), MAX_ENTRIES);
        assert_eq!(keys.last(), Some(&key("p0", false)));
        assert!(!keys.contains(&key("p1", false)), "{keys:?}");
        assert!(keys.contains(&key(&format!("p{}", MAX_ENTRIES + 4), false)));
    }

    #[test]
    fn a_pattern_too_large_to_keep_still_matches_but_is_not_kept() {
        let matchers = Matchers::default();
        // Unicode `\w` a few hundred times: past what is kept, well within
        // grep-regex's limits.
        let large = key(r"\w{300}x", false);
        let matcher = matchers.get(&large).unwrap();
        assert!(matches(&matcher, &format!("{}x", "é".repeat(300))));
        assert!(matchers.keys().is_empty());
        let small = matchers.get(&key(r"\w{3}x", false)).unwrap();
        let GrepMatcher::Lean(small) = small else {
            panic!("a small pattern is compiled lean");
        };
        assert!(small.memory_usage() <= CACHED_BYTES);
        assert_eq!(matchers.keys().len(), 1);
    }

    #[test]
    fn a_pattern_grep_regex_refuses_gets_grep_regexs_error_and_is_not_kept() {
        let matchers = Matchers::default();
        for (pattern, said) in [
            ("(unclosed", "unclosed group"),
            (r"\w{20000}", "size limit"),
            (r"a\nb", r#"literal "\n" is not allowed"#),
            ("[\n]", r#"literal "\n" is not allowed"#),
        ] {
            let ours = matchers.get(&key(pattern, false)).unwrap_err().to_string();
            let theirs = key(pattern, false).grep_regex().unwrap_err().to_string();
            assert_eq!(ours, theirs);
            assert!(ours.contains(said), "{pattern}: {ours}");
        }
        assert!(matchers.keys().is_empty());
    }

    #[test]
    fn a_line_terminator_is_never_matched() {
        let matchers = Matchers::default();
        for pattern in [r"a\sb", r"a[^x]b", r"a\Wb", r"a(?s:.)b", r"a[\n ]b"] {
            let m = matchers.get(&key(pattern, false)).unwrap();
            assert!(!matches(&m, "a\nb"), "{pattern}");
            assert!(matches(&m, "a b"), "{pattern}");
            assert_eq!(lines(&m, b"xa\nbx\n"), [], "{pattern}");
        }
    }

    /// Pieces of the patterns the equivalence test joins: anchors of each
    /// kind, classes that hold `\n` or `\r`, case, repetition, groups.
    const PIECES: [&str; 22] = [
        "a", "B", "é", ".", r"\s", r"\w", r"\W", "^", "$", r"\A", r"\z", "(?m:^)", "(?m:$)", r"\b",
        "[a\n]", r"[^a]", r"\r", "a*", "(?:a|B)", "(x)?", "(?i:b)", r"\d+",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        // The lean matcher finds the lines grep-regex's finds, and refuses
        // what grep-regex refuses, with grep-regex's message.
        #[test]
        fn lean_finds_what_grep_regex_finds(
            pieces in proptest::collection::vec(0..PIECES.len(), 1..5),
            alternate in any::<bool>(),
            case_insensitive in any::<bool>(),
            text in proptest::collection::vec(
                prop_oneof![
                    Just("a"), Just("B"), Just("b"), Just("é"), Just(" "), Just("\n"),
                    Just("\r\n"), Just("\r"), Just("x"), Just("7"),
                ],
                0..24,
            ),
        ) {
            let parts: Vec<&str> = pieces.iter().map(|&i| PIECES[i]).collect();
            let pattern = parts.join(if alternate { "|" } else { "" });
            let key = key(&pattern, case_insensitive);
            let text = text.concat();
            let ours = Matchers::default().get(&key);
            match key.grep_regex() {
                Ok(theirs) => {
                    let ours = ours.map_err(|e| e.to_string());
                    prop_assert!(ours.is_ok(), "{} refused: {:?}", pattern, ours);
                    let ours = ours.unwrap_or_else(|_| unreachable!());
                    prop_assert!(matches!(ours, GrepMatcher::Lean(_)), "{}", pattern);
                    prop_assert_eq!(
                        lines(&ours, text.as_bytes()),
                        lines(&theirs, text.as_bytes()),
                        "{:?} in {:?}", pattern, text
                    );
                }
                Err(theirs) => {
                    prop_assert_eq!(
                        ours.map(|_| ()).map_err(|e| e.to_string()),
                        Err(theirs.to_string())
                    );
                }
            }
        }
    }
}
