//! What a judge is shown: the parts a case's `sees:` names, taken from
//! what agentci itself kept of the attempt (the run's final text and
//! result, the patch it wrote, the tool calls it logged, the workspace
//! snapshot it took after the run), never read again from the workspace
//! the model acted in. Each part is masked with the run's secret masking
//! and capped at [`PART_BYTES`] with a visible marker.

use crate::eval::snapshot::Snapshot;
use crate::eval::suite::JudgeSees;
use crate::event::{Event, EventKind, RunCompleted};
use crate::redact::Redactor;

/// The most bytes of one part (a file, the diff, …) a judge is sent.
pub const PART_BYTES: usize = 16 * 1024;
/// The most files one `files:` item shows.
const MAX_FILES: usize = 50;
/// Longest tool call arguments quoted in the trace summary.
const ARGUMENT_CHARS: usize = 200;
/// The most tool calls the trace summary lists.
const MAX_CALLS: usize = 200;

/// What an attempt left for its judges.
pub struct Material<'a> {
    pub completed: &'a RunCompleted,
    /// The run's tool calls, in order.
    pub calls: &'a [Event],
    /// The masked unified diff of what the run changed; `None`: nothing changed.
    pub diff: Option<&'a str>,
    /// The workspace as the run left it.
    pub after: &'a Snapshot,
    pub secrets: &'a Redactor,
}

impl Material<'_> {
    /// The user message: each part the judge sees under its own heading.
    pub fn message(&self, sees: &[JudgeSees]) -> String {
        let mut parts: Vec<(String, String)> = Vec::new();
        for seen in sees {
            match seen {
                JudgeSees::FinalText => parts.push((
                    "Final text (the agent's last message)".into(),
                    self.completed
                        .summary
                        .clone()
                        .unwrap_or_else(|| "(the run has no final text)".into()),
                )),
                JudgeSees::Diff => parts.push((
                    "Diff (what the run changed in the workspace)".into(),
                    self.diff
                        .map(str::to_string)
                        .unwrap_or_else(|| "(the run changed no file)".into()),
                )),
                JudgeSees::Result => parts.push((
                    "Result (the run's structured result)".into(),
                    self.completed
                        .result
                        .as_ref()
                        .and_then(|r| serde_json::to_string_pretty(r).ok())
                        .unwrap_or_else(|| "(the run has no structured result)".into()),
                )),
                JudgeSees::TraceSummary => {
                    parts.push(("Trace summary".into(), self.trace_summary()));
                }
                JudgeSees::Files { globs, set } => {
                    let paths: Vec<&str> = self.after.paths().filter(|p| set.is_match(p)).collect();
                    if paths.is_empty() {
                        parts.push((
                            format!("Files matching {}", globs.join(", ")),
                            "(no file matches)".into(),
                        ));
                    }
                    for path in paths.iter().take(MAX_FILES) {
                        parts.push((format!("File {path}"), self.file(path)));
                    }
                    if paths.len() > MAX_FILES {
                        parts.push((
                            format!("Files matching {}", globs.join(", ")),
                            format!(
                                "({} more files match; only the first {MAX_FILES} are shown)",
                                paths.len() - MAX_FILES
                            ),
                        ));
                    }
                }
            }
        }
        let mut message = String::new();
        for (heading, text) in parts {
            if !message.is_empty() {
                message.push_str("\n\n");
            }
            message.push_str("## ");
            message.push_str(&heading);
            message.push_str("\n\n");
            message.push_str(&cap(&self.secrets.redact(&text)));
        }
        message
    }

    /// How the run ended and the tools it called, one line each.
    fn trace_summary(&self) -> String {
        let c = self.completed;
        let mut lines = vec![
            format!("status: {} ({})", c.status.as_str(), c.reason),
            format!(
                "turns: {}, tool calls: {}, checks passed: {}, checks failed: {}",
                c.totals.turns, c.totals.tool_calls, c.checks_passed, c.checks_failed
            ),
        ];
        for event in self.calls.iter().take(MAX_CALLS) {
            if let EventKind::ToolCall {
                tool, arguments, ..
            } = &event.kind
            {
                lines.push(format!(
                    "- {tool} {}",
                    crate::inert::clip(&arguments.to_string(), ARGUMENT_CHARS)
                ));
            }
        }
        if self.calls.len() > MAX_CALLS {
            lines.push(format!(
                "- … and {} more calls",
                self.calls.len() - MAX_CALLS
            ));
        }
        lines.join("\n")
    }

    /// A file's content as the snapshot kept it.
    fn file(&self, path: &str) -> String {
        if self.after.is_link(path) {
            let target = self
                .after
                .content(path)
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            return format!("(a symlink to {target}; not followed)");
        }
        match self.after.content(path) {
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => text.to_string(),
                Err(_) => format!("(binary, {} bytes)", bytes.len()),
            },
            None => "(too large to show)".into(),
        }
    }
}

/// `text` cut to [`PART_BYTES`] at a character boundary, with a visible
/// `[truncated N bytes]` marker when it was longer.
pub fn cap(text: &str) -> String {
    crate::inert::cut_bytes(text, PART_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_part_is_cut_with_a_marker() {
        let text = "é".repeat(PART_BYTES);
        let capped = cap(&text);
        assert!(capped.ends_with(&format!("[truncated {PART_BYTES} bytes]")));
        assert_eq!(cap("short"), "short");
    }
}
