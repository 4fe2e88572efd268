//! `agentci trace show TRACE.jsonl`, `agentci trace summary TRACE.jsonl` and
//! `agentci trace export --otlp URL TRACE.jsonl`: a finished, failed or cut
//! short run read back from its trace, for a person (text, `--full` with
//! what the model was sent), for a tool (`--json`), as the Markdown of the
//! GitHub step summary, or as OpenTelemetry spans sent to a collector.
//!
//! Exit codes: 0 when the trace was read (a run cut mid-way included: its
//! last line may be half written), 2 when it cannot be read at all or a
//! line before the end is damaged; what was readable is still printed.
//! `export` is 1 when the collector did not take the spans.

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
    /// Send a run's trace to an OpenTelemetry collector as the spans a live export makes.
    Export(ExportArgs),
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The JSONL trace of a run.
    pub trace: PathBuf,
    /// The collector's OTLP/HTTP base URL (spans go to `URL/v1/traces`);
    /// default: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`.
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// Also export message content and tool arguments and results, as
    /// `telemetry.content: true` does (they are masked in the trace already).
    #[arg(long)]
    pub content: bool,
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
        TraceCommand::Export(args) => export(&args),
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

fn export(args: &ExportArgs) -> Result<Exit, CliError> {
    let mut target = export_target(args.otlp.as_deref())?;
    target.content |= args.content;
    if let Some(problem) = &target.warning {
        let _ = writeln!(std::io::stderr(), "agentci: warning: {problem}");
    }
    let trace = read(&args.trace)?;
    if let Err(problem) = crate::telemetry::export_trace(&target, trace.events()) {
        let _ = writeln!(
            std::io::stderr(),
            "error: trace export: {problem}: the spans were not exported; check --otlp or \
             OTEL_EXPORTER_OTLP_ENDPOINT"
        );
        return Ok(Exit::Failed);
    }
    print_and_exit(
        &format!(
            "exported {} to {}\n",
            args.trace.display(),
            target.traces_url
        ),
        &trace,
    )
}

/// `--otlp URL`, else the `OTEL_EXPORTER_OTLP_*` variables.
fn export_target(flag: Option<&str>) -> Result<crate::telemetry::OtlpTarget, CliError> {
    let spec = crate::job::TelemetrySpec {
        content: false,
        otlp: flag.map(|url| crate::job::OtlpSpec {
            endpoint: Some(url.to_string()),
            headers: Default::default(),
            protocol: crate::job::OtlpProtocol::HttpProtobuf,
        }),
    };
    if let Some(url) = flag
        && let Err(problem) = crate::job::load::check_base_url(url)
    {
        return Err(CliError::input(format!("--otlp: {problem}")));
    }
    crate::telemetry::OtlpTarget::resolve(&spec, |name| std::env::var(name).ok()).ok_or_else(|| {
        CliError::input(
            "trace export needs a collector: give --otlp URL (its OTLP/HTTP base, such as \
             http://127.0.0.1:4318) or set OTEL_EXPORTER_OTLP_ENDPOINT"
                .to_string(),
        )
    })
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
