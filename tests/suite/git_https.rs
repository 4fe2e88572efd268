//! git over `https://` on agentci's own TLS, end to end: the real binary
//! pushes to (and clones skills from) the installed git's `git
//! http-backend` behind a local TLS server whose certificate the test CA
//! issued (`support::git_https`). The CA bundle is `SSL_CERT_FILE`, as for
//! the model. The push's token goes as basic auth to the pinned server and
//! nowhere else, and every refusal says what it was and what to do,
//! without the token.

use std::path::{Path, PathBuf};
use std::process::Output;

use git2::Repository;
use serde_json::{Value, json};

use super::git_output::{commit_all, init_repo};
use super::support::fake_model::{FakeModel, Reply};
use super::support::git_https::{Behaviour, GitHttps, Seen, ca_bundle};
use super::support::harness::{Sandbox, agentci_in, events, stderr, stdout};
use super::support::job::{JobRun, TRACE};
use super::support::trace_schema::assert_valid_trace;
use super::support::users::RunAs;

const TOKEN: &str = "tok-7e2d1a-https-push-secret";
const BRANCH: &str = "agentci/fix";
const USER: &str = "x-access-token";

fn fixing_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Write notes", "NOTES.md exists")]),
        Reply::tool_call("write", json!({"path": "NOTES.md", "content": "notes\n"})),
        Reply::step_done("wrote them"),
        Reply::text("done"),
    ]
}

/// A workspace repository whose `origin` is `remote`, and a job that
/// commits the model's change and pushes it there with `$GH_PUSH_TOKEN`.
fn push_job(sb: &Sandbox, base_url: &str, remote: &str) {
    let repo = init_repo(&sb.workspace(), &[("README.md", "# demo\n")]);
    repo.remote("origin", remote).unwrap();
    sb.skill("fixer", None);
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: https-push\nskill: fixer\ngoal: Write notes.\n\
             model: {{provider: openai, name: fake-model, base_url: {base_url}}}\n\
             tools: [read, write]\nworkspace: ws\nskills_path: [skills]\n\
             permissions: {{default: allow}}\n\
             outputs:\n  commit: {{branch: {BRANCH}}}\n  \
             push: {{remote: origin, token_env: GH_PUSH_TOKEN}}\n"
        ),
    );
}

/// A bare repository `remote.git` under `root`, where the server serves it.
fn served_remote(root: &Path) -> PathBuf {
    let bare = root.join("remote.git");
    Repository::init_bare(&bare).unwrap();
    bare
}

/// The served `remote.git`, and a server that takes it only with the push
/// token.
fn token_server(sb: &Sandbox) -> (PathBuf, GitHttps) {
    let served = sb.path().join("served");
    let bare = served_remote(&served);
    let server = GitHttps::start(
        &served,
        Behaviour::Git(Some((USER.to_string(), TOKEN.to_string()))),
    );
    (bare, server)
}

fn branch_arrived(bare: &Path) -> bool {
    Repository::open_bare(bare)
        .unwrap()
        .find_reference(&format!("refs/heads/{BRANCH}"))
        .is_ok()
}

fn run(sb: &Sandbox, user: RunAs, trusted: bool, token: bool) -> (Output, Vec<Value>) {
    let run = JobRun::new(sb)
        .progress("plain")
        .user(user)
        .env("SSL_CERT_FILE", &ca_bundle(trusted))
        .env("SSL_CERT_DIR", "");
    let run = if token {
        run.env("GH_PUSH_TOKEN", TOKEN)
    } else {
        run.env_remove("GH_PUSH_TOKEN")
    };
    let (out, trace) = run.traced();
    let written = std::fs::read_to_string(sb.path().join(TRACE)).unwrap();
    for (what, text) in [
        ("stdout", stdout(&out)),
        ("stderr", stderr(&out)),
        ("trace", written),
    ] {
        assert!(!text.contains(TOKEN), "the token is in the {what}: {text}");
    }
    (out, trace)
}

fn seen(method: &str, target: &str, user: Option<&str>) -> Seen {
    Seen {
        method: method.to_string(),
        target: target.to_string(),
        user: user.map(str::to_string),
        authorization: user.map(|user| {
            format!(
                "Basic {}",
                data_encoding::BASE64.encode(format!("{user}:{TOKEN}").as_bytes())
            )
        }),
    }
}

#[test]
fn a_passing_run_pushes_its_branch_to_an_https_remote_with_the_token() {
    for user in RunAs::each() {
        let what = user.label();
        let sb = Sandbox::new();
        let (bare, server) = token_server(&sb);
        let model = FakeModel::start(fixing_script());
        push_job(&sb, &model.base_url(), &server.url("remote.git"));
        let (out, trace) = run(&sb, user, true, true);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
        assert_eq!(events(&trace, "git.push").len(), 1, "{what}");
        assert!(branch_arrived(&bare), "{what}: the branch is not there");
        assert_eq!(
            server.seen(),
            [
                seen(
                    "GET",
                    "/remote.git/info/refs?service=git-receive-pack",
                    Some(USER)
                ),
                seen("POST", "/remote.git/git-receive-pack", Some(USER)),
            ],
            "{what}"
        );
    }
}

/// Each way an https push can fail, as the user reads it: the push fails
/// the run, the commit stays, and the line names the remote and the fix.
#[test]
fn a_refused_https_push_says_why_without_the_token() {
    let mut said = Vec::new();
    let port = regex::Regex::new(r"127\.0\.0\.1:\d+").unwrap();
    for case in [
        "refused token",
        "no token",
        "untrusted certificate",
        "not git",
        "redirect",
        "dead server",
    ] {
        let sb = Sandbox::new();
        let served = sb.path().join("served");
        let bare = served_remote(&served);
        let wanted = |password: &str| Some((USER.to_string(), password.to_string()));
        let elsewhere = GitHttps::start(&served, Behaviour::Git(None));
        let behaviour = match case {
            "refused token" => Behaviour::Git(wanted("another-token")),
            "no token" => Behaviour::Git(wanted(TOKEN)),
            "not git" => Behaviour::Html,
            "redirect" => Behaviour::Redirect(elsewhere.url("remote.git/info/refs")),
            _ => Behaviour::Git(None),
        };
        let server = GitHttps::start(&served, behaviour);
        let url = if case == "dead server" {
            let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!(
                "https://127.0.0.1:{}/remote.git",
                gone.local_addr().unwrap().port()
            )
        } else {
            server.url("remote.git")
        };
        let model = FakeModel::start(fixing_script());
        push_job(&sb, &model.base_url(), &url);
        let (out, trace) = run(
            &sb,
            RunAs::Current,
            case != "untrusted certificate",
            case != "no token",
        );
        assert_eq!(out.status.code(), Some(1), "{case}: {}", stderr(&out));
        assert_eq!(events(&trace, "git.commit").len(), 1, "{case}");
        assert!(events(&trace, "git.push").is_empty(), "{case}");
        assert!(!branch_arrived(&bare), "{case}");
        assert!(
            elsewhere.seen().is_empty(),
            "{case}: {:?}",
            elsewhere.seen()
        );
        let reason = trace.last().unwrap()["reason"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(stderr(&out).contains(&reason), "{case}: {}", stderr(&out));
        if case == "untrusted certificate" || case == "dead server" {
            assert!(server.seen().is_empty(), "{case}");
        }
        let reason = port.replace_all(&reason, "127.0.0.1:[PORT]").into_owned();
        said.push(format!("{case}:\n{reason}"));
    }
    insta::assert_snapshot!("https_push_refusals", said.join("\n\n"));
}

/// Attack: the CA bundle the user named lies in the workspace, and the
/// model rewrites it with another CA before the push (a bundle read at the
/// first handshake, at the push, would be the model's). The bundle is read
/// when the run starts, so the push still trusts what the user pointed at
/// and reaches the real server, as root and as an unprivileged user.
#[test]
fn a_ca_bundle_in_the_workspace_is_read_before_the_model_can_rewrite_it() {
    for user in RunAs::each() {
        let what = user.label();
        let sb = Sandbox::new();
        let (bare, server) = token_server(&sb);
        let forged = std::fs::read_to_string(ca_bundle(false)).unwrap();
        let model = FakeModel::start(vec![
            Reply::plan(&[("Write notes", "NOTES.md exists")]),
            Reply::tool_call("write", json!({"path": "certs/ca.pem", "content": forged})),
            Reply::tool_call("write", json!({"path": "NOTES.md", "content": "notes\n"})),
            Reply::step_done("wrote them"),
            Reply::text("done"),
        ]);
        push_job(&sb, &model.base_url(), &server.url("remote.git"));
        let bundle = sb.workspace().join("certs/ca.pem");
        std::fs::create_dir_all(bundle.parent().unwrap()).unwrap();
        std::fs::copy(ca_bundle(true), &bundle).unwrap();
        commit_all(&Repository::open(sb.workspace()).unwrap(), "the CA bundle");
        let (out, trace) = JobRun::new(&sb)
            .progress("plain")
            .user(user)
            .env("SSL_CERT_FILE", bundle.to_str().unwrap())
            .env("SSL_CERT_DIR", "")
            .env("GH_PUSH_TOKEN", TOKEN)
            .traced();
        let now = std::fs::read_to_string(&bundle).unwrap();
        assert_eq!(now, forged, "{what}: the model did not rewrite the bundle");
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
        assert_eq!(events(&trace, "git.push").len(), 1, "{what}");
        assert!(branch_arrived(&bare), "{what}: the branch is not there");
    }
}

const SKILL: &str = "---\nname: lint\ndescription: Fixes lint in small steps.\nallowed-tools: Read\n---\n\nRead the code, then report.\n";

/// `skills.git` under `root`, holding `skills/lint/SKILL.md` at tag `v1`;
/// returns the source repository, to add to.
fn skills_repository(sb: &Sandbox, root: &Path) -> Repository {
    let source = sb.path().join("skills-src");
    let repo = init_repo(&source, &[("skills/lint/SKILL.md", SKILL)]);
    let v1 = repo.head().unwrap().peel_to_commit().unwrap();
    repo.tag_lightweight("v1", v1.as_object(), false).unwrap();
    drop(v1);
    git2::build::RepoBuilder::new()
        .bare(true)
        .clone(source.to_str().unwrap(), &root.join("skills.git"))
        .unwrap();
    repo
}

fn skill_job(sb: &Sandbox, base_url: &str, url: &str, rev: &str) {
    sb.write(
        "job.yaml",
        &format!(
            "name: lint-it\nskill: {{git: \"{url}\", rev: {rev}, path: skills/lint}}\n\
             goal: Report lint.\nworkspace: ws\n\
             model: {{provider: openai, name: fake-model, base_url: {base_url}}}\n"
        ),
    );
}

fn report_script() -> Vec<Reply> {
    vec![
        Reply::plan(&[("Report", "a report")]),
        Reply::step_done("nothing to fix"),
        Reply::text("No lint."),
    ]
}

/// A skill from an https URL is cloned (by `agentci validate`, on a plain
/// thread), used, and fetched again over the same transport when the job
/// names a revision the cache lacks.
#[test]
fn a_skill_from_an_https_url_is_cloned_and_fetched_again() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.workspace()).unwrap();
    let served = sb.path().join("served");
    let source = skills_repository(&sb, &served);
    let server = GitHttps::start(&served, Behaviour::Git(None));
    let url = server.url("skills.git");
    let cache = sb.path().join("cache");
    let env = [
        ("AGENTCI_CACHE", cache.to_str().unwrap()),
        ("SSL_CERT_FILE", &ca_bundle(true)),
        ("SSL_CERT_DIR", ""),
    ];
    let model = FakeModel::start(report_script());
    skill_job(&sb, &model.base_url(), &url, "v1");
    let out = agentci_in(sb.path(), &["validate", "job.yaml"], &env);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let clone = [
        seen("GET", "/skills.git/info/refs?service=git-upload-pack", None),
        seen("POST", "/skills.git/git-upload-pack", None),
    ];
    assert_eq!(server.seen(), clone);

    // The run uses the cache: no request.
    let out = JobRun::new(&sb).progress("none").envs(&env).output();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_valid_trace(&sb.path().join(TRACE));
    let trace = sb.trace(TRACE);
    assert_eq!(events(&trace, "skill.loaded")[0]["source"]["git"], url);
    assert_eq!(server.seen().len(), 2);

    // A new tag: fetched into the cached clone over https.
    std::fs::write(
        sb.path().join("skills-src/skills/lint/SKILL.md"),
        SKILL.replace("report", "stop"),
    )
    .unwrap();
    let v2 = commit_all(&source, "second");
    let pushed = std::process::Command::new("git")
        .args(["push", "-q", served.join("skills.git").to_str().unwrap()])
        .args(["HEAD:refs/heads/main", &format!("{v2}:refs/tags/v2")])
        .current_dir(sb.path().join("skills-src"))
        .output()
        .unwrap();
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    let model = FakeModel::start(report_script());
    skill_job(&sb, &model.base_url(), &url, "v2");
    let out = JobRun::new(&sb).progress("none").envs(&env).output();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_valid_trace(&sb.path().join(TRACE));
    let trace = sb.trace(TRACE);
    assert_eq!(
        events(&trace, "skill.loaded")[0]["source"]["commit"],
        v2.to_string()
    );
    let system = &model.requests()[0]["messages"][0]["content"];
    assert!(system.as_str().unwrap().contains("then stop"), "{system}");
    let seen_now = server.seen();
    assert_eq!(seen_now[..2], clone);
    assert_eq!(seen_now[2..4], clone, "{seen_now:?}");
}

/// `agentci eval` loads the job's skill from inside its Tokio runtime (the
/// attempts' fingerprints and the attempts themselves): the https clone
/// runs there too, without a runtime of its own inside that one.
#[test]
fn an_eval_clones_an_https_skill_inside_its_runtime() {
    let sb = Sandbox::new();
    let served = sb.path().join("served");
    skills_repository(&sb, &served);
    let server = GitHttps::start(&served, Behaviour::Git(None));
    sb.write("fixture/notes.txt", "nothing\n");
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: lint-it\n\
             skill: {{git: \"{}\", rev: v1, path: skills/lint}}\n\
             goal: Report lint.\nmodel: {{provider: openai, name: scripted}}\n\
             tools: [read]\npermissions: {{default: allow}}\n",
            server.url("skills.git")
        ),
    );
    sb.write(
        "suite.yaml",
        "version: 1\nname: lint\njob: job.yaml\ncases:\n  \
         - {name: report, fixture: fixture, cassette: cassettes/report.jsonl}\n",
    );
    let model = FakeModel::start(report_script());
    let cache = sb.path().join("cache");
    let out = agentci_in(
        sb.path(),
        &[
            "eval",
            "suite.yaml",
            "--record",
            "--base-url",
            &model.base_url(),
            "--out",
            "rec",
            "--progress",
            "none",
        ],
        &[
            ("AGENTCI_CACHE", cache.to_str().unwrap()),
            ("SSL_CERT_FILE", &ca_bundle(true)),
            ("SSL_CERT_DIR", ""),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(model.remaining(), 0, "{}", stderr(&out));
    assert_eq!(
        server.seen(),
        [
            seen("GET", "/skills.git/info/refs?service=git-upload-pack", None),
            seen("POST", "/skills.git/git-upload-pack", None),
        ]
    );
}
