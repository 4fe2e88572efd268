//! The `grep` tool's compiled patterns, kept for the run: an agent greps for
//! the same few patterns again and again, and on a small tree compiling the
//! pattern is most of a call (grep-regex builds a full DFA for every pattern
//! whose automaton is small enough, with no knob to skip it).
//!
//! A matcher is built from a [`MatcherKey`] and nothing else, so two calls
//! with equal keys match the same lines, and a call whose arguments change
//! the matching (the pattern, `case_sensitive`) has a different key. The
//! cache holds at most [`MAX_ENTRIES`] matchers, dropping the one used least
//! recently, and keeps only matchers whose automata build within
//! [`CACHED_NFA_BYTES`]; a larger pattern is built with grep-regex's own
//! limits for its call alone, as every pattern was before. A call gets a
//! clone of the cached matcher, which shares the compiled automata but has
//! its own search caches (the lazy DFA's, which grow as it searches, up to
//! [`LAZY_DFA_BYTES`] each), dropped with the call: what the cache keeps
//! never grows after it is built. Whether a pattern is valid, and the
//! message when it is not, come from grep-regex's own limits, as before.

use std::sync::Mutex;

use grep_regex::{Error, RegexMatcher, RegexMatcherBuilder};

/// Matchers kept at once.
pub(super) const MAX_ENTRIES: usize = 16;
/// The most a cached matcher's NFA (each of the forward and the reverse one)
/// may take. Its full DFAs are held to 1 MB by grep-regex, whatever the
/// pattern; a one-pass DFA (built only for patterns with capture groups)
/// has at most as many states as the NFA.
pub(super) const CACHED_NFA_BYTES: usize = 256 << 10;
/// The most each lazy DFA cache may grow to while a call searches (one per
/// search thread). When a pattern needs more, the regex engine falls back
/// to a slower engine that finds the same matches. grep-regex's default is
/// 1,000 MB, which a pathological pattern on a large tree could reach on
/// every thread.
const LAZY_DFA_BYTES: usize = 16 << 20;

/// Everything that shapes a matcher: [`MatcherKey::builder`] reads nothing
/// else, so a tool argument that changes the matching must be a field here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct MatcherKey {
    pub pattern: String,
    pub case_insensitive: bool,
}

impl MatcherKey {
    fn builder(&self) -> RegexMatcherBuilder {
        let mut builder = RegexMatcherBuilder::new();
        builder
            .case_insensitive(self.case_insensitive)
            .line_terminator(Some(b'\n'))
            .dfa_size_limit(LAZY_DFA_BYTES);
        builder
    }
}

/// The matchers one `grep` tool has built, most recently used last.
#[derive(Default)]
pub(super) struct Matchers {
    entries: Mutex<Vec<(MatcherKey, RegexMatcher)>>,
}

impl Matchers {
    /// A matcher for `key`: the cached one's clone, or a new one (kept when
    /// it is small enough).
    pub(super) fn get(&self, key: &MatcherKey) -> Result<RegexMatcher, Error> {
        {
            let mut entries = self.lock();
            if let Some(at) = entries.iter().position(|(k, _)| k == key) {
                let entry = entries.remove(at);
                let matcher = entry.1.clone();
                entries.push(entry);
                return Ok(matcher);
            }
        }
        // Built outside the lock: another call may build the same pattern
        // meanwhile, and the second one in replaces the first.
        let Ok(matcher) = key
            .builder()
            .size_limit(CACHED_NFA_BYTES)
            .build(&key.pattern)
        else {
            // Too large to keep, or not a valid pattern: grep-regex's own
            // limits decide which, and word the error.
            return key.builder().build(&key.pattern);
        };
        let mut entries = self.lock();
        entries.retain(|(k, _)| k != key);
        if entries.len() >= MAX_ENTRIES {
            entries.remove(0);
        }
        entries.push((key.clone(), matcher.clone()));
        Ok(matcher)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(MatcherKey, RegexMatcher)>> {
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
    use grep_matcher::Matcher;

    fn key(pattern: &str, case_insensitive: bool) -> MatcherKey {
        MatcherKey {
            pattern: pattern.into(),
            case_insensitive,
        }
    }

    fn matches(matcher: &RegexMatcher, text: &str) -> bool {
        matcher.is_match(text.as_bytes()).unwrap_or(false)
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
        // Unicode `\w` a few hundred times: well past the cached limit,
        // well within grep-regex's own.
        let large = key(r"\w{300}x", false);
        let matcher = matchers.get(&large).unwrap();
        assert!(matches(&matcher, &format!("{}x", "é".repeat(300))));
        assert!(matchers.keys().is_empty());
    }

    #[test]
    fn an_invalid_pattern_is_grep_regexs_error_and_not_kept() {
        let matchers = Matchers::default();
        let err = matchers.get(&key("(unclosed", false)).unwrap_err();
        assert!(err.to_string().contains("unclosed group"), "{err}");
        // A pattern over grep-regex's own size limit is refused as before.
        let err = matchers.get(&key(r"\w{20000}", false)).unwrap_err();
        assert!(err.to_string().contains("size limit"), "{err}");
        assert!(matchers.keys().is_empty());
    }

    #[test]
    fn a_line_terminator_is_never_matched() {
        // The cached builder keeps grep-regex's line-terminator guarantee.
        let matchers = Matchers::default();
        let err = matchers.get(&key(r"a\nb", false)).unwrap_err();
        assert!(
            err.to_string().contains(r#"literal "\n" is not allowed"#),
            "{err}"
        );
        let m = matchers.get(&key(r"a\sb", false)).unwrap();
        assert!(!matches(&m, "a\nb"));
        assert!(matches(&m, "a b"));
    }
}
