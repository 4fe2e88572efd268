//! What a YAML syntax or type error in a SKILL.md frontmatter tells the
//! person who wrote it: the key a type error is about, and for syntax
//! errors what job files get too ([`crate::job::yaml_syntax`]). It rewords the library's
//! diagnostic in place; parsing and validating the frontmatter is
//! [`super`]'s job.

use crate::job::diagnostic::Diagnostic;
use crate::job::yaml_syntax::explain_syntax_error;

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
    if type_error {
        if let Some(key) = key_of_line(yaml, yaml_line) {
            d.message = format!("`{key}`: {}", d.message);
        }
        return;
    }
    explain_syntax_error(d, yaml, 2);
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
