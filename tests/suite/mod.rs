mod support;

mod examples;
mod policy;
mod provider;
mod providers_e2e;
mod run;
mod sinks;
mod tools;
mod validate;
