//! What a YAML syntax or type error in a SKILL.md frontmatter tells the
//! person who wrote it: the key a type error is about, the tab to replace,
//! and the value to quote when it holds `: `. It rewords the library's
//! diagnostic in place; parsing and validating the frontmatter is
//! [`super`]'s job.

use crate::spec::diagnostic::Diagnostic;

/// Makes a YAML library error point a person the right way: a type error
/// names its key, and a syntax error on a `key: value` line whose value
/// holds `: ` says to quote the value (the usual cause in descriptions
/// such as `description: Use when: tests fail`).
pub(super) fn explain_yaml_error(
    diagnostics: &mut [Diagnostic],
    yaml: &str,
    error: &serde_saphyr::Error,
) {
    use serde_saphyr::Error as E;
    let Some(d) = diagnostics.last_mut() else {
        return;
    };
    // Diagnostics count SKILL.md lines; the YAML starts on line 2.
    let Some(yaml_line) = usize::try_from(d.line).ok().and_then(|l| l.checked_sub(2)) else {
        return;
    };
    let type_error = matches!(
        error.without_snippet(),
        E::SerdeInvalidType { .. } | E::Unexpected { .. }
    );
    if d.message.contains("tab") {
        // The library places a tab one column past it; point at the tab itself.
        if let Some(tab) = yaml.lines().nth(yaml_line).and_then(|line| line.find('\t')) {
            d.column = u32::try_from(tab + 1).unwrap_or(u32::MAX);
            d.message = "a tab in the indentation; YAML indents with spaces only, so replace \
                         the tab with spaces"
                .to_string();
        }
        return;
    }
    if type_error {
        if let Some(key) = key_of_line(yaml, yaml_line) {
            d.message = format!("`{key}`: {}", d.message);
        }
        return;
    }
    if let Some(line) = yaml.lines().nth(yaml_line)
        && let Some((key, value)) = bracketed_value(line)
    {
        d.message = format!(
            "{}; the value of `{key}` starts with `{}`, which YAML reads as the start of a \
             list or mapping: if it is text, quote it, e.g. {key}: \"{value}\"",
            d.message,
            &value[..1]
        );
        return;
    }
    if let Some(line) = yaml.lines().nth(yaml_line)
        && let Some((key, value)) = unquoted_value_with_colon(line)
    {
        d.message = format!(
            "{}; the value of `{key}` holds `: `, which YAML reads as a new key: quote it, \
             e.g. {key}: \"{value}\"",
            d.message
        );
    }
}

/// The top-level key whose value holds line `index` (0-based) of `yaml`.
fn key_of_line(yaml: &str, index: usize) -> Option<&str> {
    yaml.lines()
        .take(index + 1)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find_map(|line| {
            let starts_key = line.starts_with(|c: char| c.is_alphanumeric() || c == '_');
            let key = line.split_once(':')?.0.trim();
            (starts_key && !key.is_empty()).then_some(key)
        })
}

/// `key: [text` (a value opening a flow list or mapping on a top-level
/// key's line) → (key, value): broken YAML there is usually text that
/// happens to start with a bracket.
fn bracketed_value(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(": ")?;
    let value = value.trim();
    let top_level = line.starts_with(|c: char| c.is_alphanumeric() || c == '_');
    let count = |c: char| value.chars().filter(|&v| v == c).count();
    // Only a bracket left open: a closed one that still fails (nested too
    // deeply, say) is not text in disguise.
    let unclosed = count('[') > count(']') || count('{') > count('}');
    let short = value.chars().count() <= 120;
    (top_level && unclosed && short && !key.contains(' ') && value.starts_with(['[', '{']))
        .then_some((key.trim(), value))
}

/// `key: some text: more` (a plain, unquoted value holding `: `) → (key, value).
fn unquoted_value_with_colon(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(": ")?;
    let key = key.trim();
    let value = value.trim();
    let plain = !value.starts_with(['"', '\'', '[', '{', '|', '>']);
    (plain && !key.contains(' ') && (value.contains(": ") || value.ends_with(':')))
        .then_some((key, value))
}
