//! Running the real `agentci` binary on a temporary workspace.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

/// A temporary folder holding a workspace, a skills folder and job files.
pub struct Sandbox {
    pub root: TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let sandbox = Sandbox {
            root: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(sandbox.workspace()).unwrap();
        sandbox
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    pub fn workspace(&self) -> PathBuf {
        self.root.path().join("ws")
    }

    /// Write a file relative to the sandbox root, creating folders.
    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.root.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.root.path().join(relative)).unwrap()
    }

    /// A skill `name` under `skills/` with the given `allowed-tools` line (or none).
    pub fn skill(&self, name: &str, allowed_tools: Option<&str>) {
        let tools = allowed_tools
            .map(|t| format!("allowed-tools: {t}\n"))
            .unwrap_or_default();
        self.write(
            &format!("skills/{name}/SKILL.md"),
            &format!(
                "---\nname: {name}\ndescription: A test skill that fixes small things.\n{tools}---\n\nFix what the goal says, then check it.\n"
            ),
        );
    }

    /// Run `agentci` with `args` in the sandbox root.
    pub fn agentci(&self, args: &[&str]) -> Output {
        agentci_in(self.root.path(), args, &[])
    }

    pub fn trace(&self, relative: &str) -> Vec<Value> {
        read_jsonl(&self.root.path().join(relative))
    }
}

/// Variables the GitHub runner sets. Tests run on GitHub Actions too, and
/// a run that saw them would append to the CI job's own step summary and
/// outputs; a test that wants them sets its own.
pub const GITHUB_VARIABLES: &[&str] = &[
    "GITHUB_ACTIONS",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_OUTPUT",
    "GITHUB_WORKSPACE",
    "GITHUB_TOKEN",
    "GITHUB_API_URL",
    "GITHUB_REPOSITORY",
    "GITHUB_WORKFLOW_REF",
    "GITHUB_EVENT_NAME",
    "GITHUB_EVENT_PATH",
];

/// Variables that would send a test's spans and metrics to the machine's
/// own collector, or nest them in its CI job's trace.
pub const TELEMETRY_VARIABLES: &[&str] = &[
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "TRACEPARENT",
    "TRACESTATE",
];

/// `cmd` without the GitHub runner's variables ([`GITHUB_VARIABLES`]) and
/// the machine's telemetry settings ([`TELEMETRY_VARIABLES`]).
pub fn outside_github(cmd: &mut Command) -> &mut Command {
    for name in GITHUB_VARIABLES.iter().chain(TELEMETRY_VARIABLES) {
        cmd.env_remove(name);
    }
    cmd
}

pub fn agentci_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentci"));
    outside_github(&mut cmd);
    cmd.args(args).current_dir(dir).env_remove("OPENAI_API_KEY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Copies the folder `from` to `to`, keeping symlinks as symlinks (the
/// skills corpus holds a symlinked skill folder) and leaving out any
/// `target` folder (a fixture's build output).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == "target" {
            continue;
        }
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

pub fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `type` of every event, in order.
pub fn types(trace: &[Value]) -> Vec<String> {
    trace
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

/// Every event of `kind`.
pub fn events<'a>(trace: &'a [Value], kind: &str) -> Vec<&'a Value> {
    trace.iter().filter(|e| e["type"] == kind).collect()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
