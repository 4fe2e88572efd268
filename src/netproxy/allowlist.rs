//! `sandbox.network: [host patterns]`: which hosts sandboxed commands reach.
//!
//! A user writes the entries in YAML the way they would tell a colleague:
//! `crates.io`, `"*.crates.io"`, `registry.test:8080`, `127.0.0.1:9000`,
//! `preset:cargo`. They are parsed once, here, into rules that remember how
//! they were written, so a refusal or a `network.request` event can name
//! the rule. In a host `*` stands for exactly one DNS label and `**` for one
//! or more (as in the host of a `web_fetch` URL rule): `*.crates.io`
//! matches `static.crates.io`, not `crates.io` nor `a.b.crates.io`. A rule
//! without a port allows 80 and 443 (http and https), `host:*` any port.
//! Globs match names only, never an address.
//!
//! Which addresses a host may resolve to is not decided here, but a
//! [`Decision`] says whether the rule named the host literally: only then
//! may it be a loopback or private address (see [`super::address`]).

use super::address::{canonical_host, host_address};

/// The presets: name (after `preset:`) → the host patterns it stands for.
const PRESETS: &[(&str, &[&str])] = &[
    (
        "cargo",
        &["crates.io", "*.crates.io", "static.rust-lang.org"],
    ),
    ("npm", &["registry.npmjs.org", "registry.yarnpkg.com"]),
    ("pypi", &["pypi.org", "files.pythonhosted.org"]),
    (
        "github",
        &[
            "github.com",
            "*.github.com",
            "*.githubusercontent.com",
            "codeload.github.com",
        ],
    ),
    (
        "go",
        &[
            "proxy.golang.org",
            "sum.golang.org",
            "storage.googleapis.com",
        ],
    ),
];

/// The presets, name (as written after `preset:`) → host patterns, for
/// documentation and `doctor`.
pub fn presets() -> impl Iterator<Item = (&'static str, &'static [&'static str])> {
    PRESETS.iter().copied()
}

/// An entry of `sandbox.network` that is not a host pattern.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllowlistError {
    #[error(
        "entry {index} of sandbox.network is empty; write a host such as `crates.io` or a \
         preset such as `preset:cargo`"
    )]
    Empty { index: usize },
    #[error("`{entry}` in sandbox.network is not a preset; the presets are {known}")]
    UnknownPreset { entry: String, known: String },
    #[error("`{entry}` in sandbox.network is a URL; write the host only: `{host}`")]
    Url { entry: String, host: String },
    #[error(
        "the port in `{entry}` in sandbox.network must be a number from 1 to 65535, or `*` \
         for any port (without a port, 80 and 443 are allowed)"
    )]
    BadPort { entry: String },
    #[error("`{entry}` in sandbox.network is not a host pattern: {why}")]
    BadHost { entry: String, why: &'static str },
}

/// The parsed `sandbox.network` list.
#[derive(Clone, Debug, Default)]
pub struct NetworkAllowlist {
    rules: Vec<Rule>,
}

/// Whether a host and port may be reached, and by which rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// The entry that allowed it, as written (`preset:cargo` for a
    /// preset's host); `None` when no rule matches.
    pub rule: Option<String>,
    /// The rule names this exact host (no glob, not a preset), so the host
    /// may resolve to a loopback or private address.
    pub named_literally: bool,
}

#[derive(Clone, Debug)]
struct Rule {
    /// The entry as the user wrote it.
    written: String,
    host: HostPattern,
    ports: Ports,
    /// From a preset rather than named by the user.
    preset: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum HostPattern {
    /// A canonical host (see [`canonical_host`]).
    Exact(String),
    /// Labels, each `*`, `**` or literal (lower case).
    Glob(Vec<String>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ports {
    /// 80 and 443: what a host without a port means on the web.
    Web,
    Exact(u16),
    Any,
}

impl NetworkAllowlist {
    /// Parse the entries as written in the job file. The first bad entry is
    /// the error.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, AllowlistError> {
        let mut rules = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let entry = entry.as_ref().trim();
            if entry.is_empty() {
                return Err(AllowlistError::Empty { index: index + 1 });
            }
            if let Some(name) = entry.strip_prefix("preset:") {
                let (_, hosts) = PRESETS
                    .iter()
                    .find(|(known, _)| *known == name.trim())
                    .ok_or_else(|| AllowlistError::UnknownPreset {
                        entry: entry.to_string(),
                        known: preset_names(),
                    })?;
                for host in *hosts {
                    let mut rule = parse_rule(host)?;
                    rule.written = entry.to_string();
                    rule.preset = true;
                    rules.push(rule);
                }
            } else {
                rules.push(parse_rule(entry)?);
            }
        }
        Ok(NetworkAllowlist { rules })
    }

    /// True when the list has no entries (nothing is reachable).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// May `host` (a name or an address, in any spelling) be reached on
    /// `port`? A rule naming the host literally wins over a glob or preset
    /// that also matches, so it keeps its right to a private address.
    pub fn decide(&self, host: &str, port: u16) -> Decision {
        let Some(host) = canonical_host(host) else {
            return Decision::denied();
        };
        let mut matching = self.rules.iter().filter(|r| r.matches(&host, port));
        let Some(first) = matching.next() else {
            return Decision::denied();
        };
        let chosen = if first.names_literally() {
            first
        } else {
            matching.find(|r| r.names_literally()).unwrap_or(first)
        };
        Decision {
            allowed: true,
            rule: Some(chosen.written.clone()),
            named_literally: chosen.names_literally(),
        }
    }

    /// The preset that would allow `host` on `port`, to suggest in a refusal.
    pub fn preset_for(host: &str, port: u16) -> Option<&'static str> {
        let host = canonical_host(host)?;
        PRESETS.iter().find_map(|(name, hosts)| {
            hosts
                .iter()
                .filter_map(|h| parse_rule(h).ok())
                .any(|rule| rule.matches(&host, port))
                .then_some(*name)
        })
    }
}

impl Decision {
    fn denied() -> Self {
        Decision {
            allowed: false,
            rule: None,
            named_literally: false,
        }
    }
}

impl Rule {
    fn names_literally(&self) -> bool {
        !self.preset && matches!(self.host, HostPattern::Exact(_))
    }

    /// `host` is canonical.
    fn matches(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.ports {
            Ports::Web => port == 80 || port == 443,
            Ports::Exact(p) => p == port,
            Ports::Any => true,
        };
        port_ok
            && match &self.host {
                HostPattern::Exact(exact) => exact == host,
                HostPattern::Glob(labels) => {
                    let parts: Vec<&str> = host.split('.').collect();
                    host_address(host).is_err() && labels_match(labels, &parts)
                }
            }
    }
}

fn preset_names() -> String {
    let names: Vec<String> = PRESETS
        .iter()
        .map(|(name, _)| format!("`preset:{name}`"))
        .collect();
    names.join(", ")
}

/// One entry that is not a preset.
fn parse_rule(entry: &str) -> Result<Rule, AllowlistError> {
    if entry.contains("://") {
        let host = reqwest::Url::parse(entry)
            .ok()
            .and_then(|url| {
                let host = url.host_str()?.to_string();
                Some(match url.port() {
                    Some(port) => format!("{host}:{port}"),
                    None => host,
                })
            })
            .unwrap_or_else(|| "host".to_string());
        return Err(AllowlistError::Url {
            entry: entry.to_string(),
            host,
        });
    }
    let bad_host = |why| AllowlistError::BadHost {
        entry: entry.to_string(),
        why,
    };
    if entry.contains(['/', '?', '#']) {
        return Err(bad_host("a host has no path; write it without `/…`"));
    }
    if entry.contains('@') {
        return Err(bad_host("write the host without a user name (`user@`)"));
    }
    let (host, port) = split_port(entry)
        .ok_or_else(|| bad_host("an IPv6 address is written `[::1]` or `[::1]:9000`"))?;
    let ports = match port {
        None => Ports::Web,
        Some("*") => Ports::Any,
        Some(digits) => match digits.parse::<u16>() {
            Ok(p) if p > 0 => Ports::Exact(p),
            _ => {
                return Err(AllowlistError::BadPort {
                    entry: entry.to_string(),
                });
            }
        },
    };
    let host = if host.contains('*') {
        HostPattern::Glob(glob_labels(host).map_err(bad_host)?)
    } else {
        HostPattern::Exact(canonical_host(host).ok_or_else(|| {
            bad_host("write a host name such as `crates.io` or an address such as `127.0.0.1`")
        })?)
    };
    Ok(Rule {
        written: entry.to_string(),
        host,
        ports,
        preset: false,
    })
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6 address;
/// `None` for a bracket left open or text after it.
fn split_port(entry: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = entry.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let host = &entry[..inside.len() + 2];
        return match after.strip_prefix(':') {
            Some(port) => Some((host, Some(port))),
            None => after.is_empty().then_some((host, None)),
        };
    }
    if entry.matches(':').count() > 1 {
        // A bare IPv6 address: it has no port.
        return Some((entry, None));
    }
    Some(match entry.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (entry, None),
    })
}

/// The labels of a glob host, each `*`, `**` or a name's label.
fn glob_labels(host: &str) -> Result<Vec<String>, &'static str> {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let labels: Vec<String> = host.split('.').map(str::to_string).collect();
    if labels.iter().all(|l| l == "*" || l == "**") {
        return Err(
            "a pattern of wildcards only would allow every host; write `sandbox.network: true` \
             for that",
        );
    }
    for label in &labels {
        let name_label = !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !(label == "*" || label == "**" || name_label) {
            return Err(if label.contains('*') {
                "`*` stands for a whole label (`*.example.com`), not part of one"
            } else {
                "a label of a host pattern is letters, digits, `-` or `_`"
            });
        }
    }
    Ok(labels)
}

/// `pattern` against `parts`, label by label: `*` is one label, `**` one
/// or more.
fn labels_match(pattern: &[String], parts: &[&str]) -> bool {
    match pattern.split_first() {
        None => parts.is_empty(),
        Some((first, rest)) if first == "**" => {
            (1..=parts.len()).any(|skip| labels_match(rest, &parts[skip..]))
        }
        Some((first, rest)) => parts.split_first().is_some_and(|(part, others)| {
            (first == "*" || first == part) && labels_match(rest, others)
        }),
    }
}

#[cfg(test)]
mod tests;
