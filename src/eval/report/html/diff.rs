//! An attempt's `changes.patch` as a highlighted unified diff: file
//! headers, hunk headers, added and removed lines each with its own class.
//! The patch is already masked and capped when the attempt writes it; here
//! it is escaped line by line.

use std::fmt::Write;
use std::path::Path;

use html_escape::encode_text as text;

/// The patch at `path` in a collapsible block, open by default.
pub fn html(path: &Path) -> String {
    let patch = match std::fs::read_to_string(path) {
        Ok(patch) => patch,
        Err(e) => {
            return format!(
                r#"<p class="missing">No diff: cannot read the patch {}: {}</p>"#,
                text(&path.display().to_string()),
                text(&e.to_string())
            );
        }
    };
    let (mut files, mut added, mut removed) = (0, 0, 0);
    let mut body = String::new();
    for line in patch.lines() {
        let class = if line.starts_with("diff --git") {
            files += 1;
            "file"
        } else if line.starts_with("+++") || line.starts_with("---") || line.starts_with("index ") {
            "file"
        } else if line.starts_with("@@") {
            "hunk"
        } else if line.starts_with('+') {
            added += 1;
            "add"
        } else if line.starts_with('-') {
            removed += 1;
            "del"
        } else if line.starts_with('#') {
            "note"
        } else {
            "ctx"
        };
        // The line break inside the block keeps copied text in lines
        // without drawing an empty line after each.
        let _ = write!(body, "<span class=\"{class}\">{}\n</span>", text(line));
    }
    format!(
        r#"<details class="ev diff" open><summary><b>Changes</b> <span class="dim">{files} file(s), {added} line(s) added, {removed} removed</span></summary><pre class="diff">{body}</pre></details>"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classed_and_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("changes.patch");
        std::fs::write(
            &path,
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+<script>\n same\n",
        )
        .unwrap();
        let html = html(&path);
        assert!(
            html.contains("<span class=\"add\">+&lt;script&gt;\n</span>"),
            "{html}"
        );
        assert!(html.contains("<span class=\"del\">-old\n</span>"), "{html}");
        assert!(
            html.contains("<span class=\"hunk\">@@ -1 +1 @@\n</span>"),
            "{html}"
        );
        assert!(
            html.contains("1 file(s), 1 line(s) added, 1 removed"),
            "{html}"
        );
        assert!(super::html(&dir.path().join("none")).contains("No diff"));
    }
}
