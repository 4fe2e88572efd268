//! Long text in the page: the head shown, the rest behind a `<details>`
//! the reader opens, and a hard cap so one huge output cannot make the page
//! unreadable (the trace file keeps everything). Escapes what it is given.

use html_escape::encode_text as text;

/// Characters shown before the reader asks for more.
const HEAD_CHARS: usize = 3_000;
/// Characters put into the page at most.
const MAX_CHARS: usize = 100_000;

/// `value` as `<pre>` blocks (with `class`): the head, then the rest
/// collapsed, cut at [`MAX_CHARS`] with a note saying so.
pub fn pre(value: &str, class: &str) -> String {
    let total = value.chars().count();
    let class_attr = if class.is_empty() {
        String::new()
    } else {
        format!(r#" class="{class}""#)
    };
    if total <= HEAD_CHARS {
        return format!("<pre{class_attr}>{}</pre>", text(value));
    }
    let head: String = value.chars().take(HEAD_CHARS).collect();
    let rest: String = value
        .chars()
        .skip(HEAD_CHARS)
        .take(MAX_CHARS - HEAD_CHARS)
        .collect();
    let cut = if total > MAX_CHARS {
        format!(
            "\n… cut here: {} more characters are in the trace",
            total - MAX_CHARS
        )
    } else {
        String::new()
    };
    format!(
        r#"<pre{class_attr}>{}</pre><details class="more"><summary>Show the other {} characters</summary><pre{class_attr}>{}{}</pre></details>"#,
        text(&head),
        total - HEAD_CHARS,
        text(&rest),
        text(&cut)
    )
}

/// `value` on one line, cut at `max` characters with an ellipsis.
pub fn line(value: &str, max: usize) -> String {
    let flat: String = value.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::inert::clip(&flat, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_collapsed_then_cut_and_escaped() {
        assert_eq!(pre("a<b", ""), "<pre>a&lt;b</pre>");
        let long = "x".repeat(HEAD_CHARS + 10);
        let html = pre(&long, "out");
        assert!(html.contains("<summary>Show the other 10 characters</summary>"));
        assert!(html.starts_with(r#"<pre class="out">"#));
        let huge = "y".repeat(MAX_CHARS + 5);
        assert!(pre(&huge, "").contains("5 more characters are in the trace"));
        assert_eq!(line("a\n  b", 10), "a b");
        assert_eq!(line("abcdef", 3), "abc…");
    }
}
