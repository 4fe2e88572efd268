use super::*;

fn decide(entries: &[&str], host: &str, port: u16) -> Decision {
    NetworkAllowlist::parse(entries).unwrap().decide(host, port)
}

fn allows(entries: &[&str], host: &str, port: u16) -> bool {
    decide(entries, host, port).allowed
}

#[test]
fn hosts_globs_and_ports_match_as_written() {
    let table: &[(&[&str], &str, u16, bool)] = &[
        (&["crates.io"], "crates.io", 443, true),
        (&["crates.io"], "crates.io", 80, true),
        (&["crates.io"], "crates.io", 8080, false),
        (&["crates.io"], "CRATES.IO.", 443, true),
        (&["crates.io"], "static.crates.io", 443, false),
        (&["crates.io"], "crates.io.evil", 443, false),
        (&["*.crates.io"], "static.crates.io", 443, true),
        (&["*.crates.io"], "Static.Crates.IO", 443, true),
        (&["*.crates.io"], "crates.io", 443, false),
        (&["*.crates.io"], "a.b.crates.io", 443, false),
        (&["*.crates.io"], "static.crates.io.evil", 443, false),
        (&["**.crates.io"], "a.b.crates.io", 443, true),
        (&["**.crates.io"], "crates.io", 443, false),
        (&["api.*.example"], "api.eu.example", 443, true),
        (&["*.example"], "127.0.0.1", 443, false),
        (&["*.0.0.1"], "127.0.0.1", 443, false),
        (&["registry.test:8080"], "registry.test", 8080, true),
        (&["registry.test:8080"], "registry.test", 443, false),
        (&["registry.test:*"], "registry.test", 1, true),
        (&["127.0.0.1:8080"], "127.0.0.1", 8080, true),
        (&["127.0.0.1:8080"], "127.1", 8080, true),
        (&["127.0.0.1:8080"], "2130706433", 8080, true),
        (&["127.0.0.1:8080"], "127.0.0.2", 8080, false),
        (&["[::1]:9000"], "::1", 9000, true),
        (&["[::1]:9000"], "[::1]", 9000, true),
        (&["::1"], "[::1]", 443, true),
        (&["[::1]"], "[0::1]", 80, true),
        (&["crates.io."], "crates.io", 443, true),
        (&["bücher.example"], "xn--bcher-kva.example", 443, true),
        (&[], "crates.io", 443, false),
        (&["crates.io"], "", 443, false),
        (&["crates.io"], "crates.io:443", 443, false),
    ];
    for (entries, host, port, want) in table {
        assert_eq!(
            allows(entries, host, *port),
            *want,
            "{entries:?} {host}:{port}"
        );
    }
}

#[test]
fn presets_stand_for_their_hosts_and_name_none_literally() {
    let table = [
        ("preset:cargo", "crates.io"),
        ("preset:cargo", "static.crates.io"),
        ("preset:cargo", "index.crates.io"),
        ("preset:cargo", "static.rust-lang.org"),
        ("preset:npm", "registry.npmjs.org"),
        ("preset:npm", "registry.yarnpkg.com"),
        ("preset:pypi", "pypi.org"),
        ("preset:pypi", "files.pythonhosted.org"),
        ("preset:github", "github.com"),
        ("preset:github", "api.github.com"),
        ("preset:github", "raw.githubusercontent.com"),
        ("preset:github", "codeload.github.com"),
        ("preset:go", "proxy.golang.org"),
        ("preset:go", "sum.golang.org"),
        ("preset:go", "storage.googleapis.com"),
    ];
    for (preset, host) in table {
        let decision = decide(&[preset], host, 443);
        assert_eq!(
            decision,
            Decision {
                allowed: true,
                rule: Some(preset.to_string()),
                named_literally: false
            },
            "{preset} {host}"
        );
        assert_eq!(
            NetworkAllowlist::preset_for(host, 443),
            preset.strip_prefix("preset:")
        );
    }
    assert!(!allows(&["preset:cargo"], "crates.io", 22));
    assert!(!allows(&["preset:npm"], "npmjs.org", 443));
    let names: Vec<&str> = presets().map(|(name, _)| name).collect();
    assert_eq!(names, ["cargo", "npm", "pypi", "github", "go"]);
}

#[test]
fn a_literal_rule_wins_over_a_glob_that_also_matches() {
    let decision = decide(
        &["*.test", "preset:cargo", "registry.test"],
        "registry.test",
        443,
    );
    assert_eq!(
        decision,
        Decision {
            allowed: true,
            rule: Some("registry.test".into()),
            named_literally: true
        }
    );
    let decision = decide(&["*.test"], "registry.test", 443);
    assert_eq!(decision.rule.as_deref(), Some("*.test"));
    assert!(!decision.named_literally);
    let decision = decide(&["127.0.0.1:8080"], "127.0.0.1", 8080);
    assert!(decision.named_literally);
    assert_eq!(decide(&["a.test"], "b.test", 443), Decision::denied());
}

#[test]
fn bad_entries_name_the_entry_and_the_fix() {
    let table: &[(&[&str], &str)] = &[
        (
            &["crates.io", "  "],
            "entry 2 of sandbox.network is empty; write a host such as `crates.io` or a preset \
             such as `preset:cargo`",
        ),
        (
            &["preset:maven"],
            "`preset:maven` in sandbox.network is not a preset; the presets are `preset:cargo`, \
             `preset:npm`, `preset:pypi`, `preset:github`, `preset:go`",
        ),
        (
            &["https://crates.io/api/v1"],
            "`https://crates.io/api/v1` in sandbox.network is a URL; write the host only: \
             `crates.io`",
        ),
        (
            &["http://registry.test:8080/"],
            "`http://registry.test:8080/` in sandbox.network is a URL; write the host only: \
             `registry.test:8080`",
        ),
        (
            &["crates.io:https"],
            "the port in `crates.io:https` in sandbox.network must be a number from 1 to 65535, \
             or `*` for any port (without a port, 80 and 443 are allowed)",
        ),
        (
            &["crates.io:0"],
            "the port in `crates.io:0` in sandbox.network must be a number from 1 to 65535, or \
             `*` for any port (without a port, 80 and 443 are allowed)",
        ),
        (
            &["crates.io:70000"],
            "the port in `crates.io:70000` in sandbox.network must be a number from 1 to 65535, \
             or `*` for any port (without a port, 80 and 443 are allowed)",
        ),
        (
            &["crates.io/api"],
            "`crates.io/api` in sandbox.network is not a host pattern: a host has no path; write \
             it without `/…`",
        ),
        (
            &["*"],
            "`*` in sandbox.network is not a host pattern: a pattern of wildcards only would \
             allow every host; write `sandbox.network: true` for that",
        ),
        (
            &["cr*tes.io"],
            "`cr*tes.io` in sandbox.network is not a host pattern: `*` stands for a whole label \
             (`*.example.com`), not part of one",
        ),
        (
            &["[::1"],
            "`[::1` in sandbox.network is not a host pattern: an IPv6 address is written `[::1]` \
             or `[::1]:9000`",
        ),
        (
            &["user@crates.io"],
            "`user@crates.io` in sandbox.network is not a host pattern: write the host without \
             a user name (`user@`)",
        ),
        (
            &["crates io"],
            "`crates io` in sandbox.network is not a host pattern: write a host name such as \
             `crates.io` or an address such as `127.0.0.1`",
        ),
    ];
    for (entries, message) in table {
        let error = NetworkAllowlist::parse(entries).unwrap_err();
        assert_eq!(error.to_string(), *message, "{entries:?}");
    }
}
