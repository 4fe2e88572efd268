//! Where `web_fetch` may connect.
//!
//! `web_fetch` runs in agentci's own process, outside the sandbox, so
//! before each request (and each redirect hop) the host is resolved once
//! and every address checked by the same code the network proxy uses
//! ([`Resolver::resolve_checked`]): an address that is not public is
//! refused unless an allow rule names the host literally. The request then
//! connects to exactly the addresses checked, so a second DNS answer cannot
//! swap them. This module does not judge the URL against the rules; the
//! policy does.

use std::net::SocketAddr;

use reqwest::Url;

use crate::netproxy::address::host_address;
use crate::netproxy::{AddressError, Resolver};

/// Where a fetch of `url` connects, once checked.
pub struct Destination {
    /// The host name to pin to `addresses` in the HTTP client, when the
    /// host is a name rather than an address.
    pub domain: Option<String>,
    pub addresses: Vec<SocketAddr>,
}

/// Why a fetch may not connect.
#[derive(Debug, thiserror::Error)]
pub enum FetchAddressError {
    #[error("`{0}` has no host")]
    NoHost(Url),
    #[error(
        "{source}, which `web_fetch` reaches only when an allow rule names the host \
         literally (`web_fetch(http://{host}:*/**)`)"
    )]
    NotPublic { source: AddressError, host: String },
    #[error("{0}")]
    Refused(AddressError),
}

/// Resolve `url`'s host once and check every address; `named` says
/// whether an allow rule names the host literally. `Err` says why not.
pub async fn check(url: &Url, named: bool) -> Result<Destination, FetchAddressError> {
    let port = url.port_or_known_default().unwrap_or(80);
    let host = url
        .host_str()
        .ok_or_else(|| FetchAddressError::NoHost(url.clone()))?;
    let addresses = Resolver::system()
        .resolve_checked(host, port, named)
        .await
        .map_err(|e| match e {
            AddressError::NotPublic { .. } => FetchAddressError::NotPublic {
                source: e,
                host: host.to_string(),
            },
            other => FetchAddressError::Refused(other),
        })?;
    let domain = host_address(host).is_err().then(|| host.to_string());
    Ok(Destination { domain, addresses })
}
