//! A run that never started under GitHub Actions (a bad job file, skill or
//! flag, a dirty workspace): each problem as an `::error` annotation, at the
//! `FILE:LINE:COLUMN` it names when it names one, a short step summary, and
//! the step outputs `status=error` and `exit-code=2`, so a workflow that
//! reads them sees why instead of empty values. It takes the problems as
//! diagnostics, with their positions; it does not decide what a problem is.

use std::fmt::Write as _;

use super::{GithubConfig, SummaryFacts, annotation, append, outputs_text, relative_to};
use crate::event::bus::SinkError;
use crate::job::Diagnostic;

/// Write `problems` (a job file's, a skill's, a flag's) the GitHub way:
/// annotations to the log, the summary and the outputs.
pub fn report_start_failure(
    mut config: GithubConfig,
    problems: &[Diagnostic],
) -> Result<(), SinkError> {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| problem_annotation(&config, p))
        .collect();
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
            let line = problem.with_severity().to_string();
            let _ = writeln!(
                md,
                "- {}",
                crate::inert::markdown::code(&line.replace('`', "'"))
            );
        }
        md.push('\n');
        append(path, &md, "append the step summary to")?;
    }
    if let Some(path) = &config.output {
        let delimiter = format!("ghadelimiter_{}", uuid::Uuid::new_v4().simple());
        let outputs = outputs_text(&SummaryFacts::default(), &delimiter);
        append(path, &outputs, "append step outputs to")?;
    }
    Ok(())
}

/// One problem as an annotation: at its file, line and column when it has a
/// position; otherwise titled `agentci`, with a flag or a file without a
/// position kept in the message.
pub fn problem_annotation(config: &GithubConfig, problem: &Diagnostic) -> String {
    if !problem.is_placed() {
        let kind = problem.severity.as_str();
        return annotation(kind, "", 1, Some("agentci"), &problem.message);
    }
    if problem.line == 0 {
        let text = problem.with_severity().to_string();
        return annotation("error", "", 1, Some("agentci"), &text);
    }
    let file = relative_to(config, &problem.file);
    let line = usize::try_from(problem.line).unwrap_or(1);
    annotation(
        problem.severity.as_str(),
        &file,
        line,
        None,
        &problem.message,
    )
    .replacen(
        &format!(",line={line}"),
        &format!(",line={line},col={}", problem.column),
        1,
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn config() -> GithubConfig {
        GithubConfig {
            log: None,
            step_summary: None,
            output: None,
            cwd: PathBuf::from("/repo"),
            repo_root: None,
        }
    }

    // Regression: the position was read back from the printed line with a
    // regex, so a message with a line break (or a path with `:1:2: `) lost it.
    #[test]
    fn a_placed_problem_keeps_its_position_whatever_its_message_holds() {
        let problem = Diagnostic::error("/repo/job.yaml", 4, 3, "unknown key\nsecond: 1:2: line");
        assert_eq!(
            problem_annotation(&config(), &problem),
            "::error file=job.yaml,line=4,col=3::unknown key%0Asecond: 1:2: line"
        );
    }

    #[test]
    fn flags_and_unplaced_problems_are_titled_agentci() {
        let flag = Diagnostic::flag("--var", "expected NAME=VALUE");
        assert_eq!(
            problem_annotation(&config(), &flag),
            "::error title=agentci::--var: error: expected NAME=VALUE"
        );
        let unplaced = Diagnostic::unplaced("workspace /x cannot be used");
        assert_eq!(
            problem_annotation(&config(), &unplaced),
            "::error title=agentci::workspace /x cannot be used"
        );
    }
}
