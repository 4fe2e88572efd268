//! A run that never started under GitHub Actions (a bad job file, skill or
//! flag, a dirty workspace): each problem as an `::error` annotation, at the
//! `FILE:LINE:COLUMN` it names when it names one, a short step summary, and
//! the step outputs `status=error` and `exit-code=2`, so a workflow that
//! reads them sees why instead of empty values. It takes the problem lines
//! the CLI would print; it does not decide what a problem is.

use std::fmt::Write as _;
use std::path::Path;

use regex::Regex;

use super::{GithubConfig, RunReport, annotation, append, outputs_text, relative_to};
use crate::sink::bus::SinkError;

/// Write `problems` (lines like `job.yaml:4:1: error: unknown key`) the
/// GitHub way: annotations to the log, the summary and the outputs.
pub fn report_start_failure(
    mut config: GithubConfig,
    problems: &[String],
) -> Result<(), SinkError> {
    let placed = Regex::new(r"^(.+?):(\d+):(\d+): (error|warning): (.*)$").ok();
    let mut lines = Vec::new();
    for problem in problems {
        let found = placed.as_ref().and_then(|re| re.captures(problem));
        let line = match found {
            Some(c) => {
                let file = relative_to(&config, Path::new(&c[1]));
                let line = c[2].parse().unwrap_or(1);
                annotation(&c[4], &file, line, None, &c[5]).replacen(
                    &format!(",line={line}"),
                    &format!(",line={line},col={}", &c[3]),
                    1,
                )
            }
            None => match problem.split_once(": ") {
                Some((kind @ ("error" | "warning"), message)) => {
                    annotation(kind, "", 1, Some("agentci"), message)
                }
                _ => annotation("error", "", 1, Some("agentci"), problem),
            },
        };
        lines.push(line);
    }
    if let Some(log) = config.log.as_mut() {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        log.write_all(text.as_bytes())
            .and_then(|()| log.flush())
            .map_err(|source| SinkError {
                what: "write the GitHub Actions log to",
                path: "stderr".to_string(),
                source,
            })?;
    }
    if let Some(path) = &config.step_summary {
        let mut md = String::from("## ❌ agentci: error\n\nThe job did not start:\n\n");
        for problem in problems {
            let _ = writeln!(md, "- `{}`", problem.replace('`', "'"));
        }
        md.push('\n');
        append(path, &md, "append the step summary to")?;
    }
    if let Some(path) = &config.output {
        let delimiter = format!("ghadelimiter_{}", uuid::Uuid::new_v4().simple());
        let outputs = outputs_text(&RunReport::default(), &delimiter);
        append(path, &outputs, "append step outputs to")?;
    }
    Ok(())
}
