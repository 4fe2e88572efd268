//! Diagnostics: one problem in a job file, a skill or a flag, with the file,
//! line and column it is about and what was expected.
//!
//! This module also turns serde-saphyr's errors and source locations into
//! diagnostics (`Reporter`), so the job loader and the SKILL.md parser
//! report positions the same way. It does not decide what is a problem.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::{Location, MessageFormatter, UserMessageFormatter};

use super::overrides::{Source, Sources};

/// How bad a problem is: errors stop a run, warnings are reported and the run goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One problem. `line` and `column` are 1-based; `0` means "no position"
/// (the whole file, or a command-line flag, whose name is then in `file`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
    pub severity: Severity,
    pub message: String,
}

impl Diagnostic {
    pub fn error(
        file: impl Into<PathBuf>,
        line: u32,
        column: u32,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            file: file.into(),
            line,
            column,
            severity: Severity::Error,
            message: message.into(),
        }
    }

    pub fn warning(
        file: impl Into<PathBuf>,
        line: u32,
        column: u32,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(file, line, column, message)
        }
    }

    /// An error about a command-line flag such as `--var`.
    pub fn flag(flag: &str, message: impl Into<String>) -> Self {
        Diagnostic::error(flag, 0, 0, message)
    }

    /// An error with no file or flag to point at (a folder that cannot be
    /// used, the environment): printed as `error: message`.
    pub fn unplaced(message: impl Into<String>) -> Self {
        Diagnostic::error(PathBuf::new(), 0, 0, message)
    }

    /// True when the problem names a file or flag.
    pub fn is_placed(&self) -> bool {
        !self.file.as_os_str().is_empty()
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// `FILE:LINE:COLUMN: error: message`, the form `agentci validate` prints.
    pub fn with_severity(&self) -> impl fmt::Display + '_ {
        WithSeverity(self)
    }

    /// `FILE:LINE:COLUMN: ` (or `FILE: `, or nothing for an unplaced problem).
    fn fmt_place(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.is_placed() {
            return Ok(());
        }
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        write!(f, ": ")
    }
}

/// `FILE:LINE:COLUMN: message` (or `FILE: message` without a position).
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_place(f)?;
        write!(f, "{}", self.message)
    }
}

struct WithSeverity<'a>(&'a Diagnostic);

impl fmt::Display for WithSeverity<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_place(f)?;
        write!(f, "{}: {}", self.0.severity.as_str(), self.0.message)
    }
}

/// True when any of `diagnostics` is an error.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(Diagnostic::is_error)
}

/// Collects diagnostics for one YAML source, mapping serde-saphyr locations
/// to file positions. `line_offset` is added to every line, for YAML that
/// starts further down its file (the frontmatter of a SKILL.md).
pub(crate) struct Reporter<'a> {
    file: &'a Path,
    source: &'a str,
    line_offset: u32,
    pub diagnostics: Vec<Diagnostic>,
    /// Where values merged in from elsewhere (flags, an eval case) were
    /// given: a problem with one is reported there, not in `file`.
    pub sources: Sources,
}

/// A position, 1-based: in the reporter's file when `source` is 0, else
/// where an override was given (`source` is its id in [`Sources`]; a
/// flag's line and column are 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pos {
    pub line: u32,
    pub column: u32,
    pub source: u32,
}

impl Pos {
    /// A position in the reporter's own file.
    pub fn at(line: u32, column: u32) -> Pos {
        Pos {
            line,
            column,
            source: 0,
        }
    }
}

impl<'a> Reporter<'a> {
    pub fn new(file: &'a Path, source: &'a str, line_offset: u32) -> Self {
        Reporter {
            file,
            source,
            line_offset,
            diagnostics: Vec::new(),
            sources: Sources::default(),
        }
    }

    /// The file position of a YAML location; unknown locations become 1:1.
    /// A value merged in from elsewhere keeps its own place.
    pub fn pos(&self, location: &Location) -> Pos {
        let line = u32::try_from(location.line()).unwrap_or(u32::MAX);
        let column = u32::try_from(location.column()).unwrap_or(u32::MAX);
        if location.source_id() != 0 {
            return Pos {
                line,
                column,
                source: location.source_id(),
            };
        }
        if line == 0 {
            return self.start();
        }
        Pos::at(line.saturating_add(self.line_offset), column.max(1))
    }

    /// The start of the document, for problems with no better place (a missing key).
    pub fn start(&self) -> Pos {
        Pos::at(1 + self.line_offset, 1)
    }

    pub fn error(&mut self, pos: Pos, message: impl Into<String>) {
        let d = self.placed(pos, message.into());
        self.diagnostics.push(d);
    }

    pub fn warning(&mut self, pos: Pos, message: impl Into<String>) {
        let d = Diagnostic {
            severity: Severity::Warning,
            ..self.placed(pos, message.into())
        };
        self.diagnostics.push(d);
    }

    /// An error at `pos`: in this reporter's file, or where an override was given.
    fn placed(&self, pos: Pos, message: String) -> Diagnostic {
        match self.sources.get(pos.source) {
            Some(Source::Flag(flag)) => Diagnostic::flag(flag, message),
            Some(Source::File(file)) => Diagnostic::error(file, pos.line, pos.column, message),
            None => Diagnostic::error(self.file, pos.line, pos.column, message),
        }
    }

    pub fn has_errors(&self) -> bool {
        has_errors(&self.diagnostics)
    }

    /// The source text of the value at `location`, as written, when the
    /// location carries its span.
    pub fn source_of(&self, location: &Location) -> Option<&'a str> {
        if location.source_id() != 0 {
            return None;
        }
        let span = location.span();
        let start = usize::try_from(span.byte_offset()?).ok()?;
        let len = usize::try_from(span.byte_len()?).ok()?;
        self.source.get(start..start.checked_add(len)?)
    }

    /// Where the `nth` (0-based) occurrence of `needle` sits inside the
    /// scalar at `location`, found by searching the source text the scalar
    /// came from; falls back to the scalar's start (for example when the
    /// needle was written with escapes).
    pub fn pos_in_scalar(&self, location: &Location, needle: &str, nth: usize) -> Pos {
        let fallback = self.pos(location);
        if location.source_id() != 0 {
            // Given elsewhere: this reporter's source does not hold it.
            return fallback;
        }
        let span = location.span();
        let (Some(start), Some(len)) = (span.byte_offset(), span.byte_len()) else {
            return fallback;
        };
        let (Ok(start), Ok(len)) = (usize::try_from(start), usize::try_from(len)) else {
            return fallback;
        };
        let Some(text) = self.source.get(start..start.saturating_add(len)) else {
            return fallback;
        };
        match text.match_indices(needle).nth(nth) {
            Some((offset, _)) => self.pos_of_byte(start + offset),
            None => fallback,
        }
    }

    fn pos_of_byte(&self, byte: usize) -> Pos {
        let before = self.source.get(..byte).unwrap_or(self.source);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Pos::at(
            u32::try_from(line)
                .unwrap_or(u32::MAX)
                .saturating_add(self.line_offset),
            u32::try_from(column).unwrap_or(u32::MAX),
        )
    }

    /// Records a structural YAML error (syntax, unknown key, wrong type).
    pub fn yaml_error(&mut self, error: &serde_saphyr::Error) {
        let pos = error
            .location()
            .map_or_else(|| self.start(), |location| self.pos(&location));
        let message = yaml_message(error.without_snippet());
        self.error(pos, message);
    }
}

/// A message for a serde-saphyr error, without its location suffix, in
/// agentci's words ("key" rather than "field", the list of valid keys).
fn yaml_message(error: &serde_saphyr::Error) -> String {
    use serde_saphyr::Error as E;
    match error {
        E::SerdeUnknownField {
            field, expected, ..
        } => format!(
            "unknown key `{field}`{}; expected one of: {}",
            super::suggest::did_you_mean(field, expected.iter().copied()),
            expected.join(", ")
        ),
        E::SerdeUnknownVariant {
            variant, expected, ..
        } => format!(
            "unknown value `{variant}`{}; expected one of: {}",
            super::suggest::did_you_mean(variant, expected.iter().copied()),
            expected.join(", ")
        ),
        E::Unexpected { expected, .. } => match *expected {
            "string scalar" => {
                "expected a string, found a list or mapping; quote text that starts \
                                with `[` or `{`"
                    .to_string()
            }
            "sequence start" => {
                "expected a list (`[a, b]` or lines starting with `- `)".to_string()
            }
            "mapping start" => {
                "expected a mapping (`{key: value}` or indented `key: value` lines)".to_string()
            }
            "scalar" => "expected a single value, found a list or mapping".to_string(),
            other => format!("expected {other}"),
        },
        E::SerdeMissingField { field, .. } => format!("missing required key `{field}`"),
        E::SerdeInvalidType {
            unexpected,
            expected,
            ..
        } => format!(
            "expected {}, found {unexpected}",
            describe_expected(expected)
        ),
        // The library's text for this one is Rust debug output.
        E::Budget { .. } => "the YAML is too large or too deeply nested to read; keep it to \
                             plain keys, lists and short values"
            .to_string(),
        _ => {
            let message: Cow<'_, str> = UserMessageFormatter.format_message(error);
            // The scanner's nesting limit reaches us only as this text.
            if message == "recursion limit exceeded" {
                return "the YAML is nested too deeply to read; keep it to plain keys, lists \
                        and short values"
                    .to_string();
            }
            // Control characters from the input must not reach the terminal;
            // quotes and other printable text stay as they are.
            message
                .chars()
                .flat_map(|c| {
                    let escaped: Vec<char> = if c.is_control() {
                        c.escape_default().collect()
                    } else {
                        vec![c]
                    };
                    escaped
                })
                .collect()
        }
    }
}

/// serde's derived "expected" texts name our private structs; say what they are.
fn describe_expected(expected: &str) -> Cow<'_, str> {
    if let Some(name) = expected.strip_prefix("struct Raw") {
        return Cow::Owned(format!("a mapping ({})", name.to_lowercase()));
    }
    match expected {
        "a string" | "a borrowed string" => Cow::Borrowed("a string"),
        "a sequence" => Cow::Borrowed("a list"),
        "a map" => Cow::Borrowed("a mapping"),
        other => Cow::Borrowed(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_forms() {
        let d = Diagnostic::error("job.yaml", 3, 5, "unknown key `x`");
        assert_eq!(d.to_string(), "job.yaml:3:5: unknown key `x`");
        assert_eq!(
            d.with_severity().to_string(),
            "job.yaml:3:5: error: unknown key `x`"
        );
        let flag = Diagnostic::flag("--var", "expected K=V");
        assert_eq!(flag.to_string(), "--var: expected K=V");
        let w = Diagnostic::warning("SKILL.md", 1, 1, "w");
        assert_eq!(w.with_severity().to_string(), "SKILL.md:1:1: warning: w");
    }

    #[test]
    fn position_inside_a_block_scalar() {
        let source = "goal: |\n  first line\n  uses ${{ vars.x }} here\n";
        #[derive(serde::Deserialize)]
        struct Doc {
            goal: serde_saphyr::Spanned<String>,
        }
        let doc: Doc = serde_saphyr::from_str(source).unwrap();
        let reporter = Reporter::new(Path::new("f"), source, 0);
        assert_eq!(
            reporter.pos_in_scalar(&doc.goal.referenced, "${{ vars.x }}", 0),
            Pos::at(3, 8)
        );
        let offset = Reporter::new(Path::new("f"), source, 1);
        assert_eq!(offset.pos(&doc.goal.referenced).line, 3);
    }
}
