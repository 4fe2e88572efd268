//! The one-line installs, end to end against local stand-ins, all from one
//! release archive packed from this build's binary as release.yml packs it
//! (`agentci-<target>.tar.gz`): the npm packages (packaging/npm/build.sh)
//! published to a local verdaccio and run with `npx agentci` and `npm i -g`;
//! the wheel (packaging/pypi/build_wheel.py) installed with pip into a venv
//! and uninstalled by its RECORD; the action's install.sh downloading the
//! archive from a local release server. Each runs the installed
//! `agentci --version`. The npm launcher is also checked to pass a signal on
//! exactly once and to hand back the exit code or the signal.
//!
//! Nothing here reaches the internet: the registry has no uplink and npm
//! and pip are pointed at the stand-ins only.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::action_install::{ReleaseServer, Runner, target};
use super::support::harness::{Sandbox, stderr, stdout};
use super::support::prerequisites::{npm_packages, program};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The release archive of this build, packed once per test run: the binary
/// stripped of its debug info (the debug build is ~400 MB, which every
/// packaging step would copy and compress), as `agentci` at the archive's
/// top, which is what release.yml's `tar -czf ... -C target/TARGET/release
/// agentci` writes.
fn release_archive() -> &'static Path {
    static ARCHIVE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = ARCHIVE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("agentci");
        let strip = Command::new("strip")
            .arg("-o")
            .arg(&binary)
            .arg(env!("CARGO_BIN_EXE_agentci"))
            .status();
        if !strip.is_ok_and(|s| s.success()) {
            std::fs::copy(env!("CARGO_BIN_EXE_agentci"), &binary).unwrap();
        }
        let archive = dir.path().join(format!("agentci-{}.tar.gz", target()));
        run(Command::new("tar")
            .arg("-czf")
            .arg(&archive)
            .arg("-C")
            .arg(dir.path())
            .arg("agentci"));
        (dir, archive)
    });
    path
}

/// Runs `command`, failing the test with its output unless it succeeds.
fn run(command: &mut Command) -> Output {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?} failed ({}):\n{}{}",
        out.status,
        stdout(&out),
        stderr(&out)
    );
    out
}

fn assert_version(out: &Output) {
    assert_eq!(
        stdout(out),
        format!("agentci {VERSION}\n"),
        "{}",
        stderr(out)
    );
}

/// `packaging/npm/build.sh` for this machine's target: (platform package,
/// launcher package).
fn npm_build(archive: &Path, out: &Path) -> (PathBuf, PathBuf) {
    run(Command::new("bash")
        .arg(Path::new(ROOT).join("packaging/npm/build.sh"))
        .arg(target())
        .arg(archive)
        .arg(VERSION)
        .arg(out));
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        _ => "arm64",
    };
    (
        out.join(format!("agentci-linux-{cpu}-{VERSION}.tgz")),
        out.join(format!("agentci-{VERSION}.tgz")),
    )
}

/// A verdaccio on 127.0.0.1 with no uplink (a package it does not hold is a
/// 404, as on npmjs.com for an unpublished one), anyone may publish; killed
/// when dropped.
struct Registry {
    child: Child,
    url: String,
}

impl Registry {
    fn start(modules: &Path, dir: &Path) -> Registry {
        // A free port verdaccio then listens on (it takes no port 0).
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::create_dir_all(dir).unwrap();
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            format!(
                "storage: {storage}\n\
                 auth: {{htpasswd: {{file: {htpasswd}, max_users: -1}}}}\n\
                 uplinks: {{}}\n\
                 packages:\n  '**': {{access: $all, publish: $all}}\n\
                 max_body_size: 500mb\n\
                 log: {{type: stdout, format: pretty, level: warn}}\n\
                 listen: 127.0.0.1:{port}\n",
                storage = dir.join("storage").display(),
                htpasswd = dir.join("htpasswd").display(),
            ),
        )
        .unwrap();
        let child = Command::new("node")
            .arg(modules.join("verdaccio/bin/verdaccio"))
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let registry = Registry {
            child,
            url: format!("http://127.0.0.1:{port}/"),
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "verdaccio did not listen on 127.0.0.1:{port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        registry
    }

    /// An npm user config naming only this registry, with a token npm sends
    /// on publish (verdaccio lets anyone publish here).
    fn npmrc(&self, dir: &Path) -> PathBuf {
        let host = self.url.trim_start_matches("http:");
        let path = dir.join("npmrc");
        std::fs::write(
            &path,
            format!(
                "registry={}\n{host}:_authToken=anonymous\naudit=false\nfund=false\n\
                 update-notifier=false\n",
                self.url
            ),
        )
        .unwrap();
        std::fs::write(path.with_extension("global"), "").unwrap();
        path
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `npm`/`npx` with only `npmrc` (and an empty global config beside it)
/// and a cache of their own: no user config, no cached packages, nothing
/// from the public registry.
fn npm(program: &str, npmrc: &Path, cache: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .env("npm_config_userconfig", npmrc)
        .env("npm_config_globalconfig", npmrc.with_extension("global"))
        .env("npm_config_cache", cache)
        .env_remove("npm_config_registry")
        .env_remove("NPM_CONFIG_REGISTRY");
    command
}

#[test]
fn the_npm_packages_install_from_a_registry_and_run() {
    let Some(modules) = npm_packages("npm-registry", "the npm package tests (verdaccio)") else {
        return;
    };
    let sb = Sandbox::new();
    let (platform, launcher) = npm_build(release_archive(), &sb.path().join("npm"));
    let registry = Registry::start(&modules, &sb.path().join("registry"));
    let npmrc = registry.npmrc(sb.path());

    // As release.yml publishes: the platform packages, then the launcher naming them.
    for package in [&platform, &launcher] {
        run(npm("npm", &npmrc, &sb.path().join("publish-cache"))
            .arg("publish")
            .arg(package));
    }

    // `npx agentci` with a cold cache: the launcher, then the platform package that fits
    // (the other platforms' packages are not in this registry, a 404 npm skips for an
    // optional dependency whose os/cpu does not match anyway).
    let started = Instant::now();
    let out = run(npm("npx", &npmrc, &sb.path().join("cold-cache"))
        .args(["--yes", "agentci", "--version"])
        .current_dir(sb.workspace()));
    eprintln!(
        "npx agentci --version, cold cache, local registry: {:.1}s",
        started.elapsed().as_secs_f64()
    );
    assert_version(&out);

    // `npm i -g agentci`, into a prefix of its own.
    let prefix = sb.path().join("global");
    run(npm("npm", &npmrc, &sb.path().join("global-cache"))
        .args(["install", "--global", "--prefix"])
        .arg(&prefix)
        .arg("agentci"));
    let installed = prefix.join("bin/agentci");
    assert_version(&Command::new(&installed).arg("--version").output().unwrap());
    // The command is the launcher, the binary is the platform package's.
    let target = std::fs::read_link(&installed).unwrap();
    assert!(target.ends_with("agentci/bin/agentci.js"), "{target:?}");
    assert!(
        prefix
            .join("lib/node_modules/agentci/node_modules/@agentci")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some())
            || prefix.join("lib/node_modules/@agentci").is_dir(),
        "no platform package installed under {}",
        prefix.display()
    );
}

/// The launcher and a platform package holding `binary` (a shell script),
/// laid out as npm installs them; the launcher's path.
fn launcher_with(sb: &Sandbox, binary: &str) -> PathBuf {
    let pack = sb.path().join("pack");
    sb.write("pack/agentci", &format!("#!/bin/sh\n{binary}"));
    let archive = sb.path().join("stand-in.tar.gz");
    run(Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(&pack)
        .arg("agentci"));
    let (platform, launcher) = npm_build(&archive, &sb.path().join("npm"));
    let modules = sb.path().join("project/node_modules");
    let platform_dir = modules.join(format!(
        "@agentci/{}",
        platform
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_start_matches("agentci-")
            .trim_end_matches(&format!("-{VERSION}.tgz"))
    ));
    for (package, dir) in [
        (&platform, platform_dir),
        (&launcher, modules.join("agentci")),
    ] {
        std::fs::create_dir_all(&dir).unwrap();
        run(Command::new("tar")
            .arg("-xzf")
            .arg(package)
            .arg("--strip-components=1")
            .arg("-C")
            .arg(&dir));
    }
    modules.join("agentci/bin/agentci.js")
}

/// Starts the launcher in a process group of its own, as a shell starts a
/// job, with no terminal (as in CI), and waits until the binary runs.
fn start_launcher(launcher: &Path, log: &Path) -> Child {
    let child = Command::new("node")
        .arg(launcher)
        .env("LOG", log)
        .process_group(0)
        .stdin(Stdio::null())
        // Not pipes: a stand-in left running would hold them open and hang the test.
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log.with_extension("stderr")).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !std::fs::read_to_string(log).is_ok_and(|l| l.contains("started")) {
        assert!(started.elapsed() < Duration::from_secs(60), "never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// How the launcher ended, within a minute; its stderr.
fn launcher_exit(mut child: Child, log: &Path) -> (std::process::ExitStatus, String) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stderr = std::fs::read_to_string(log.with_extension("stderr")).unwrap();
            return (status, stderr);
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the launcher did not exit within a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// What must not break: agentci winds a run down on the first SIGTERM and drops it unfinished
// (no JUnit) on a second, so a launcher that passed on a signal its process group had
// already delivered (`timeout`, a runner cancelling a step) would lose the results.
#[test]
fn the_npm_launcher_passes_a_signal_on_once_and_returns_the_exit() {
    if program(&["node"], "the npm launcher test", "install Node.js").is_none() {
        return;
    }
    let sb = Sandbox::new();
    // Counts the SIGTERMs it gets for half a second after the first, exits 40 + that count.
    let launcher = launcher_with(
        &sb,
        "terms=0\ntrap 'terms=$((terms + 1))' TERM\necho started >> \"$LOG\"\n\
         while [ \"$terms\" = 0 ]; do sleep 0.05; done\n\
         sleep 0.5\nexit $((40 + terms))\n",
    );
    for (i, to_the_group) in [true, false].into_iter().enumerate() {
        let log = sb.path().join(format!("log-{i}"));
        let child = start_launcher(&launcher, &log);
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
        if to_the_group {
            killpg(pid, Signal::SIGTERM).unwrap();
        } else {
            kill(pid, Signal::SIGTERM).unwrap();
        }
        let (status, stderr) = launcher_exit(child, &log);
        assert_eq!(
            status.code(),
            Some(41),
            "to the group: {to_the_group}; {stderr}"
        );
    }

    // A binary killed by a signal: the launcher dies of the same one.
    let sb = Sandbox::new();
    let launcher = launcher_with(&sb, "echo started >> \"$LOG\"\nkill -KILL $$\n");
    let log = sb.path().join("log");
    let child = start_launcher(&launcher, &log);
    let (status, stderr) = launcher_exit(child, &log);
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?} {stderr}");
}

#[test]
fn the_wheel_installs_with_pip_and_runs() {
    let Some(python) = program(
        &["python3"],
        "the wheel test",
        "apt-get install python3-venv",
    ) else {
        return;
    };
    let sb = Sandbox::new();
    let out = run(Command::new(&python)
        .arg(Path::new(ROOT).join("packaging/pypi/build_wheel.py"))
        .arg(target())
        .arg(release_archive())
        .arg(VERSION)
        .arg(sb.path().join("wheel")));
    let wheel = PathBuf::from(stdout(&out).trim());
    // The tag is the glibc the binary needs: this machine's build runs here, so pip takes it.
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let tag = regex::Regex::new(&format!(
        r"^agentci-{VERSION}-py3-none-manylinux_2_\d+_{}\.whl$",
        std::env::consts::ARCH
    ))
    .unwrap();
    assert!(tag.is_match(&name), "{name}");

    let venv = sb.path().join("venv");
    run(Command::new(&python).args(["-m", "venv"]).arg(&venv));
    let started = Instant::now();
    run(Command::new(venv.join("bin/pip"))
        .args(["install", "--no-index", "--no-cache-dir", "--quiet"])
        .arg(&wheel));
    let installed = venv.join("bin/agentci");
    assert_version(&Command::new(&installed).arg("--version").output().unwrap());
    eprintln!(
        "pip install of the wheel + agentci --version: {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // RECORD lists what was installed with its hash: pip checks it and removes it all.
    run(Command::new(venv.join("bin/pip")).args(["uninstall", "--yes", "agentci"]));
    assert!(!installed.exists(), "pip uninstall left the binary");
}

#[test]
fn install_sh_downloads_the_release_archive_and_runs_it() {
    let tag = format!("v{VERSION}");
    let runner = Runner::at(&tag);
    let archive = std::fs::read(release_archive()).unwrap();
    let asset = format!("agentci-{}.tar.gz", target());
    let sum = Command::new("sha256sum")
        .arg(release_archive())
        .output()
        .unwrap();
    let digest = stdout(&sum).split_whitespace().next().unwrap().to_string();
    let mut files = BTreeMap::new();
    files.insert(format!("/{tag}/{asset}"), archive);
    files.insert(
        format!("/{tag}/{asset}.sha256"),
        format!("{digest}  {asset}\n").into_bytes(),
    );
    let server = ReleaseServer::start(files);
    let out = runner.install(&[("VERSION", ""), ("REPOSITORY", "")], &server.url);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        runner.calls().is_empty(),
        "built instead: {}",
        runner.calls()
    );
    // install.sh itself prints the version of what it installed.
    assert!(
        stdout(&out).contains(&format!("agentci {VERSION}\n")),
        "{}",
        stdout(&out)
    );
    assert_version(
        &Command::new(runner.installed())
            .arg("--version")
            .output()
            .unwrap(),
    );
}
