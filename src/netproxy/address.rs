//! Which addresses are public, and the one spelling of a host.
//!
//! Both ways agentci reaches the network for someone else — `web_fetch`
//! in its own process and the proxy that sandboxed commands go through —
//! could reach what no command may: the machine's own services on
//! loopback, the private network, a cloud's metadata service. They resolve
//! a host once and classify every address here; an address that is not
//! public is refused unless a rule names the host literally, and the
//! connection goes to exactly the addresses checked, so a second DNS
//! answer cannot swap them. Spellings of an address (`2130706433`,
//! `0x7f.1`, `127.1`, `[::ffff:127.0.0.1]`) are normalised by the URL
//! parser first and then classified as addresses, never as text. This
//! module does not judge hosts against rules; the allowlist and the
//! permission policy do.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use reqwest::Url;

/// Why an address is not public, when it is not.
pub fn not_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => v6_class(v6),
    }
}

fn v4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if a == 0 {
        Some("an unspecified address (\"this host\")")
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Some("a private address")
    } else if a == 169 && b == 254 {
        Some("a link-local address (cloud metadata services live there)")
    } else if ip.is_broadcast() {
        Some("the broadcast address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if a >= 240 || (a == 192 && b == 0 && c == 0) || (a == 198 && (18..20).contains(&b)) {
        Some("a reserved address")
    } else {
        None
    }
}

fn v6_class(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    if let Some(v4) = embedded_v4(ip) {
        return v4_class(v4);
    }
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if ip.is_unique_local() {
        Some("a unique-local (private) address")
    } else if ip.is_unicast_link_local() || segments[0] & 0xffc0 == 0xfec0 {
        Some("a link-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if segments[0] == 0x2001 && segments[1] == 0 {
        Some("a Teredo tunnel address, which hides an IPv4 address")
    } else {
        None
    }
}

/// The IPv4 address an IPv6 address carries: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) and 6to4
/// (`2002:AABB:CCDD::`) all reach it.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if let Some(v4) = ip.to_ipv4() {
        // `::` and `::1` are IPv6's own unspecified and loopback addresses.
        return (!ip.is_unspecified() && !ip.is_loopback()).then_some(v4);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(low(s[1], s[2]));
    }
    None
}

/// The address a host is, when the URL parser printed an address (it
/// prints every IPv4 spelling as `a.b.c.d` and IPv6 in brackets), or the
/// host name.
pub fn host_address(host: &str) -> Result<IpAddr, &str> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse::<IpAddr>().map_err(|_| host)
}

/// `host` as the URL parser prints it, so that one host has one spelling
/// wherever it is compared: lower case, IDNA names in punycode, every IPv4
/// spelling as `a.b.c.d`, IPv6 in brackets (with or without them on the
/// way in), and without the trailing dot of a fully qualified name. `None`
/// when it is not a host (empty, or with a port, path, user or space).
pub fn canonical_host(host: &str) -> Option<String> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(v6) = bare.parse::<Ipv6Addr>() {
        return Some(format!("[{v6}]"));
    }
    let forbidden = |c: char| c.is_whitespace() || "/?#@\\:%*[]".contains(c);
    if host.is_empty() || host.contains(forbidden) {
        return None;
    }
    let url = Url::parse(&format!("http://{host}/")).ok()?;
    let printed = url.host_str()?;
    let printed = printed.strip_suffix('.').unwrap_or(printed);
    (!printed.is_empty()).then(|| printed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Regression: a loopback deny rule was stepped around by `0.0.0.0`,
    // `[::ffff:127.0.0.1]` and `127.0.0.2`, and a bare `web_fetch` rule
    // reached 169.254.169.254.
    #[test]
    fn every_spelling_of_a_non_public_address_is_refused() {
        for url in [
            "http://127.0.0.1/",
            "http://127.0.0.2/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://017700000001/",
            "http://0.0.0.0/",
            "http://[::1]/",
            "http://[::]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://[2002:7f00:1::]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/",
            "http://[fe80::1]/",
            "http://10.0.0.1/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://100.100.100.200/",
            "http://224.0.0.1/",
            "http://255.255.255.255/",
            "http://[ff02::1]/",
        ] {
            let parsed = Url::parse(url).unwrap();
            let ip = host_address(parsed.host_str().unwrap())
                .unwrap_or_else(|name| panic!("{url} parsed as the name {name}"));
            assert!(not_public(ip).is_some(), "{url} ({ip})");
        }
        for ip in [
            "93.184.216.34",
            "2606:2800:220:1:248:1893:25c8:1946",
            "8.8.8.8",
        ] {
            assert_eq!(not_public(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn a_host_has_one_spelling() {
        for (written, canonical) in [
            ("Crates.IO", Some("crates.io")),
            ("crates.io.", Some("crates.io")),
            ("127.1", Some("127.0.0.1")),
            ("2130706433", Some("127.0.0.1")),
            ("::1", Some("[::1]")),
            ("[::1]", Some("[::1]")),
            ("[0:0::1]", Some("[::1]")),
            ("bücher.example", Some("xn--bcher-kva.example")),
            ("", None),
            (".", None),
            ("a b", None),
            ("host:80", None),
            ("host/path", None),
            ("user@host", None),
            ("*.example.com", None),
            ("[::1]/x]", None),
        ] {
            assert_eq!(canonical_host(written).as_deref(), canonical, "{written:?}");
        }
    }
}
