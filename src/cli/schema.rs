//! `agentci schema job|suite|trace`: prints the JSON Schema of a file people
//! write (a job, an eval suite) or read (a trace), for editors' completion
//! and for tools that check those files. Each is generated from the types
//! that read or write the file (the loaders' structs, the event types), so
//! it cannot drift from what agentci accepts or writes.

use std::io::Write;

use clap::{Args, ValueEnum};

use super::{CliError, Exit};

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which file's schema to print.
    pub kind: SchemaKind,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SchemaKind {
    /// A job file (`agentci run JOB.yaml`).
    Job,
    /// An eval suite file (`agentci eval SUITE.yaml`).
    Suite,
    /// One line of a JSONL trace.
    Trace,
}

/// The schema's text, as printed and as shipped in docs/schemas/.
pub fn schema_text(kind: SchemaKind) -> Result<String, CliError> {
    let value = match kind {
        SchemaKind::Job => crate::job::schema::job_schema(),
        SchemaKind::Suite => crate::eval::suite::suite_schema(),
        SchemaKind::Trace => crate::event::schema::trace_schema(),
    };
    serde_json::to_string_pretty(&value)
        .map(|text| text + "\n")
        .map_err(|e| CliError::input(format!("cannot write the schema as JSON: {e}")))
}

pub fn schema(args: &SchemaArgs) -> Result<Exit, CliError> {
    let text = schema_text(args.kind)?;
    let mut stdout = std::io::stdout();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    Ok(Exit::Success)
}
