//! How a `network.request` event reads for a person, in one line: the
//! method, host and port a command asked for, whether the proxy let it
//! through (and by which `sandbox.network` entry) or why not, and how much
//! went each way. Shared by the plain log and `agentci trace show`. The
//! host and the reason come from a command's request, so they are made
//! inert before they reach a terminal.

use crate::git::left_out::human_size;
use crate::netproxy::NetworkRecord;

/// `CONNECT crates.io:443 allowed by preset:cargo: 517 bytes sent, 3.1 MB received in 412 ms`.
pub fn describe_network(record: &NetworkRecord) -> String {
    let method = match record.method.as_str() {
        "" => "?",
        method => method,
    };
    let target = crate::inert::line(&format!("{method} {}:{}", record.host, record.port));
    let traffic = format!(
        "{} sent, {} received in {} ms",
        human_size(record.bytes_sent),
        human_size(record.bytes_received),
        record.duration_ms
    );
    match (record.allowed, &record.rule, &record.reason) {
        (true, Some(rule), None) => {
            format!(
                "{target} allowed by {}: {traffic}",
                crate::inert::line(rule)
            )
        }
        (true, _, reason) => format!(
            "{target} allowed, then {}: {traffic}",
            crate::inert::line(reason.as_deref().unwrap_or("ended"))
        ),
        (false, _, reason) => format!(
            "{target} refused: {}",
            crate::inert::line(reason.as_deref().unwrap_or("not in sandbox.network"))
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netproxy::Outcome;

    fn record(allowed: bool, rule: Option<&str>, reason: Option<&str>) -> NetworkRecord {
        NetworkRecord {
            host: "crates.io".into(),
            port: 443,
            method: "CONNECT".into(),
            allowed,
            outcome: if allowed {
                Outcome::Closed
            } else {
                Outcome::NotListed
            },
            rule: rule.map(String::from),
            reason: reason.map(String::from),
            address: None,
            bytes_sent: 517,
            bytes_received: 3_100_000,
            duration_ms: 412,
        }
    }

    #[test]
    fn allowed_and_refused_connections_read_as_one_line() {
        assert_eq!(
            describe_network(&record(true, Some("preset:cargo"), None)),
            "CONNECT crates.io:443 allowed by preset:cargo: 517 bytes sent, 3.1 MB received in 412 ms"
        );
        assert_eq!(
            describe_network(&record(
                false,
                None,
                Some("not in sandbox.network\u{1b}[2J")
            )),
            "CONNECT crates.io:443 refused: not in sandbox.network"
        );
    }
}
