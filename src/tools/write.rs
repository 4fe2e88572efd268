//! The `write` tool: create or overwrite a file with the given content,
//! creating missing parent directories.
//!
//! Whole-file writes only; targeted changes are `edit`'s job. Permission
//! to write is not decided here. The file is replaced, never written in
//! place, through the folder's descriptor beneath the workspace (see
//! [`super::beneath`]), so a folder swapped for a symlink after the path
//! was checked cannot lead the write out. Content over the job's
//! `sandbox.limits.file_size` is refused, as the kernel refuses it to `exec`.

use std::path::Path;

use serde_json::{Value, json};

use super::support::{
    EntryKind, blocking, entry, file_too_large, io_failure, outside, special_file, str_arg,
};
use super::{
    BoxFuture, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec, Workspace,
};

pub struct WriteTool {
    spec: ToolSpec,
}

impl WriteTool {
    pub fn new() -> Self {
        WriteTool {
            spec: ToolSpec {
                name: "write".into(),
                description: "Write a file in the workspace: creates it (and any missing parent \
                    directories) or replaces its whole content. `content` is the complete new \
                    text of the file. To change part of an existing file, prefer `edit`."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "minLength": 1,
                                 "description": "File path relative to the workspace root."},
                        "content": {"type": "string",
                                    "description": "The complete content of the file."}
                    },
                    "required": ["path", "content"],
                    "additionalProperties": false
                }),
                read_only: false,
                rule_argument: RuleArgument::Path { default: None },
                changes_files: true,
            },
        }
    }
}

impl Default for WriteTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for WriteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let path = str_arg(&args, "path").unwrap_or_default();
            // Regression: `newdir/` silently became a file called `newdir`.
            if path.ends_with('/') || path.trim().is_empty() {
                return ToolResult::failure(
                    ToolErrorCode::InvalidArgument,
                    format!("`path` `{path}` names a folder; give the path of a file to write"),
                );
            }
            let resolved = match ctx.workspace.resolve(path) {
                Ok(p) => p,
                Err(e) => return outside(e),
            };
            let shown = ctx.workspace.relative(&resolved);
            let content = str_arg(&args, "content").unwrap_or_default();
            let limit = ctx.limits.max_file_bytes;
            if content.len() as u64 > limit {
                return file_too_large(path, content.len() as u64, limit);
            }
            let content = content.to_string();
            let workspace = ctx.workspace.clone();
            blocking(move || write_file(&workspace, &resolved, &shown, &content)).await
        })
    }
}

fn write_file(workspace: &Workspace, path: &Path, shown: &str, content: &str) -> ToolResult {
    let is_folder = || {
        ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!("`{shown}` is a directory; give the path of a file inside it"),
        )
    };
    if shown == "." {
        return is_folder();
    }
    let entry = match entry(workspace, path, true) {
        Ok(entry) => entry,
        Err(e) => return io_failure("create the directories for", shown, &e),
    };
    match entry.kind {
        EntryKind::Folder => return is_folder(),
        EntryKind::Special => return special_file(shown, "write"),
        _ => {}
    }
    let existed = entry.kind != EntryKind::Missing;
    // A new file renamed over the old one keeps the old one's permission
    // bits, and a hard link to a file outside the workspace is replaced,
    // never written through.
    if let Err(e) = entry
        .folder
        .replace(&entry.name, content.as_bytes(), entry.mode)
    {
        return io_failure("write", shown, &e);
    }
    let lines = content.lines().count();
    let verb = if existed { "overwrote" } else { "created" };
    ToolResult::success(
        format!("{verb} `{shown}` ({lines} lines, {} bytes)", content.len()),
        "",
        json!({"path": shown, "bytes": content.len(), "lines": lines, "created": !existed}),
    )
}
