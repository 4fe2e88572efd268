//! `skill: {git: URL, rev: REV, path: DIR}`: cloned once from a local bare
//! repository into the cache, then used again with the repository gone.

use std::path::Path;

use git2::Repository;
use serde_json::Value;

use super::git_output::{commit_all, init_repo};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, read_jsonl, stderr, stdout};
use super::support::trace_schema::assert_valid_trace;

const SKILL: &str = "---\nname: lint\ndescription: Fixes lint in small steps.\nallowed-tools: Read\n---\n\nRead the code, then report.\n";

/// `skills.git`, a bare repository whose tag `v1` holds `skills/lint/SKILL.md`;
/// returns the commit id of `v1`.
fn skills_repository(sb: &Sandbox) -> String {
    let source = sb.path().join("skills-src");
    let repo = init_repo(&source, &[("skills/lint/SKILL.md", SKILL)]);
    let v1 = repo.head().unwrap().peel_to_commit().unwrap();
    repo.tag_lightweight("v1", v1.as_object(), false).unwrap();
    // A later commit, so `v1` is not simply the newest one.
    std::fs::write(
        source.join("skills/lint/SKILL.md"),
        SKILL.replace("report", "stop"),
    )
    .unwrap();
    commit_all(&repo, "second");
    git2::build::RepoBuilder::new()
        .bare(true)
        .clone(source.to_str().unwrap(), &sb.path().join("skills.git"))
        .unwrap();
    v1.id().to_string()
}

fn job(sb: &Sandbox, base_url: &str, rev: &str) {
    sb.write(
        "job.yaml",
        &format!(
            "name: lint-it\nskill: {{git: skills.git, rev: {rev}, path: skills/lint}}\n\
             goal: Report lint.\nworkspace: ws\n\
             model: {{provider: openai, name: fake-model, base_url: {base_url}}}\n"
        ),
    );
}

fn script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Report", "a report")]),
        Reply::step_done("nothing to fix"),
        Reply::text("No lint."),
    ]
}

fn run(sb: &Sandbox, cache: &Path) -> (std::process::Output, Vec<Value>) {
    let out = agentci_in(
        sb.path(),
        &[
            "run",
            "job.yaml",
            "--trace",
            "out/trace.jsonl",
            "--progress",
            "none",
        ],
        &[("AGENTCI_CACHE", cache.to_str().unwrap())],
    );
    let path = sb.path().join("out/trace.jsonl");
    let trace = if out.status.code() == Some(2) {
        Vec::new()
    } else {
        assert_valid_trace(&path);
        read_jsonl(&path)
    };
    (out, trace)
}

#[test]
fn a_git_skill_is_cloned_once_and_then_used_from_the_cache() {
    let sb = Sandbox::new();
    let v1 = skills_repository(&sb);
    let cache = sb.path().join("cache");
    let url = sb.path().join("skills.git").display().to_string();

    let model = FakeModel::start(script());
    job(&sb, &model.base_url(), "v1");
    // `agentci validate` accepts the git form, resolving it through the cache.
    let out = agentci_in(
        sb.path(),
        &["validate", "job.yaml"],
        &[("AGENTCI_CACHE", cache.to_str().unwrap())],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );

    let (out, trace) = run(&sb, &cache);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let loaded = &events(&trace, "skill.loaded")[0];
    assert_eq!(loaded["name"], "lint");
    assert_eq!(loaded["source"]["git"], url);
    assert_eq!(loaded["source"]["rev"], "v1");
    assert_eq!(loaded["source"]["commit"], v1);
    assert_eq!(loaded["source"]["path"], "skills/lint");
    // The tag's version of the instructions, not the newest commit's.
    let system = &model.requests()[0]["messages"][0]["content"];
    assert!(system.as_str().unwrap().contains("then report"), "{system}");

    // A revision that does not exist says so.
    job(&sb, &model.base_url(), "v9");
    let (out, _) = run(&sb, &cache);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("revision `v9` does not exist in"), "{err}");

    // The repository goes away: the pinned tag and commit still load from the cache.
    std::fs::rename(sb.path().join("skills.git"), sb.path().join("moved.git")).unwrap();
    for rev in ["v1", v1.as_str()] {
        let model = FakeModel::start(script());
        job(&sb, &model.base_url(), rev);
        let (out, trace) = run(&sb, &cache);
        assert_eq!(out.status.code(), Some(0), "rev {rev}: {}", stderr(&out));
        assert_eq!(events(&trace, "skill.loaded")[0]["source"]["commit"], v1);
    }
    let clones = std::fs::read_dir(cache.join("git")).unwrap().count();
    assert_eq!(clones, 1, "one clone for one URL");

    // A revision the cache lacks needs the repository, and the message says so.
    job(&sb, &model.base_url(), "v2");
    let (out, _) = run(&sb, &cache);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is not in the cached clone"),
        "{}",
        stderr(&out)
    );
    // Still a real repository in the cache, not a leftover of a failed fetch.
    let cached = std::fs::read_dir(cache.join("git"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    Repository::open_bare(cached.path().join("repo")).unwrap();
}
