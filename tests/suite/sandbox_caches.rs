//! `sandbox.writable`: the caches package managers need, made writable by
//! folder or by preset, and nothing more.
//!
//! What broke before: under the default sandbox children wrote only the
//! workspace, their temporary folder and the build folder, so `cargo
//! update` in the shipped `bump-dependency` job failed with `Permission
//! denied` writing `~/.cargo/registry`. Now `writable: [preset:cargo]`
//! opens `$CARGO_HOME/registry` and `$CARGO_HOME/git`, created when
//! missing. The end-to-end test runs real `cargo` against a registry on
//! disk with no network at all, as root and as an unprivileged user, once
//! with the preset (the bump lands and the checks pass) and once without
//! (the same commands are refused by the kernel), so the preset is what
//! makes it work. A second one serves the registry over HTTP, reached only
//! through agentci's proxy when the job lists it in `sandbox.network`, as
//! the shipped job lists `preset:cargo`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

use super::sandbox::enforced;
use super::sandbox_root::attack;
use super::support::harness::{Sandbox, agentci_in, events, stderr, stdout};
use super::support::origin::Origin;
use super::support::prerequisites;
use super::support::users::RunAs;

/// The crate the fixture depends on, its versions and what each prints.
const CRATE: &str = "sprocket";
const OLD: (&str, &str) = ("1.0.0", "old");
const NEW: (&str, &str) = ("1.1.0", "new");

/// A job of the sandbox tests' shape with `sandbox` and more keys.
fn validate_job(sb: &Sandbox, name: &str, keys: &str) {
    sb.skill("runner", None);
    sb.write(
        name,
        &format!(
            "version: 1\nname: caches\nskill: runner\ngoal: Bump.\n\
             model: {{provider: openai, name: fake-model, base_url: http://127.0.0.1:9/v1}}\n\
             workspace: ws\nskills_path: [skills]\nvars: {{cache: /opt/cache}}\n{keys}"
        ),
    );
}

/// Every wrong entry is an error at its own line and column that says
/// what to write instead; `validate` and `run` both stop on them.
#[test]
fn bad_writable_entries_are_reported_at_their_place() {
    let sb = Sandbox::new();
    let ws = sb.workspace().display().to_string();
    let cases = [
        (
            "relative",
            "sandbox:\n  writable: [cache/cargo]\n".to_string(),
        ),
        (
            "protected",
            format!("sandbox:\n  writable:\n    - {ws}/.git/hooks\n    - {ws}/.agentci\n"),
        ),
        (
            "above_workspace",
            format!("sandbox:\n  writable: [{}]\n", sb.path().display()),
        ),
        (
            "system",
            "sandbox:\n  writable: [/, /etc/cargo, /usr/lib64, /var, \"~\"]\n".to_string(),
        ),
        (
            "not_text",
            "sandbox:\n  writable:\n    - ~\n    - 3\n    - ~/.npm\n    - \"\"\n".to_string(),
        ),
        (
            "unknown_preset",
            "sandbox:\n  writable: [preset:cargo, preset:maven]\n".to_string(),
        ),
        (
            "read_only",
            "sandbox:\n  profile: read-only\n  writable: [preset:npm]\n".to_string(),
        ),
        (
            "unknown_key",
            "sandbox:\n  writable: [preset:pip]\n  writeable: [/opt]\n".to_string(),
        ),
        (
            "dot_dot",
            "sandbox:\n  writable: [\"~/../etc\", \"${{ vars.cache }}/../x\"]\n".to_string(),
        ),
    ];
    let escaped = regex::escape(&sb.path().display().to_string());
    let filters = vec![(escaped.as_str(), "[SB]")];
    for (name, keys) in cases {
        let file = format!("{name}.yaml");
        validate_job(&sb, &file, &keys);
        let out = sb.agentci(&["validate", &file]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stdout(&out));
        let text = format!("{}{}", stdout(&out), stderr(&out));
        insta::with_settings!({filters => filters.clone()}, {
            insta::assert_snapshot!(format!("writable_{name}"), text);
        });
        let out = sb.agentci(&["run", &file, "--progress", "none"]);
        assert_eq!(out.status.code(), Some(2), "{name}: run: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{file}:")),
            "{name}: run names no place: {}",
            stderr(&out)
        );
    }
}

/// `validate` shows where each entry leads in this environment, the
/// variables a preset reads included, and warns about one that a run
/// here would refuse.
#[test]
fn validate_shows_the_folders_each_entry_leads_to() {
    let sb = Sandbox::new();
    validate_job(
        &sb,
        "job.yaml",
        "sandbox:\n  writable: [preset:cargo, preset:go, \"${{ vars.cache }}/tool\", ~/.cache/tool]\n",
    );
    validate_job(&sb, "refused.yaml", "sandbox:\n  writable: [preset:npm]\n");
    let env = [
        ("HOME", "/home/tester"),
        ("CARGO_HOME", "/opt/cargo-home"),
        ("GOPATH", "/opt/go:/elsewhere"),
        ("GOCACHE", "/opt/go-build"),
        ("npm_config_cache", "/etc/npm"),
    ];
    let out = agentci_in(sb.path(), &["validate", "job.yaml", "refused.yaml"], &env);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{text}");
    insta::assert_snapshot!("writable_validate_printout", text);
}

/// A preset whose variable leads into agentci's own files, or into a
/// system folder, stops the run at start with the entry's place; nothing
/// is created there.
#[test]
fn a_preset_leading_into_kept_places_stops_the_run_at_start() {
    let sb = Sandbox::new();
    validate_job(&sb, "job.yaml", "sandbox:\n  writable: [preset:npm]\n");
    let agentci = sb.workspace().join(".agentci");
    let escaped = regex::escape(&sb.path().display().to_string());
    let filters = vec![
        (escaped.as_str(), "[SB]"),
        (r"runs/[0-9TZ]+-[0-9a-f]+", "runs/[RUN]"),
    ];
    for (name, cache) in [
        ("run_folder", agentci.display().to_string()),
        ("system", "/etc/agentci-npm-cache".to_string()),
    ] {
        let env = [("npm_config_cache", cache.as_str())];
        let out = agentci_in(sb.path(), &["run", "job.yaml", "--progress", "none"], &env);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        insta::with_settings!({filters => filters.clone()}, {
            insta::assert_snapshot!(format!("writable_refused_at_start_{name}"), stderr(&out));
        });
    }
    assert!(!Path::new("/etc/agentci-npm-cache").exists());
}

/// The toolchain that runs `cargo` in the test: the one running the
/// tests, or (when a folder above it is closed to other users, as
/// `/root` is) a copy of what a build needs, hard-linked into a folder
/// every user can enter. `None` when neither can be had.
struct Toolchain {
    bin: PathBuf,
    _copy: Option<TempDir>,
}

fn toolchain() -> Option<Toolchain> {
    let cargo = PathBuf::from(std::env::var_os("CARGO")?);
    let sysroot = cargo.parent()?.parent()?.to_path_buf();
    let open_to_all = sysroot
        .ancestors()
        .all(|dir| std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 != 0));
    if open_to_all {
        return Some(Toolchain {
            bin: sysroot.join("bin"),
            _copy: None,
        });
    }
    let copy = tempfile::tempdir().ok()?;
    std::fs::set_permissions(copy.path(), std::fs::Permissions::from_mode(0o755)).ok()?;
    let host = host_triple(&sysroot)?;
    for part in ["bin/cargo", "bin/rustc"] {
        link_tree(&sysroot.join(part), &copy.path().join(part))?;
    }
    for entry in std::fs::read_dir(sysroot.join("lib")).ok()?.flatten() {
        if entry.path().is_file() {
            link_tree(
                &entry.path(),
                &copy.path().join("lib").join(entry.file_name()),
            )?;
        }
    }
    let rustlib = format!("lib/rustlib/{host}");
    link_tree(&sysroot.join(&rustlib), &copy.path().join(&rustlib))?;
    Some(Toolchain {
        bin: copy.path().join("bin"),
        _copy: Some(copy),
    })
}

fn host_triple(sysroot: &Path) -> Option<String> {
    let out = Command::new(sysroot.join("bin/rustc"))
        .arg("-vV")
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
}

/// Hard-link `from` (a file, or a folder and everything in it) to `to`,
/// folders made 0755; `None` when a link cannot be made.
fn link_tree(from: &Path, to: &Path) -> Option<()> {
    let meta = std::fs::symlink_metadata(from).ok()?;
    std::fs::create_dir_all(to.parent()?).ok()?;
    if meta.is_dir() {
        std::fs::create_dir_all(to).ok()?;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).ok()?;
        for entry in std::fs::read_dir(from).ok()?.flatten() {
            link_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Some(())
    } else if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from).ok()?, to).ok()
    } else {
        std::fs::hard_link(from, to).ok()
    }
}

/// A local registry on disk (`local-registry` source replacing
/// crates-io) holding both versions of [`CRATE`]; the checksum of each
/// `.crate` file by version.
fn local_registry(dir: &Path) -> Vec<(String, String)> {
    let index = dir.join("index").join(&CRATE[..2]).join(&CRATE[2..4]);
    std::fs::create_dir_all(&index).unwrap();
    let mut lines = String::new();
    let mut sums = Vec::new();
    for (version, word) in [OLD, NEW] {
        let name = format!("{CRATE}-{version}");
        let src = dir.join("src").join(&name);
        std::fs::create_dir_all(src.join("src")).unwrap();
        std::fs::write(
            src.join("Cargo.toml"),
            format!("[package]\nname = \"{CRATE}\"\nversion = \"{version}\"\nedition = \"2021\"\n"),
        )
        .unwrap();
        std::fs::write(
            src.join("src/lib.rs"),
            format!("pub const WORD: &str = \"{word}\";\n"),
        )
        .unwrap();
        let file = dir.join(format!("{name}.crate"));
        let status = Command::new("tar")
            .args([
                "--sort=name",
                "--mtime=@0",
                "--owner=0",
                "--group=0",
                "-czf",
            ])
            .arg(&file)
            .arg("-C")
            .arg(dir.join("src"))
            .arg(&name)
            .status()
            .unwrap();
        assert!(status.success());
        let out = Command::new("sha256sum").arg(&file).output().unwrap();
        let sum = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        lines.push_str(&format!(
            "{{\"name\":\"{CRATE}\",\"vers\":\"{version}\",\"deps\":[],\"cksum\":\"{sum}\",\
             \"features\":{{}},\"yanked\":false}}\n"
        ));
        sums.push((version.to_string(), sum));
    }
    std::fs::write(index.join(CRATE), lines).unwrap();
    std::fs::remove_dir_all(dir.join("src")).unwrap();
    sums
}

/// The test's own `CARGO_HOME`, replacing crates-io with the registry on
/// disk, and a workspace whose lock file pins the old version.
fn fixture(sb: &Sandbox) -> PathBuf {
    let registry = sb.path().join("registry");
    let sums = local_registry(&registry);
    let cargo_home = sb.path().join("cargo-home");
    sb.write(
        "cargo-home/config.toml",
        &format!(
            "[source.crates-io]\nreplace-with = \"on-disk\"\n\n\
             [source.on-disk]\nlocal-registry = \"{}\"\n",
            registry.display()
        ),
    );
    sb.write(
        "ws/Cargo.toml",
        &format!(
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\n{CRATE} = \"1\"\n"
        ),
    );
    sb.write(
        "ws/src/main.rs",
        &format!("fn main() {{\n    println!(\"{{}}\", {CRATE}::WORD);\n}}\n"),
    );
    sb.write(
        "ws/Cargo.lock",
        &format!(
            "# This file is automatically @generated by Cargo.\n\
             # It is not intended for manual editing.\nversion = 4\n\n\
             [[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n \"{CRATE}\",\n]\n\n\
             [[package]]\nname = \"{CRATE}\"\nversion = \"{}\"\n\
             source = \"registry+https://github.com/rust-lang/crates.io-index\"\n\
             checksum = \"{}\"\n",
            sums[0].0, sums[0].1
        ),
    );
    cargo_home
}

/// The job's keys: every call allowed, the sandbox given, and checks
/// that the lock file names the new version and the program prints the
/// new crate's word.
fn bump_keys(sandbox: &str) -> String {
    format!(
        "permissions: {{default: allow}}\n{sandbox}\nchecks:\n\
         - {{name: bumped, run: \"grep -A1 'name = \\\"{CRATE}\\\"' Cargo.lock | grep -q '{}'\"}}\n\
         - {{name: runs, run: \"test \\\"$(cargo run -q --offline)\\\" = {}\"}}\n",
        NEW.0, NEW.1
    )
}

/// The run of the bump as `user`, with or without the preset: the run's
/// exit code, what each `exec` printed, and the trace.
fn bump(
    user: RunAs,
    toolchain: &Toolchain,
    with_preset: bool,
) -> (Option<i32>, Vec<String>, Vec<Value>, Sandbox) {
    let sb = Sandbox::new();
    let cargo_home = fixture(&sb);
    let target = sb.path().join("target");
    let sandbox = match with_preset {
        true => "sandbox: {writable: [preset:cargo]}",
        false => "",
    };
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", toolchain.bin.display());
    let env = [
        ("PATH", path.as_str()),
        ("CARGO_HOME", cargo_home.to_str().unwrap()),
        ("CARGO_TARGET_DIR", target.to_str().unwrap()),
    ];
    let commands = [
        &format!("cargo update -p {CRATE} --precise {}", NEW.0) as &str,
        "cargo build --offline",
    ];
    let (out, trace, outputs) = attack(&sb, user, &commands, &bump_keys(sandbox), &env);
    (out.status.code(), outputs, trace, sb)
}

/// The shipped bump-dependency job's situation, end to end with real
/// cargo and no network: with `preset:cargo` the bump and the build go
/// through and the checks pass; without it the kernel refuses the
/// registry's folders and the checks fail.
#[test]
fn cargo_bumps_a_dependency_from_a_local_registry_only_with_the_preset() {
    let Some(toolchain) = toolchain() else {
        return prerequisites::lacking(
            "the cargo preset tests",
            "a Rust toolchain every user can run (none could be made here)",
            "AGENTCI_REQUIRE_TOOLCHAIN",
        );
    };
    eprintln!("cargo and rustc from {}", toolchain.bin.display());
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let (code, outputs, trace, sb) = bump(user, &toolchain, true);
        let started = &events(&trace, "run.started")[0]["sandbox"];
        let cargo_home = sb.path().canonicalize().unwrap().join("cargo-home");
        let writable: Vec<&str> = started["writable"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            writable,
            [
                cargo_home.join("registry").to_str().unwrap(),
                cargo_home.join("git").to_str().unwrap()
            ],
            "{started}"
        );
        assert_eq!(started["writable"][0]["entry"], "preset:cargo");
        let shown = stdout(&sb.agentci(&["trace", "show", "out/trace.jsonl"]));
        assert!(
            shown.contains(&format!("also writable: {}", writable.join(", "))),
            "{shown}"
        );
        assert_eq!(
            code,
            Some(0),
            "as {}: with the preset the bump should pass: {outputs:#?}",
            user.label()
        );
        let lock = std::fs::read_to_string(sb.workspace().join("Cargo.lock")).unwrap();
        assert!(lock.contains(&format!("version = \"{}\"", NEW.0)), "{lock}");
        eprintln!("with the preset: bumped to {} and built", NEW.0);

        let (code, outputs, trace, sb) = bump(user, &toolchain, false);
        if !enforced(&trace, "filesystem") {
            continue;
        }
        assert_eq!(code, Some(1), "as {}: {outputs:#?}", user.label());
        // Landlock says `Permission denied`; the read-only view of
        // everything outside the writable roots, where there is one,
        // answers first with `Read-only file system`.
        let refused = outputs.iter().any(|o| {
            o.contains("cargo-home/registry")
                && (o.contains("Permission denied") || o.contains("Read-only file system"))
        });
        assert!(
            refused,
            "as {}: no refusal to write the registry: {outputs:#?}",
            user.label()
        );
        let said = outputs
            .iter()
            .flat_map(|o| o.lines())
            .find(|l| l.contains("os error"));
        eprintln!(
            "without the preset, cargo says: {}",
            said.unwrap_or_default().trim()
        );
        let lock = std::fs::read_to_string(sb.workspace().join("Cargo.lock")).unwrap();
        let built = lock.contains(&format!("version = \"{}\"", NEW.0))
            && sb.path().join("target/debug/app").exists();
        assert!(!built, "as {}: built without the preset", user.label());
    }
}

/// A sparse registry over plain HTTP on 127.0.0.1 as `registry.test`,
/// serving the index and the `.crate` files [`local_registry`] made in
/// `dir`: what a command reaches only through agentci's proxy.
fn sparse_registry(dir: PathBuf) -> Origin {
    let port = std::sync::Arc::new(std::sync::OnceLock::<u16>::new());
    let known = port.clone();
    let origin = Origin::start("registry.test", move |path| match path {
        "/index/config.json" => Some(
            format!(
                "{{\"dl\":\"http://registry.test:{}/dl/{{crate}}-{{version}}.crate\"}}",
                known.get().copied().unwrap_or_default()
            )
            .into_bytes(),
        ),
        p if p.starts_with("/index/") => std::fs::read(dir.join(&p[1..])).ok(),
        p if p.starts_with("/dl/") => std::fs::read(dir.join(&p[4..])).ok(),
        _ => None,
    });
    let _ = port.set(origin.port);
    origin
}

/// The shipped job's whole situation: the registry is on the network, so
/// the job lists it in `sandbox.network` and opens the cache with
/// `preset:cargo`. Real `cargo` fetches the index and the new crate through
/// agentci's proxy (the registry's name resolves to 127.0.0.1 by the test
/// switch), the bump lands and the checks pass; every fetch is a
/// `network.request` event. Without the host in the list the same run
/// fails and the registry hears nothing.
#[test]
fn cargo_bumps_a_dependency_through_the_proxy_from_a_sparse_registry() {
    let Some(toolchain) = toolchain() else {
        return prerequisites::lacking(
            "the cargo preset tests",
            "a Rust toolchain every user can run (none could be made here)",
            "AGENTCI_REQUIRE_TOOLCHAIN",
        );
    };
    for user in RunAs::each() {
        for listed in [true, false] {
            eprintln!("as {}, registry listed: {listed}", user.label());
            let sb = Sandbox::new();
            let cargo_home = fixture(&sb);
            let registry = sparse_registry(sb.path().join("registry"));
            let port = registry.port;
            sb.write(
                "cargo-home/config.toml",
                &format!(
                    "[source.crates-io]\nreplace-with = \"on-http\"\n\n\
                     [source.on-http]\nregistry = \"sparse+http://registry.test:{port}/index/\"\n\n\
                     [net]\nretry = 0\n"
                ),
            );
            let target = sb.path().join("target");
            let hosts = match listed {
                true => format!("[\"registry.test:{port}\"]"),
                false => "[preset:cargo]".to_string(),
            };
            let sandbox = format!("sandbox: {{writable: [preset:cargo], network: {hosts}}}");
            let path = format!("{}:/usr/local/bin:/usr/bin:/bin", toolchain.bin.display());
            let env = [
                ("PATH", path.as_str()),
                ("CARGO_HOME", cargo_home.to_str().unwrap()),
                ("CARGO_TARGET_DIR", target.to_str().unwrap()),
                ("AGENTCI_TEST_RESOLVE", "registry.test=127.0.0.1"),
            ];
            let commands = [
                &format!("cargo update -p {CRATE} --precise {}", NEW.0) as &str,
                "cargo build",
            ];
            let (out, trace, outputs) = attack(&sb, user, &commands, &bump_keys(&sandbox), &env);
            if !enforced(&trace, "network") {
                break;
            }
            let records = events(&trace, "network.request");
            if !listed {
                assert_eq!(out.status.code(), Some(1), "{outputs:#?}");
                assert_eq!(registry.heard(), 0);
                assert!(records.iter().all(|r| r["allowed"] == false), "{records:?}");
                eprintln!("  not listed: cargo was refused, the registry heard nothing");
                continue;
            }
            assert_eq!(out.status.code(), Some(0), "{}\n{outputs:#?}", stderr(&out));
            let lock = std::fs::read_to_string(sb.workspace().join("Cargo.lock")).unwrap();
            assert!(lock.contains(&format!("version = \"{}\"", NEW.0)), "{lock}");
            let fetched: Vec<&Value> = records
                .iter()
                .copied()
                .filter(|r| r["host"] == "registry.test" && r["allowed"] == true)
                .collect();
            assert!(!fetched.is_empty(), "{records:?}");
            eprintln!(
                "  listed: bumped to {} through {} proxied requests",
                NEW.0,
                fetched.len()
            );
        }
    }
}
