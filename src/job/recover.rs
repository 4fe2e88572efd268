//! Recovering from structural YAML errors so that one pass reports them all.
//!
//! serde stops at the first unknown key or wrong type. To go on, the entry
//! that caused it is blanked out of a working copy of the source, character
//! for character with spaces, so every other line keeps its line and column,
//! and the parse is tried again. The semantic checks then run on what is
//! left, so a file with an unknown key *and* a bad value reports both.
//! Only block-style entries can be blanked; an error inside a flow mapping
//! or list (`{a: 1}`, `[a, b]`) blanks the block entry that holds it.

use serde::de::DeserializeOwned;

use super::diagnostic::{Diagnostic, Reporter};

/// How many structural problems one file may report before the rest waits for the next run.
pub const MAX_RECOVERIES: usize = 25;

/// Parse `source` into `T`, reporting each structural error and blanking
/// its entry until the parse succeeds; a syntax error (or an entry that
/// cannot be blanked) ends it. Returns the value and the known keys that
/// were blanked for a wrong value (see [`drop_consequences`]).
pub(crate) fn parse_recovering<T: DeserializeOwned>(
    source: &str,
    reporter: &mut Reporter<'_>,
) -> Option<(T, Vec<String>)> {
    use serde_saphyr::Error as E;
    let mut working = source.to_string();
    let mut blanked = Vec::new();
    for _ in 0..=MAX_RECOVERIES {
        let mut options = serde_saphyr::Options::default();
        options.with_snippet = false;
        let error = match serde_saphyr::from_str_with_options::<T>(&working, options) {
            Ok(value) => return Some((value, blanked)),
            Err(error) => error,
        };
        reporter.yaml_error(&error);
        let (recoverable, unknown_key) = match error.without_snippet() {
            E::SerdeUnknownField { .. } => (true, true),
            E::SerdeInvalidType { .. } | E::SerdeUnknownVariant { .. } | E::Unexpected { .. } => {
                (true, false)
            }
            _ => (false, false),
        };
        if !recoverable {
            // A syntax error: say what it usually means (a tab, a key out of
            // line, an open bracket, an unquoted `: `) and stop.
            let first_line = reporter.start().line;
            if let Some(d) = reporter.diagnostics.last_mut() {
                super::yaml_syntax::explain_syntax_error(d, &working, first_line);
            }
            return None;
        }
        let line = error.location().map(|l| l.line() as usize);
        let key = line.and_then(|line| blank_entry(&mut working, line))?;
        // An unknown key is simply gone; a known key with a wrong value is
        // now missing, which must not be reported a second time.
        if !unknown_key {
            blanked.push(key);
        }
    }
    None
}

/// Drop the "missing `key`" problems the semantic checks found only because
/// `key` was blanked for its wrong value, which was already reported.
pub(crate) fn drop_consequences(diagnostics: &mut Vec<Diagnostic>, blanked: &[String]) {
    diagnostics.retain(|d| {
        !blanked.iter().any(|key| {
            d.message.contains(&format!("`{key}`"))
                && (d.message.starts_with("missing") || d.message.contains(" without "))
        })
    });
}

/// Blank the entry at 1-based `line` (the key reported there, or the block
/// entry holding that line) and everything nested under it. Returns the
/// blanked key's name, or `None` when nothing sensible can be blanked.
pub fn blank_entry(source: &mut String, line: usize) -> Option<String> {
    let lines: Vec<&str> = source.split('\n').collect();
    let mut entry = line.checked_sub(1)?;
    if entry >= lines.len() {
        return None;
    }
    // Walk up from a value line (a list item, a continuation) to the key that owns it.
    while key_of(lines[entry]).is_none() {
        let indent = indentation(lines[entry])?;
        entry = (0..entry).rev().find(|&i| {
            indentation(lines[i]).is_some_and(|ind| ind < indent) && key_of(lines[i]).is_some()
        })?;
    }
    let (key_column, key) = key_of(lines[entry])?;
    let mut end = entry + 1;
    while end < lines.len() {
        match indentation(lines[end]) {
            Some(indent) if indent <= key_column => break,
            _ => end += 1,
        }
    }
    let emptied_item = emptied_item(&lines, entry, key_column, end);
    let mut out = String::with_capacity(source.len());
    for (i, text) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if i == entry {
            // Keep a list item's `- ` so the list keeps its shape, unless
            // that leaves the item empty: an empty item reads as `~`, which
            // would be reported a second time (`unknown value ~` after a
            // misspelt assertion). It goes, or, alone in its list, becomes
            // `[]` so the list is still a list.
            match emptied_item {
                Some(EmptiedItem::Drop) => out.extend(text.chars().map(|_| ' ')),
                Some(EmptiedItem::EmptyList(dash)) => {
                    out.push_str(&text[..dash]);
                    out.push_str("[]");
                    out.extend(text[dash + 2..].chars().map(|_| ' '));
                }
                None => {
                    out.push_str(&text[..key_column]);
                    out.extend(text[key_column..].chars().map(|_| ' '));
                }
            }
        } else if i > entry && i < end {
            out.extend(text.chars().map(|_| ' '));
        } else {
            out.push_str(text);
        }
    }
    *source = out;
    Some(key)
}

/// What to do with a list item whose only key is blanked.
enum EmptiedItem {
    /// Other items remain: blank the item's `- ` too.
    Drop,
    /// It is the list's only item: `- ` at this column becomes `[]`.
    EmptyList(usize),
}

/// Whether blanking the key on line `entry` (its entry ending before line
/// `end`) empties a block list item (`- key: …` with no other key of its
/// own below), and what to do then; `None` when it is no list item or keeps
/// other keys.
fn emptied_item(
    lines: &[&str],
    entry: usize,
    key_column: usize,
    end: usize,
) -> Option<EmptiedItem> {
    let line = lines[entry];
    let dash = line.len() - line.trim_start().len();
    let after_dash = line[dash..].strip_prefix("- ")?;
    if dash + 2 + (after_dash.len() - after_dash.trim_start().len()) != key_column {
        return None;
    }
    let keeps_keys = lines
        .get(end)
        .is_some_and(|next| indentation(next) == Some(key_column) && key_of(next).is_some());
    if keeps_keys {
        return None;
    }
    // Another item of the same list: a `-` at the same column, with only
    // deeper lines (the items' contents) between.
    let is_sibling = |i: usize| -> Option<bool> {
        let indent = indentation(lines[i])?;
        match indent.cmp(&dash) {
            std::cmp::Ordering::Greater => None,
            std::cmp::Ordering::Equal => Some(lines[i].trim_start().starts_with('-')),
            std::cmp::Ordering::Less => Some(false),
        }
    };
    let above = (0..entry).rev().find_map(is_sibling).unwrap_or(false);
    let below = (end..lines.len()).find_map(is_sibling).unwrap_or(false);
    Some(if above || below {
        EmptiedItem::Drop
    } else {
        EmptiedItem::EmptyList(dash)
    })
}

/// The column and name of a `key:` at the start of a block line (after any `- `).
fn key_of(line: &str) -> Option<(usize, String)> {
    let mut column = line.len() - line.trim_start().len();
    let mut rest = &line[column..];
    while let Some(after) = rest.strip_prefix("- ") {
        let trimmed = after.trim_start();
        column += rest.len() - trimmed.len();
        rest = trimmed;
    }
    let name_len = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .unwrap_or(rest.len());
    let after = rest[name_len..].trim_start();
    (name_len > 0 && (after.starts_with(": ") || after == ":" || after.starts_with(":\t")))
        .then(|| (column, rest[..name_len].to_string()))
}

/// Leading spaces of a line with content; `None` for blank and comment lines.
fn indentation(line: &str) -> Option<usize> {
    let trimmed = line.trim_start();
    (!trimmed.is_empty() && !trimmed.starts_with('#')).then(|| line.len() - trimmed.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanks_a_key_and_its_block_keeping_positions() {
        let mut s = "name: x\nbogus:\n  - a\n  - b\ngoal: g\n".to_string();
        assert_eq!(blank_entry(&mut s, 2).as_deref(), Some("bogus"));
        assert_eq!(s.lines().count(), 5);
        assert_eq!(s.lines().nth(4), Some("goal: g"));
        assert!(s.lines().nth(2).unwrap().trim().is_empty());
    }

    #[test]
    fn a_value_line_blanks_the_key_that_owns_it() {
        let mut s = "tools:\n  - [x]\nname: n\n".to_string();
        assert_eq!(blank_entry(&mut s, 2).as_deref(), Some("tools"));
        assert_eq!(s.lines().nth(2), Some("name: n"));
    }

    #[test]
    fn a_list_item_keeps_its_dash() {
        let mut s = "checks:\n  - bogus: 1\n    run: x\n".to_string();
        assert_eq!(blank_entry(&mut s, 2).as_deref(), Some("bogus"));
        assert!(s.lines().nth(1).unwrap().trim_end().ends_with('-'));
        assert_eq!(s.lines().nth(2), Some("    run: x"));
    }

    #[test]
    fn nested_key_blanks_only_itself() {
        let mut s = "budget:\n  bogus: 1\n  max_turns: 3\n".to_string();
        assert_eq!(blank_entry(&mut s, 2).as_deref(), Some("bogus"));
        assert_eq!(s.lines().nth(2), Some("  max_turns: 3"));
    }
}
