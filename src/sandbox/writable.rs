//! `sandbox.writable`: folders outside the workspace that children may
//! write, mostly the caches package managers keep in the home folder
//! (`cargo update` writes `~/.cargo/registry`, `npm ci` writes `~/.npm`).
//!
//! The job names each root as an absolute path, a `~/` path or a preset
//! ([`WritableRoot`], validated by `spec`). At run start [`resolve`] turns
//! them into folders against the environment the children get, so a preset
//! and the tool in the child agree on `CARGO_HOME`, `GOMODCACHE` and the
//! rest; [`prepare`] then refuses a folder that would open the machine's
//! system folders, the home folder itself, the workspace's repositories or
//! agentci's own files, and creates the missing ones (Landlock grants
//! access only beneath folders that exist when its rules are made). The
//! sandbox adds what is left to its writable roots, beside the workspace.
//!
//! A preset opens only the cache: `CARGO_HOME/bin`, where `cargo install`
//! puts the programs later workflow steps run unsandboxed, and the tools'
//! configuration files stay read-only on purpose.

use std::ffi::OsString;
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// A preset: the cache folders one package manager writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CachePreset {
    /// `$CARGO_HOME/registry` and `$CARGO_HOME/git`.
    Cargo,
    /// `$npm_config_cache`, else `~/.npm`.
    Npm,
    /// `$PIP_CACHE_DIR`, else `~/.cache/pip`.
    Pip,
    /// The module cache and the build cache.
    Go,
}

impl CachePreset {
    pub const ALL: [CachePreset; 4] = [
        CachePreset::Cargo,
        CachePreset::Npm,
        CachePreset::Pip,
        CachePreset::Go,
    ];

    /// The variables the presets read. Children inherit them (see
    /// `process::is_inherited`), so the tools use the folders made writable.
    pub const VARIABLES: &[&str] = &[
        "CARGO_HOME",
        "npm_config_cache",
        "NPM_CONFIG_CACHE",
        "PIP_CACHE_DIR",
        "GOMODCACHE",
        "GOPATH",
        "GOCACHE",
    ];

    pub fn name(self) -> &'static str {
        match self {
            CachePreset::Cargo => "cargo",
            CachePreset::Npm => "npm",
            CachePreset::Pip => "pip",
            CachePreset::Go => "go",
        }
    }

    pub fn parse(name: &str) -> Option<CachePreset> {
        CachePreset::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The presets as a job writes them: `` `preset:cargo`, `preset:npm`, … ``.
    pub fn listed() -> String {
        CachePreset::ALL
            .iter()
            .map(|p| format!("`preset:{}`", p.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The folders of this preset in the environment `env`, each as the
    /// tool computes it: the variable when set, else its default place.
    fn folders(self, env: &Env<'_>) -> Result<Vec<PathBuf>, Problem> {
        let cache = || -> Result<PathBuf, Problem> {
            match env.folder("XDG_CACHE_HOME")? {
                Some(dir) => Ok(dir),
                None => Ok(env.home()?.join(".cache")),
            }
        };
        Ok(match self {
            CachePreset::Cargo => {
                let home = match env.folder("CARGO_HOME")? {
                    Some(dir) => dir,
                    None => env.home()?.join(".cargo"),
                };
                vec![home.join("registry"), home.join("git")]
            }
            CachePreset::Npm => vec![match env.folder("npm_config_cache")? {
                Some(dir) => dir,
                None => match env.folder("NPM_CONFIG_CACHE")? {
                    Some(dir) => dir,
                    None => env.home()?.join(".npm"),
                },
            }],
            CachePreset::Pip => vec![match env.folder("PIP_CACHE_DIR")? {
                Some(dir) => dir,
                None => cache()?.join("pip"),
            }],
            CachePreset::Go => {
                let modules = match env.folder("GOMODCACHE")? {
                    Some(dir) => dir,
                    None => match env.first_of_list("GOPATH")? {
                        Some(dir) => dir.join("pkg").join("mod"),
                        None => env.home()?.join("go").join("pkg").join("mod"),
                    },
                };
                // `GOCACHE=off` is refused by go itself; nothing to open then.
                let build = match env.value("GOCACHE").as_deref() {
                    Some("off") => None,
                    _ => Some(match env.folder("GOCACHE")? {
                        Some(dir) => dir,
                        None => cache()?.join("go-build"),
                    }),
                };
                std::iter::once(modules).chain(build).collect()
            }
        })
    }
}

/// An entry of `sandbox.writable`, validated: what it names, not yet a folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WritablePath {
    /// An absolute folder, normalized, with no `..`.
    Absolute(PathBuf),
    /// A folder beneath the home folder (`~/rest`): the rest, relative,
    /// not empty, with no `..`.
    Home(PathBuf),
    Preset(CachePreset),
}

impl fmt::Display for WritablePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WritablePath::Absolute(path) => write!(f, "{}", path.display()),
            WritablePath::Home(rest) => write!(f, "~/{}", rest.display()),
            WritablePath::Preset(preset) => write!(f, "preset:{}", preset.name()),
        }
    }
}

/// An entry of `sandbox.writable` and where the job file wrote it, so a
/// problem found at run start points at the line to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WritableRoot {
    pub path: WritablePath,
    pub line: u32,
    pub column: u32,
}

/// A folder children may write, and the entry that named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedRoot {
    pub folder: PathBuf,
    pub root: WritableRoot,
}

/// Why an entry cannot become a writable root at run start.
#[derive(Debug, thiserror::Error)]
#[error("`sandbox.writable` entry `{entry}`: {problem}")]
pub struct WritableError {
    pub entry: WritablePath,
    pub line: u32,
    pub column: u32,
    pub problem: Problem,
}

impl WritableError {
    /// The message with the place in the job file, `FILE:LINE:COLUMN: …`.
    pub fn in_file(&self, job_file: &Path) -> String {
        format!(
            "{}:{}:{}: {self}",
            job_file.display(),
            self.line,
            self.column
        )
    }
}

/// What is wrong with one entry.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("HOME is not set, so `~` means nothing; set HOME or write an absolute path")]
    NoHome,
    #[error(
        "`{variable}` is `{value}`, not an absolute path; set it to an absolute path or unset it"
    )]
    RelativeVariable { variable: String, value: String },
    #[error("{} {refusal}", .folder.display())]
    Refused { folder: PathBuf, refusal: Refusal },
    #[error("cannot create {}: {source}", .folder.display())]
    Create {
        folder: PathBuf,
        source: std::io::Error,
    },
}

/// Why a folder may not be writable, whatever the job says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// `/` or a folder of the operating system.
    #[error("is {reason}; commands must not write it")]
    System { reason: &'static str },
    /// The home folder itself (or a folder above it).
    #[error(
        "is or holds the home folder {}, whose shell, git and ssh configuration later \
         workflow steps obey; name the cache folder inside it instead", .home.display()
    )]
    Home { home: PathBuf },
    /// A folder above the workspace.
    #[error(
        "holds the workspace {}, whose `.git` and `.agentci` commands must not write; \
         the workspace is writable already", .workspace.display()
    )]
    HoldsWorkspace { workspace: PathBuf },
    /// A folder holding, or inside, one of agentci's own paths or the
    /// workspace's repositories and skill folders.
    #[error(
        "{how} {}, {what}, which commands must not write; name a folder apart from it",
        .kept.display()
    )]
    Kept {
        kept: PathBuf,
        what: KeptKind,
        how: Relation,
    },
}

/// Where a refused folder lies from a kept path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Relation {
    #[error("is")]
    Is,
    #[error("is inside")]
    Inside,
    #[error("holds")]
    Holds,
}

/// Whose a kept path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeptKind {
    /// The run folder, trace, JUnit, patch, the checkpoint key.
    #[error("agentci's own files")]
    Own,
    /// A `.git`, the hooks folder or a skill folder in the workspace.
    #[error("a repository or skill folder of the workspace")]
    Workspace,
}

/// Folders that are never writable roots: (folder, whether folders beneath
/// it are refused too, what it is).
const SYSTEM_FOLDERS: &[(&str, bool, &str)] = &[
    ("/", false, "the root of the file system"),
    ("/etc", true, "the machine's configuration"),
    ("/bin", true, "where the machine's programs are"),
    ("/sbin", true, "where the machine's programs are"),
    ("/usr", false, "where the machine's software is installed"),
    ("/usr/bin", true, "where the machine's programs are"),
    ("/usr/sbin", true, "where the machine's programs are"),
    (
        "/usr/local",
        false,
        "where the machine's software is installed",
    ),
    ("/usr/local/bin", true, "where the machine's programs are"),
    ("/usr/local/sbin", true, "where the machine's programs are"),
    ("/boot", true, "the kernel and the boot loader"),
    ("/dev", true, "the machine's devices"),
    ("/proc", true, "the kernel's view of processes"),
    ("/sys", true, "the kernel's view of devices"),
    ("/run", true, "the state and sockets of running services"),
    ("/var", false, "the machine's logs, spools and state"),
    ("/home", false, "where every user's home folder is"),
    ("/root", false, "the home folder of root"),
];

/// Why `folder` (absolute, normalized) is a system folder no job may open,
/// or `None`. The library folders (`/lib`, `/lib64`, `/usr/lib32`, …) are
/// refused with everything beneath them.
pub fn system_folder(folder: &Path) -> Option<&'static str> {
    let library = |top: &Path| {
        folder.strip_prefix(top).ok().and_then(|rest| {
            let first = rest.components().next()?;
            first
                .as_os_str()
                .to_str()
                .is_some_and(|name| name.starts_with("lib"))
                .then_some("where the machine's libraries are")
        })
    };
    if let Some(reason) = library(Path::new("/")).or_else(|| library(Path::new("/usr"))) {
        return Some(reason);
    }
    SYSTEM_FOLDERS
        .iter()
        .find(|(system, beneath, _)| {
            folder == Path::new(system) || (*beneath && folder.starts_with(system))
        })
        .map(|(_, _, reason)| *reason)
}

/// What a writable root must keep clear of: the home folder, the
/// workspace (a root above it would open its `.git` and `.agentci`), and
/// the paths children must not write.
#[derive(Clone, Debug, Default)]
pub struct KeptPaths {
    pub workspace: PathBuf,
    /// agentci's own outputs and the checkpoint key.
    pub own: Vec<PathBuf>,
    /// The workspace's repositories, hooks folder and skill folders.
    pub read_only: Vec<PathBuf>,
    /// The home folder, when known.
    pub home: Option<PathBuf>,
}

impl KeptPaths {
    /// Why `folder` may not be writable, judged by the paths as given (the
    /// caller judges the real paths, symbolic links followed, too). A
    /// folder in the workspace that neither holds nor lies in a kept path
    /// passes: it is writable already.
    pub fn refusal(&self, folder: &Path) -> Option<Refusal> {
        if let Some(reason) = system_folder(folder) {
            return Some(Refusal::System { reason });
        }
        if let Some(home) = self.home.as_ref().filter(|h| h.starts_with(folder)) {
            return Some(Refusal::Home { home: home.clone() });
        }
        if let Some(refusal) = self.kept(folder, |kept| folder.starts_with(kept)) {
            return Some(refusal);
        }
        if self.workspace.starts_with(folder) {
            return Some(Refusal::HoldsWorkspace {
                workspace: self.workspace.clone(),
            });
        }
        self.kept(folder, |kept| kept.starts_with(folder))
    }

    /// The first kept path `hit` is true of, as `folder`'s refusal.
    fn kept(&self, folder: &Path, hit: impl Fn(&Path) -> bool) -> Option<Refusal> {
        let own = self.own.iter().map(|p| (p, KeptKind::Own));
        let read_only = self.read_only.iter().map(|p| (p, KeptKind::Workspace));
        own.chain(read_only)
            .find(|(kept, _)| hit(kept))
            .map(|(kept, what)| Refusal::Kept {
                kept: kept.clone(),
                what,
                how: match (folder == kept.as_path(), kept.starts_with(folder)) {
                    (true, _) => Relation::Is,
                    (false, true) => Relation::Holds,
                    (false, false) => Relation::Inside,
                },
            })
    }
}

/// The environment children get, read by name.
pub struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<OsString>,
}

impl<'a> Env<'a> {
    pub fn new(lookup: &'a dyn Fn(&str) -> Option<OsString>) -> Env<'a> {
        Env { lookup }
    }

    /// The variable's value; an empty one counts as unset, as the tools do.
    fn value(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
            .map(|v| v.to_string_lossy().into_owned())
            .filter(|v| !v.is_empty())
    }

    /// The folder the variable names, which must be absolute.
    fn folder(&self, name: &str) -> Result<Option<PathBuf>, Problem> {
        let Some(value) = (self.lookup)(name).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let path = PathBuf::from(value);
        match path.is_absolute() {
            true => Ok(Some(normalize(&path))),
            false => Err(Problem::RelativeVariable {
                variable: name.to_string(),
                value: path.display().to_string(),
            }),
        }
    }

    /// The first folder of a `:`-separated list (`GOPATH`).
    fn first_of_list(&self, name: &str) -> Result<Option<PathBuf>, Problem> {
        let Some(first) = self.value(name).and_then(|v| {
            v.split(':')
                .find(|part| !part.is_empty())
                .map(str::to_string)
        }) else {
            return Ok(None);
        };
        let path = PathBuf::from(&first);
        match path.is_absolute() {
            true => Ok(Some(normalize(&path))),
            false => Err(Problem::RelativeVariable {
                variable: name.to_string(),
                value: first,
            }),
        }
    }

    /// `HOME`, which must be set and absolute.
    fn home(&self) -> Result<PathBuf, Problem> {
        match self.folder("HOME")? {
            Some(home) => Ok(home),
            None => Err(Problem::NoHome),
        }
    }
}

/// The folders `roots` name in the environment `env`, in order, without
/// repeats. Nothing is created or checked here: see [`prepare`].
pub fn resolve(roots: &[WritableRoot], env: &Env<'_>) -> Result<Vec<ResolvedRoot>, WritableError> {
    let mut resolved: Vec<ResolvedRoot> = Vec::new();
    for root in roots {
        let folders = match &root.path {
            WritablePath::Absolute(path) => Ok(vec![path.clone()]),
            WritablePath::Home(rest) => env.home().map(|home| vec![home.join(rest)]),
            WritablePath::Preset(preset) => preset.folders(env),
        };
        let folders = folders.map_err(|problem| root_error(root, problem))?;
        for folder in folders {
            if !resolved.iter().any(|r| r.folder == folder) {
                resolved.push(ResolvedRoot {
                    folder,
                    root: root.clone(),
                });
            }
        }
    }
    Ok(resolved)
}

/// Check each of `resolved` against `kept`, as written and with symbolic
/// links followed (as far as the folder exists: a link above a missing
/// folder must not lead its creation elsewhere), create the missing ones
/// (mode 0755, owned by the user agentci runs as) and check them once
/// more. Returns the folders as the kernel will see them, less those in
/// the workspace (writable already).
pub fn prepare(
    resolved: Vec<ResolvedRoot>,
    kept: &KeptPaths,
) -> Result<Vec<ResolvedRoot>, WritableError> {
    let real_kept = KeptPaths {
        workspace: real_path(&kept.workspace),
        own: kept.own.iter().map(|p| real_path(p)).collect(),
        read_only: kept.read_only.iter().map(|p| real_path(p)).collect(),
        home: kept.home.as_deref().map(real_path),
    };
    let mut prepared: Vec<ResolvedRoot> = Vec::new();
    for ResolvedRoot { folder, root } in resolved {
        let refused = |folder: &Path, refusal: Refusal| {
            let folder = folder.to_path_buf();
            root_error(&root, Problem::Refused { folder, refusal })
        };
        if let Some(refusal) = kept.refusal(&folder) {
            return Err(refused(&folder, refusal));
        }
        let ahead = real_path(&folder);
        if let Some(refusal) = real_kept.refusal(&ahead) {
            return Err(refused(&ahead, refusal));
        }
        create(&folder).map_err(|source| {
            let folder = folder.clone();
            root_error(&root, Problem::Create { folder, source })
        })?;
        let real = real_path(&folder);
        if let Some(refusal) = real_kept.refusal(&real) {
            return Err(refused(&real, refusal));
        }
        let redundant =
            real.starts_with(&real_kept.workspace) || prepared.iter().any(|p| p.folder == real);
        if !redundant {
            prepared.push(ResolvedRoot { folder: real, root });
        }
    }
    Ok(prepared)
}

impl From<&ResolvedRoot> for crate::event::WritableFolder {
    fn from(root: &ResolvedRoot) -> Self {
        crate::event::WritableFolder {
            path: root.folder.display().to_string(),
            entry: root.root.path.to_string(),
        }
    }
}

fn root_error(root: &WritableRoot, problem: Problem) -> WritableError {
    WritableError {
        entry: root.path.clone(),
        line: root.line,
        column: root.column,
        problem,
    }
}

/// Make `folder` and the folders above it that are missing, mode 0755.
fn create(folder: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(folder)
}

/// `path` with symbolic links followed: its longest existing part made
/// real, the rest appended as written.
fn real_path(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |real, part| real.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// `path` without `.` components and trailing separators, `..` taken
/// lexically (the spec refuses entries holding it; a variable may hold it,
/// and its folder is judged with links followed too).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;
