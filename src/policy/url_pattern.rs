//! URL rules: the argument of `web_fetch(https://*.example.com/docs/**)`.
//!
//! A URL rule is read as a URL, not as text: its scheme, host, port and
//! path are matched against the same parts of the URL the fetch will
//! request, each by its own grammar. In the host `*` stands for one whole
//! label and `**` for one or more (`*.example.com` matches
//! `a.example.com`, not `example.com`, `a.b.example.com` nor
//! `example.com.evil`); in the path `*` stays within one segment and `**`
//! crosses segments, so no wildcard reaches from the host into the path. A
//! rule without a port matches only the scheme's default port; `:*` any
//! port. A query in the URL does not change what the rule matches.
//! `domain:HOST` (Claude Code's form) is `*://HOST/**`. This
//! module only matches; which addresses a fetch may reach is the tool's
//! business.

use reqwest::Url;

/// A parsed URL rule.
#[derive(Clone, Debug)]
pub struct UrlGlob {
    scheme: String,
    /// The host's labels, lower case; a literal host is normalised the way
    /// the URL parser prints it (`127.1` → `127.0.0.1`).
    host: Vec<String>,
    port: PortGlob,
    /// The path's segments after the first `/`.
    path: Vec<String>,
}

/// A URL rule that does not read as one; the message says what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct BadUrlRule {
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum PortGlob {
    /// The scheme's default port.
    Default,
    Any,
    Exact(u16),
}

impl UrlGlob {
    /// Parse a URL rule; `Err` says what was expected.
    pub fn parse(raw: &str) -> Result<UrlGlob, BadUrlRule> {
        // Claude Code's `WebFetch(domain:docs.rs)`: any page of that host.
        if let Some(host) = raw.strip_prefix("domain:") {
            return UrlGlob::parse(&format!("*://{}/**", host.trim()));
        }
        UrlGlob::parse_url(raw).map_err(|reason| BadUrlRule { reason })
    }

    fn parse_url(raw: &str) -> Result<UrlGlob, String> {
        let expected = "a URL rule is written `scheme://host/path`, for example \
                        `https://docs.rs/**` or `https://*.example.com/api/*`";
        let (scheme, rest) = raw
            .split_once("://")
            .ok_or_else(|| format!("`{raw}` has no `scheme://`; {expected}"))?;
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "http" | "https" | "*") {
            return Err(format!(
                "`web_fetch` fetches http and https only, not `{scheme}://`; {expected}"
            ));
        }
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, "/"),
        };
        // The rule's query, if any, is not matched: see the module's docs.
        let path = path.split_once('?').map_or(path, |(p, _)| p);
        if authority.is_empty() || authority.contains('@') {
            return Err(format!(
                "`{raw}` needs a host and no user name (`user@`); {expected}"
            ));
        }
        let (host, port) = split_port(authority)?;
        let port = match port {
            None => PortGlob::Default,
            Some("*") => PortGlob::Any,
            Some(digits) => match digits.parse::<u16>() {
                Ok(p) if Some(p) == default_port(&scheme) => PortGlob::Default,
                Ok(p) => PortGlob::Exact(p),
                Err(_) => {
                    return Err(format!(
                        "the port `{digits}` in `{raw}` is not a number or `*`"
                    ));
                }
            },
        };
        let host = if host.contains('*') {
            host.to_ascii_lowercase()
        } else {
            literal_host(host).ok_or_else(|| format!("`{host}` in `{raw}` is not a host name"))?
        };
        Ok(UrlGlob {
            scheme,
            host: host.split('.').map(str::to_string).collect(),
            port,
            path: segments(path),
        })
    }

    /// Does the rule match `url` (as the URL parser prints it)?
    pub fn matches(&self, url: &str) -> bool {
        let Ok(url) = Url::parse(url) else {
            return false;
        };
        let Some(host) = url.host_str() else {
            return false;
        };
        let port_ok = match self.port {
            PortGlob::Default => url.port().is_none(),
            PortGlob::Any => true,
            PortGlob::Exact(p) => url.port() == Some(p),
        };
        let labels: Vec<&str> = host.split('.').collect();
        let segments = segments(url.path());
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        super::pattern::wildcard_matches(&self.scheme, url.scheme())
            && port_ok
            && sequence_matches(&self.host, &labels, 1)
            && sequence_matches(&self.path, &segments, 0)
    }

    /// The host when the rule names it literally (no wildcard).
    pub fn literal_host(&self) -> Option<String> {
        let host = self.host.join(".");
        (!host.contains('*')).then_some(host)
    }
}

/// A path's segments as a lenient web server reads them: percent escapes
/// decoded (so `%2f` and `\` separate segments too), empty and `.`
/// segments dropped, `..` taking away the segment before it. A rule is
/// matched against what the server will serve, not against one spelling of
/// it: `//secret`, `/se%63ret` and `/public/..%2fsecret` are all `/secret`.
fn segments(path: &str) -> Vec<String> {
    let decoded = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
    let mut out: Vec<String> = Vec::new();
    for segment in decoded.split(['/', '\\']) {
        match segment {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            other => out.push(other.to_string()),
        }
    }
    // The root is one empty segment, so `https://docs.rs/*` matches it.
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// `host:port`, `[::1]:port`, `host`.
fn split_port(authority: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("`{authority}` opens `[` without closing it"))?;
        let host = &authority[..inside.len() + 2];
        return match after.strip_prefix(':') {
            Some(port) => Ok((host, Some(port))),
            None if after.is_empty() => Ok((host, None)),
            None => Err(format!("`{authority}` has text after `]`")),
        };
    }
    Ok(match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    })
}

/// A literal host as the URL parser prints it, so a rule naming
/// `127.0.0.1` also names `127.1` and `2130706433`.
fn literal_host(host: &str) -> Option<String> {
    let url = Url::parse(&format!("http://{host}/")).ok()?;
    url.host_str().map(str::to_string)
}

/// `pattern` against `parts`, element by element: `**` matches at least
/// `least` elements (one label of a host, zero segments of a path); any
/// other element is a wildcard within one element.
fn sequence_matches(pattern: &[String], parts: &[&str], least: usize) -> bool {
    match pattern.split_first() {
        None => parts.is_empty(),
        Some((first, rest)) if first == "**" => {
            (least..=parts.len()).any(|skip| sequence_matches(rest, &parts[skip..], least))
        }
        Some((first, rest)) => parts.split_first().is_some_and(|(part, others)| {
            super::pattern::wildcard_matches(first, part) && sequence_matches(rest, others, least)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(rule: &str, url: &str) -> bool {
        let glob = UrlGlob::parse(rule).unwrap();
        let url = super::super::pattern::normalize_url(url);
        glob.matches(&url)
    }

    // Regression: `*` crossed `/` and `.`, so `http://*.example.com/*`
    // allowed `http://127.0.0.1:P/.example.com/x`.
    #[test]
    fn url_globs_match_hosts_by_label_and_paths_by_segment() {
        let table = [
            ("http://*.example.com/*", "http://a.example.com/x", true),
            ("http://*.example.com/*", "http://A.Example.COM/x", true),
            ("http://*.example.com/*", "http://example.com/x", false),
            ("http://*.example.com/*", "http://a.b.example.com/x", false),
            ("http://**.example.com/*", "http://a.b.example.com/x", true),
            ("http://**.example.com/*", "http://example.com/x", false),
            ("http://*.example.com/*", "http://example.com.evil/x", false),
            (
                "http://*.example.com/*",
                "http://a.example.com.evil/x",
                false,
            ),
            (
                "http://*.example.com/*",
                "http://127.0.0.1:8080/.example.com/x",
                false,
            ),
            (
                "http://*.example.com/*",
                "http://127.0.0.1/.example.com/x",
                false,
            ),
            ("http://*.example.com/*", "http://a.example.com/x/y", false),
            ("http://*.example.com/**", "http://a.example.com/x/y", true),
            (
                "http://*.example.com/*",
                "http://a.example.com:8080/x",
                false,
            ),
            (
                "http://*.example.com:*/*",
                "http://a.example.com:8080/x",
                true,
            ),
            ("https://docs.rs/*", "https://docs.rs", true),
            ("https://docs.rs/*", "https://docs.rs/serde?x=/a/b", true),
            (
                "https://docs.rs/**",
                "https://docs.rs/serde/latest/serde/",
                true,
            ),
            ("https://docs.rs/**", "https://docs.rs:443/serde", true),
            ("https://docs.rs/**", "http://docs.rs/serde", false),
            ("https://docs.rs/**", "https://docs.rs.evil.example/", false),
            ("https://docs.rs/**", "https://docs.rs@evil.example/", false),
            (
                "https://docs.rs/**",
                "https://evil.example/https://docs.rs/",
                false,
            ),
            ("https://docs.rs/a/**/z", "https://docs.rs/a/z", true),
            ("https://docs.rs/a/**/z", "https://docs.rs/a/b/c/z", true),
            ("https://docs.rs/a*", "https://docs.rs/ab", true),
            ("https://docs.rs/a*", "https://docs.rs/a/b", false),
            ("http://127.0.0.1:*/**", "http://127.1:9/x", true),
            ("http://127.0.0.1:*/**", "http://2130706433:9/x", true),
            ("http://127.0.0.1:*/**", "http://0.0.0.0:9/x", false),
            ("http://[::1]:*/**", "http://[0:0::1]:9/x", true),
            ("*://docs.rs/**", "http://docs.rs/x", true),
            ("domain:docs.rs", "https://docs.rs/a/b", true),
            ("domain:docs.rs", "https://a.docs.rs/", false),
            // Regression: a path rule was matched against the path as
            // written, not as a server reads it.
            (
                "https://docs.rs/secret/**",
                "https://docs.rs//secret/a",
                true,
            ),
            (
                "https://docs.rs/secret/**",
                "https://docs.rs/se%63ret/a",
                true,
            ),
            (
                "https://docs.rs/secret/**",
                "https://docs.rs/a/..%2fsecret/a",
                true,
            ),
            (
                "https://docs.rs/public/**",
                "https://docs.rs/public%2f..%2fx",
                false,
            ),
            ("https://docs.rs/*", "https://docs.rs/", true),
        ];
        for (rule, url, expected) in table {
            assert_eq!(matches(rule, url), expected, "{rule} vs {url}");
        }
    }

    #[test]
    fn literal_hosts_are_named_as_the_parser_prints_them() {
        let host = |rule: &str| UrlGlob::parse(rule).unwrap().literal_host();
        assert_eq!(host("http://127.1/x").as_deref(), Some("127.0.0.1"));
        assert_eq!(host("http://LocalHost:*/x").as_deref(), Some("localhost"));
        assert_eq!(host("http://*.example.com/x"), None);
    }

    #[test]
    fn bad_url_rules_say_what_was_expected() {
        for bad in [
            "docs.rs/*",
            "file:///etc/passwd",
            "https://user@docs.rs/",
            "https:///x",
            "https://docs.rs:http/",
            "https://[::1/",
        ] {
            let e = UrlGlob::parse(bad).unwrap_err();
            assert!(!e.reason.is_empty(), "{bad}");
        }
    }
}
