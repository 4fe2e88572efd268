//! The `read` tool: a text file's lines, numbered, from `offset` for
//! `limit` lines.
//!
//! The file is streamed, so a huge log costs memory only for the lines
//! shown, and the total line count is always reported so the model knows
//! how to page on. Directories, binary files and FIFOs get a clear error
//! instead of garbage or a hang. Permission to read is not decided here,
//! but a file with other hard links is refused unless the job allows them
//! (see [`super::FileAccess`]): its content may be a file outside the workspace.

use std::io::{BufRead, BufReader, Read};

use serde_json::{Value, json};

use super::support::{
    EntryKind, blocking, entry, io_failure, looks_binary, open_content, outside, special_file,
    str_arg, usize_arg,
};
use super::{
    BoxFuture, FileAccess, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec,
    Workspace,
};

pub struct ReadTool {
    spec: ToolSpec,
}

impl ReadTool {
    pub fn new() -> Self {
        ReadTool {
            spec: ToolSpec {
                name: "read".into(),
                description: "Read a text file from the workspace. Returns its lines numbered \
                    like `    12\tcode` (the number and a tab are not part of the file). \
                    `offset` is the first line to show (1-based, default 1) and `limit` how many \
                    lines to show; the summary says which lines of how many were shown, so \
                    page through a long file with a larger offset. Directories and binary files \
                    are refused: use `ls` or `find` for those."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "minLength": 1,
                                 "description": "File path relative to the workspace root."},
                        "offset": {"type": "integer", "minimum": 1,
                                   "description": "First line to show, 1-based. Default 1."},
                        "limit": {"type": "integer", "minimum": 1,
                                  "description": "Number of lines to show. Default 2000."}
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
                read_only: true,
                rule_argument: RuleArgument::Path { default: None },
                changes_files: false,
            },
        }
    }
}

impl Default for ReadTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for ReadTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let path = str_arg(&args, "path").unwrap_or_default();
            let resolved = match ctx.workspace.resolve_for_reading(path) {
                Ok(p) => p,
                Err(e) => return outside(e),
            };
            let shown = ctx.workspace.relative(&resolved);
            let request = LineRange {
                offset: usize_arg(&args, "offset").unwrap_or(1).max(1),
                limit: usize_arg(&args, "limit")
                    .unwrap_or(ctx.limits.read_default_limit)
                    .max(1),
                max_chars: ctx.limits.max_output_chars,
            };
            let access = ctx.access.clone();
            let workspace = ctx.workspace.clone();
            blocking(move || read_file(&workspace, &resolved, &shown, request, &access)).await
        })
    }
}

/// Which lines to show and how much text at most.
#[derive(Clone, Copy, Debug)]
struct LineRange {
    offset: usize,
    limit: usize,
    max_chars: usize,
}

fn read_file(
    workspace: &Workspace,
    path: &std::path::Path,
    shown: &str,
    range: LineRange,
    access: &FileAccess,
) -> ToolResult {
    // Opened by descriptor beneath the workspace: a folder on the way
    // swapped for a symlink since the check cannot lead the read out.
    let entry = match entry(workspace, path, false) {
        Ok(entry) => entry,
        Err(e) => return io_failure("read", shown, &e),
    };
    match entry.kind {
        EntryKind::Folder => {
            return ToolResult::failure(
                ToolErrorCode::InvalidArgument,
                format!("`{shown}` is a directory; use `ls` to list it"),
            );
        }
        EntryKind::Special => return special_file(shown, "read"),
        _ => {}
    }
    let file = match open_content(&entry, shown, "read", access) {
        Ok(f) => f,
        Err(refusal) => return *refusal,
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    match reader.fill_buf() {
        Ok(head) if looks_binary(head) => {
            return ToolResult::failure(
                ToolErrorCode::InvalidArgument,
                format!(
                    "`{shown}` is a binary file (it contains NUL bytes); read shows text files only"
                ),
            );
        }
        Ok(_) => {}
        Err(e) => return io_failure("read", shown, &e),
    }
    match number_lines(reader, range) {
        Ok(page) => page.into_result(shown, range),
        Err(e) => io_failure("read", shown, &e),
    }
}

/// The numbered lines shown and what is needed to describe them.
struct Page {
    text: String,
    first: usize,
    last: usize,
    total: usize,
    /// Stopped before `limit` lines because the text reached `max_chars`.
    cut_by_size: bool,
}

fn number_lines<R: Read>(mut reader: BufReader<R>, range: LineRange) -> std::io::Result<Page> {
    let end = range.offset.saturating_add(range.limit);
    let mut page = Page {
        text: String::new(),
        first: range.offset,
        last: 0,
        total: 0,
        cut_by_size: false,
    };
    let mut chars = 0usize;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        if reader.read_until(b'\n', &mut raw)? == 0 {
            break;
        }
        page.total += 1;
        let n = page.total;
        if n < range.offset || n >= end || page.cut_by_size {
            continue;
        }
        let line = String::from_utf8_lossy(trim_newline(&raw));
        let entry = format!("{n:>6}\t{line}\n");
        let entry_chars = entry.chars().count();
        if chars + entry_chars > range.max_chars {
            page.cut_by_size = true;
            if page.last == 0 {
                // A single line longer than the whole budget: show its start.
                let (head, cut) = super::support::cut_chars(&entry, range.max_chars);
                page.text.push_str(head);
                page.text
                    .push_str(&format!("... [line {n} cut: {cut} more characters]\n"));
                page.last = n;
            }
            continue;
        }
        chars += entry_chars;
        page.text.push_str(&entry);
        page.last = n;
    }
    if page.text.ends_with('\n') {
        page.text.pop();
    }
    Ok(page)
}

impl Page {
    fn into_result(self, shown: &str, range: LineRange) -> ToolResult {
        if self.total == 0 {
            return ToolResult::success(
                format!("`{shown}` is empty (0 lines)"),
                "",
                json!({"path": shown, "lines": [0, 0], "total_lines": 0, "truncated": false}),
            );
        }
        if self.last == 0 {
            return ToolResult::failure(
                ToolErrorCode::InvalidArgument,
                format!(
                    "offset {} is past the end of `{shown}`, which has {} lines",
                    range.offset, self.total
                ),
            )
            .with_data(json!({"path": shown, "total_lines": self.total}));
        }
        let truncated = self.last < self.total;
        let mut summary = format!(
            "`{shown}`: lines {}-{} of {}",
            self.first, self.last, self.total
        );
        if self.cut_by_size {
            summary.push_str(&format!(
                " (output limit of {} characters reached; continue with offset={})",
                range.max_chars,
                self.last + 1
            ));
        } else if truncated {
            summary.push_str(&format!(" (continue with offset={})", self.last + 1));
        }
        ToolResult::success(
            summary,
            self.text,
            json!({
                "path": shown,
                "lines": [self.first, self.last],
                "total_lines": self.total,
                "truncated": truncated,
            }),
        )
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str, offset: usize, limit: usize, max_chars: usize) -> Page {
        let range = LineRange {
            offset,
            limit,
            max_chars,
        };
        number_lines(BufReader::new(text.as_bytes()), range).unwrap()
    }

    #[test]
    fn numbers_the_requested_lines() {
        let p = page("a\nb\r\nc\nd", 2, 2, 1000);
        assert_eq!(p.text, "     2\tb\n     3\tc");
        assert_eq!((p.first, p.last, p.total), (2, 3, 4));
    }

    #[test]
    fn stops_at_the_character_budget_but_counts_every_line() {
        let p = page("aaaa\nbbbb\ncccc\n", 1, 10, 24);
        assert_eq!(p.text, "     1\taaaa\n     2\tbbbb");
        assert!(p.cut_by_size);
        assert_eq!(p.total, 3);
    }

    #[test]
    fn a_single_huge_line_is_cut_not_dropped() {
        let p = page(&"x".repeat(100), 1, 10, 20);
        assert!(
            p.text
                .starts_with("     1\txxxxxxxxxxxxx... [line 1 cut: 88 more")
        );
        assert_eq!(p.last, 1);
    }
}
