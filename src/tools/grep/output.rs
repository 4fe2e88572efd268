//! What a grep call shows: the matching lines as ripgrep prints them
//! (`path:line:text`, `path-line-text` for context, `--` between groups),
//! cut at `max_results` or the output limit, and the summary that says how
//! many matches there are in all and which files were left out and why.
//! Finding the matches is the parent module's job.

use serde_json::json;

use super::{Collected, GrepQuery, LineKind};
use crate::tools::{ToolResult, Workspace};

pub(super) fn render(
    workspace: &Workspace,
    query: &GrepQuery,
    shown_base: &str,
    collected: Collected,
) -> ToolResult {
    let Shown {
        mut lines,
        shown,
        cut_by_size,
    } = shown_lines(workspace, query, &collected);
    while lines.last().is_some_and(|l| l == "--") {
        lines.pop();
    }
    let mut out = lines.join("\n");
    let total = collected.total_matches;
    let truncated = shown < total;
    let summary = if total == 0 {
        format!("no matches for `{}` in `{shown_base}`", query.pattern)
    } else if !truncated {
        format!(
            "{total} matching lines in {} files for `{}` in `{shown_base}`",
            collected.matching_files, query.pattern
        )
    } else {
        let why = if cut_by_size {
            format!(
                "the output limit of {} characters was reached",
                query.max_chars
            )
        } else {
            format!("max_results is {}", query.max_results)
        };
        format!(
            "showing the first {shown} of {total} matching lines in {} files for `{}` in \
             `{shown_base}` ({why}); narrow the search with `path` or `glob`",
            collected.matching_files, query.pattern
        )
    };
    if truncated {
        out.push_str(&format!(
            "\n[{} more matching lines not shown]",
            total - shown
        ));
    }
    let summary = summary + &skipped_note(&collected);
    ToolResult::success(
        summary,
        out,
        json!({
            "pattern": query.pattern,
            "path": shown_base,
            "matches": total,
            "files": collected.matching_files,
            "shown": shown,
            "truncated": truncated,
            "binary_files_skipped": collected.binary_skipped,
            "unreadable": collected.unreadable,
            "denied_skipped": collected.denied_skipped,
            "hard_links_skipped": collected.hard_links_skipped,
        }),
    )
}

/// What the summary says about files left out on purpose, so the model
/// knows the search was not complete and why; empty when none were.
fn skipped_note(collected: &Collected) -> String {
    let mut notes = Vec::new();
    if collected.denied_skipped > 0 {
        let rules: Vec<&str> = collected.denying_rules.iter().map(String::as_str).collect();
        notes.push(format!(
            "{} {} not searched: reading {} is denied by the job's permission policy ({})",
            collected.denied_skipped,
            files(collected.denied_skipped),
            if collected.denied_skipped == 1 {
                "it"
            } else {
                "them"
            },
            rules.join("; ")
        ));
    }
    if collected.hard_links_skipped > 0 {
        notes.push(format!(
            "{} {} with other hard links not searched (they may be files outside the \
             workspace; `permissions.allow_hard_links: true` allows them)",
            collected.hard_links_skipped,
            files(collected.hard_links_skipped)
        ));
    }
    if notes.is_empty() {
        String::new()
    } else {
        format!("; {}", notes.join("; "))
    }
}

fn files(n: usize) -> &'static str {
    if n == 1 { "file" } else { "files" }
}

/// The lines shown, ripgrep style, and how many of them are matches.
struct Shown {
    lines: Vec<String>,
    shown: usize,
    /// The output limit (not `max_results`) ended the listing.
    cut_by_size: bool,
}

/// The first `max_results` matches in path order with their context, as
/// many as fit in `max_chars`.
fn shown_lines(workspace: &Workspace, query: &GrepQuery, collected: &Collected) -> Shown {
    let mut lines: Vec<String> = Vec::new();
    let mut chars = 0usize;
    let mut shown = 0usize;
    let mut cut_by_size = false;
    'files: for (path, file) in &collected.files {
        let name = workspace.relative(path);
        if query.context > 0 && !lines.is_empty() {
            lines.push("--".to_string());
        }
        for hit in &file.hits {
            if shown == query.max_results && hit.kind != LineKind::After {
                break 'files;
            }
            let line = match hit.kind {
                LineKind::Match => format!("{name}:{}:{}", hit.number, hit.text),
                LineKind::Before | LineKind::After => format!("{name}-{}-{}", hit.number, hit.text),
                LineKind::Break => "--".to_string(),
            };
            if chars + line.len() + 1 > query.max_chars {
                cut_by_size = true;
                break 'files;
            }
            chars += line.len() + 1;
            lines.push(line);
            if hit.kind == LineKind::Match {
                shown += 1;
            }
        }
    }
    Shown {
        lines,
        shown,
        cut_by_size,
    }
}
