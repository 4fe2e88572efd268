//! The `edit` tool: replace an exact piece of text in a file.
//!
//! The match is exact and must be unique unless `replace_all` is set, so a
//! model that misremembers the file gets a clear `NO_MATCH` or
//! `AMBIGUOUS_MATCH` (with the lines of every occurrence) instead of a
//! silent wrong change. The only leniency: a file with CRLF line endings
//! matches `old_text` written with plain LF. Permission to edit is not
//! decided here. The file is read as `read` reads it (no binaries, no
//! files with other hard links unless the job allows them) and written by
//! replacing it, so nothing it was linked to changes. A result over the
//! job's `sandbox.limits.file_size` is refused before it is built.

use std::io::Read;
use std::path::Path;

use serde_json::{Value, json};

use super::support::{
    EntryKind, blocking, bool_arg, entry, file_too_large, io_failure, looks_binary, open_content,
    outside, special_file, str_arg,
};
use super::{
    BoxFuture, FileAccess, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec,
    Workspace,
};

/// Occurrences whose line numbers are listed in an `AMBIGUOUS_MATCH` message.
const LISTED_OCCURRENCES: usize = 10;
/// Lines shown around a single replacement so the model sees the result.
const SNIPPET_CONTEXT: usize = 2;

pub struct EditTool {
    spec: ToolSpec,
}

impl EditTool {
    pub fn new() -> Self {
        EditTool {
            spec: ToolSpec {
                name: "edit".into(),
                description: "Replace text in a file. `old_text` must match the file exactly \
                    (whitespace and indentation included, without the line numbers `read` \
                    shows) and occur exactly once, unless `replace_all` is true, which replaces \
                    every occurrence. If it occurs several times, include more surrounding lines \
                    to make it unique. `new_text` replaces it (may be empty to delete). Fails \
                    with NO_MATCH or AMBIGUOUS_MATCH without changing the file."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "minLength": 1,
                                 "description": "File path relative to the workspace root."},
                        "old_text": {"type": "string", "minLength": 1,
                                     "description": "Exact text to replace."},
                        "new_text": {"type": "string",
                                     "description": "Text to put in its place."},
                        "replace_all": {"type": "boolean",
                                        "description": "Replace every occurrence. Default false."}
                    },
                    "required": ["path", "old_text", "new_text"],
                    "additionalProperties": false
                }),
                read_only: false,
                rule_argument: RuleArgument::Path { default: None },
                changes_files: true,
            },
        }
    }
}

impl Default for EditTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for EditTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let path = str_arg(&args, "path").unwrap_or_default();
            let resolved = match ctx.workspace.resolve(path) {
                Ok(p) => p,
                Err(e) => return outside(e),
            };
            let request = EditRequest {
                shown: ctx.workspace.relative(&resolved),
                old_text: str_arg(&args, "old_text").unwrap_or_default().to_string(),
                new_text: str_arg(&args, "new_text").unwrap_or_default().to_string(),
                replace_all: bool_arg(&args, "replace_all").unwrap_or(false),
            };
            let access = ctx.access.clone();
            let workspace = ctx.workspace.clone();
            let max_bytes = ctx.limits.max_file_bytes;
            blocking(move || edit_file(&workspace, &resolved, &request, &access, max_bytes)).await
        })
    }
}

struct EditRequest {
    shown: String,
    old_text: String,
    new_text: String,
    replace_all: bool,
}

/// A successful replacement.
#[derive(Debug, PartialEq)]
pub struct Edited {
    pub content: String,
    pub replacements: usize,
    /// 1-based line where each replacement starts, in the new content.
    pub lines: Vec<usize>,
}

/// Why an edit could not be applied.
#[derive(Debug, PartialEq)]
pub enum EditError {
    NoMatch,
    /// `count` occurrences, starting at these 1-based lines.
    Ambiguous {
        count: usize,
        lines: Vec<usize>,
    },
    /// The file would be `bytes` long, over the limit it was given.
    TooLarge {
        bytes: u64,
    },
}

/// Replace `old` with `new` in `content`: exactly one occurrence, or all of
/// them with `replace_all`. A CRLF file also matches `old` written with LF.
pub fn apply_edit(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Edited, EditError> {
    apply_edit_within(content, old, new, replace_all, u64::MAX)
}

/// [`apply_edit`], refusing a result over `max_bytes` before building it
/// (`replace_all` of a short text by a long one can multiply a file).
pub fn apply_edit_within(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    max_bytes: u64,
) -> Result<Edited, EditError> {
    if old.is_empty() {
        return Err(EditError::NoMatch);
    }
    let starts: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    if starts.is_empty() {
        if content.contains("\r\n") && old.contains('\n') && !old.contains('\r') {
            let crlf = |s: &str| s.replace('\n', "\r\n");
            return apply_edit_within(content, &crlf(old), &crlf(new), replace_all, max_bytes);
        }
        return Err(EditError::NoMatch);
    }
    if starts.len() > 1 && !replace_all {
        return Err(EditError::Ambiguous {
            count: starts.len(),
            lines: starts.iter().map(|&i| line_of(content, i)).collect(),
        });
    }
    let count = starts.len() as u64;
    let bytes = (content.len() as u64 - count * old.len() as u64)
        .saturating_add(count.saturating_mul(new.len() as u64));
    if bytes > max_bytes {
        return Err(EditError::TooLarge { bytes });
    }
    let mut result = String::with_capacity(content.len() + starts.len() * new.len());
    let mut lines = Vec::with_capacity(starts.len());
    let mut rest = 0;
    for &start in &starts {
        result.push_str(&content[rest..start]);
        lines.push(line_of(&result, result.len()));
        result.push_str(new);
        rest = start + old.len();
    }
    result.push_str(&content[rest..]);
    Ok(Edited {
        content: result,
        replacements: starts.len(),
        lines,
    })
}

/// The 1-based line holding byte `index` of `text`.
fn line_of(text: &str, index: usize) -> usize {
    text.as_bytes()[..index]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn edit_file(
    workspace: &Workspace,
    path: &Path,
    request: &EditRequest,
    access: &FileAccess,
    max_bytes: u64,
) -> ToolResult {
    let shown = &request.shown;
    // Read and replaced through the folder's descriptor beneath the
    // workspace: a folder swapped for a symlink since the check cannot
    // lead the edit out.
    let entry = match entry(workspace, path, false) {
        Ok(entry) => entry,
        Err(e) => return io_failure("edit", shown, &e),
    };
    match entry.kind {
        EntryKind::Folder => {
            return ToolResult::failure(
                ToolErrorCode::InvalidArgument,
                format!("`{shown}` is a directory; give the path of a file"),
            );
        }
        EntryKind::Special => return special_file(shown, "edit"),
        _ => {}
    }
    // Opened like `read` opens it: the snippet shows the file's lines.
    let mut file = match open_content(&entry, shown, "edit", access) {
        Ok(f) => f,
        Err(refusal) => return *refusal,
    };
    let mut bytes = Vec::new();
    if let Err(e) = file.read_to_end(&mut bytes) {
        return io_failure("edit", shown, &e);
    }
    let mode = file
        .metadata()
        .ok()
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
    // `read` refuses to show such a file, so `edit` cannot change it blind.
    if looks_binary(&bytes) {
        return ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!(
                "`{shown}` is a binary file (it contains NUL bytes); edit changes text files only"
            ),
        );
    }
    let Ok(content) = String::from_utf8(bytes) else {
        return ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!("`{shown}` is not UTF-8 text; edit changes text files only"),
        );
    };
    if request.old_text == request.new_text {
        return ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            "`old_text` and `new_text` are identical; there is nothing to change",
        );
    }
    let edited = match apply_edit_within(
        &content,
        &request.old_text,
        &request.new_text,
        request.replace_all,
        max_bytes,
    ) {
        Ok(edited) => edited,
        Err(EditError::TooLarge { bytes }) => {
            return file_too_large(shown, bytes, max_bytes);
        }
        Err(EditError::NoMatch) => {
            return ToolResult::failure(
                ToolErrorCode::NoMatch,
                format!(
                    "`old_text` was not found in `{shown}`; `read` the file and copy the text \
                     exactly, including whitespace"
                ),
            );
        }
        Err(EditError::Ambiguous { count, lines }) => {
            let mut listed = lines
                .iter()
                .take(LISTED_OCCURRENCES)
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            if lines.len() > LISTED_OCCURRENCES {
                listed.push_str(", ...");
            }
            return ToolResult::failure(
                ToolErrorCode::AmbiguousMatch,
                format!(
                    "`old_text` occurs {count} times in `{shown}` (at lines {listed}); include \
                     more surrounding lines to make it unique, or set `replace_all` to replace \
                     them all"
                ),
            )
            .with_data(json!({"path": shown, "occurrences": count, "lines": lines}));
        }
    };
    // A new file renamed over the old one: a hard link to a file outside
    // the workspace is replaced, never written through.
    if let Err(e) = entry
        .folder
        .replace(&entry.name, edited.content.as_bytes(), mode)
    {
        return io_failure("write", shown, &e);
    }
    let data = json!({"path": shown, "replacements": edited.replacements, "lines": edited.lines});
    if edited.replacements == 1 {
        let first = edited.lines[0];
        let new_lines = request.new_text.matches('\n').count();
        ToolResult::success(
            format!("edited `{shown}`: replaced 1 occurrence at line {first}"),
            snippet(&edited.content, first, first + new_lines),
            data,
        )
    } else {
        ToolResult::success(
            format!(
                "edited `{shown}`: replaced {} occurrences",
                edited.replacements
            ),
            "",
            data,
        )
    }
}

/// Numbered lines `first..=last` of `content` with a little context.
fn snippet(content: &str, first: usize, last: usize) -> String {
    let from = first.saturating_sub(SNIPPET_CONTEXT).max(1);
    let to = last + SNIPPET_CONTEXT;
    content
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line))
        .filter(|(n, _)| (from..=to).contains(n))
        .map(|(n, line)| format!("{n:>6}\t{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unique_match_is_replaced() {
        let e = apply_edit("a\nfoo\nb", "foo", "bar\nbaz", false).unwrap();
        assert_eq!(e.content, "a\nbar\nbaz\nb");
        assert_eq!(e.lines, vec![2]);
    }

    #[test]
    fn several_matches_need_replace_all() {
        assert_eq!(
            apply_edit("x\nfoo\nfoo\n", "foo", "y", false),
            Err(EditError::Ambiguous {
                count: 2,
                lines: vec![2, 3]
            })
        );
        let e = apply_edit("x\nfoo\nfoo\n", "foo", "y", true).unwrap();
        assert_eq!(e.content, "x\ny\ny\n");
        assert_eq!(e.replacements, 2);
    }

    #[test]
    fn no_match_and_crlf_leniency() {
        assert_eq!(apply_edit("abc", "x", "y", false), Err(EditError::NoMatch));
        let e = apply_edit("a\r\nb\r\nc\r\n", "a\nb", "A\nB", false).unwrap();
        assert_eq!(e.content, "A\r\nB\r\nc\r\n");
    }

    proptest! {
        // For a unique occurrence the result is exactly prefix + new + suffix.
        #[test]
        fn replaces_exactly_the_one_occurrence(
            prefix in "[a-c\n]{0,20}",
            suffix in "[a-c\n]{0,20}",
            new in "[a-z\n]{0,10}",
        ) {
            let old = "<<X>>";
            let content = format!("{prefix}{old}{suffix}");
            let e = apply_edit(&content, old, &new, false).unwrap();
            prop_assert_eq!(e.content, format!("{prefix}{new}{suffix}"));
            prop_assert_eq!(e.replacements, 1);
            prop_assert_eq!(e.lines, vec![prefix.matches('\n').count() + 1]);
        }

        #[test]
        fn more_than_one_occurrence_is_ambiguous(
            parts in proptest::collection::vec("[a-c\n]{0,8}", 3..6),
        ) {
            let content = parts.join("XY");
            let count = parts.len() - 1;
            match apply_edit(&content, "XY", "z", false) {
                Err(EditError::Ambiguous { count: c, lines }) => {
                    prop_assert_eq!(c, count);
                    prop_assert_eq!(lines.len(), count);
                }
                other => prop_assert!(false, "expected ambiguous, got {:?}", other),
            }
            let all = apply_edit(&content, "XY", "z", true).unwrap();
            prop_assert_eq!(all.content, parts.join("z"));
        }
    }
}
