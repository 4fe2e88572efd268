mod support;

mod eval;
mod eval_signals;
mod examples;
mod git_output;
mod git_skill;
mod github;
mod mcp;
mod mcp_misbehave;
mod policy;
mod provider;
mod providers_e2e;
mod run;
mod signals;
mod sinks;
mod tools;
mod validate;
