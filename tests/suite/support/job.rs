//! One way to set up a job and run it end to end, instead of a copy per
//! test file: [`JobBuilder`] writes the skill, the workspace's files and
//! `job.yaml` into a fresh [`Sandbox`]; [`JobRun`] runs the real binary
//! on it (`agentci run job.yaml --trace out/trace.jsonl …`) and reads back
//! the trace, validated against the schema.

use std::process::{Command, Output};

use serde_json::Value;

use super::harness::{Sandbox, read_jsonl};
use super::trace_schema::assert_valid_trace;
use super::users::RunAs;

/// The job file every builder writes and every run reads.
pub const JOB: &str = "job.yaml";
/// Where a run writes its trace, relative to the sandbox.
pub const TRACE: &str = "out/trace.jsonl";
/// Where a run asked for JUnit writes it, relative to the sandbox.
pub const JUNIT: &str = "out/junit.xml";

/// A job file with the header every test job shares (version, name,
/// skill, goal, model, tools, `workspace: ws`, `skills_path: [skills]`)
/// and the rest as YAML text, plus the files it works on.
pub struct JobBuilder {
    name: String,
    skill: String,
    allowed_tools: Option<String>,
    goal: String,
    model: String,
    tools: Option<String>,
    body: String,
    files: Vec<(String, String)>,
}

impl JobBuilder {
    /// A job named `name` with skill `skill` (no `allowed-tools`), the
    /// fake model at `base_url` over the OpenAI API, and nothing else.
    pub fn new(name: &str, skill: &str, base_url: &str) -> JobBuilder {
        JobBuilder {
            name: name.to_string(),
            skill: skill.to_string(),
            allowed_tools: None,
            goal: "Fix the typo in greeting.txt.".to_string(),
            model: String::new(),
            tools: None,
            body: String::new(),
            files: Vec::new(),
        }
        .model("openai", "fake-model", base_url)
    }

    /// The provider tests' job: skill `reader` (allowed `Read LS`) reads
    /// the greeting with `read` and `ls` only, and one check says the
    /// greeting is intact.
    pub fn reader(name: &str, base_url: &str) -> JobBuilder {
        JobBuilder::new(name, "reader", base_url)
            .allowed_tools("Read LS")
            .goal("Read greeting.txt.")
            .file("ws/greeting.txt", "hello world\n")
            .tools("[read, ls]")
            .body(
                "permissions:\n  default: deny\n  allow: [read, ls]\n\
                 checks:\n  - name: greeting intact\n    run: grep -q \"hello world\" greeting.txt\n",
            )
    }

    /// The skill's `allowed-tools` line.
    pub fn allowed_tools(mut self, line: &str) -> JobBuilder {
        self.allowed_tools = Some(line.to_string());
        self
    }

    pub fn goal(mut self, goal: &str) -> JobBuilder {
        self.goal = goal.to_string();
        self
    }

    /// The model block: `provider`, `name` and `base_url`, one a line.
    pub fn model(mut self, provider: &str, name: &str, base_url: &str) -> JobBuilder {
        self.model =
            format!("model:\n  provider: {provider}\n  name: {name}\n  base_url: {base_url}\n");
        self
    }

    /// The model block from its lines, each indented two spaces and ending
    /// in a newline (a model without `base_url`).
    pub fn model_block(mut self, lines: &str) -> JobBuilder {
        self.model = format!("model:\n{lines}");
        self
    }

    /// The model on one line, as a YAML flow mapping (`{provider: …}`).
    pub fn model_inline(mut self, flow: &str) -> JobBuilder {
        self.model = format!("model: {flow}\n");
        self
    }

    /// More lines in the model block, each indented two spaces.
    pub fn model_extra(mut self, lines: &str) -> JobBuilder {
        self.model.push_str(lines);
        if !self.model.ends_with('\n') {
            self.model.push('\n');
        }
        self
    }

    /// The `tools:` value, as YAML (`[read, edit]`).
    pub fn tools(mut self, tools: &str) -> JobBuilder {
        self.tools = Some(tools.to_string());
        self
    }

    /// The YAML after the shared header: permissions, checks, outputs….
    pub fn body(mut self, yaml: &str) -> JobBuilder {
        self.body.push_str(yaml);
        self
    }

    /// A file relative to the sandbox (`ws/greeting.txt` is in the workspace).
    pub fn file(mut self, relative: &str, text: &str) -> JobBuilder {
        self.files.push((relative.to_string(), text.to_string()));
        self
    }

    /// The job file's text.
    pub fn yaml(&self) -> String {
        let tools = self
            .tools
            .as_ref()
            .map(|t| format!("tools: {t}\n"))
            .unwrap_or_default();
        format!(
            "version: 1\nname: {}\nskill: {}\ngoal: {}\n{}{tools}\
             workspace: ws\nskills_path: [skills]\n{}",
            self.name, self.skill, self.goal, self.model, self.body
        )
    }

    /// A fresh sandbox holding the skill, the files and `job.yaml`.
    pub fn write(&self) -> Sandbox {
        let sb = Sandbox::new();
        self.write_in(&sb);
        sb
    }

    /// The skill, the files and `job.yaml`, written into `sb`.
    pub fn write_in(&self, sb: &Sandbox) {
        for (relative, text) in &self.files {
            sb.write(relative, text);
        }
        sb.skill(&self.skill, self.allowed_tools.as_deref());
        sb.write(JOB, &self.yaml());
    }
}

/// `agentci run job.yaml --trace out/trace.jsonl` in a sandbox, with the
/// GitHub runner's and the machine's telemetry variables and
/// `OPENAI_API_KEY` removed; flags and variables are added in call order.
pub struct JobRun<'a> {
    sb: &'a Sandbox,
    args: Vec<String>,
    env: Vec<(String, String)>,
    removed: Vec<String>,
    user: RunAs,
}

impl<'a> JobRun<'a> {
    pub fn new(sb: &'a Sandbox) -> JobRun<'a> {
        JobRun {
            sb,
            args: ["run", JOB, "--trace", TRACE].map(String::from).to_vec(),
            env: Vec::new(),
            removed: vec!["OPENAI_API_KEY".to_string()],
            user: RunAs::Current,
        }
    }

    /// `agentci run job.yaml` and nothing more: `--trace` left out.
    pub fn bare(sb: &'a Sandbox) -> JobRun<'a> {
        let mut run = JobRun::new(sb);
        run.args.truncate(2);
        run
    }

    /// `--junit out/junit.xml`.
    pub fn junit(self) -> JobRun<'a> {
        self.args(&["--junit", JUNIT])
    }

    /// `--progress MODE` (`plain`, `none`).
    pub fn progress(self, mode: &str) -> JobRun<'a> {
        self.args(&["--progress", mode])
    }

    pub fn args(mut self, args: &[&str]) -> JobRun<'a> {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    pub fn env(mut self, name: &str, value: &str) -> JobRun<'a> {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    pub fn envs(mut self, env: &[(&str, &str)]) -> JobRun<'a> {
        for (name, value) in env {
            self = self.env(name, value);
        }
        self
    }

    /// A variable left out of agentci's environment.
    pub fn env_remove(mut self, name: &str) -> JobRun<'a> {
        self.removed.push(name.to_string());
        self
    }

    /// Run as `user` (the unprivileged user when the tests run as root).
    pub fn user(mut self, user: RunAs) -> JobRun<'a> {
        self.user = user;
        self
    }

    /// The command, for a test that starts it itself (to signal it).
    pub fn command(self) -> Command {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let mut cmd = self.sb.agentci_command_as(self.user, &args, &[]);
        for name in &self.removed {
            cmd.env_remove(name);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// What the run printed and how it exited.
    pub fn output(self) -> Output {
        self.command().output().unwrap()
    }

    /// The run's output and its trace, validated against the schema.
    pub fn traced(self) -> (Output, Vec<Value>) {
        let path = self.sb.path().join(TRACE);
        let out = self.output();
        assert_valid_trace(&path);
        (out, read_jsonl(&path))
    }

    /// The run's output and its trace, validated, or no events when the
    /// run wrote none (a job refused before it started).
    pub fn traced_if_any(self) -> (Output, Vec<Value>) {
        let path = self.sb.path().join(TRACE);
        let out = self.output();
        if !path.exists() {
            return (out, Vec::new());
        }
        assert_valid_trace(&path);
        (out, read_jsonl(&path))
    }
}
