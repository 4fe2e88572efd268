//! Secrets in the records a run leaves behind, end to end: the real binary
//! as root and as an unprivileged user, a scripted hostile model on the
//! fake model server, a real git workspace, judged by the bytes on disk.
//!
//! What got through before: a job passed a listed secret to `exec`; the
//! model ran `printenv DEPLOY_TOKEN | rev`, "decoded" it and put it in a
//! plan title, a tool argument and its text. The trace showed it masked,
//! but `checkpoint/state.json` and `messages-*.jsonl` held it plain, and
//! so did the run's `outputs.patch`; an endpoint echoing the API key got
//! it into the checkpoint the same way. The run folder is what the
//! documented workflow uploads. Also: one huge (30 MB) tool argument made every
//! later per-turn checkpoint rewrite a `state.json` of that size.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, read_jsonl, stderr};
use super::support::users::RunAs;

/// The secret the job lists and passes to `exec`.
const SECRET: &str = "dpl-7c41e9b2a05f3d68";
/// The size of the one huge argument.
const HUGE: usize = 1024 * 1024;
/// The model's API key, which a hostile endpoint echoes.
const API_KEY: &str = "sk-echoed-4b8d1f0e9a27c356";

/// A job in the git workspace `ws` that passes [`SECRET`] to `exec`,
/// writes a patch, and keeps its run folder in `ws/out`.
fn write_job(sb: &Sandbox, base_url: &str, extra: &str) {
    write_job_with_model(sb, base_url, "", extra);
}

/// [`write_job`] with more keys in the job's `model` (`model_extra`
/// starts with a comma).
fn write_job_with_model(sb: &Sandbox, base_url: &str, model_extra: &str, extra: &str) {
    sb.skill("deployer", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: masked\nskill: deployer\ngoal: Deploy.\n\
             model: {{provider: openai, name: fake-model, base_url: {base_url}, \
             api_key_env: LLM_KEY{model_extra}}}\n\
             tools: [read, write, exec]\nworkspace: ws\nskills_path: [skills]\n\
             allow_dirty: true\npermissions: {{default: allow}}\n\
             secrets: [DEPLOY_TOKEN]\nenv:\n  DEPLOY_TOKEN: \"${{{{ secrets.DEPLOY_TOKEN }}}}\"\n\
             outputs: {{dir: out, patch: out/changes.patch, result: out/result.json}}\n{extra}"
        ),
    );
    sb.write("ws/README.md", "a repository\n");
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(sb.workspace())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "start"]);
}

fn agentci(sb: &Sandbox, user: RunAs, args: &[&str]) -> Output {
    let mut all = vec!["run", "job.yaml"];
    all.extend_from_slice(args);
    all.extend(["--progress", "none"]);
    sb.agentci_as(
        user,
        &all,
        &[("DEPLOY_TOKEN", SECRET), ("LLM_KEY", API_KEY)],
    )
}

fn run_dir(sb: &Sandbox) -> PathBuf {
    sb.workspace().join("out")
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// No file under `dir` holds `secret`'s bytes.
fn assert_nowhere(dir: &Path, secret: &str, user: RunAs) {
    let files = files_under(dir);
    assert!(
        files.iter().any(|f| f.ends_with("checkpoint/state.json")),
        "{}: no checkpoint in {files:?}",
        user.label()
    );
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{}: {} holds the secret",
            user.label(),
            file.display()
        );
    }
}

/// The model "decodes" the secret it printed reversed and puts it in a
/// plan title, a tool argument (a file the patch shows), a step summary
/// and its text.
fn decoding_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[(&format!("deploy with {SECRET}"), "deployed")]),
        Reply::tool_call("exec", json!({"command": "printenv DEPLOY_TOKEN | rev"})),
        Reply::tool_call(
            "write",
            json!({"path": "notes.txt", "content": format!("token: {SECRET}\n")}),
        ),
        Reply::step_done(&format!("deployed with {SECRET}")),
        Reply::text(&format!("Done; the token was {SECRET}.")),
    ]
}

#[test]
fn a_decoded_secret_is_in_no_record_and_a_resumed_run_sees_it_masked() {
    for user in RunAs::each() {
        let model = FakeModel::start(decoding_script());
        let sb = Sandbox::new();
        write_job(&sb, &model.base_url(), "budget: {max_turns: 3}\n");
        let out = agentci(&sb, user, &[]);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{}: {}",
            user.label(),
            stderr(&out)
        );
        // The command did print it reversed (the model got it back): the attack ran.
        let reversed: String = SECRET.chars().rev().collect();
        let sent = serde_json::to_string(&model.requests()).unwrap();
        assert!(
            sent.contains(&reversed),
            "{}: the command did not print the secret reversed",
            user.label()
        );
        assert_nowhere(&run_dir(&sb), SECRET, user);
        let patch = std::fs::read_to_string(run_dir(&sb).join("changes.patch")).unwrap();
        assert!(patch.contains("+token: ***"), "{}: {patch}", user.label());

        // Resumed, the run goes on from the masked conversation.
        let sent_before = model.requests().len();
        let out = agentci(&sb, user, &["--resume", "ws/out", "--max-turns", "10"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            user.label(),
            stderr(&out)
        );
        assert_eq!(model.remaining(), 0, "{}", user.label());
        let resumed = model.requests()[sent_before]["messages"].to_string();
        assert!(
            resumed.contains(r#"token: ***\\n"#),
            "{}: {resumed}",
            user.label()
        );
        assert!(!resumed.contains(SECRET), "{}: {resumed}", user.label());
        let trace = read_jsonl(&run_dir(&sb).join("trace.jsonl"));
        assert_eq!(events(&trace, "run.completed")[0]["status"], "passed");
        assert_nowhere(&run_dir(&sb), SECRET, user);
        // The workspace keeps what the agent wrote: only records are masked.
        assert_eq!(
            std::fs::read_to_string(sb.workspace().join("notes.txt")).unwrap(),
            format!("token: {SECRET}\n")
        );
    }
}

#[test]
fn an_endpoint_echoing_the_api_key_gets_it_into_no_record() {
    for user in RunAs::each() {
        let model = FakeModel::start(vec![
            Reply::plan(&[(&format!("use key {API_KEY}"), "done")]),
            Reply::tool_call("read", json!({"path": format!("{API_KEY}.txt")})),
            Reply::text(&format!("Your key is {API_KEY}.")),
        ]);
        let sb = Sandbox::new();
        write_job(&sb, &model.base_url(), "");
        let out = agentci(&sb, user, &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            user.label(),
            stderr(&out)
        );
        assert_nowhere(&run_dir(&sb), API_KEY, user);
    }
}

/// A run stopped by its budget three turns after the huge one, in the
/// same step (the loop guard still remembers the call): the checkpoint it
/// rewrote at each of those turns is small, and the argument is on disk
/// once, in the append-only messages file.
#[test]
fn one_huge_argument_is_not_rewritten_at_every_later_turn() {
    for user in RunAs::each() {
        // 1 MiB rather than the report's 30: the same path (anything of
        // 64 KiB or more is stored by reference), under the fake server's
        // 2 MB request limit and fast in a debug build.
        let huge = "h".repeat(HUGE);
        let mut script = vec![
            Reply::plan(&[("read around", "read")]),
            // An argument the schema refuses: the loop guard still saw it.
            Reply::tool_call("read", json!({"path": "README.md", "junk": huge})),
        ];
        for i in 0..3 {
            script.push(Reply::tool_call(
                "read",
                json!({"path": "README.md", "offset": i + 1}),
            ));
        }
        let model = FakeModel::start(script);
        let sb = Sandbox::new();
        // The fake streams an argument a few characters a chunk, as real
        // servers do: 1 MiB of it is some 100 MiB on the wire, over the
        // default cap on one answer.
        write_job_with_model(
            &sb,
            &model.base_url(),
            ", max_response_bytes: 1GiB",
            "budget: {max_turns: 5}\n",
        );
        let out = agentci(&sb, user, &[]);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{}: {}",
            user.label(),
            stderr(&out)
        );
        let checkpoint = run_dir(&sb).join("checkpoint");
        let state = std::fs::metadata(checkpoint.join("state.json"))
            .unwrap()
            .len();
        assert!(
            state < 64 * 1024,
            "{}: state.json is {state} bytes after the huge turn",
            user.label()
        );
        // Stored once: the messages file holds the turn, nothing holds it again.
        let total: u64 = files_under(&checkpoint)
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum();
        assert!(
            total < (HUGE + HUGE / 4) as u64,
            "{}: the checkpoint holds {total} bytes",
            user.label()
        );
    }
}
