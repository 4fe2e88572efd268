//! Text from a run placed in Markdown that GitHub renders (the step summary,
//! the eval's summary) so it shows as the text it is: never a table, an
//! image that fetches a URL when the page is viewed, raw HTML, or a heading.
//!
//! A value inside a line ([`inline`]) is one line with every character that
//! could start Markdown or HTML backslash-escaped; a value in a code span
//! ([`code`]) is fenced by more backticks than it holds; a block of the
//! model's or a tool's text ([`block`]) goes in a fenced code block whose
//! fence is longer than any run of backticks inside it, so nothing in it
//! can close it. All of them are first made inert for a terminal (escape
//! sequences removed, control characters written out), since the same text
//! is read in logs and raw files too.

use super::line;

/// Characters that start Markdown or HTML inline: emphasis, code, links
/// and images, autolinks and tags, entities, strikethrough, table columns,
/// math.
const INLINE_MARKUP: &[char] = &[
    '\\', '`', '*', '_', '[', ']', '<', '>', '!', '|', '&', '~', '$',
];

/// `text` as plain text inside a line of Markdown (a table cell, a list
/// item, a paragraph): one line, trimmed, markup escaped, and a leading
/// character that would make a heading, list or quote of it escaped too.
pub fn inline(text: &str) -> String {
    let one_line = line(text);
    let text = one_line.trim();
    let mut out = String::with_capacity(text.len() + 8);
    // `12. ` or `3) ` would start an ordered list; `1.5` would not.
    let ordered_list_marker = text
        .find(|c: char| !c.is_ascii_digit())
        .filter(|&at| at > 0 && text[at..].starts_with(['.', ')']))
        .filter(|&at| {
            text[at + 1..]
                .chars()
                .next()
                .is_none_or(char::is_whitespace)
        });
    let mut previous = None;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let block_start = at == 0 && matches!(c, '#' | '-' | '+' | '=');
        // `snake_case` is no emphasis: an underscore inside a word stays bare.
        let in_word = c == '_'
            && previous.is_some_and(char::is_alphanumeric)
            && chars
                .peek()
                .is_some_and(|&(_, next)| next.is_alphanumeric());
        previous = Some(c);
        if (INLINE_MARKUP.contains(&c) && !in_word)
            || block_start
            || Some(at) == ordered_list_marker
        {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` as inline code: one line, between runs of backticks longer than
/// any inside it (with a space on each side when it starts or ends with
/// one, which Markdown then drops).
pub fn code(text: &str) -> String {
    let text = line(text);
    let ticks = "`".repeat(longest_backtick_run(&text) + 1);
    if text.starts_with('`') || text.ends_with('`') {
        format!("{ticks} {text} {ticks}")
    } else {
        format!("{ticks}{text}{ticks}")
    }
}

/// [`code`] for a table cell: GitHub reads `\|` there as a `|` that does
/// not end the cell, even in code.
pub fn cell_code(text: &str) -> String {
    code(text).replace('|', "\\|")
}

/// `text` as a fenced code block with `info` (`text`, `json`) after the
/// opening fence; line breaks kept, no trailing newline after the fence.
pub fn block(text: &str, info: &str) -> String {
    let text = super::terminal(text);
    let text = text.trim_end_matches('\n');
    let fence = "`".repeat(longest_backtick_run(text).max(2) + 1);
    format!("{fence}{info}\n{text}\n{fence}")
}

/// `text` inside HTML (`<summary>…</summary>`): one line, `&`, `<`, `>`
/// and quotes as entities.
pub fn html(text: &str) -> String {
    line(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_values_stay_text() {
        let cases = [
            ("Fix the bug", "Fix the bug"),
            ("a|b", "a\\|b"),
            ("![x](http://h/beacon)", "\\!\\[x\\](http://h/beacon)"),
            ("<img src=x>", "\\<img src=x\\>"),
            (
                "**bold** _it_ `code`",
                "\\*\\*bold\\*\\* \\_it\\_ \\`code\\`",
            ),
            ("budget_exceeded", "budget_exceeded"),
            ("&lt;", "\\&lt;"),
            ("# heading", "\\# heading"),
            ("- item", "\\- item"),
            ("12. item", "12\\. item"),
            ("version 1.2", "version 1.2"),
            ("100.0%", "100.0%"),
            ("3)", "3\\)"),
            // written out, and the backslash escaped so it shows
            ("  two\nlines\r::x  ", "two\\\\nlines\\\\r::x"),
            ("\u{1b}]0;t\u{7}ok", "ok"),
        ];
        for (input, want) in cases {
            assert_eq!(inline(input), want, "inline({input:?})");
        }
    }

    #[test]
    fn code_spans_and_blocks_cannot_be_closed_from_inside() {
        assert_eq!(code("src/lib.rs"), "`src/lib.rs`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(cell_code("a|b"), "`a\\|b`");
        assert_eq!(block("plain\n", "text"), "```text\nplain\n```");
        assert_eq!(block("a ```` b", ""), "`````\na ```` b\n`````");
        assert_eq!(
            block("x\r::error::y\u{1b}[2J", "text"),
            "```text\nx\\r::error::y\n```"
        );
        assert_eq!(
            html("<b>\"x\" & y</b>"),
            "&lt;b&gt;&quot;x&quot; &amp; y&lt;/b&gt;"
        );
    }
}
