//! Text from a run made inert before agentci shows it: what the model said,
//! what a tool or a check printed, what a file held. Every display uses
//! this one implementation: the progress log and bars on stderr, GitHub
//! workflow commands, the step summary, `agentci trace`, the eval's
//! summary and annotations.
//!
//! For a terminal or a log ([`terminal`], [`line()`]): escape sequences (CSI,
//! OSC, DCS, SOS, PM, APC and the short ESC forms, in their 7-bit and C1
//! spellings) are removed, since a terminal would act on them (clear the
//! screen, set the title, write the clipboard); every other control
//! character is written out (`\r`, `\u{1b}`, `\u{85}`), and so are the
//! bidirectional controls that show text in another order than it is. A
//! lone `\r` matters most: the GitHub Actions runner splits lines on it, so
//! text after one could start a workflow command of its own.
//!
//! For Markdown ([`markdown`]): inline values escaped so they stay text in
//! their table cell or list item, blocks fenced so they render as code.
//!
//! Not here: secrets (the event bus masks them before any sink sees an
//! event), cleaning text the model reads (`untrusted`), the escaping of
//! workflow commands' own syntax (the GitHub sink's).

pub mod markdown;

use std::fmt::Write as _;
use std::iter::Peekable;
use std::str::Chars;

/// `text` cut to its first `max` characters, with `…` when something was
/// cut: the one-line quote of a longer text in a message.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `text` cut to at most `max` bytes at a character boundary, followed by a
/// `[truncated N bytes]` line when something was cut: a long value handed
/// on whole (to a judge model, to a collector) that must stay bounded.
pub fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[truncated {} bytes]", &text[..end], text.len() - end)
}

/// `text` for a terminal or a log, line breaks kept (`\r\n` read as `\n`).
pub fn terminal(text: &str) -> String {
    shown(text, Breaks::Keep)
}

/// `text` on one line for a terminal or a log: as [`terminal`], with line
/// breaks written out as `\n` too.
pub fn line(text: &str) -> String {
    shown(text, Breaks::WriteOut)
}

/// What happens to a line break (`\n`, or `\r\n`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Breaks {
    Keep,
    WriteOut,
}

fn shown(text: &str, breaks: Breaks) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => escape_sequence(&mut chars, &mut out),
            '\u{9b}' => skip_control_sequence(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' if breaks == Breaks::Keep => out.push('\n'),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push('\t'),
            c if is_shown_as_code(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// Control characters, and the Unicode ones that reorder or break text.
fn is_shown_as_code(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{202a}'..='\u{202e}'     // bidirectional embeddings and overrides
            | '\u{2066}'..='\u{2069}'   // bidirectional isolates
            | '\u{2028}' | '\u{2029}'   // line and paragraph separators
        )
}

/// After an ESC: the rest of its sequence is dropped; an ESC that starts
/// none is written out.
fn escape_sequence(chars: &mut Peekable<Chars<'_>>, out: &mut String) {
    match chars.peek().copied() {
        Some('[') => {
            chars.next();
            skip_control_sequence(chars);
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            skip_string(chars);
        }
        // nF: intermediates, then a final byte (`ESC ( B`, `ESC # 8`).
        Some(' '..='/') => {
            while chars.next_if(|c| matches!(c, ' '..='/')).is_some() {}
            chars.next_if(|c| matches!(c, '0'..='~'));
        }
        // Fp, Fe, Fs: one byte (`ESC 7`, `ESC M`, `ESC c`).
        Some('0'..='~') => {
            chars.next();
        }
        _ => out.push_str("\\u{1b}"),
    }
}

/// A CSI's parameters and intermediates, and its final byte when there is one.
fn skip_control_sequence(chars: &mut Peekable<Chars<'_>>) {
    while chars.next_if(|c| matches!(c, ' '..='?')).is_some() {}
    chars.next_if(|c| matches!(c, '@'..='~'));
}

/// An OSC, DCS, SOS, PM or APC string, up to its terminator (BEL, `ESC \`
/// or ST). Of an unterminated one only the introducer goes: the rest of
/// the text stays visible, its controls written out.
fn skip_string(chars: &mut Peekable<Chars<'_>>) {
    let mut ahead = chars.clone();
    while let Some(c) = ahead.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' if ahead.peek() == Some(&'\\') => {
                ahead.next();
                break;
            }
            _ if ahead.peek().is_none() => return,
            _ => {}
        }
    }
    *chars = ahead;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_text_is_inert() {
        let cases = [
            // (input, terminal, line)
            ("plain text", "plain text", "plain text"),
            ("two\nlines\r\n", "two\nlines\n", "two\\nlines\\n"),
            ("a\r::error::x", "a\\r::error::x", "a\\r::error::x"),
            ("tab\there", "tab\there", "tab\there"),
            // CSI: colour, clear screen, cursor home, 8-bit CSI
            ("\u{1b}[31mred\u{1b}[0m", "red", "red"),
            ("\u{1b}[2J\u{1b}[Hx", "x", "x"),
            ("\u{9b}2Jx", "x", "x"),
            // OSC 52 (clipboard) ended by BEL, OSC 0 (title) ended by ST
            ("a\u{1b}]52;c;cHduZWQ=\u{7}b", "ab", "ab"),
            ("a\u{1b}]0;title\u{1b}\\b", "ab", "ab"),
            ("a\u{9d}0;title\u{9c}b", "ab", "ab"),
            // OSC 8 hyperlink around visible text
            (
                "\u{1b}]8;;http://h/\u{1b}\\link\u{1b}]8;;\u{1b}\\",
                "link",
                "link",
            ),
            // DCS, APC; an unterminated OSC loses its introducer only
            ("a\u{1b}Pq#0\u{1b}\\b", "ab", "ab"),
            ("a\u{1b}_hidden\u{1b}\\b", "ab", "ab"),
            ("a\u{1b}]0;rest\u{1b}", "a0;rest\\u{1b}", "a0;rest\\u{1b}"),
            ("a\u{1b}]", "a", "a"),
            // short forms: charset (nF), save cursor (Fp), reset (Fs)
            ("\u{1b}(Bx\u{1b}7y\u{1b}cz", "xyz", "xyz"),
            // a lone ESC, BEL, backspace, DEL, C1 NEL: written out
            ("a\u{1b}", "a\\u{1b}", "a\\u{1b}"),
            (
                "bell\u{7}bs\u{8}del\u{7f}",
                "bell\\u{7}bs\\u{8}del\\u{7f}",
                "bell\\u{7}bs\\u{8}del\\u{7f}",
            ),
            ("next\u{85}line", "next\\u{85}line", "next\\u{85}line"),
            // bidirectional override, line separator
            (
                "\u{202e}abc\u{2028}d",
                "\\u{202e}abc\\u{2028}d",
                "\\u{202e}abc\\u{2028}d",
            ),
            ("héllo ✅ 日本", "héllo ✅ 日本", "héllo ✅ 日本"),
        ];
        for (input, want_terminal, want_line) in cases {
            assert_eq!(terminal(input), want_terminal, "terminal({input:?})");
            assert_eq!(line(input), want_line, "line({input:?})");
        }
    }
}
