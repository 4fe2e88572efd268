//! A `grep` matcher that compiles in a fraction of grep-regex's time, for
//! the same matches.
//!
//! grep-regex builds a full DFA, both ways, for every pattern whose NFA has
//! under 1,000 states, with no knob to skip it; on a small tree that costs
//! more than the whole search. This module reads the pattern exactly as
//! grep-regex does (the same parser and translator settings, the line
//! terminator taken out of what may match by grep-regex's rule, a pattern
//! that needs `\n` refused, no line terminator for the searcher when the
//! pattern has `\A` or `\z`) and hands it to the same regex engine with the
//! full DFA turned off: the lazy DFA builds only the states a search meets.
//! A pattern this module does not build is left to grep-regex, which builds
//! it or words the error, so the model sees grep-regex's messages.

use grep_matcher::{LineTerminator, Match, Matcher, NoCaptures, NoError};
use regex_automata::{Input, meta};
use regex_syntax::ast::parse::ParserBuilder;
use regex_syntax::hir::{self, Hir, HirKind, translate::TranslatorBuilder};

/// grep-regex's defaults (`Config::default` in its `config.rs`), which the
/// tool never changes.
const NEST_LIMIT: u32 = 250;
const NFA_BYTES: usize = 100 << 20;
const ONEPASS_BYTES: usize = 10 << 20;

/// A compiled pattern whose matches never hold the line terminator `\n`.
#[derive(Clone, Debug)]
pub(super) struct LeanMatcher {
    regex: meta::Regex,
    line_terminator: Option<LineTerminator>,
}

impl LeanMatcher {
    /// The matcher for `pattern`, or `None` when grep-regex should decide
    /// (an invalid pattern, or one that needs `\n` to match).
    pub(super) fn build(
        pattern: &str,
        case_insensitive: bool,
        lazy_dfa_bytes: usize,
    ) -> Option<LeanMatcher> {
        // As grep-regex's `ConfiguredHIR::new`: one pattern, in a group.
        let pattern = format!("(?:{pattern})");
        let ast = ParserBuilder::new()
            .nest_limit(NEST_LIMIT)
            .octal(false)
            .ignore_whitespace(false)
            .build()
            .parse(&pattern)
            .ok()?;
        let hir = TranslatorBuilder::new()
            .utf8(false)
            .case_insensitive(case_insensitive)
            .multi_line(false)
            .dot_matches_new_line(false)
            .crlf(false)
            .swap_greed(false)
            .unicode(true)
            .build()
            .translate(&pattern, &ast)
            .ok()?;
        let hir = without_newline(hir)?;
        let config = meta::Regex::config()
            .utf8_empty(false)
            .nfa_size_limit(Some(NFA_BYTES))
            .onepass_size_limit(Some(ONEPASS_BYTES))
            .dfa(false)
            .hybrid_cache_capacity(lazy_dfa_bytes);
        let regex = meta::Regex::builder()
            .configure(config)
            .build_from_hir(&hir)
            .ok()?;
        // As grep-regex's `ConfiguredHIR::line_terminator`: with `\A` or
        // `\z` the searcher must give the regex one line at a time.
        let anchored = hir.properties().look_set().contains_anchor_haystack();
        Some(LeanMatcher {
            regex,
            line_terminator: (!anchored).then(|| LineTerminator::byte(b'\n')),
        })
    }

    /// The heap the compiled pattern holds (not the search caches).
    pub(super) fn memory_usage(&self) -> usize {
        self.regex.memory_usage()
    }
}

impl Matcher for LeanMatcher {
    type Captures = NoCaptures;
    type Error = NoError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, NoError> {
        let input = Input::new(haystack).span(at..haystack.len());
        Ok(self
            .regex
            .find(input)
            .map(|m| Match::new(m.start(), m.end())))
    }

    fn new_captures(&self) -> Result<NoCaptures, NoError> {
        Ok(NoCaptures::new())
    }

    fn shortest_match_at(&self, haystack: &[u8], at: usize) -> Result<Option<usize>, NoError> {
        let input = Input::new(haystack).span(at..haystack.len());
        Ok(self.regex.search_half(&input).map(|m| m.offset()))
    }

    fn line_terminator(&self) -> Option<LineTerminator> {
        self.line_terminator
    }
}

/// `hir` with `\n` taken out of every class, as grep-regex's
/// `strip_from_match` does; `None` when a literal holds it or a class
/// holds nothing else (grep-regex refuses those, with its own message).
fn without_newline(hir: Hir) -> Option<Hir> {
    Some(match hir.into_kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(hir::Literal(bytes)) => {
            if bytes.contains(&b'\n') {
                return None;
            }
            Hir::literal(bytes)
        }
        HirKind::Class(hir::Class::Unicode(mut class)) => {
            if class.ranges().is_empty() {
                return Some(Hir::class(hir::Class::Unicode(class)));
            }
            class.difference(&hir::ClassUnicode::new([hir::ClassUnicodeRange::new(
                '\n', '\n',
            )]));
            if class.ranges().is_empty() {
                return None;
            }
            Hir::class(hir::Class::Unicode(class))
        }
        HirKind::Class(hir::Class::Bytes(mut class)) => {
            if class.ranges().is_empty() {
                return Some(Hir::class(hir::Class::Bytes(class)));
            }
            class.difference(&hir::ClassBytes::new([hir::ClassBytesRange::new(
                b'\n', b'\n',
            )]));
            if class.ranges().is_empty() {
                return None;
            }
            Hir::class(hir::Class::Bytes(class))
        }
        HirKind::Look(look) => Hir::look(look),
        HirKind::Repetition(mut repetition) => {
            repetition.sub = Box::new(without_newline(*repetition.sub)?);
            Hir::repetition(repetition)
        }
        HirKind::Capture(mut capture) => {
            capture.sub = Box::new(without_newline(*capture.sub)?);
            Hir::capture(capture)
        }
        HirKind::Concat(parts) => Hir::concat(
            parts
                .into_iter()
                .map(without_newline)
                .collect::<Option<Vec<_>>>()?,
        ),
        HirKind::Alternation(parts) => Hir::alternation(
            parts
                .into_iter()
                .map(without_newline)
                .collect::<Option<Vec<_>>>()?,
        ),
    })
}
