//! Resolving a host once and checking every address it has.
//!
//! The proxy and `web_fetch` both connect on someone else's behalf, so both
//! look a host up exactly once, refuse it when any of its addresses is not
//! public (unless a rule names the host literally), and then connect to
//! exactly those addresses: a second lookup could answer differently
//! (DNS rebinding) and would undo the check. Fixed answers for some hosts
//! are given by the caller (tests make `registry.test` resolve to
//! `127.0.0.1`); this module never reads the environment or `/etc/hosts`
//! itself beyond what the system resolver does.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use super::address::{canonical_host, host_address, not_public};

/// Why a host cannot be reached.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// The lookup failed.
    #[error("cannot resolve `{host}`: {error}")]
    Unresolved { host: String, error: String },
    /// The lookup succeeded with no address.
    #[error("`{host}` resolves to no address")]
    NoAddress { host: String },
    /// The host is (or resolves to) an address that is not public, and no
    /// rule names the host literally. The caller says which rule would.
    #[error("`{host}` is {class} ({address})")]
    NotPublic {
        host: String,
        address: IpAddr,
        /// What kind of address it is (`a loopback address`, …).
        class: &'static str,
    },
}

/// Looks hosts up, with fixed answers for some.
#[derive(Clone, Debug, Default)]
pub struct Resolver {
    /// Canonical host → its addresses, consulted before the system resolver.
    overrides: HashMap<String, Vec<IpAddr>>,
}

impl Resolver {
    /// The system resolver, with no fixed answers.
    pub fn system() -> Self {
        Resolver::default()
    }

    /// Answer `host` with `address` instead of asking the system resolver
    /// (several calls for one host give it several addresses). A `host`
    /// that is not a host name is ignored.
    pub fn with_override(mut self, host: &str, address: IpAddr) -> Self {
        if let Some(host) = canonical_host(host) {
            self.overrides.entry(host).or_default().push(address);
        }
        self
    }

    /// Every address of `host` (a name, or an address in any spelling),
    /// with `port`: an address is itself, an overridden name its fixed
    /// answer, any other name what the system resolver says, once.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, AddressError> {
        let canonical = canonical_host(host).unwrap_or_else(|| host.to_string());
        if let Ok(ip) = host_address(&canonical) {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        if let Some(fixed) = self.overrides.get(&canonical) {
            return Ok(fixed.iter().map(|ip| SocketAddr::new(*ip, port)).collect());
        }
        let found: Vec<SocketAddr> = tokio::net::lookup_host((canonical.as_str(), port))
            .await
            .map_err(|e| AddressError::Unresolved {
                host: host.to_string(),
                error: e.to_string(),
            })?
            .collect();
        if found.is_empty() {
            return Err(AddressError::NoAddress {
                host: host.to_string(),
            });
        }
        Ok(found)
    }

    /// [`Resolver::resolve`], then refuse the host when any address is not
    /// public, unless `named_literally` (a rule names this very host, so
    /// the user meant it). Every address is checked, not only the first: the
    /// connection may go to any of them.
    pub async fn resolve_checked(
        &self,
        host: &str,
        port: u16,
        named_literally: bool,
    ) -> Result<Vec<SocketAddr>, AddressError> {
        let addresses = self.resolve(host, port).await?;
        if !named_literally {
            for address in &addresses {
                if let Some(class) = not_public(address.ip()) {
                    return Err(AddressError::NotPublic {
                        host: host.to_string(),
                        address: address.ip(),
                        class,
                    });
                }
            }
        }
        Ok(addresses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_override_answers_and_is_checked_like_any_answer() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let resolver = Resolver::system().with_override("Registry.Test.", loopback);
        let found = resolver.resolve("registry.test", 8080).await.unwrap();
        assert_eq!(found, [SocketAddr::new(loopback, 8080)]);
        let refused = resolver.resolve_checked("registry.test", 8080, false).await;
        assert_eq!(
            refused.unwrap_err().to_string(),
            "`registry.test` is a loopback address (127.0.0.1)"
        );
        assert!(
            resolver
                .resolve_checked("registry.test", 8080, true)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn an_address_is_not_looked_up() {
        let resolver = Resolver::system();
        let found = resolver.resolve("[::1]", 9000).await.unwrap();
        assert_eq!(found, ["[::1]:9000".parse().unwrap()]);
        let found = resolver.resolve("2130706433", 80).await.unwrap();
        assert_eq!(found, ["127.0.0.1:80".parse().unwrap()]);
    }
}
