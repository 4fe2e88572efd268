mod support;

mod examples;
mod github;
mod policy;
mod provider;
mod run;
mod sinks;
mod tools;
mod validate;
