//! What a YAML syntax error tells the person who wrote the file: the tab to
//! replace, the key indented out of line with its neighbours, the bracket
//! left open, the value to quote because it holds `: `. The parser's own
//! words ("mapping values are not allowed in this context") name none of
//! these. Job files, eval suites and SKILL.md frontmatter share this; it
//! rewords the diagnostic the parser's error became, in place, and decides
//! nothing about what is valid.

use super::diagnostic::Diagnostic;

/// Explains the syntax error `d` (already placed at the parser's position)
/// in `yaml`, whose first line is line `first_line` of the file.
pub(crate) fn explain_syntax_error(d: &mut Diagnostic, yaml: &str, first_line: u32) {
    let Some(index) = d
        .line
        .checked_sub(first_line)
        .and_then(|i| usize::try_from(i).ok())
    else {
        return;
    };
    let lines: Vec<&str> = yaml.lines().collect();
    let Some(&line) = lines.get(index) else {
        return;
    };
    let file_line = |i: usize| first_line.saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
    if d.message.contains("tab") {
        // The library places a tab one column past it, or at the end of the
        // line before the one it indents; point at the tab itself.
        let tabbed = (index..lines.len().min(index + 2)).find_map(|i| {
            let tab = lines[i].find('\t')?;
            (i == index || lines[i][..tab].trim().is_empty()).then_some((i, tab))
        });
        if let Some((i, tab)) = tabbed {
            d.line = file_line(i);
            d.column = u32::try_from(tab + 1).unwrap_or(u32::MAX);
            d.message = "a tab in the indentation; YAML indents with spaces only, so replace \
                         the tab with spaces"
                .to_string();
        }
        return;
    }
    if let Some((open, key, bracket)) = unclosed_bracket(&lines, index) {
        let value = lines[open].split_once(": ").map_or("", |(_, v)| v.trim());
        if open == index && value.chars().count() <= 120 {
            d.message = format!(
                "{}; the value of `{key}` starts with `{bracket}`, which YAML reads as the start \
                 of a list or mapping: if it is text, quote it, e.g. {key}: \"{value}\"",
                d.message
            );
            return;
        }
        let close = if bracket == '[' { ']' } else { '}' };
        d.message = format!(
            "{}; the `{bracket}` that starts the value of `{key}` on line {} is never closed: \
             close it with `{close}`, or, if the value is text, quote it",
            d.message,
            file_line(open)
        );
        return;
    }
    if d.message.contains("quoted scalar")
        && let Some((open, key, quote)) = unclosed_quote(&lines, index)
    {
        d.line = file_line(open);
        d.column = u32::try_from(lines[open].find(quote).unwrap_or(0) + 1).unwrap_or(u32::MAX);
        d.message = format!(
            "the `{quote}` that starts the value of `{key}` is never closed, so the lines after \
             it are read as part of the value: add the closing `{quote}`"
        );
        return;
    }
    if let Some(problem) = misplaced_item(&lines, index, &file_line) {
        d.column = u32::try_from(indent_of(line) + 1).unwrap_or(u32::MAX);
        d.message = problem;
        return;
    }
    if let Some(problem) = misindented(&lines, index, file_line) {
        d.column = u32::try_from(indent_of(line) + 1).unwrap_or(u32::MAX);
        d.message = problem;
        return;
    }
    if let Some((key, value)) = unquoted_value_with_colon(line) {
        d.message = format!(
            "{}; the value of `{key}` holds `: `, which YAML reads as a new key: quote it, \
             e.g. {key}: \"{value}\"",
            d.message
        );
    }
}

/// The `key:` a line starts with (after any `- `), if any.
fn key_of(line: &str) -> Option<&str> {
    let rest = line.trim_start().trim_start_matches("- ").trim_start();
    let (key, _) = rest.split_once(':')?;
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
    plain.then_some(key)
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Lines with content: not blank, not a comment.
fn is_content(line: &str) -> bool {
    let trimmed = line.trim();
    !trimmed.is_empty() && !trimmed.starts_with('#')
}

/// The column (0-based) a line's key starts at, after any `- `.
fn key_column(line: &str) -> usize {
    let mut column = indent_of(line);
    let mut rest = &line[column..];
    while let Some(after) = rest.strip_prefix("- ") {
        let trimmed = after.trim_start_matches(' ');
        column += rest.len() - trimmed.len();
        rest = trimmed;
    }
    column
}

/// "indent `key` by N spaces", or "start it at the beginning of the line".
fn indent_by(key: &str, spaces: usize) -> String {
    if spaces == 0 {
        format!("start `{key}` at the beginning of the line")
    } else {
        format!("indent `{key}` by {spaces} spaces")
    }
}

/// A key on line `index` indented out of line with the mapping it belongs
/// to: deeper than a sibling whose value is on its own line (so the parser
/// reads it as part of that value), or between a parent's and its
/// children's column. Columns are those of the keys, after any `- `.
fn misindented(lines: &[&str], index: usize, file_line: impl Fn(usize) -> u32) -> Option<String> {
    let line = lines[index];
    let key = key_of(line)?;
    let indent = indent_of(line);
    let above = (0..index).rev().find(|&i| is_content(lines[i]))?;
    let above_key = key_of(lines[above])?;
    let above_column = key_column(lines[above]);
    let above_has_value = lines[above]
        .split_once(':')
        .is_some_and(|(_, v)| is_content(v));
    if indent > above_column && above_has_value {
        return Some(format!(
            "`{key}` is indented more than `{above_key}` on line {}, which already has a \
             value; keys of one mapping must start in the same column: {} like `{above_key}`",
            file_line(above),
            indent_by(key, above_column)
        ));
    }
    if indent < above_column {
        // The parent: the nearest key above that starts left of this one.
        let parent = (0..index)
            .rev()
            .find(|&i| is_content(lines[i]) && key_column(lines[i]) < indent)?;
        let sibling = (parent + 1..index).find(|&i| is_content(lines[i]))?;
        let sibling_column = key_column(lines[sibling]);
        if sibling_column > indent {
            return Some(format!(
                "`{key}` is indented less than `{}` on line {} but more than `{}` on line {}; \
                 keys of one mapping must start in the same column: {}",
                key_of(lines[sibling]).unwrap_or("the key"),
                file_line(sibling),
                key_of(lines[parent]).unwrap_or("the key"),
                file_line(parent),
                indent_by(key, sibling_column)
            ));
        }
    }
    None
}

/// A list item (`- …`) on line `index` whose `-` is out of line with the
/// item before it in the same list: the parser reads it as a key that is
/// missing, or as part of the item above. The item before is the nearest
/// `- ` line above with only deeper lines (its own contents) between; a
/// line left of this one before it is the list's parent, so this is the
/// first item and nothing is said.
fn misplaced_item(
    lines: &[&str],
    index: usize,
    file_line: &impl Fn(usize) -> u32,
) -> Option<String> {
    let line = lines[index];
    let item = line.trim_start();
    if !(item.starts_with("- ") || item == "-") {
        return None;
    }
    let indent = indent_of(line);
    let mut shallowest_between = usize::MAX;
    for above in (0..index).rev().filter(|&i| is_content(lines[i])) {
        let above_indent = indent_of(lines[above]);
        let above_item = lines[above].trim_start();
        if above_item.starts_with("- ") || above_item == "-" {
            if above_indent < shallowest_between && above_indent != indent {
                let shown = |text: &str| -> String { text.chars().take(40).collect() };
                let more_or_less = if indent > above_indent {
                    "more"
                } else {
                    "less"
                };
                return Some(format!(
                    "`{}` is indented {more_or_less} than the list item `{}` on line {}; items \
                     of one list must start their `-` in the same column: {}",
                    shown(item),
                    shown(above_item),
                    file_line(above),
                    indent_by(&shown(item), above_indent)
                ));
            }
            if above_indent <= indent {
                return None;
            }
        } else if above_indent < indent {
            return None;
        }
        shallowest_between = shallowest_between.min(above_indent);
    }
    None
}

/// The nearest `key: "…` at or above line `index` whose quote is not
/// closed on its line → (its line, the key, the quote): a quoted value left
/// open swallows the lines after it.
fn unclosed_quote<'l>(lines: &[&'l str], index: usize) -> Option<(usize, &'l str, char)> {
    (index.saturating_sub(20)..=index).rev().find_map(|i| {
        let (key, value) = lines[i].split_once(": ")?;
        let value = value.trim();
        let quote = value.chars().next().filter(|c| matches!(c, '"' | '\''))?;
        let closed = value.len() > 1 && value[1..].contains(quote);
        let key = key.trim().trim_start_matches("- ").trim();
        (!closed).then_some((i, key, quote))
    })
}

/// The nearest `key: [` or `key: {` at or above line `index` whose bracket
/// is still open at `index` → (its line, the key, the bracket): a flow
/// value left unclosed, which the parser reports only lines later.
fn unclosed_bracket<'l>(lines: &[&'l str], index: usize) -> Option<(usize, &'l str, char)> {
    let from = index.saturating_sub(20);
    let mut depth = 0i64;
    for i in (from..=index).rev() {
        let line = lines[i];
        for c in line.chars() {
            match c {
                '[' | '{' => depth += 1,
                ']' | '}' => depth -= 1,
                _ => {}
            }
        }
        if depth > 0 {
            let (key, value) = line.split_once(": ")?;
            let bracket = value.trim_start().chars().next()?;
            let key = key.trim().trim_start_matches("- ").trim();
            return matches!(bracket, '[' | '{').then_some((i, key, bracket));
        }
    }
    None
}

/// `key: some text: more` (a plain, unquoted value holding `: `) → (key, value).
fn unquoted_value_with_colon(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(": ")?;
    let key = key.trim().trim_start_matches("- ").trim();
    let value = value.trim();
    let plain = !value.starts_with(['"', '\'', '[', '{', '|', '>']);
    (plain && !key.contains(' ') && (value.contains(": ") || value.ends_with(':')))
        .then_some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explain(yaml: &str, line: u32, message: &str) -> Diagnostic {
        let mut d = Diagnostic::error("job.yaml", line, 1, message);
        explain_syntax_error(&mut d, yaml, 1);
        d
    }

    #[test]
    fn key_indented_deeper_than_its_sibling() {
        let d = explain(
            "budget:\n  max_turns: 3\n   max_tokens: 4\n",
            3,
            "mapping values are not allowed in this context",
        );
        assert_eq!(d.column, 4);
        assert!(
            d.message.contains("indent `max_tokens` by 2 spaces"),
            "{d:?}"
        );
    }

    #[test]
    fn key_between_parent_and_children() {
        let d = explain(
            "budget:\n    max_turns: 3\n  max_tokens: 4\n",
            3,
            "did not find expected key",
        );
        assert!(
            d.message.contains("indent `max_tokens` by 4 spaces"),
            "{d:?}"
        );
        assert!(d.message.contains("`budget` on line 1"), "{d:?}");
    }

    #[test]
    fn list_items_count_from_the_key_after_the_dash() {
        let d = explain(
            "checks:\n  - name: a\n   run: x\n",
            3,
            "did not find expected key",
        );
        assert!(d.message.contains("indent `run` by 4 spaces"), "{d:?}");
        assert!(d.message.contains("`checks` on line 1"), "{d:?}");
        let d = explain("name: x\n goal: g\n", 2, "mapping values are not allowed");
        assert!(d.message.contains("start `goal` at the beginning"), "{d:?}");
    }

    #[test]
    fn unclosed_quote_points_where_it_opened() {
        let d = explain(
            "name: x\ngoal: \"g\nmodel: {name: m}\n",
            3,
            "invalid indentation in multiline quoted scalar",
        );
        assert_eq!((d.line, d.column), (2, 7));
        assert!(
            d.message.contains("value of `goal` is never closed"),
            "{d:?}"
        );
    }

    #[test]
    fn unclosed_bracket_names_the_line_it_opened_on() {
        let d = explain(
            "tools: [read, grep\nbudget: {max_turns: 3}\n",
            2,
            "illegal placement of ':' indicator",
        );
        assert!(
            d.message.contains("`tools` on line 1 is never closed"),
            "{d:?}"
        );
    }

    #[test]
    fn colon_in_a_value_and_tabs() {
        let d = explain(
            "goal: Fix: the tests\n",
            1,
            "mapping values are not allowed",
        );
        assert!(d.message.contains("e.g. goal: \"Fix: the tests\""), "{d:?}");
        let d = explain("a:\n\tb: 1\n", 2, "tabs disallowed");
        assert_eq!((d.column, d.message.starts_with("a tab")), (1, true));
    }
}
