//! The one way out for a run's commands under `sandbox.network: [hosts]`:
//! agentci's proxy ([`crate::netproxy`]) served on the listener the sandbox
//! opened inside the run's network namespace, and the variables that point
//! every child's tools at it.
//!
//! The proxy starts with the process runner, before anything can run, but
//! the run's event bus exists only later: records made before someone
//! observes them are kept and handed over when `NetworkBridge::observe`
//! is called, so no connection goes unreported.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::netproxy::{
    NetworkAllowlist, NetworkProxy, NetworkRecord, ProxyError, ProxyHandle, RecordObserver,
    Resolver,
};

/// Test switch: `host=address` pairs, comma-separated, that the proxy's
/// resolver answers itself (`registry.test=127.0.0.1`). Read only by
/// builds with `debug_assertions` ([`crate::sandbox::test_switch`]): a
/// release binary never lets its environment redirect a host.
pub const TEST_RESOLVE_ENV: &str = "AGENTCI_TEST_RESOLVE";

/// The proxy a run's commands go through, and who hears of each connection.
pub(super) struct NetworkBridge {
    /// Dropped with the runner: the proxy stops and open connections end.
    _inside: ProxyHandle,
    _outside: ProxyHandle,
    observed: Arc<Mutex<Observed>>,
    /// `http://127.0.0.1:PORT` inside the run's network namespace.
    pub url: String,
    /// The same proxy on agentci's own loopback, for `web_fetch`, which
    /// runs in agentci's process: its fetches are judged and reported
    /// as the commands' connections are.
    pub outside_url: String,
}

enum Observed {
    /// Nobody listens yet: the records so far.
    Waiting(Vec<NetworkRecord>),
    Sending(RecordObserver),
}

impl std::fmt::Debug for NetworkBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkBridge")
            .field("url", &self.url)
            .finish()
    }
}

impl NetworkBridge {
    /// Serve `allowlist` on `listener` (in the run's network namespace).
    pub fn start(
        allowlist: NetworkAllowlist,
        listener: std::net::TcpListener,
    ) -> Result<NetworkBridge, ProxyError> {
        let port = listener.local_addr().map_err(ProxyError::Listener)?.port();
        let observed = Arc::new(Mutex::new(Observed::Waiting(Vec::new())));
        let sink = observed.clone();
        let observer: RecordObserver = Arc::new(move |record| {
            let Ok(mut observed) = sink.lock() else {
                return;
            };
            match &mut *observed {
                Observed::Waiting(kept) => kept.push(record),
                Observed::Sending(observer) => observer(record),
            }
        });
        let proxy = NetworkProxy::new(allowlist, resolver(), observer);
        let outside = std::net::TcpListener::bind("127.0.0.1:0").map_err(ProxyError::Listener)?;
        let outside_port = outside.local_addr().map_err(ProxyError::Listener)?.port();
        Ok(NetworkBridge {
            _inside: proxy.serve_tcp(listener)?,
            _outside: proxy.serve_tcp(outside)?,
            observed,
            url: format!("http://127.0.0.1:{port}"),
            outside_url: format!("http://127.0.0.1:{outside_port}"),
        })
    }

    /// From now on every record goes to `observer`; those kept so far first.
    pub fn observe(&self, observer: RecordObserver) {
        let Ok(mut observed) = self.observed.lock() else {
            return;
        };
        if let Observed::Waiting(kept) = &mut *observed {
            for record in kept.drain(..) {
                observer(record);
            }
        }
        *observed = Observed::Sending(observer);
    }

    /// The variables that send a child's HTTP clients (curl, cargo, npm,
    /// pip, git) to the proxy; the child's own servers on its loopback
    /// stay direct.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ]
        .into_iter()
        .map(|name| (name.to_string(), self.url.clone()))
        .collect();
        for name in ["NO_PROXY", "no_proxy"] {
            env.push((name.to_string(), "localhost,127.0.0.1,::1".to_string()));
        }
        env
    }
}

/// The system resolver, with the test switch's fixed answers in debug builds.
fn resolver() -> Resolver {
    let resolver = Resolver::system();
    let Some(pairs) = crate::sandbox::test_switch::read(TEST_RESOLVE_ENV) else {
        return resolver;
    };
    pairs
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .filter_map(|(host, address)| Some((host.trim(), address.trim().parse::<IpAddr>().ok()?)))
        .fold(resolver, |resolver, (host, address)| {
            resolver.with_override(host, address)
        })
}
