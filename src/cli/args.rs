//! Command-line flags, parsed by clap. Validation that needs the job file
//! happens later, in [`crate::job`].

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
    /// Run a job (a file, or one made from --goal and other flags) against a workspace.
    Run(Box<RunArgs>),
    /// Check job files, eval suites and skills without running anything.
    Validate(ValidateArgs),
    /// Evaluate skills: run the cases of suite files and report pass rates.
    Eval(Box<EvalArgs>),
    /// Work with evaluation results.
    Report(ReportArgs),
    /// Show what this machine's kernel can enforce of the sandbox.
    Doctor(DoctorArgs),
    /// Try a job's MCP servers: list their tools and resources, call one tool.
    Mcp(super::mcp::McpArgs),
    /// Read a run's JSONL trace back: `show` for people and tools, `summary` as Markdown.
    Trace(super::trace::TraceArgs),
    /// Print the JSON Schema of a job file, an eval suite or a trace line (for editors).
    Schema(super::schema::SchemaArgs),
    /// Write a first job, skill skeleton, GitHub workflow and eval suite into this repository.
    Init(super::init::InitArgs),
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A job file: also check this machine's set-up for it (its model's key
    /// and server, the programs its MCP servers start).
    pub job: Option<PathBuf>,
    /// Do not ask the model's server whether it answers.
    #[arg(long)]
    pub offline: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The job file (YAML); without one, `--goal`, `--skill` and `--model` make the job.
    pub job: Option<PathBuf>,
    #[command(flatten)]
    pub job_flags: JobFlagArgs,
    /// Print the job the file and flags make, as YAML, and run nothing.
    #[arg(long)]
    pub print_job: bool,
    /// Write the trace's events to stdout as JSON lines, and nothing else there.
    #[arg(long)]
    pub json: bool,
    /// Write the model's final summary to this file.
    #[arg(long, value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,
    /// The workspace the agent works in (overrides the job's `workspace`).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Set a job variable, overriding the job's `vars` (repeatable).
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
    /// Write the JSONL trace here (default: in the run folder); `-` is stdout, as `--json`.
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
    /// How a replay matches requests: `strict` (default) or `sequence`
    /// (recorded answers in order, drift from the recording counted).
    #[arg(long, value_name = "MODE")]
    pub replay_match: Option<String>,
    /// Override the job's model, as PROVIDER:NAME (e.g. `openai:gpt-4.1-mini`).
    #[arg(long, value_name = "PROVIDER:NAME")]
    pub model: Option<String>,
    /// Override the model's base URL.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// How hard a reasoning model thinks: minimal, low, medium or high
    /// (over the job's `model.reasoning.effort`).
    #[arg(long, value_name = "EFFORT")]
    pub reasoning_effort: Option<String>,
    /// Anthropic manual thinking: the tokens the model may think for, at
    /// least 1024 (over the job's `model.reasoning.budget_tokens`).
    #[arg(long, value_name = "TOKENS")]
    pub thinking_budget: Option<String>,
    /// Extra folder to look for skills in (repeatable).
    #[arg(long = "skills-path", value_name = "DIR")]
    pub skills_path: Vec<PathBuf>,
    /// Progress output: `auto` (bars on a terminal), `plain` (log lines), `none`.
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub progress: ProgressMode,
    /// Go on with a stopped run (interrupted, out of budget, provider down)
    /// from the last checkpoint in its run folder; `--max-turns`,
    /// `--max-cost`, `--timeout` (…) raise its budget.
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
}

/// Flags that make or change the job; they go through the job file's checks.
#[derive(Debug, Args)]
pub struct JobFlagArgs {
    /// What the agent should achieve (overrides the job's `goal`); `-` reads it from stdin.
    #[arg(long, value_name = "TEXT")]
    pub goal: Option<String>,
    /// The skill: a name, or a folder holding SKILL.md (overrides the job's `skill`).
    #[arg(long, value_name = "NAME|DIR")]
    pub skill: Option<String>,
    /// The tools offered, comma-separated (repeatable; replaces the job's `tools`).
    #[arg(long, value_name = "TOOL,…")]
    pub tools: Vec<String>,
    /// A permission rule such as `exec(cargo test*)` (repeatable; added to `permissions.allow`).
    #[arg(long, value_name = "RULE")]
    pub allow: Vec<String>,
    /// A permission rule that refuses (repeatable; added to `permissions.deny`).
    #[arg(long, value_name = "RULE")]
    pub deny: Vec<String>,
    /// A check: a shell command that must exit 0 (repeatable; added to `checks`).
    #[arg(long = "check", value_name = "CMD")]
    pub checks: Vec<String>,
    /// Budget: model turns.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<String>,
    /// Budget: tool calls.
    #[arg(long, value_name = "N")]
    pub max_tool_calls: Option<String>,
    /// Budget: tokens.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<String>,
    /// Budget: cost in US dollars.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<String>,
    /// Budget: wall-clock time, e.g. `15m`.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Rounds of checks: failing checks go back to the agent until they pass or rounds run out.
    #[arg(long, value_name = "N")]
    pub checks_rounds: Option<String>,
    /// A JSON Schema file the run's structured result must match (replaces the job's `result_schema`).
    #[arg(long, value_name = "FILE")]
    pub result_schema: Option<PathBuf>,
    /// Run even when the workspace has uncommitted changes.
    #[arg(long)]
    pub allow_dirty: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    Auto,
    Plain,
    None,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Job files, suite files, skill folders, `SKILL.md` files, or folders holding them (default: `.`).
    pub paths: Vec<PathBuf>,
    /// Extra folder to look for skills in (repeatable).
    #[arg(long = "skills-path", value_name = "DIR")]
    pub skills_path: Vec<PathBuf>,
    /// Set a job variable, as `agentci run --var` would (repeatable).
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
    /// Validate jobs as run with this model, as PROVIDER:NAME (like `agentci run --model`).
    #[arg(long, value_name = "PROVIDER:NAME")]
    pub model: Option<String>,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Suite files (YAML with `job` and `cases`).
    #[arg(required = true)]
    pub suites: Vec<PathBuf>,
    /// Attempts run at once (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Run each case K times; reports pass rate, pass@k and pass^k.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub repeat: u32,
    /// Run only slice I of N (1-based), the same slice on every machine.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<crate::eval::Shard>,
    /// Run only cases whose name (or SUITE/CASE) matches this glob.
    #[arg(long, value_name = "GLOB")]
    pub filter: Option<String>,
    /// Run live with this model, as PROVIDER:NAME, instead of the cassettes;
    /// given several times, each case runs against each model, side by side.
    #[arg(long, value_name = "PROVIDER:NAME")]
    pub model: Vec<String>,
    /// Override the model's base URL (with --model or --record).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// How hard a reasoning model thinks: minimal, low, medium or high
    /// (over the job's `model.reasoning.effort`).
    #[arg(long, value_name = "EFFORT")]
    pub reasoning_effort: Option<String>,
    /// Anthropic manual thinking: the tokens the model may think for, at
    /// least 1024 (over the job's `model.reasoning.budget_tokens`).
    #[arg(long, value_name = "TOKENS")]
    pub thinking_budget: Option<String>,
    /// The results folder; running again into it resumes.
    #[arg(long, value_name = "DIR", default_value = ".agentci/eval")]
    pub out: PathBuf,
    /// Also write a self-contained HTML report (DIR/index.html).
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
    /// Run live and save a cassette per case (and attempt).
    #[arg(long)]
    pub record: bool,
    /// How replayed cases match requests: `strict` (default) or `sequence`
    /// (recorded answers in order, drift from the recording counted).
    #[arg(long, value_name = "MODE")]
    pub replay_match: Option<String>,
    /// Re-run the attempts that errored in an earlier run into --out.
    #[arg(long)]
    pub retry_errors: bool,
    /// Re-run every attempt, keeping nothing from an earlier run into --out.
    #[arg(long)]
    pub fresh: bool,
    /// The share of cases that must pass (0 to 1), for every suite.
    #[arg(long, value_name = "RATE")]
    pub min_pass_rate: Option<f64>,
    /// What this evaluation may spend, in USD: refused before the run when
    /// the estimate (baseline cost, else the cassettes' usage) is over it,
    /// stopped during the run when finished attempts reach it.
    #[arg(long, value_name = "USD")]
    pub max_cost_usd: Option<f64>,
    #[command(flatten)]
    pub baseline: BaselineArgs,
    /// Extra folder to look for skills in (repeatable).
    #[arg(long = "skills-path", value_name = "DIR")]
    pub skills_path: Vec<PathBuf>,
    /// A JSON Schema file every case's structured result must match
    /// (replaces the job's `result_schema`).
    #[arg(long, value_name = "FILE")]
    pub result_schema: Option<PathBuf>,
    /// Progress output: `auto` (a bar on a terminal), `plain` (log lines), `none`.
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub progress: ProgressMode,
}

/// Comparing with an earlier `results.json`.
#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// Compare with this earlier results.json, or with `github:BRANCH`: the
    /// merged results of this workflow's latest successful run on BRANCH
    /// (GitHub Actions); exit 1 on a regression.
    #[arg(long, value_name = "FILE|github:BRANCH")]
    pub baseline: Option<super::baseline::BaselineSource>,
    /// A suite pass rate lower by more than this (0 to 1) is a regression.
    #[arg(long, value_name = "RATE", default_value_t = 0.05)]
    pub max_pass_rate_drop: f64,
    /// A suite's cost per attempt higher by more than this share (0.2 = 20%) is a regression.
    #[arg(long, value_name = "SHARE", default_value_t = 0.2)]
    pub max_cost_increase: f64,
    /// A suite's mean attempt duration longer by more than this share (1.0 = twice) is a regression.
    #[arg(long, value_name = "SHARE", default_value_t = 1.0)]
    pub max_duration_increase: f64,
    /// With repeated attempts, how sure a pass rate's drop must be to be a
    /// regression (one-sided Fisher exact test; 0.95: p < 0.05); also the
    /// level of the pass rates' Wilson intervals.
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95)]
    pub regression_confidence: f64,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub command: ReportCommand,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Join the results folders of shards into one results.json, junit.xml and summary.md.
    Merge(MergeArgs),
    /// Write the HTML report of earlier results (several: merged, like shards).
    #[command(mut_arg("baseline", |arg| arg.help(BASELINE_SHOWN_ONLY)))]
    Html(HtmlArgs),
    /// Post (or update in place) the pull request comment comparing results with the baseline.
    #[command(mut_arg("baseline", |arg| arg.help(BASELINE_SHOWN_ONLY)))]
    Comment(CommentArgs),
}

/// `--baseline` of the commands that show a comparison and leave the verdict
/// to `eval` and `report merge`: their exit code does not depend on it.
const BASELINE_SHOWN_ONLY: &str = "Compare with this earlier results.json, or with \
     `github:BRANCH`: the merged results of this workflow's latest successful run on BRANCH \
     (GitHub Actions); the regressions are shown, the exit code stays 0 (the verdict is \
     `eval`'s and `report merge`'s)";

#[derive(Debug, Args)]
pub struct CommentArgs {
    /// The results to describe (results.json or its folder), e.g. the merged shards.
    pub results: PathBuf,
    /// The pull request to comment on (GitHub Actions); without it the comment is printed.
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// A link to the HTML report (the workflow run's artifacts) for the comment.
    #[arg(long, value_name = "URL")]
    pub report_url: Option<String>,
    #[command(flatten)]
    pub baseline: BaselineArgs,
}

#[derive(Debug, Args)]
pub struct HtmlArgs {
    /// results.json files or the folders holding them.
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Where index.html goes.
    #[arg(long, value_name = "DIR", default_value = ".agentci/eval-html")]
    pub out: PathBuf,
    #[command(flatten)]
    pub baseline: BaselineArgs,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results folders (each holding results.json), e.g. one per shard.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where the merged files go.
    #[arg(long, value_name = "DIR", default_value = ".agentci/eval-merged")]
    pub out: PathBuf,
    /// Also write the merged HTML report (DIR/index.html), with the
    /// transcripts read from each results folder's traces.
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub baseline: BaselineArgs,
}
