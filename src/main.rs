//! The `agentci` binary: parse flags, dispatch, map the outcome to an exit code.

fn main() -> std::process::ExitCode {
    agentci::cli::main()
}
