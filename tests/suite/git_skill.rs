//! `skill: {git: URL, rev: REV, path: DIR}`: cloned once from a local bare
//! repository into the cache, then used again with the repository gone.

use std::path::Path;
use std::process::{Command, Stdio};

use git2::Repository;
use serde_json::Value;

use super::git_output::{commit_all, init_repo};
use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, agentci_in, events, outside_github, stderr, stdout};
use super::support::job::{JobRun, TRACE};
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
    let out = JobRun::new(sb)
        .progress("none")
        .env("AGENTCI_CACHE", cache.to_str().unwrap())
        .output();
    // A refused job (exit 2) writes no trace; an earlier run's may be there.
    let trace = if out.status.code() == Some(2) {
        Vec::new()
    } else {
        assert_valid_trace(&sb.path().join(TRACE));
        sb.trace(TRACE)
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
    // The model is told the skill's folder in the cache, where its files are.
    let folder = format!(
        "The skill's folder is {}",
        cache.canonicalize().unwrap().display()
    );
    let text = system.as_str().unwrap();
    assert!(
        text.contains(&folder) && text.contains("/lint:"),
        "{system}"
    );

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

// Regression: runs that fetched a new revision into the same cached clone at
// once failed on libgit2's lock files ("failed to create locked file
// .../refs/tags/v3.lock"); fetches now take turns. A race: without the lock
// eight rounds of eight runs hit it every time we tried.
#[test]
fn parallel_runs_share_the_cache_and_its_fetches() {
    let sb = Sandbox::new();
    skills_repository(&sb);
    let source = Repository::open(sb.path().join("skills-src")).unwrap();
    let bare = Repository::open_bare(sb.path().join("skills.git")).unwrap();
    let cache = sb.path().join("cache");
    let validate_at_once = |rev: &str| -> Vec<String> {
        job(&sb, "http://127.0.0.1:9", rev);
        let children: Vec<_> = (0..8)
            .map(|_| {
                outside_github(&mut Command::new(env!("CARGO_BIN_EXE_agentci")))
                    .args(["validate", "job.yaml"])
                    .current_dir(sb.path())
                    .env("AGENTCI_CACHE", &cache)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        children
            .into_iter()
            .map(|child| child.wait_with_output().unwrap())
            .filter(|out| !out.status.success())
            .map(|out| format!("{}{}", stdout(&out), stderr(&out)))
            .collect()
    };
    // The first clone, eight at once.
    let mut failures = validate_at_once("v1");
    // Then new tags the clone lacks: eight fetches at once, each time.
    for n in 2..10 {
        std::fs::write(
            sb.path().join("skills-src/skills/lint/SKILL.md"),
            SKILL.replace("report", &format!("report {n}")),
        )
        .unwrap();
        let commit = commit_all(&source, "next");
        let commit = source.find_commit(commit).unwrap();
        source
            .tag_lightweight(&format!("v{n}"), commit.as_object(), false)
            .unwrap();
        bare.remote_anonymous(sb.path().join("skills-src").to_str().unwrap())
            .unwrap()
            .fetch(
                &["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
                None,
                None,
            )
            .unwrap();
        failures.extend(validate_at_once(&format!("v{n}")));
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(std::fs::read_dir(cache.join("git")).unwrap().count(), 1);
}
