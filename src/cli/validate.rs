//! `agentci validate`. (stub)
use super::args::ValidateArgs;

pub fn validate(_args: ValidateArgs) -> u8 {
    todo!()
}
