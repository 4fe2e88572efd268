//! Command-line flags, parsed by clap. Validation that needs the job file
//! happens later, in [`crate::spec`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "agentci",
    version,
    about = "Run LLM coding agents unattended in CI",
    long_about = "Run LLM coding agents unattended in CI: a YAML job names a skill, tools, a budget \
                  and a goal; agentci plans, executes under a permission policy, verifies with \
                  checks, and writes a JSONL trace and JUnit XML."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a job file against a workspace.
    Run(Box<RunArgs>),
    /// Check job files and skills without running anything.
    Validate(ValidateArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The job file (YAML).
    pub job: PathBuf,
    /// The workspace the agent works in (overrides the job's `workspace`).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Set a job variable, overriding the job's `vars` (repeatable).
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
    /// Write the JSONL trace here (default: in the run folder).
    #[arg(long, value_name = "PATH")]
    pub trace: Option<PathBuf>,
    /// Write JUnit XML here (default: in the run folder).
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// The run folder (default: `.agentci/runs/<run-id>/` in the workspace).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Save every model exchange to this cassette (JSONL) for replay.
    #[arg(long, value_name = "PATH")]
    pub record: Option<PathBuf>,
    /// Serve model responses from this cassette instead of a live model.
    #[arg(long, value_name = "PATH", conflicts_with = "record")]
    pub replay: Option<PathBuf>,
    /// Override the job's model, as PROVIDER:NAME (e.g. `openai:gpt-4.1-mini`).
    #[arg(long, value_name = "PROVIDER:NAME")]
    pub model: Option<String>,
    /// Override the model's base URL.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Extra folder to look for skills in (repeatable).
    #[arg(long = "skills-path", value_name = "DIR")]
    pub skills_path: Vec<PathBuf>,
    /// Progress output: `auto` (bars on a terminal), `plain` (log lines), `none`.
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub progress: ProgressMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    Auto,
    Plain,
    None,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Job files, skill folders, `SKILL.md` files, or folders holding them (default: `.`).
    pub paths: Vec<PathBuf>,
    /// Extra folder to look for skills in (repeatable).
    #[arg(long = "skills-path", value_name = "DIR")]
    pub skills_path: Vec<PathBuf>,
}
