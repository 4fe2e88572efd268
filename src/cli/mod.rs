//! The command line: parses flags, runs a command, maps the outcome to the
//! documented exit codes. The only module (with the sinks) that writes to
//! the terminal.

pub mod args;
mod baseline;
mod color;
mod comment;
pub mod doctor;
mod doctor_jobs;
mod doctor_setup;
pub mod eval;
mod eval_progress;
pub mod exit;
pub mod init;
mod init_files;
mod init_project;
mod json_stream;
pub mod mcp;
mod mcp_print;
pub mod report;
mod resume;
pub mod run;
pub mod schema;
pub mod signals;
pub mod trace;
pub mod validate;
mod writable_roots;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
pub use exit::{CliError, EXIT_BAD_INPUT, Exit};

pub fn main() -> ExitCode {
    use std::io::Write;
    // First, while agentci is still one thread (the tokio runtime starts
    // later): the environment moves to the heap and the block
    // `/proc/<pid>/environ` shows is emptied (process/environ_block.rs).
    if let Err(why) = crate::process::environ_block::wipe() {
        let _ = writeln!(std::io::stderr(), "agentci: warning: {why}");
    }
    // Before anything reads a secret: what the agent runs must not read them
    // back from /proc (process/hardening.rs says why).
    if let Err(why) = crate::process::hardening::harden_self() {
        let _ = writeln!(std::io::stderr(), "agentci: warning: {why}");
    }
    // Once, after the environment moved: every variable the library reads
    // for a command comes from this snapshot (run_env.rs says why).
    let env = crate::run_env::RunEnv::new(std::env::vars_os());
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help and version to stdout with exit 0; usage errors to stderr.
            let _ = e.print();
            let outcome = if e.use_stderr() {
                Err(CliError::Reported)
            } else {
                Ok(Exit::Success)
            };
            return ExitCode::from(exit::exit_code(outcome));
        }
    };
    let outcome = match cli.command {
        Command::Run(args) => run::run(*args, &env),
        Command::Validate(args) => validate::validate(args, &env),
        Command::Eval(args) => eval::eval(*args, &env),
        Command::Report(args) => report::report(args),
        Command::Doctor(args) => doctor::doctor(&args, &env),
        Command::Mcp(args) => mcp::mcp(args, &env),
        Command::Trace(args) => trace::trace(args),
        Command::Init(args) => init::init(&args),
        Command::Schema(args) => schema::schema(&args),
    };
    ExitCode::from(exit::exit_code(outcome))
}
