//! `sandbox.network: [hosts]`: commands keep their private network
//! namespace and reach the outside only through agentci's proxy, which lets
//! through the hosts the job lists, refuses the rest, and refuses loopback
//! and private addresses unless an entry names the host itself. Judged by
//! what a local server (standing in for a registry) received, as root and
//! as an unprivileged user; every connection is a `network.request` event
//! and a line of `agentci trace show`.
//!
//! The proxy resolves host names itself; the test switch
//! `AGENTCI_TEST_RESOLVE` (debug builds only) makes the test's names
//! resolve to 127.0.0.1, where the test's server listens.

use serde_json::{Value, json};

use super::sandbox::enforced;
use super::sandbox_root::attack;
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr};
use super::support::origin::Origin;
use super::support::users::RunAs;

/// The registry commands reach through the proxy, answering
/// `registry says hello` on every path.
fn registry() -> Origin {
    Origin::start("registry.test", |_| Some(b"registry says hello\n".to_vec()))
}

fn network_events(trace: &[Value]) -> Vec<&Value> {
    events(trace, "network.request")
}

#[test]
fn only_listed_hosts_are_reached_through_the_proxy() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let registry = registry();
        let port = registry.port;
        let sb = Sandbox::new();
        let sandbox = format!(
            "permissions: {{default: allow}}\n\
             sandbox: {{network: [\"registry.test:{port}\", \"*.internal:{port}\"]}}"
        );
        let commands = [
            // Listed: a plain request forwarded, and a CONNECT tunnel.
            format!("curl -sS -m 10 http://registry.test:{port}/index"),
            format!("curl -sS -m 10 -p http://registry.test:{port}/tunnel"),
            // Not listed.
            format!("curl -sS -m 10 -o /dev/null -w '%{{http_code}}' http://other.test:{port}/"),
            // Listed by a glob only, and it resolves to a loopback address.
            format!("curl -sS -m 10 -o /dev/null -w '%{{http_code}}' http://db.internal:{port}/"),
            // Around the proxy: the host's 127.0.0.1 is not the sandbox's.
            format!("curl -sS -m 5 --noproxy '*' http://127.0.0.1:{port}/direct; echo exit=$?"),
        ];
        let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
        let resolve = "registry.test=127.0.0.1,other.test=127.0.0.1,db.internal=127.0.0.1";
        let (out, trace, outputs) = attack(
            &sb,
            user,
            &commands,
            &sandbox,
            &[("AGENTCI_TEST_RESOLVE", resolve)],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        if !enforced(&trace, "network") {
            continue;
        }
        assert!(outputs[0].contains("registry says hello"), "{}", outputs[0]);
        assert!(outputs[1].contains("registry says hello"), "{}", outputs[1]);
        assert!(outputs[2].contains("403"), "{}", outputs[2]);
        assert!(outputs[3].contains("403"), "{}", outputs[3]);
        assert!(
            !outputs[4].contains("registry says hello"),
            "{}",
            outputs[4]
        );
        // The registry saw the two allowed requests and nothing else.
        assert_eq!(registry.heard(), 2, "{outputs:?}");
        assert_eq!(registry.served(), 2, "{outputs:?}");

        let records = network_events(&trace);
        let find = |host: &str, method: &str| {
            records
                .iter()
                .find(|r| r["host"] == host && r["method"] == method)
                .unwrap_or_else(|| panic!("no {method} {host} in {records:?}"))
        };
        let forwarded = find("registry.test", "GET");
        assert_eq!(forwarded["allowed"], true);
        assert_eq!(forwarded["rule"], format!("registry.test:{port}"));
        assert!(forwarded["bytes_received"].as_u64().unwrap() > 0);
        assert_eq!(find("registry.test", "CONNECT")["allowed"], true);
        let unlisted = find("other.test", "GET");
        assert_eq!(unlisted["allowed"], false);
        assert_eq!(unlisted["outcome"], "not_listed");
        let private = find("db.internal", "GET");
        assert_eq!(private["allowed"], false);
        assert_eq!(private["outcome"], "not_public");
        assert_eq!(
            events(&trace, "run.started")[0]["sandbox"]["hosts"],
            serde_json::json!([
                format!("registry.test:{port}"),
                format!("*.internal:{port}")
            ])
        );

        let shown = sb.agentci(&["trace", "show", "out/trace.jsonl"]);
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(
            shown.contains(&format!(
                "network: GET registry.test:{port} allowed by registry.test:{port}"
            )),
            "{shown}"
        );
        assert!(
            shown.contains(&format!("network: GET other.test:{port} refused")),
            "{shown}"
        );
    }
}

/// `web_fetch` runs in agentci's own process, but with a host list it goes
/// through the same proxy: a URL the permission rules allow still needs its
/// host in `sandbox.network`, and each fetch is a `network.request` event.
#[test]
fn web_fetch_goes_through_the_same_proxy_and_list() {
    let registry = registry();
    let port = registry.port;
    let fetch = |id: &str, url: String| (id.to_string(), "web_fetch", json!({ "url": url }));
    let calls = [
        fetch("call_0", format!("http://registry.test:{port}/page")),
        fetch("call_1", format!("http://other.test:{port}/page")),
    ];
    let model = FakeModel::start(vec![
        Reply::plan(&[("Fetch", "fetched")]),
        Reply::tool_calls(
            calls
                .iter()
                .map(|(id, t, a)| (id.as_str(), *t, a.clone()))
                .collect(),
        ),
        Reply::step_done("fetched"),
        Reply::text("done"),
    ]);
    let sb = Sandbox::new();
    sb.skill("runner", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: fetch\nskill: runner\ngoal: Fetch.\n\
             model: {{provider: openai, name: fake-model, base_url: {}}}\n\
             workspace: ws\nskills_path: [skills]\ntools: [web_fetch]\n\
             permissions: {{allow: [\"web_fetch(http://*.test:{port}/**)\"]}}\n\
             sandbox: {{network: [\"registry.test:{port}\"]}}\n",
            model.base_url()
        ),
    );
    let out = super::support::harness::agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--progress",
            "none",
        ],
        &[(
            "AGENTCI_TEST_RESOLVE",
            "registry.test=127.0.0.1,other.test=127.0.0.1",
        )],
    );
    assert!(out.status.code().is_some(), "{}", stderr(&out));
    let listed = model.tool_result("call_0");
    let unlisted = model.tool_result("call_1");
    assert!(listed.contains("registry says hello"), "{listed}");
    assert!(!unlisted.contains("registry says hello"), "{unlisted}");
    assert!(unlisted.contains("sandbox.network"), "{unlisted}");
    assert_eq!(registry.heard(), 1);
    assert_eq!(registry.served(), 1);
    let trace = sb.trace("out/trace.jsonl");
    let records = network_events(&trace);
    assert!(
        records
            .iter()
            .any(|r| r["host"] == "registry.test" && r["allowed"] == true),
        "{records:?}"
    );
    assert!(
        records
            .iter()
            .any(|r| r["host"] == "other.test" && r["allowed"] == false),
        "{records:?}"
    );
}

/// Mistakes in the list are reported where they stand, with the fix.
#[test]
fn a_bad_host_list_is_reported_at_its_entry() {
    let sb = Sandbox::new();
    sb.skill("runner", None);
    let job = |network: &str| {
        format!(
            "version: 1\nname: net\nskill: runner\ngoal: Run.\n\
             model: {{provider: openai, name: fake-model, base_url: http://127.0.0.1:9/v1}}\n\
             workspace: ws\nskills_path: [skills]\nsandbox:\n  network: {network}\n"
        )
    };
    sb.write("preset.yaml", &job("[crates.io, \"preset:cragor\"]"));
    sb.write("url.yaml", &job("[\"https://crates.io/api\"]"));
    sb.write("empty.yaml", &job("[]"));
    for (name, file) in [
        ("network_unknown_preset", "preset.yaml"),
        ("network_url_for_a_host", "url.yaml"),
        ("network_empty_list", "empty.yaml"),
    ] {
        let out = sb.agentci(&["validate", file]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        insta::assert_snapshot!(name, format!("{stdout}{}", stderr(&out)));
    }
}

/// The test's origin refuses what a real HTTP/1.1 server refuses, so a
/// proxy that forwarded a request wrongly would fail the tests above.
#[test]
fn the_test_origin_refuses_what_a_real_server_refuses() {
    use std::io::{Read, Write};
    let origin = registry();
    let port = origin.port;
    let status = |request: String| {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer.lines().next().unwrap_or_default().to_string()
    };
    let host = format!("registry.test:{port}");
    assert_eq!(
        status("GET / HTTP/1.1\r\n\r\n".into()),
        "HTTP/1.1 400 Bad Request"
    );
    assert_eq!(
        status(format!(
            "GET http://{host}/ HTTP/1.1\r\nHost: {host}\r\n\r\n"
        )),
        "HTTP/1.1 400 Bad Request"
    );
    assert_eq!(
        status(format!(
            "GET / HTTP/1.1\r\nHost: {host}\r\nProxy-Authorization: x\r\n\r\n"
        )),
        "HTTP/1.1 400 Bad Request"
    );
    assert_eq!(
        status("GET / HTTP/1.1\r\nHost: other.test\r\n\r\n".into()),
        "HTTP/1.1 421 Misdirected Request"
    );
    assert_eq!(
        status(format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n")),
        "HTTP/1.1 200 OK"
    );
    assert_eq!((origin.heard(), origin.served()), (5, 1));
}
