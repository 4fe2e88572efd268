//! The `find` tool: files and directories whose path matches a glob, and
//! the two things `grep` and `ls` share with it: how the workspace is walked
//! (`walker`) and how a glob is matched against a path (`PathGlob`).
//!
//! Walks honour `.gitignore` (also outside a git repository), `.ignore` and
//! git's exclude file, show hidden files but never descend into `.git`, and
//! never follow symlinks, so a link cannot lead a walk out of the workspace.
//! The walk reads folders by path, so a folder swapped for a symlink while
//! it runs could still make it read a folder outside: a listing
//! (`Walk::Listing`) therefore keeps only entries that exist at the same
//! path beneath the workspace's descriptor, and `grep` opens every file it
//! searches by descriptor beneath it. agentci's own outputs are left out.
//! Results are in a stable order (sorted by name) so the same call gives
//! the same answer, which record/replay depends on.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use serde_json::{Value, json};

use super::support::{blocking, io_failure, outside, str_arg, usize_arg};
use super::{
    BoxFuture, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec, Workspace,
};

/// What a walk's entries are used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Walk {
    /// Names shown to the model (`find`, `ls`): each is checked beneath the
    /// workspace's descriptor, so no name from outside is shown.
    Listing,
    /// Files opened by descriptor beneath the workspace (`grep`), which
    /// does that check itself when it opens them.
    Opening,
}

/// A walk over `root` with the workspace's rules: ignore files honoured,
/// hidden files shown, `.git`, agentci's own run folders (`.agentci`) and
/// outputs skipped, symlinks not followed. Run folders are hidden so that
/// what the agent sees does not depend on earlier runs.
pub(crate) fn walker(workspace: &Workspace, root: &Path, walk: Walk) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    let workspace = workspace.clone();
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |entry| {
            entry.file_name() != ".git"
                && entry.file_name() != ".agentci"
                && !workspace.is_own_output(entry.path())
                && (walk == Walk::Opening || workspace.exists_beneath(entry.path()))
        });
    builder
}

/// A `glob` argument that is not a valid glob.
#[derive(Clone, Debug, thiserror::Error)]
#[error("`{pattern}` is not a valid glob: {kind}")]
pub(crate) struct InvalidGlob {
    pattern: String,
    kind: globset::ErrorKind,
}

/// A glob as the tools understand it: without `/` it matches a file name at
/// any depth (`*.rs`); with `/` it matches the path relative to the
/// workspace root or to the searched directory (`src/**/*.rs`). `*` stays
/// inside one path component; `**` crosses them.
pub(crate) struct PathGlob {
    matcher: GlobMatcher,
    name_only: bool,
}

impl PathGlob {
    pub(crate) fn new(pattern: &str) -> Result<Self, InvalidGlob> {
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| InvalidGlob {
                pattern: pattern.to_string(),
                kind: e.kind().clone(),
            })?;
        Ok(PathGlob {
            matcher: glob.compile_matcher(),
            name_only: !pattern.contains('/'),
        })
    }

    /// Whether the entry at `path` (absolute) matches, given the directory
    /// the search started from.
    pub(crate) fn is_match(&self, workspace: &Workspace, base: &Path, path: &Path) -> bool {
        if self.name_only {
            return path
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name));
        }
        if self.matcher.is_match(workspace.relative(path)) {
            return true;
        }
        path.strip_prefix(base)
            .is_ok_and(|rest| self.matcher.is_match(rest))
    }
}

pub struct FindTool {
    spec: ToolSpec,
}

impl FindTool {
    pub fn new() -> Self {
        FindTool {
            spec: ToolSpec {
                name: "find".into(),
                description: "Find files and directories by glob. A pattern without `/` matches \
                    names at any depth (`*.rs`, `Cargo.toml`); a pattern with `/` matches the \
                    path relative to the workspace root or to `path` (`src/**/*.rs`). `*` stays \
                    within one directory, `**` crosses directories, `{a,b}` is an alternative. \
                    Files ignored by .gitignore are skipped. Paths come back relative to the \
                    workspace root, sorted, directories with a trailing `/`."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string", "minLength": 1,
                                    "description": "Glob to match, e.g. `*.rs` or `src/**/mod.rs`."},
                        "path": {"type": "string",
                                 "description": "Directory to search, relative to the workspace root. Default: the root."},
                        "max_results": {"type": "integer", "minimum": 1,
                                        "description": "Most paths to return. Default 200."}
                    },
                    "required": ["pattern"],
                    "additionalProperties": false
                }),
                read_only: true,
                rule_argument: RuleArgument::Path { default: Some(".") },
                changes_files: false,
            },
        }
    }
}

impl Default for FindTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for FindTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let pattern = str_arg(&args, "pattern").unwrap_or_default().to_string();
            let glob = match PathGlob::new(&pattern) {
                Ok(g) => g,
                Err(e) => {
                    return ToolResult::failure(ToolErrorCode::InvalidArgument, e.to_string());
                }
            };
            let base = match ctx
                .workspace
                .resolve_for_reading(str_arg(&args, "path").unwrap_or("."))
            {
                Ok(p) => p,
                Err(e) => return outside(e),
            };
            let max = usize_arg(&args, "max_results").unwrap_or(ctx.limits.find_max_results);
            let workspace = ctx.workspace.clone();
            blocking(move || find(&workspace, &base, &pattern, &glob, max)).await
        })
    }
}

fn find(
    workspace: &Workspace,
    base: &Path,
    pattern: &str,
    glob: &PathGlob,
    max: usize,
) -> ToolResult {
    let shown_base = workspace.relative(base);
    if let Err(e) = std::fs::metadata(base) {
        return io_failure("search", &shown_base, &e);
    }
    let mut found: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut unreadable = 0usize;
    for entry in walker(workspace, base, Walk::Listing)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
    {
        let Ok(entry) = entry else {
            unreadable += 1;
            continue;
        };
        if entry.depth() == 0 || !glob.is_match(workspace, base, entry.path()) {
            continue;
        }
        if found.len() == max {
            truncated = true;
            break;
        }
        let mut shown = workspace.relative(entry.path());
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            shown.push('/');
        }
        found.push(shown);
    }
    let summary = match (found.len(), truncated) {
        (0, _) => format!("no paths match `{pattern}` in `{shown_base}`"),
        (n, false) => format!("{n} paths match `{pattern}` in `{shown_base}`"),
        (n, true) => format!(
            "first {n} paths matching `{pattern}` in `{shown_base}`; there are more, so narrow \
             the pattern or `path`, or raise `max_results`"
        ),
    };
    let mut output = found.join("\n");
    if truncated {
        output.push_str(&format!("\n[results cut at {max}]"));
    }
    ToolResult::success(
        summary,
        output,
        json!({
            "pattern": pattern,
            "path": shown_base,
            "count": found.len(),
            "truncated": truncated,
            "unreadable": unreadable,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_without_slash_matches_names_at_any_depth() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let root = ws.root().to_path_buf();
        let g = PathGlob::new("*.rs").unwrap();
        assert!(g.is_match(&ws, &root, &root.join("a/b/c.rs")));
        assert!(!g.is_match(&ws, &root, &root.join("a/b/c.rsx")));
        let g = PathGlob::new("src/*.rs").unwrap();
        assert!(g.is_match(&ws, &root, &root.join("src/c.rs")));
        assert!(!g.is_match(&ws, &root, &root.join("src/a/c.rs")));
        let g = PathGlob::new("**/*.rs").unwrap();
        assert!(g.is_match(&ws, &root.join("src"), &root.join("src/a/c.rs")));
        let g = PathGlob::new("a/*.rs").unwrap();
        assert!(g.is_match(&ws, &root.join("src"), &root.join("src/a/c.rs")));
        assert!(PathGlob::new("a[").is_err());
    }
}
