//! Skills as the public collections write them: the corpus under
//! tests/data/skills-corpus/ (sibling files, scripts/, references/, folder
//! placeholders, Claude Code tool names, a folder named unlike its skill, a
//! symlinked folder, frontmatter edge cases) checked line by line through
//! `agentci validate`, and runs of the real binary against the fake model
//! server where the model reaches a skill's own files by the folder the
//! system prompt gives.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, copy_tree, events, stderr, stdout};
use super::support::users::RunAs;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

/// A temporary folder holding a copy of the corpus (and the target of its symlink).
fn corpus_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    for name in ["skills-corpus", "skills-corpus-targets"] {
        copy_tree(&Path::new(DATA).join(name), &root.join(name));
    }
    (tmp, root)
}

/// What `agentci validate skills-corpus` prints, line by line: each skill of
/// the corpus with the problems it must get, at the place they are.
const CORPUS_EXPECTED: &str = "\
ok   skills-corpus/edge-block-dashes/SKILL.md (skill edge-block-dashes)
ok   skills-corpus/edge-comment-opener/SKILL.md (skill edge-comment-opener)
ok   skills-corpus/edge-cr-only/SKILL.md (skill edge-cr-only)
ok   skills-corpus/edge-crlf/SKILL.md (skill edge-crlf)
skills-corpus/edge-deep/SKILL.md:4:269: error: the YAML is nested too deeply to read; keep it to plain keys, lists and short values
skills-corpus/edge-empty-compatibility/SKILL.md:4:16: error: `compatibility` has 0 characters; it takes 1 to 500 (what the skill needs to run), or leave the key out
skills-corpus/edge-lowercase: error: the skill file is named `skill.md`; rename it to SKILL.md (the name is case-sensitive)
skills-corpus/edge-many-problems/SKILL.md:4:3: error: `description`: expected text, found a list; quote text that starts with `[` or `{`
skills-corpus/edge-many-problems/SKILL.md:7:5: error: `allowed-tools[1]`: expected a tool name such as `Read` or `Bash(git diff:*)`, found a mapping
skills-corpus/edge-many-problems/SKILL.md:8:12: error: `max-turns` must be a whole number from 1 to 4294967295, found a string `many`
skills-corpus/edge-many-problems/SKILL.md:9:11: error: `metadata` must be a mapping of keys to text (`author: me`), found a list
skills-corpus/edge-no-body/SKILL.md:5:1: warning: SKILL.md has no instructions after the frontmatter; the body is what the agent follows
ok   skills-corpus/edge-no-body/SKILL.md (skill edge-no-body)
skills-corpus/edge-not-utf8/SKILL.md:3:17: error: the file is not valid UTF-8: byte 0xe9 here starts no character; save it as UTF-8
skills-corpus/edge-null-description/SKILL.md:3:12: error: `description` is present but has no value; say what the skill does and when to use it
skills-corpus/edge-tab-indent/SKILL.md:5:1: error: a tab in the indentation; YAML indents with spaces only, so replace the tab with spaces
skills-corpus/edge-type-error/SKILL.md:4:3: error: `description`: expected text, found a list; quote text that starts with `[` or `{`
skills-corpus/edge-unquoted-colon/SKILL.md:3:36: error: mapping values are not allowed in this context; the value of `description` holds `: `, which YAML reads as a new key: quote it, e.g. description: \"Checks links. Use when: the docs changed\"
ok   skills-corpus/form-filling/SKILL.md (skill form-filling)
skills-corpus/interview/SKILL.md:4:16: warning: unknown tool `AskUserQuestion` in allowed-tools; expected a canonical name (read, write, edit, find, grep, ls, exec, web_fetch, todo, task, process) or a Claude Code name (Read, Write, Edit, Glob, Grep, LS, Bash, Bash(cmd:*), …)
skills-corpus/interview/SKILL.md:4:16: warning: skill `interview` leaves the run no tools: none of its `allowed-tools` is a tool agentci has (names that map to no agentci tool: AskUserQuestion); list the tools it needs in `allowed-tools` (Read Grep Edit Bash(cmd:*) …) and in the job's `tools`, or drop `allowed-tools` to allow every tool
ok   skills-corpus/interview/SKILL.md (skill interview)
ok   skills-corpus/linked/SKILL.md (skill linked)
skills-corpus/metadata-lists/SKILL.md:6:9: warning: `metadata.tags` is a list, but the Agent Skills format wants text values; the skill loads with it kept as the YAML text `[\"pdf\",\"forms\"]` (quote it, or write it as text, to silence this)
skills-corpus/metadata-lists/SKILL.md:8:5: warning: `metadata.requires` is a mapping, but the Agent Skills format wants text values; the skill loads with it kept as the YAML text `{\"bins\":[\"qpdf\"]}` (quote it, or write it as text, to silence this)
ok   skills-corpus/metadata-lists/SKILL.md (skill metadata-lists)
skills-corpus/no-tools/SKILL.md:4:16: warning: skill `no-tools` leaves the run no tools: its `allowed-tools` is empty; list the tools it needs in `allowed-tools` (Read Grep Edit Bash(cmd:*) …) and in the job's `tools`, or drop `allowed-tools` to allow every tool
ok   skills-corpus/no-tools/SKILL.md (skill no-tools)
ok   skills-corpus/plugin/skills/root-cause/SKILL.md (skill root-cause)
skills-corpus/react-best-practices/SKILL.md:2:7: warning: skill name `vercel-react-best-practices` differs from its folder `react-best-practices`; the skill loads, but the format wants them equal, so rename one
ok   skills-corpus/react-best-practices/SKILL.md (skill vercel-react-best-practices)
ok   skills-corpus/release-notes/SKILL.md (skill release-notes)
ok   skills-corpus/web-research/SKILL.md (skill web-research)
";

#[test]
fn corpus_validates_line_by_line_as_expected() {
    let (_tmp, root) = corpus_copy();
    let out = agentci_in(&root, &["validate", "skills-corpus"], &[]);
    let printed = stdout(&out);
    let expected: Vec<&str> = CORPUS_EXPECTED.lines().collect();
    let actual: Vec<&str> = printed.lines().collect();
    for (i, (want, got)) in expected.iter().zip(&actual).enumerate() {
        assert_eq!(
            got,
            want,
            "line {} differs; whole output:\n{printed}",
            i + 1
        );
    }
    assert_eq!(actual.len(), expected.len(), "whole output:\n{printed}");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // Messages are for people: no Rust debug output, no escaped quotes.
    for bad in ["{ ", "\\'", "Nodes", "Some("] {
        assert!(!printed.contains(bad), "`{bad}` in:\n{printed}");
    }
}

#[test]
fn a_symlinked_skill_is_judged_and_reported_by_the_link() {
    let (_tmp, root) = corpus_copy();
    // The target folder's name differs from the skill's; the link's does not.
    let out = agentci_in(&root, &["validate", "skills-corpus/linked"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        "ok   skills-corpus/linked/SKILL.md (skill linked)\n"
    );
    // Validated through its real folder, the mismatch shows, by that path.
    let out = agentci_in(
        &root,
        &["validate", "skills-corpus-targets/linked-real-folder"],
        &[],
    );
    assert!(
        stdout(&out).contains(
            "skills-corpus-targets/linked-real-folder/SKILL.md:2:7: warning: skill name `linked` \
             differs from its folder `linked-real-folder`"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_lowercase_skill_file_is_told_to_be_renamed() {
    let (_tmp, root) = corpus_copy();
    for path in [
        "skills-corpus/edge-lowercase",
        "skills-corpus/edge-lowercase/skill.md",
    ] {
        let out = agentci_in(&root, &["validate", path], &[]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stdout(&out).contains("rename it to SKILL.md"),
            "{path}: {}",
            stdout(&out)
        );
    }
}

/// A sandbox whose `skills/` holds the corpus, with `job.yaml` made of `job`.
fn corpus_sandbox(job: &str) -> Sandbox {
    let sb = Sandbox::new();
    copy_tree(
        &Path::new(DATA).join("skills-corpus"),
        &sb.path().join("skills"),
    );
    sb.write("job.yaml", job);
    sb
}

fn job(skill: &str, extra: &str, base_url: &str) -> String {
    format!(
        "version: 1\nname: corpus job\nskill: {skill}\ngoal: Fill in form.txt.\n\
         model: {{provider: openai, name: fake-model, base_url: {base_url}}}\n\
         workspace: ws\nskills_path: [skills]\n{extra}"
    )
}

#[test]
fn validate_and_run_say_when_the_job_and_skill_leave_no_tools() {
    let model = FakeModel::start(vec![Reply::text("No plan."), Reply::text("No plan.")]);
    // The skill allows reading only; the job asks for writing only.
    let sb = corpus_sandbox(&job(
        "{path: skills/plugin/skills/root-cause}",
        "tools: [write, edit]\nbudget: {max_turns: 1}\n",
        &model.base_url(),
    ));
    let out = sb.agentci(&["validate", "job.yaml"]);
    let printed = stdout(&out);
    assert!(
        printed.contains(
            "job.yaml:3:8: warning: skill `root-cause` leaves the run no tools: the job's \
             `tools` [write, edit] and the skill's allowed tools [read, find, grep, exec] have \
             none in common"
        ),
        "{printed}"
    );
    // The run says so at its start too.
    let out = sb.agentci(&["run", "job.yaml", "--progress", "plain"]);
    assert!(
        stderr(&out).contains("leaves the run no tools"),
        "{}",
        stderr(&out)
    );

    // `allowed-tools: AskUserQuestion`: the skill alone leaves nothing.
    sb.write(
        "job.yaml",
        &job("interview", "budget: {max_turns: 1}\n", &model.base_url()),
    );
    let out = sb.agentci(&["run", "job.yaml", "--progress", "plain"]);
    assert!(
        stderr(&out).contains(
            "none of its `allowed-tools` is a tool agentci has (names that map to no agentci \
             tool: AskUserQuestion)"
        ),
        "{}",
        stderr(&out)
    );
}

/// A skill that allows only MCP tools gets them from the job's servers:
/// neither validate nor run calls it toolless.
#[test]
fn a_skill_of_mcp_tools_only_is_not_called_toolless() {
    let sb = Sandbox::new();
    sb.skill(
        "issues",
        Some("mcp__github__search_issues mcp_read_resource"),
    );
    sb.write(
        "job.yaml",
        "name: j\nskill: issues\nskills_path: [skills]\ngoal: g\nworkspace: ws\nmodel: {name: m}\n",
    );
    let out = sb.agentci(&["validate", "job.yaml"]);
    assert!(
        !stdout(&out).contains("leaves the run no tools"),
        "{}",
        stdout(&out)
    );
    // An empty allow-list is still called out.
    sb.skill("nothing", Some("\"\""));
    sb.write(
        "job.yaml",
        "name: j\nskill: nothing\nskills_path: [skills]\ngoal: g\nworkspace: ws\nmodel: {name: m}\n",
    );
    let out = sb.agentci(&["validate", "job.yaml"]);
    assert!(
        stdout(&out).contains("leaves the run no tools"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn further_skills_are_listed_by_name_description_and_folder_not_body() {
    let model = FakeModel::start(vec![Reply::text("No plan.")]);
    let sb = corpus_sandbox(&job(
        "form-filling",
        "skills: [release-notes, react-best-practices]\nbudget: {max_turns: 1}\n",
        &model.base_url(),
    ));
    let out = sb.agentci(&["validate", "job.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("ok   job.yaml (job corpus job, skill form-filling)"),
        "{}",
        stdout(&out)
    );
    sb.agentci(&["run", "job.yaml", "--progress", "plain"]);
    let requests = model.requests();
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    let skills = sb.path().canonicalize().unwrap().join("skills");
    let notes = skills.join("release-notes");
    assert!(
        system.contains(&format!(
            "- release-notes: Drafts release notes from the commits since the last tag. Use \
             when: a release is being cut. (folder: {}, instructions: {}/SKILL.md)",
            notes.display(),
            notes.display()
        )),
        "{system}"
    );
    assert!(
        system.contains("- vercel-react-best-practices: React performance guidelines."),
        "{system}"
    );
    // The main skill's body is in the prompt; the further skills' bodies are not.
    assert!(system.contains("# Form filling"), "{system}");
    assert!(
        !system.contains("to list the commits since the last tag"),
        "{system}"
    );
    assert!(
        system.contains(&format!(
            "The skill's folder is {}:",
            skills.join("form-filling").display()
        )),
        "{system}"
    );

    // A further skill that does not exist is reported at its entry in the job.
    sb.write(
        "job.yaml",
        &job(
            "form-filling",
            "skills: [release-notes, nope]\n",
            &model.base_url(),
        ),
    );
    let out = sb.agentci(&["validate", "job.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout(&out).contains("job.yaml:8:25: error: skill `nope` not found"),
        "{}",
        stdout(&out)
    );
    let out = sb.agentci(&["run", "job.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("skill `nope` not found"),
        "{}",
        stderr(&out)
    );
}

/// The tool result the model got back for `call_id` in a later request.
fn tool_result(requests: &[Value], call_id: &str) -> String {
    requests
        .iter()
        .flat_map(|r| r["messages"].as_array().unwrap())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool message for {call_id}"))["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn the_model_reads_a_skill_file_by_the_prompted_folder_and_cannot_write_there() {
    let sb = corpus_sandbox("");
    sb.write("ws/form.txt", "name:\ndate:\n");
    let dir = sb
        .path()
        .canonicalize()
        .unwrap()
        .join("skills/form-filling");
    let at = |rel: &str| format!("{}/{rel}", dir.display());
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![
            ("c_read", "read", json!({"path": at("reference.md")})),
            ("c_ls", "ls", json!({"path": dir.display().to_string()})),
            (
                "c_grep",
                "grep",
                json!({"pattern": "ISO 8601", "path": at("")}),
            ),
            (
                "c_find",
                "find",
                json!({"pattern": "*.sh", "path": at("scripts")}),
            ),
        ]),
        Reply::plan(&[("Fill the form", "no empty fields")]),
        Reply::tool_calls(vec![
            (
                "c_write",
                "write",
                json!({"path": at("reference.md"), "content": "x"}),
            ),
            (
                "c_new",
                "write",
                json!({"path": at("notes.md"), "content": "x"}),
            ),
            (
                "c_edit",
                "edit",
                json!({"path": at("SKILL.md"), "old_text": "Form", "new_text": "X"}),
            ),
            ("c_climb", "read", json!({"path": at("../../ws/form.txt")})),
        ]),
        Reply::tool_calls(vec![(
            "c_fill",
            "write",
            json!({"path": "form.txt", "content": "name: Ada\ndate: 2024-05-01\n"}),
        )]),
        Reply::tool_calls(vec![(
            "c_exec",
            "exec",
            json!({"command": format!("sh {} form.txt", at("scripts/count_fields.sh"))}),
        )]),
        Reply::step_done("filled"),
        Reply::text("Filled the form."),
    ]);
    sb.write(
        "job.yaml",
        &job(
            "form-filling",
            "tools: [read, write, edit, ls, grep, find, exec]\n\
             permissions: {default: deny, allow: [read, ls, grep, find, write, edit, \"exec(sh *)\"]}\n\
             checks:\n  - {name: filled, run: \"! grep -q ':$' form.txt\"}\n",
            &model.base_url(),
        ),
    );
    let out = sb.agentci(&[
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "plain",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let requests = model.requests();
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains(&format!("The skill's folder is {}:", dir.display())),
        "{system}"
    );

    let read = tool_result(&requests, "c_read");
    assert!(read.contains("ISO 8601"), "{read}");
    let ls = tool_result(&requests, "c_ls");
    assert!(
        ls.contains("scripts/") && ls.contains("reference.md"),
        "{ls}"
    );
    let grep = tool_result(&requests, "c_grep");
    assert!(grep.contains(&at("reference.md")), "{grep}");
    let find = tool_result(&requests, "c_find");
    assert!(find.contains(&at("scripts/count_fields.sh")), "{find}");

    for call in ["c_write", "c_new", "c_edit"] {
        let refused = tool_result(&requests, call);
        assert!(
            refused.starts_with("ERROR") && refused.contains("read-only"),
            "{call}: {refused}"
        );
    }
    // `..` cannot climb out of the skill folder into the rest of the disk.
    let climbed = tool_result(&requests, "c_climb");
    assert!(climbed.starts_with("ERROR"), "{climbed}");
    let exec = tool_result(&requests, "c_exec");
    assert!(exec.contains('0'), "{exec}");

    // Nothing in the skill folder changed; the workspace file did.
    assert!(
        std::fs::read_to_string(dir.join("reference.md"))
            .unwrap()
            .contains("ISO 8601")
    );
    assert!(!dir.join("notes.md").exists());
    assert_eq!(sb.read("ws/form.txt"), "name: Ada\ndate: 2024-05-01\n");
    let trace = sb.trace("out/trace.jsonl");
    let loaded = events(&trace, "skill.loaded");
    assert_eq!(loaded[0]["path"], dir.display().to_string());
}

#[test]
fn placeholders_become_the_folder_in_body_and_allowed_tools() {
    let model = FakeModel::start(vec![Reply::text("No plan."), Reply::text("No plan.")]);
    let sb = corpus_sandbox(&job(
        "release-notes",
        "budget: {max_turns: 1}\n",
        &model.base_url(),
    ));
    sb.agentci(&["run", "job.yaml", "--trace", "out/trace.jsonl"]);
    let skills = sb.path().canonicalize().unwrap().join("skills");
    let dir = skills.join("release-notes");
    let system = model.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains(&format!("Run `sh {}/scripts/commits.sh`", dir.display())),
        "{system}"
    );
    assert!(!system.contains("{baseDir}"), "{system}");
    let trace = sb.trace("out/trace.jsonl");
    let loaded = events(&trace, "skill.loaded");
    assert_eq!(
        loaded[0]["allowed_tools"],
        json!([
            "read",
            "grep",
            format!("exec(sh {}/scripts/commits.sh *)", dir.display())
        ])
    );

    // In a Claude Code plugin, `${CLAUDE_PLUGIN_ROOT}` is the plugin's folder
    // and `${CLAUDE_SKILL_DIR}` the skill's.
    sb.write(
        "job.yaml",
        &job(
            "root-cause",
            "budget: {max_turns: 1}\nskills_path: [skills/plugin/skills]\n"
                .replace("skills_path: [skills/plugin/skills]", "")
                .as_str(),
            &model.base_url(),
        )
        .replace(
            "skills_path: [skills]",
            "skills_path: [skills/plugin/skills]",
        ),
    );
    sb.agentci(&["run", "job.yaml"]);
    let system = model.requests()[1]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let plugin = skills.join("plugin");
    assert!(
        system.contains(&format!(
            "Follow `{}/skills/root-cause/tracing.md`",
            plugin.display()
        )),
        "{system}"
    );
    assert!(
        system.contains(&format!(
            "`{}/skills/root-cause/scripts/bisect-run.sh`",
            plugin.display()
        )),
        "{system}"
    );
}

#[test]
fn a_cassette_with_skill_paths_replays_from_another_checkout() {
    let first = corpus_sandbox("");
    first.write("ws/form.txt", "name:\n");
    let dir = first
        .path()
        .canonicalize()
        .unwrap()
        .join("skills/form-filling");
    let model = FakeModel::start(vec![
        Reply::tool_calls(vec![(
            "c_read",
            "read",
            json!({"path": format!("{}/reference.md", dir.display())}),
        )]),
        Reply::plan(&[("Read", "read")]),
        Reply::step_done("read"),
        Reply::text("Done."),
    ]);
    let job_text = job(
        "form-filling",
        "permissions: {default: allow}\n",
        &model.base_url(),
    );
    first.write("job.yaml", &job_text);
    let out = first.agentci(&["run", "job.yaml", "--record", "cassette.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let cassette = first.read("cassette.jsonl");
    assert!(!cassette.contains(&dir.display().to_string()), "{cassette}");
    assert!(
        cassette.contains("${SKILL:form-filling}/reference.md"),
        "{cassette}"
    );

    // Another checkout: other absolute paths, same cassette.
    let second = corpus_sandbox(&job_text);
    second.write("ws/form.txt", "name:\n");
    second.write("cassette.jsonl", &cassette);
    let out = second.agentci(&[
        "run",
        "job.yaml",
        "--replay",
        "cassette.jsonl",
        "--trace",
        "out/trace.jsonl",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace = second.trace("out/trace.jsonl");
    let results = events(&trace, "tool.result");
    let read = results.iter().find(|e| e["call_id"] == "c_read").unwrap();
    assert_eq!(read["ok"], true, "{read}");
}

/// A skill `syncer` in `skills/` whose `scripts/sync.sh` says where it ran,
/// with `scripts/link.sh` a symlink to a script outside the skill folder.
fn syncer_skill(sb: &Sandbox, allowed_tools: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    sb.write(
        "skills/syncer/SKILL.md",
        &format!(
            "---\nname: syncer\ndescription: Syncs things with its script.\n\
             allowed-tools: {allowed_tools}\n---\nRun scripts/sync.sh.\n"
        ),
    );
    for (file, text) in [
        (
            "skills/syncer/scripts/sync.sh",
            "#!/bin/sh\necho \"sync $1 in $(pwd)\"\necho changed >> \"$0\" 2>/dev/null\n\
             touch written 2>/dev/null\nexit 0\n",
        ),
        ("outside.sh", "#!/bin/sh\necho outside ran\n"),
    ] {
        let path = sb.write(file, text);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let dir = sb.path().canonicalize().unwrap().join("skills/syncer");
    std::os::unix::fs::symlink(
        sb.path().canonicalize().unwrap().join("outside.sh"),
        dir.join("scripts/link.sh"),
    )
    .unwrap();
    dir
}

// Regression (issue 22, item 6): a script named by its absolute path was
// refused as "given by a path outside the workspace, which allow rules do
// not name" although the rule named it and the prompt says skill scripts
// run by their absolute path; `cwd` in the skill folder was refused as a
// write into a read-only folder; the skill's own `Bash(${CLAUDE_SKILL_DIR}/…)`
// refusal named the very pattern the call matched.
#[test]
fn a_skill_script_runs_by_its_absolute_path_and_in_its_folder() {
    // As root, and as an unprivileged user who owns the skill folder (so
    // only the sandbox stops the script from rewriting itself).
    for user in RunAs::each() {
        skill_script_runs_as(user);
    }
}

fn skill_script_runs_as(user: RunAs) {
    eprintln!("as {}:", user.label());
    let sb = Sandbox::new();
    let dir = syncer_skill(
        &sb,
        "Read Bash(${CLAUDE_SKILL_DIR}/scripts/sync.sh:*) Bash(${CLAUDE_SKILL_DIR}/scripts/link.sh:*) Bash(/bin/echo:*)",
    );
    let ws = sb.workspace().canonicalize().unwrap();
    let at = |rel: &str| format!("{}/{rel}", dir.display());
    let model = FakeModel::start(vec![
        Reply::plan(&[("Sync", "synced")]),
        Reply::tool_calls(vec![
            (
                "c_abs",
                "exec",
                json!({"command": format!("{} one", at("scripts/sync.sh"))}),
            ),
            (
                "c_cwd",
                "exec",
                json!({"command": format!("{} two", at("scripts/sync.sh")), "cwd": dir.display().to_string()}),
            ),
            ("c_link", "exec", json!({"command": at("scripts/link.sh")})),
            ("c_echo", "exec", json!({"command": "/bin/echo hi"})),
        ]),
        Reply::step_done("synced"),
        Reply::text("Synced."),
    ]);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: sync\nskill: syncer\ngoal: Sync.\n\
             model: {{provider: openai, name: fake-model, base_url: {}}}\n\
             workspace: ws\nskills_path: [skills]\ntools: [read, exec]\n\
             permissions:\n  default: deny\n  allow: [read, \"exec(${{SKILL:syncer}}/scripts/sync.sh *)\", \
             \"exec(${{CLAUDE_SKILL_DIR}}/scripts/link.sh *)\", \"exec(/bin/echo *)\"]\n",
            model.base_url()
        ),
    );
    let out = sb.agentci_as(
        user,
        &["run", "job.yaml", "--trace", "out/trace.jsonl"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let requests = model.requests();
    // The job's placeholders became the skill's folder, as the prompt shows.
    let details = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        details.contains(&format!("`exec({} *)`", at("scripts/sync.sh"))),
        "{details}"
    );
    let exec = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "exec")
        .unwrap()["function"]["description"]
        .as_str()
        .unwrap()
        .to_string();
    // Regression (issue 22, item 10): the description said `sh -c`.
    assert!(
        exec.contains("`bash -c`") && !exec.contains("`sh -c`"),
        "{exec}"
    );

    let ran = tool_result(&requests, "c_abs");
    assert!(
        ran.contains(&format!("sync one in {}", ws.display())),
        "{ran}"
    );
    let ran = tool_result(&requests, "c_cwd");
    assert!(
        ran.contains(&format!("sync two in {}", dir.display())),
        "{ran}"
    );
    let trace = sb.trace("out/trace.jsonl");
    let results = events(&trace, "tool.result");
    let in_skill = results.iter().find(|e| e["call_id"] == "c_cwd").unwrap();
    assert_eq!(in_skill["data"]["cwd"], dir.display().to_string());
    // A symlink in the skill folder that leads out of it is not the skill's
    // script, and a path outside every skill folder stays refused; both
    // say how to call a program instead.
    for call in ["c_link", "c_echo"] {
        let refused = tool_result(&requests, call);
        assert!(
            refused.starts_with("ERROR")
                && refused.contains("is not a file inside a skill folder of this run")
                && refused.contains("by its absolute path inside the skill's folder"),
            "{call}: {refused}"
        );
    }
    assert!(!tool_result(&requests, "c_link").contains("outside ran"));
    // The script the rule trusts cannot change itself or its folder: the
    // sandbox keeps a skill folder outside the workspace read-only too.
    assert!(!dir.join("written").exists());
    let script = sb.read("skills/syncer/scripts/sync.sh");
    assert!(script.ends_with("exit 0\n"), "{script}");
}

// Regression (issue 22, item 6): a list or mapping under `metadata` was a
// hard error, so 710 of 2,068 skills of one public collection could not
// run. The skill now runs, and the run says what it kept, on stderr and
// in the trace, where skill warnings go.
#[test]
fn a_skill_with_lists_in_its_metadata_runs_and_warns() {
    let model = FakeModel::start(vec![Reply::text("No plan."), Reply::text("No plan.")]);
    let sb = corpus_sandbox(&job(
        "metadata-lists",
        "budget: {max_turns: 1}\n",
        &model.base_url(),
    ));
    let out = sb.agentci(&[
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "plain",
    ]);
    assert_ne!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`metadata.tags` is a list"),
        "{}",
        stderr(&out)
    );
    let trace = sb.trace("out/trace.jsonl");
    let loaded = events(&trace, "skill.loaded");
    assert_eq!(loaded[0]["name"], "metadata-lists");
    let warnings: Vec<&str> = events(&trace, "warning")
        .iter()
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("`metadata.requires` is a mapping")),
        "{warnings:?}"
    );
}

// Attack: a trusted skill's script inside the workspace, replaced by a
// command that renames a parent of the skill's folder and makes a new one
// at the same path with a script of its own. The allow rule names the
// skill's script by its path; the forged one must not run (judged by what
// it would leave behind), as root and as an unprivileged user. Under the
// sandbox the rename itself fails (the skill folder is a mount point in the
// command's namespace); where there is none, the folder's pinned inode
// refuses the new one (`policy::skill_programs`).
#[test]
fn a_skill_script_replaced_by_renaming_its_folder_is_refused() {
    for user in RunAs::each() {
        eprintln!("as {}:", user.label());
        let sb = Sandbox::new();
        sb.write(
            "ws/.agents/skills/syncer/SKILL.md",
            "---\nname: syncer\ndescription: Syncs things with its script.\n---\nRun it.\n",
        );
        let script = sb.write(
            "ws/.agents/skills/syncer/scripts/sync.sh",
            "#!/bin/sh\necho synced\n",
        );
        let forged = sb.write("ws/forged.sh", "#!/bin/sh\ntouch pwned\necho forged ran\n");
        for path in [&script, &forged] {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let ws = sb.workspace().canonicalize().unwrap();
        let target = ws.join(".agents/skills/syncer/scripts/sync.sh");
        let model = FakeModel::start(vec![
            Reply::plan(&[("Sync", "synced")]),
            Reply::tool_calls(vec![(
                "c_move",
                "exec",
                json!({"command": "mv .agents .agents-moved && mkdir -p .agents/skills/syncer/scripts && cp forged.sh .agents/skills/syncer/scripts/sync.sh"}),
            )]),
            Reply::tool_calls(vec![(
                "c_run",
                "exec",
                json!({"command": target.display().to_string()}),
            )]),
            Reply::step_done("synced"),
            Reply::text("Synced."),
        ]);
        sb.write(
            "job.yaml",
            &format!(
                "version: 1\nname: sync\nskill: syncer\ngoal: Sync.\n\
                 model: {{provider: openai, name: fake-model, base_url: {}}}\n\
                 workspace: ws\ntools: [exec]\n\
                 permissions:\n  default: deny\n  allow: [\"exec(mv *)\", \"exec(mkdir *)\", \
                 \"exec(cp *)\", \"exec(${{SKILL:syncer}}/scripts/sync.sh *)\"]\n",
                model.base_url()
            ),
        );
        let out = sb.agentci_as(
            user,
            &["run", "job.yaml", "--trace", "out/trace.jsonl"],
            &[],
        );
        let requests = model.requests();
        let ran = tool_result(&requests, "c_run");
        assert!(!ran.contains("forged ran"), "{ran}\n{}", stderr(&out));
        assert!(!ws.join("pwned").exists(), "the forged script ran: {ran}");
        // The skill's own script still runs: the rule is not simply refused.
        assert!(ran.contains("synced"), "{ran}");
    }
}
