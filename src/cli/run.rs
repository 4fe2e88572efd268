//! `agentci run`. (stub)
use super::args::RunArgs;

pub fn run(_args: RunArgs) -> u8 {
    todo!()
}
