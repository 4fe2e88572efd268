use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;

use super::*;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let map: HashMap<String, OsString> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    move |name| map.get(name).cloned()
}

fn root(path: WritablePath) -> WritableRoot {
    WritableRoot {
        path,
        line: 3,
        column: 5,
    }
}

fn folders(preset: CachePreset, pairs: &[(&str, &str)]) -> Vec<PathBuf> {
    let lookup = env(pairs);
    resolve(&[root(WritablePath::Preset(preset))], &Env::new(&lookup))
        .unwrap()
        .into_iter()
        .map(|r| r.folder)
        .collect()
}

fn paths(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

#[test]
fn presets_follow_the_variables_the_tools_read() {
    let home = [("HOME", "/home/u")];
    assert_eq!(
        folders(CachePreset::Cargo, &home),
        paths(&["/home/u/.cargo/registry", "/home/u/.cargo/git"])
    );
    assert_eq!(
        folders(CachePreset::Cargo, &[("CARGO_HOME", "/opt/cargo")]),
        paths(&["/opt/cargo/registry", "/opt/cargo/git"])
    );
    assert_eq!(folders(CachePreset::Npm, &home), paths(&["/home/u/.npm"]));
    assert_eq!(
        folders(CachePreset::Npm, &[("npm_config_cache", "/c/npm")]),
        paths(&["/c/npm"])
    );
    assert_eq!(
        folders(CachePreset::Pip, &home),
        paths(&["/home/u/.cache/pip"])
    );
    assert_eq!(
        folders(CachePreset::Pip, &[("PIP_CACHE_DIR", "/c/pip")]),
        paths(&["/c/pip"])
    );
    assert_eq!(
        folders(CachePreset::Go, &home),
        paths(&["/home/u/go/pkg/mod", "/home/u/.cache/go-build"])
    );
    assert_eq!(
        folders(
            CachePreset::Go,
            &[("GOPATH", "/g1:/g2"), ("XDG_CACHE_HOME", "/x")]
        ),
        paths(&["/g1/pkg/mod", "/x/go-build"])
    );
    assert_eq!(
        folders(
            CachePreset::Go,
            &[("GOMODCACHE", "/m"), ("GOCACHE", "off"), ("GOPATH", "/g")]
        ),
        paths(&["/m"])
    );
    // An empty variable counts as unset, as the tools take it.
    assert_eq!(
        folders(
            CachePreset::Npm,
            &[("npm_config_cache", ""), ("HOME", "/h")]
        ),
        paths(&["/h/.npm"])
    );
}

#[test]
fn an_entry_that_names_no_folder_says_which_and_why() {
    let lookup = env(&[("CARGO_HOME", "rel/cargo")]);
    let err = resolve(
        &[root(WritablePath::Preset(CachePreset::Cargo))],
        &Env::new(&lookup),
    )
    .unwrap_err();
    assert!(matches!(err.problem, Problem::RelativeVariable { .. }));
    assert_eq!((err.line, err.column), (3, 5));
    assert_eq!(
        err.in_file(Path::new("job.yaml")),
        "job.yaml:3:5: `sandbox.writable` entry `preset:cargo`: `CARGO_HOME` is `rel/cargo`, \
         not an absolute path; set it to an absolute path or unset it"
    );
    let nothing = env(&[]);
    let err = resolve(
        &[root(WritablePath::Home(PathBuf::from(".cache/x")))],
        &Env::new(&nothing),
    )
    .unwrap_err();
    assert!(matches!(err.problem, Problem::NoHome));
}

#[test]
fn system_folders_are_refused_and_caches_beneath_usr_local_are_not() {
    for refused in [
        "/",
        "/etc",
        "/etc/ssl",
        "/usr",
        "/usr/bin",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/lib",
        "/lib64/x",
        "/bin",
        "/boot",
        "/dev/shm",
        "/proc/self",
        "/sys/fs",
        "/var",
        "/usr/local",
        "/usr/local/bin",
    ] {
        assert!(
            system_folder(Path::new(refused)).is_some(),
            "{refused} passed"
        );
    }
    for allowed in [
        "/usr/local/cargo/registry",
        "/var/cache/pip",
        "/opt/go/pkg/mod",
        "/home/u/.npm",
        "/tmp/cache",
    ] {
        assert_eq!(system_folder(Path::new(allowed)), None, "{allowed}");
    }
}

#[test]
fn a_root_keeps_clear_of_the_workspace_its_repositories_and_agentcis_files() {
    let kept = KeptPaths {
        workspace: PathBuf::from("/w/ws"),
        own: paths(&["/w/ws/.agentci/runs/r", "/out/trace.jsonl"]),
        read_only: paths(&["/w/ws/.git"]),
        home: Some(PathBuf::from("/home/u")),
    };
    assert!(matches!(
        kept.refusal(Path::new("/w")),
        Some(Refusal::HoldsWorkspace { .. })
    ));
    assert!(matches!(
        kept.refusal(Path::new("/w/ws/.git/hooks")),
        Some(Refusal::Kept {
            how: Relation::Inside,
            what: KeptKind::Workspace,
            ..
        })
    ));
    assert!(matches!(
        kept.refusal(Path::new("/out")),
        Some(Refusal::Kept {
            how: Relation::Holds,
            what: KeptKind::Own,
            ..
        })
    ));
    assert!(matches!(
        kept.refusal(Path::new("/w/ws/.git")),
        Some(Refusal::Kept {
            how: Relation::Is,
            ..
        })
    ));
    // A folder in the workspace that holds a kept path is refused too.
    assert!(matches!(
        kept.refusal(Path::new("/w/ws/.agentci")),
        Some(Refusal::Kept {
            how: Relation::Holds,
            ..
        })
    ));
    assert!(matches!(
        kept.refusal(Path::new("/home/u")),
        Some(Refusal::Home { .. })
    ));
    assert!(matches!(
        kept.refusal(Path::new("/home")),
        Some(Refusal::System { .. })
    ));
    // Inside the workspace: writable already, not refused.
    assert_eq!(kept.refusal(Path::new("/w/ws/vendor")), None);
    assert_eq!(kept.refusal(Path::new("/home/u/.cargo/registry")), None);
}

#[test]
fn prepare_creates_missing_folders_and_judges_where_links_lead() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let workspace = base.join("ws");
    std::fs::create_dir_all(workspace.join(".git")).unwrap();
    let kept = KeptPaths {
        workspace: workspace.clone(),
        own: Vec::new(),
        read_only: vec![workspace.join(".git")],
        home: Some(base.join("home")),
    };
    let cache = base.join("home/.cargo/registry");
    let inside = workspace.join("cache");
    let resolved = |folder: &Path| ResolvedRoot {
        folder: folder.to_path_buf(),
        root: root(WritablePath::Absolute(folder.to_path_buf())),
    };
    let prepared = prepare(vec![resolved(&cache), resolved(&inside)], &kept).unwrap();
    assert_eq!(prepared.len(), 1, "the folder in the workspace is dropped");
    assert_eq!(prepared[0].folder, cache);
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o700, 0o700, "{mode:o}");
    // A link that leads into the workspace's repository is judged by where it leads.
    let link = base.join("home/.npm");
    std::os::unix::fs::symlink(workspace.join(".git"), &link).unwrap();
    let err = prepare(vec![resolved(&link)], &kept).unwrap_err();
    match err.problem {
        Problem::Refused { folder, refusal } => {
            assert_eq!(folder, workspace.join(".git"));
            assert!(matches!(
                refusal,
                Refusal::Kept {
                    how: Relation::Is,
                    ..
                }
            ));
        }
        other => panic!("{other:?}"),
    }
    // A link above a missing folder is followed before anything is made.
    std::os::unix::fs::symlink(workspace.join(".git"), base.join("home/.cache")).unwrap();
    let below_link = base.join("home/.cache/pip");
    let err = prepare(vec![resolved(&below_link)], &kept).unwrap_err();
    assert!(matches!(err.problem, Problem::Refused { .. }), "{err}");
    assert!(!workspace.join(".git/pip").exists());
    // A variable holding `..` is taken lexically.
    assert_eq!(
        normalize(Path::new("/tmp/../etc/./x")),
        PathBuf::from("/etc/x")
    );
    // A system folder is refused before anything is created.
    let err = prepare(vec![resolved(Path::new("/etc/agentci-test"))], &kept).unwrap_err();
    assert!(matches!(err.problem, Problem::Refused { .. }));
    assert!(!Path::new("/etc/agentci-test").exists());
}
