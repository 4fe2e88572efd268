//! The network allowlist proxy: how sandboxed commands reach only the
//! hosts `sandbox.network` lists.
//!
//! With `sandbox.network: [host patterns]` a command keeps its private
//! network namespace; the only way out is an HTTP proxy (CONNECT for https,
//! absolute-form requests for plain http) that agentci runs. The proxy
//! judges each connection by the [`NetworkAllowlist`], resolves the host
//! itself with a [`Resolver`], refuses loopback, private, link-local and
//! metadata addresses unless a rule names the host literally, and reports
//! every connection, refused ones too, as one [`NetworkRecord`].
//!
//! This module is a leaf: it knows nothing of jobs, events or sandboxes.
//! Whoever runs a job hands it the parsed list, the resolver's fixed
//! answers and a listener (possibly made inside the sandbox's namespace),
//! and turns the records into events. `web_fetch` shares its address
//! checks ([`address`], [`Resolver::resolve_checked`]).

pub mod address;
mod allowlist;
mod connection;
mod head;
mod record;
mod relay;
mod request;
mod resolve;
mod server;

pub use allowlist::{AllowlistError, Decision, NetworkAllowlist, presets};
pub use record::{NetworkRecord, Outcome};
pub use resolve::{AddressError, Resolver};
pub use server::{NetworkProxy, ProxyError, ProxyHandle, ProxyLimits, RecordObserver};

#[cfg(test)]
mod tests;
