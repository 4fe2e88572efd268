//! How the reusable action installs agentci
//! (`.github/actions/agentci/install.sh`, run as the action runs it): a
//! release binary from a release server on this machine, installed only when
//! its SHA-256 matches the published one; a source build when no release
//! fits; and cache keys that follow the release tag or the source, never
//! `github.action_ref`. `cargo` and `curl` for GitHub itself are stand-ins
//! on PATH that record their arguments (no network).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use super::support::harness::{Sandbox, stderr, stdout};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/.github/actions/agentci/install.sh"
);

/// The asset name for this machine, as the script names it.
pub(super) fn target() -> String {
    let arch = std::env::consts::ARCH;
    format!("{arch}-unknown-linux-gnu")
}

/// A release server on 127.0.0.1 answering GETs from `files` (path ->
/// body) with 200, anything else with 404; records the paths asked for.
pub(super) struct ReleaseServer {
    pub(super) url: String,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ReleaseServer {
    pub(super) fn start(files: BTreeMap<String, Vec<u8>>) -> ReleaseServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = asked.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                reader.read_line(&mut request).unwrap_or_default();
                // The rest of the head, up to the blank line.
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = request.split_whitespace().nth(1).unwrap_or("").to_string();
                log.lock().unwrap().push(path.clone());
                let (status, body) = match files.get(&path) {
                    Some(body) => ("200 OK", body.clone()),
                    None => ("404 Not Found", b"Not Found".to_vec()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            }
        });
        ReleaseServer { url, asked }
    }
}

/// A release tarball holding a stand-in `agentci` (the debug build weighs
/// hundreds of megabytes; the install does not look inside), and the
/// `sha256sum` line published for it.
fn release_asset(sb: &Sandbox) -> (Vec<u8>, String) {
    let dir = sb.path().join("pack");
    executable(sb, "pack/agentci", "echo 'agentci 0.1.0 (the release)'\n");
    let asset = format!("agentci-{}.tar.gz", target());
    let tarball = sb.path().join(&asset);
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(&dir)
        .arg("agentci")
        .status()
        .unwrap();
    assert!(status.success());
    let sum = Command::new("sha256sum")
        .arg(&asset)
        .current_dir(sb.path())
        .output()
        .unwrap();
    (std::fs::read(&tarball).unwrap(), stdout(&sum))
}

/// The runner around the script: its temp folder, output file, the action's
/// path as the runner lays it out, stand-ins for `cargo` and `curl`.
pub(super) struct Runner {
    sb: Sandbox,
    action_path: PathBuf,
    calls: PathBuf,
}

impl Runner {
    /// The action checked out by the runner at `owner/repo@reference`.
    pub(super) fn at(reference: &str) -> Runner {
        let sb = Sandbox::new();
        let action_path = sb.path().join(format!(
            "_actions/octo/agentci/{reference}/.github/actions/agentci"
        ));
        std::fs::create_dir_all(&action_path).unwrap();
        Runner::with(sb, action_path)
    }

    fn with(sb: Sandbox, action_path: PathBuf) -> Runner {
        let calls = sb.path().join("calls.txt");
        std::fs::create_dir_all(sb.path().join("temp")).unwrap();
        std::fs::create_dir_all(sb.path().join("stubs")).unwrap();
        // `cargo install --root ROOT ...` makes a stand-in binary in ROOT/bin.
        executable(
            &sb,
            "stubs/cargo",
            &format!(
                "echo \"cargo $*\" >> '{}'\nroot=\"$4\"\nmkdir -p \"$root/bin\"\n\
                 printf '#!/bin/sh\\necho agentci built\\n' > \"$root/bin/agentci\"\n\
                 chmod +x \"$root/bin/agentci\"\n",
                calls.display()
            ),
        );
        Runner {
            sb,
            action_path,
            calls,
        }
    }

    /// `install.sh STEP` with `env`; the step's outputs and the process output.
    fn step(&self, step: &str, env: &[(&str, &str)]) -> (BTreeMap<String, String>, Output) {
        let output = self.sb.path().join(format!("output-{step}.txt"));
        std::fs::write(&output, "").unwrap();
        let mut command = Command::new("bash");
        command
            .arg(SCRIPT)
            .arg(step)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    self.sb.path().join("stubs").display(),
                    std::env::var("PATH").unwrap()
                ),
            )
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_TEMP", self.sb.path().join("temp"))
            .env("GITHUB_ACTION_PATH", &self.action_path)
            .env("GITHUB_REPOSITORY", "someone/else")
            .env("GITHUB_OUTPUT", &output);
        for (key, value) in env {
            command.env(key, value);
        }
        let out = command.output().unwrap();
        let outputs = std::fs::read_to_string(&output)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        (outputs, out)
    }

    /// `resolve`, then `install` with what it decided, as action.yml wires them.
    pub(super) fn install(&self, resolve_env: &[(&str, &str)], releases_url: &str) -> Output {
        let (decided, out) = self.step("resolve", resolve_env);
        assert!(
            out.status.success(),
            "resolve: {}{}",
            stdout(&out),
            stderr(&out)
        );
        let get = |k: &str| decided.get(k).cloned().unwrap_or_default();
        let (mode, tag, target, key, repository) = (
            get("mode"),
            get("tag"),
            get("target"),
            get("key"),
            get("repository"),
        );
        let (_, out) = self.step(
            "install",
            &[
                ("MODE", &mode),
                ("TAG", &tag),
                ("TARGET", &target),
                ("KEY", &key),
                ("REPOSITORY", &repository),
                ("RELEASES_URL", releases_url),
                ("CACHE_HIT", ""),
            ],
        );
        out
    }

    pub(super) fn installed(&self) -> PathBuf {
        self.sb.path().join("temp/agentci/bin/agentci")
    }

    pub(super) fn calls(&self) -> String {
        std::fs::read_to_string(&self.calls).unwrap_or_default()
    }
}

/// A shell script at `relative` in the sandbox.
fn executable(sb: &Sandbox, relative: &str, body: &str) {
    let path = sb.write(relative, &format!("#!/bin/sh\n{body}"));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn release_files(
    sb: &Sandbox,
    tag: &str,
    published_sum: Option<&str>,
) -> BTreeMap<String, Vec<u8>> {
    let (tarball, sum) = release_asset(sb);
    let asset = format!("agentci-{}.tar.gz", target());
    let mut files = BTreeMap::new();
    files.insert(format!("/{tag}/{asset}"), tarball);
    files.insert(
        format!("/{tag}/{asset}.sha256"),
        published_sum.unwrap_or(&sum).as_bytes().to_vec(),
    );
    files
}

#[test]
fn the_release_of_the_actions_tag_is_downloaded_and_its_checksum_checked() {
    let runner = Runner::at("v0.1.0");
    let server = ReleaseServer::start(release_files(&runner.sb, "v0.1.0", None));
    let (decided, out) = runner.step("resolve", &[("VERSION", ""), ("REPOSITORY", "")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(decided["mode"], "release");
    assert_eq!(decided["tag"], "v0.1.0");
    assert_eq!(decided["repository"], "octo/agentci");
    // The cache key names the release, whatever github.action_ref says.
    assert_eq!(decided["key"], "release-v0.1.0");

    let started = Instant::now();
    let out = runner.install(&[("VERSION", ""), ("REPOSITORY", "")], &server.url);
    eprintln!(
        "from a cold cache to a working agentci (local release server): {:.2}s",
        started.elapsed().as_secs_f64()
    );
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("installed release v0.1.0"),
        "{}",
        stdout(&out)
    );
    // The installed binary is the real one, and runs.
    let version = Command::new(runner.installed())
        .arg("--version")
        .output()
        .unwrap();
    assert!(
        stdout(&version).starts_with("agentci "),
        "{}",
        stdout(&version)
    );
    assert!(
        runner.calls().is_empty(),
        "nothing was built: {}",
        runner.calls()
    );
    let asked = server.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        [
            format!("/v0.1.0/agentci-{}.tar.gz", target()),
            format!("/v0.1.0/agentci-{}.tar.gz.sha256", target())
        ]
    );
}

#[test]
fn a_binary_whose_checksum_does_not_match_is_not_installed() {
    let runner = Runner::at("v0.1.0");
    let forged = format!("{}  agentci-{}.tar.gz\n", "0".repeat(64), target());
    let server = ReleaseServer::start(release_files(&runner.sb, "v0.1.0", Some(&forged)));
    let out = runner.install(&[], &server.url);
    assert!(!out.status.success());
    let log = stdout(&out);
    assert!(
        log.contains("::error::agentci: the SHA-256 of agentci-")
            && log.contains("is not the published one"),
        "{log}"
    );
    assert!(!runner.installed().exists(), "a binary was installed");
    assert!(
        runner.calls().is_empty(),
        "it fell back to a build: {}",
        runner.calls()
    );

    // A release with no checksum at all is refused the same way.
    let runner = Runner::at("v0.1.0");
    let mut files = release_files(&runner.sb, "v0.1.0", None);
    files.retain(|path, _| !path.ends_with(".sha256"));
    let server = ReleaseServer::start(files);
    let out = runner.install(&[], &server.url);
    assert!(!out.status.success());
    assert!(
        stdout(&out).contains("publishes no checksum"),
        "{}",
        stdout(&out)
    );
    assert!(!runner.installed().exists());
}

#[test]
fn a_release_without_a_binary_for_the_runner_is_built_from_its_tag() {
    let runner = Runner::at("main");
    let server = ReleaseServer::start(BTreeMap::new());
    let out = runner.install(&[("VERSION", "v0.2.0"), ("REPOSITORY", "")], &server.url);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let calls = runner.calls();
    assert!(
        calls.contains("cargo install --locked --root")
            && calls.contains("--git https://github.com/octo/agentci --tag v0.2.0 agentci"),
        "{calls}"
    );
}

/// The action as this repository's own checkout holds it: `src/`,
/// `Cargo.toml` and `Cargo.lock` three folders up.
fn local_checkout() -> Runner {
    let sb = Sandbox::new();
    sb.write(
        "repo/Cargo.toml",
        "[package]\nname = \"agentci\"\nversion = \"0.3.1\"\n\n[dependencies]\nx = { version = \"9\" }\n",
    );
    sb.write("repo/Cargo.lock", "# lock\n");
    sb.write("repo/src/main.rs", "fn main() {}\n");
    let action_path = sb.path().join("repo/.github/actions/agentci");
    std::fs::create_dir_all(&action_path).unwrap();
    Runner::with(sb, action_path)
}

// What broke: the key was a digest of every source file, so each commit to agentci missed the
// cache and rebuilt from scratch (minutes of CPU per workflow run on a branch).
#[test]
fn a_source_build_is_keyed_by_the_version_and_the_lock_file() {
    let runner = local_checkout();
    let (first, out) = runner.step("resolve", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(first["mode"], "source");
    // The [package] version, not a dependency's `version` further down.
    assert!(first["key"].starts_with("source-0.3.1-"), "{first:?}");
    // The same source, the same key; github.action_ref plays no part.
    let (again, _) = runner.step("resolve", &[("ACTION_REF", "main")]);
    assert_eq!(first["key"], again["key"]);
    // A change to the source alone keeps the build.
    runner
        .sb
        .write("repo/src/main.rs", "fn main() { println!(); }\n");
    let (edited, _) = runner.step("resolve", &[]);
    assert_eq!(first["key"], edited["key"], "every commit would rebuild");
    // A dependency or a version changes it.
    runner
        .sb
        .write("repo/Cargo.lock", "# lock, one crate newer\n");
    let (relocked, _) = runner.step("resolve", &[]);
    assert_ne!(first["key"], relocked["key"], "a stale build would be kept");
    let manifest = runner.sb.read("repo/Cargo.toml");
    runner
        .sb
        .write("repo/Cargo.toml", &manifest.replace("0.3.1", "0.3.2"));
    let (bumped, _) = runner.step("resolve", &[]);
    assert!(bumped["key"].starts_with("source-0.3.2-"), "{bumped:?}");

    let out = runner.install(&[], "http://127.0.0.1:9");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        runner.calls().contains("cargo install --locked --root")
            && runner.calls().contains("--path"),
        "{}",
        runner.calls()
    );

    // `from-source: true` builds even at a release tag.
    let runner = Runner::at("v0.1.0");
    let (decided, _) = runner.step("resolve", &[("FROM_SOURCE", "true")]);
    assert_eq!(decided["mode"], "source");
    assert_eq!(decided["key"], "tag-v0.1.0");
}

#[test]
fn the_action_wires_the_install_steps_and_pins_what_it_uses() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/actions/agentci/action.yml"),
    )
    .unwrap();
    let action: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    let steps = action["runs"]["steps"].as_array().unwrap();
    let ids: Vec<&str> = steps.iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(&ids[..3], ["resolve", "cache", "install"]);
    let cache = &steps[1];
    assert_eq!(
        cache["with"]["key"],
        "agentci-${{ runner.os }}-${{ runner.arch }}-${{ steps.resolve.outputs.key }}"
    );
    // Every third-party action, here and in our workflows, is pinned by commit.
    let workflows =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/workflows"))
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap());
    let pinned = regex::Regex::new(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}( # v[\d.]+)?$").unwrap();
    for text in workflows.chain([text.clone()]) {
        for line in text.lines() {
            let Some(used) = line.trim().trim_start_matches("- ").strip_prefix("uses: ") else {
                continue;
            };
            // This repository's own action: `./` in its own workflows, `$/` (the
            // called workflow's own repository) in the reusable eval workflow.
            if used.starts_with("./") || used.starts_with("$/") {
                continue;
            }
            assert!(pinned.is_match(used), "not pinned by commit: {used}");
        }
    }

    // `cargo binstall` looks for the same file names the release publishes.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("/releases/download/v{ version }/agentci-{ target }.tar.gz\""));
    let release = std::fs::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
    assert!(release.contains("asset=\"agentci-$TARGET.tar.gz\""));
}
