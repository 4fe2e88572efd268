//! How displays shorten numbers and text: durations as `1.2s` or `2m05s`,
//! counts with thousands separators and plurals, text cut to one line (made
//! inert by [`crate::inert`] first). Shared
//! by the progress log, the bar, the GitHub summary and `agentci trace`.

pub(crate) fn secs(ms: u64) -> String {
    if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

pub(crate) fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", thousands(n))
    }
}

/// `3400` as `3,400`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The first line of `text`, cut to `max` characters, for a one-line
/// display; made inert first, so a lone `\r` is shown, not obeyed.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let shown = crate::inert::terminal(text);
    let first = shown.lines().next().unwrap_or("").trim();
    let mut out: String = first.chars().take(max).collect();
    if first.chars().count() > max || shown.trim().lines().count() > 1 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_like_a_person_wrote_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(3400), "3,400");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(secs(1234), "1.2s");
        assert_eq!(secs(125_000), "2m05s");
        assert_eq!(plural(1, "turn"), "1 turn");
        assert_eq!(plural(12, "tool call"), "12 tool calls");
    }

    #[test]
    fn long_and_multiline_text_is_cut_to_one_line() {
        assert_eq!(one_line("short", 10), "short");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("first\nsecond", 80), "first…");
        assert_eq!(one_line("", 5), "");
        assert_eq!(one_line("a\r::error::x\u{1b}[2J", 80), "a\\r::error::x");
    }
}
