mod support;

mod eval;
mod examples;
mod policy;
mod provider;
mod run;
mod sinks;
mod tools;
mod validate;
