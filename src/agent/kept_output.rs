//! Tool output too long for the model: cut to its head and tail, the whole
//! (masked) output kept in a file of the run folder that `read` and `grep`
//! can reach, read-only, so the model can page through it.
//!
//! Only the cut and the file are done here; where the folder is
//! ([`crate::tools::ToolLimits::kept_outputs`]) and that it is reachable
//! read-only is the runner's business.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::tools::{ToolContext, ToolResult};

/// The share of the shown characters taken from the start of the output.
const HEAD_SHARE: f64 = 0.6;
/// Call ids longer than this are cut in the file name.
const MAX_ID_CHARS: usize = 64;

/// `result` with an output over the limit cut to head and tail around a
/// note naming the file that keeps it whole; `data.kept_output` says where,
/// for the trace. Outputs within the limit come back unchanged.
pub fn keep_whole(mut result: ToolResult, call_id: &str, ctx: &ToolContext) -> ToolResult {
    let limit = ctx.limits.max_output_chars;
    let total = result.output.chars().count();
    if total <= limit {
        return result;
    }
    // The file may end up in an artifact: no secret goes into it.
    let masked = ctx.secrets.redact(&result.output).into_owned();
    let total = masked.chars().count();
    let lines = masked.lines().count();
    let kept = ctx
        .limits
        .kept_outputs
        .as_deref()
        .map(|dir| write_kept(ctx, dir, call_id, &masked));
    let head_chars = (limit as f64 * HEAD_SHARE) as usize;
    let tail_chars = limit - head_chars;
    let head: String = masked.chars().take(head_chars).collect();
    let tail: String = masked.chars().skip(total - tail_chars).collect();
    let cut = total - head_chars - tail_chars;
    let note = match &kept {
        Some(Ok(path)) => format!(
            "[agentci] {cut} of {total} characters cut here. The whole output ({lines} lines) is \
             in {}: page through it with `read` (offset, limit) or search it with `grep`.",
            path.display()
        ),
        Some(Err(e)) => format!(
            "[agentci] {cut} of {total} characters cut here; the whole output could not be \
             kept ({e})."
        ),
        None => format!("[agentci] {cut} of {total} characters cut here."),
    };
    result.output = format!("{head}\n{note}\n{tail}");
    let record = match &kept {
        Some(Ok(path)) => json!({
            "path": path.display().to_string(),
            "chars": total,
            "lines": lines,
            "shown_chars": head_chars + tail_chars,
        }),
        Some(Err(e)) => json!({"error": e.to_string(), "chars": total}),
        None => json!({"chars": total, "shown_chars": head_chars + tail_chars}),
    };
    match &mut result.data {
        Value::Object(map) => {
            map.insert("kept_output".into(), record);
        }
        Value::Null => result.data = json!({ "kept_output": record }),
        other => result.data = json!({ "result": other.take(), "kept_output": record }),
    }
    result
}

/// Writes `text` to `dir/tool-<id>.txt` (a new file, never over another:
/// the model chooses call ids, and may repeat them or write `../`). The
/// file is made through the folder's descriptor, opened when the run
/// registered it with the workspace: the run folder may sit inside the
/// workspace, where a command could swap a folder for a symlink.
fn write_kept(
    ctx: &ToolContext,
    dir: &Path,
    call_id: &str,
    text: &str,
) -> std::io::Result<PathBuf> {
    let opened;
    let beneath = match ctx.workspace.kept_outputs_dir(dir) {
        Some(beneath) => beneath,
        None => {
            opened = crate::tools::beneath::Beneath::open(dir)?;
            &opened
        }
    };
    let folder = beneath.open_dir(Path::new(""))?;
    let safe: String = call_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(MAX_ID_CHARS)
        .collect();
    let safe = if safe.is_empty() { "call".into() } else { safe };
    for n in 1.. {
        let name = match n {
            1 => format!("tool-{safe}.txt"),
            n => format!("tool-{safe}-{n}.txt"),
        };
        match folder.create_new(std::ffi::OsStr::new(&name)) {
            Ok(mut file) => {
                file.write_all(text.as_bytes())?;
                return Ok(dir.join(name));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free file name"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{FileAccess, ToolLimits, Workspace};

    fn ctx(dir: &Path, kept: Option<PathBuf>) -> ToolContext {
        ToolContext {
            workspace: Workspace::new(dir).unwrap(),
            limits: ToolLimits {
                max_output_chars: 100,
                kept_outputs: kept,
                ..ToolLimits::default()
            },
            processes: Default::default(),
            secrets: crate::redact::Redactor::new(["SECRET-VALUE"]),
            access: FileAccess::default(),
            fetch_policy: None,
        }
    }

    #[test]
    fn cut_with_the_whole_kept_masked_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("outputs");
        std::fs::create_dir(&kept).unwrap();
        let ctx = ctx(dir.path(), Some(kept.clone()));
        let output: String = (0..100)
            .map(|i| format!("line {i} SECRET-VALUE\n"))
            .collect();
        let result = ToolResult::success("exit code 0", output.clone(), json!({"exit_code": 0}));
        let cut = keep_whole(result.clone(), "../../etc/passwd", &ctx);
        let path = kept.join("tool-etcpasswd.txt");
        assert!(
            cut.output.contains(&path.display().to_string()),
            "{}",
            cut.output
        );
        assert!(cut.output.starts_with("line 0 "));
        assert!(
            cut.output.trim_end().ends_with("line 99 ***"),
            "{}",
            cut.output
        );
        let whole = std::fs::read_to_string(&path).unwrap();
        assert_eq!(whole.lines().count(), 100);
        assert!(!whole.contains("SECRET-VALUE"));
        assert_eq!(cut.data["exit_code"], 0);
        assert_eq!(cut.data["kept_output"]["lines"], 100);
        // The same id again gets a file of its own.
        let again = keep_whole(result, "../../etc/passwd", &ctx);
        assert!(again.output.contains("tool-etcpasswd-2.txt"));
        assert_eq!(std::fs::read_to_string(path).unwrap(), whole);
    }

    #[test]
    fn short_output_is_untouched_and_no_folder_still_cuts() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path(), None);
        let short = ToolResult::success("ok", "x".repeat(100), Value::Null);
        assert_eq!(keep_whole(short.clone(), "c", &ctx), short);
        let long = keep_whole(
            ToolResult::success("ok", "y".repeat(1000), Value::Null),
            "c",
            &ctx,
        );
        assert!(long.output.len() < 200 && long.output.contains("900 of 1000"));
    }
}
