//! `agentci trace show TRACE.jsonl` and `agentci trace summary TRACE.jsonl`:
//! a finished, failed or cut short run read back from its trace, for a
//! person (text, `--full` with what the model was sent), for a tool
//! (`--json`), or as the Markdown of the GitHub step summary.
//!
//! Exit codes: 0 when the trace was read (a run cut mid-way included: its
//! last line may be half written), 2 when it cannot be read at all or a
//! line before the end is damaged; what was readable is still printed.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{CliError, Exit};
use crate::inert::terminal as printable;
use crate::trace_view::{LoadedTrace, RunView, ViewOptions, load, render_text};

#[derive(Debug, Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Print a run from its trace: plan, turns, tool calls, checks, tokens, cost, time.
    Show(ShowArgs),
    /// Print the Markdown step summary of a run from its trace.
    Summary(SummaryArgs),
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The JSONL trace of a run.
    pub trace: PathBuf,
    /// Also print what the model was sent on each turn and whole check outputs.
    #[arg(long)]
    pub full: bool,
    /// Print one JSON object for tools instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SummaryArgs {
    /// The JSONL trace of a run.
    pub trace: PathBuf,
}

pub fn trace(args: TraceArgs) -> Result<Exit, CliError> {
    match args.command {
        TraceCommand::Show(args) => show(&args),
        TraceCommand::Summary(args) => summary(&args),
    }
}

fn show(args: &ShowArgs) -> Result<Exit, CliError> {
    let trace = read(&args.trace)?;
    let view = RunView::new(&trace, ViewOptions { full: args.full });
    let text = if args.json {
        match serde_json::to_string_pretty(&view) {
            Ok(json) => json + "\n",
            Err(e) => {
                return Err(CliError::input(format!(
                    "cannot write the view as JSON: {e}"
                )));
            }
        }
    } else {
        printable(&render_text(&view, args.full))
    };
    print_and_exit(&text, &trace)
}

fn summary(args: &SummaryArgs) -> Result<Exit, CliError> {
    let trace = read(&args.trace)?;
    let markdown = printable(&crate::sink::step_summary(trace.events()));
    print_and_exit(&markdown, &trace)
}

fn read(path: &std::path::Path) -> Result<LoadedTrace, CliError> {
    Ok(load(path)?)
}

/// Print `text`; a damaged line before the end is an error after it.
fn print_and_exit(text: &str, trace: &LoadedTrace) -> Result<Exit, CliError> {
    let mut stdout = std::io::stdout();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    match &trace.problem {
        Some(problem) if !problem.is_cut_last_line() => Err(CliError::input(format!(
            "trace line {}: {}; the {} lines after it were not read",
            problem.line, problem.message, problem.lines_after
        ))),
        Some(problem) => {
            let _ = writeln!(
                std::io::stderr(),
                "agentci: trace line {} (the last): {}",
                problem.line,
                problem.message
            );
            Ok(Exit::Success)
        }
        None => Ok(Exit::Success),
    }
}
