//! The `ls` tool: a directory's entries as an indented tree, `depth` levels
//! deep, directories marked with a trailing `/`.
//!
//! It walks like `find` (ignore files honoured, `.git` skipped, symlinks
//! listed but not followed) and is capped by the output limit.

use std::path::Path;

use serde_json::{Value, json};

use super::find::{Walk, walker};
use super::support::{blocking, io_failure, outside, str_arg, usize_arg};
use super::{BoxFuture, RuleArgument, Tool, ToolContext, ToolResult, ToolSpec, Workspace};

/// Deepest listing allowed; deeper trees are what `find` is for.
const MAX_DEPTH: u64 = 10;

pub struct LsTool {
    spec: ToolSpec,
}

impl LsTool {
    pub fn new() -> Self {
        LsTool {
            spec: ToolSpec {
                name: "ls".into(),
                description: "List a directory of the workspace as a tree: one entry per line, \
                    indented two spaces per level, directories with a trailing `/`, sorted by \
                    name. `depth` is how many levels to show (default 1: just the directory's \
                    own entries). Files ignored by .gitignore are left out."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string",
                                 "description": "Directory to list, relative to the workspace root. Default: the root."},
                        "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH,
                                  "description": "Levels to show. Default 1."}
                    },
                    "required": [],
                    "additionalProperties": false
                }),
                read_only: true,
                rule_argument: RuleArgument::Path { default: Some(".") },
                changes_files: false,
            },
        }
    }
}

impl Default for LsTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for LsTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let base = match ctx
                .workspace
                .resolve_for_reading(str_arg(&args, "path").unwrap_or("."))
            {
                Ok(p) => p,
                Err(e) => return outside(e),
            };
            let depth = usize_arg(&args, "depth").unwrap_or(1).max(1);
            let max_chars = ctx.limits.max_output_chars;
            let workspace = ctx.workspace.clone();
            blocking(move || list(&workspace, &base, depth, max_chars)).await
        })
    }
}

fn list(workspace: &Workspace, base: &Path, depth: usize, max_chars: usize) -> ToolResult {
    let shown_base = workspace.relative(base);
    match std::fs::metadata(base) {
        Ok(meta) if !meta.is_dir() => {
            return ToolResult::success(
                format!("`{shown_base}` is a file ({} bytes)", meta.len()),
                shown_base.clone(),
                json!({"path": shown_base, "entries": 1, "dirs": 0, "files": 1, "truncated": false}),
            );
        }
        Ok(_) => {}
        Err(e) => return io_failure("list", &shown_base, &e),
    }
    let (mut dirs, mut files) = (0usize, 0usize);
    let mut lines: Vec<String> = Vec::new();
    let mut chars = 0usize;
    let mut truncated = false;
    let entries = walker(workspace, base, Walk::Listing)
        .max_depth(Some(depth))
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    for entry in entries.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let name = entry.file_name().to_string_lossy();
        let indent = "  ".repeat(entry.depth() - 1);
        let line = if is_dir {
            format!("{indent}{name}/")
        } else {
            format!("{indent}{name}")
        };
        if chars + line.len() + 1 > max_chars {
            truncated = true;
            break;
        }
        chars += line.len() + 1;
        lines.push(line);
        if is_dir {
            dirs += 1;
        } else {
            files += 1;
        }
    }
    let mut summary = format!("`{shown_base}`: {dirs} directories, {files} files (depth {depth})");
    let mut output = lines.join("\n");
    if truncated {
        summary.push_str(&format!(
            "; listing cut at {max_chars} characters, so list a subdirectory or use a smaller depth"
        ));
        output.push_str("\n[listing cut]");
    } else if lines.is_empty() {
        summary = format!("`{shown_base}` is empty");
    }
    ToolResult::success(
        summary,
        output,
        json!({
            "path": shown_base,
            "depth": depth,
            "entries": dirs + files,
            "dirs": dirs,
            "files": files,
            "truncated": truncated,
        }),
    )
}
