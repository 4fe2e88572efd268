//! The workspace boundary: turning a path the model wrote into a path on
//! disk that is guaranteed to be inside the workspace root, or, for the
//! read-only tools, inside one of the run's skill folders.
//!
//! Every tool that touches the file system goes through [`Workspace::resolve`]
//! (or [`Workspace::resolve_for_reading`] for `read`, `find`, `grep`, `ls`).
//! It refuses absolute paths, `..` that climbs out of the root, and symlinks
//! (existing or dangling) that lead outside. It does not check permissions
//! (that is [`crate::policy`]) and does not care whether the path exists.
//!
//! Skill folders are addressed by the absolute path the system prompt
//! gives; every other path stays relative to the workspace. They are
//! read-only: [`Workspace::resolve`], which the writing tools use, refuses
//! any path that lands in one, also when the skill lives inside the workspace.
//!
//! Some paths inside the root are not the tools' to change: every `.git`
//! (a folder or a file, at any depth) is read-only, since a line in its
//! config or a hook runs commands; agentci's own outputs (the run folder,
//! trace, JUnit, patch, result, wherever the job puts them) are refused
//! outright, like `.agentci/`.
//!
//! The check is done on the path as it is when the call is made; a process
//! the agent started can swap a folder for a symlink right after it. So a
//! checked path is never used by name: [`Workspace::locate`] gives the
//! folder descriptor (opened once, here) and the path beneath it, and the
//! tools open through that ([`super::beneath`]), where a symlink planted
//! since the check is refused by the kernel.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::sandbox::startup_files::is_startup_file;

use super::beneath::Beneath;

/// The directory the agent works in; every tool path is relative to it.
/// The folder at the workspace root where agentci keeps its runs.
pub const RUN_FOLDERS: &str = ".agentci";

#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
    /// The root, opened once: every tool path is opened beneath it.
    root_dir: Beneath,
    /// Skill folders the read-only tools may reach, nothing may write.
    read_only: Vec<ReadOnlyFolder>,
    /// agentci's own outputs (canonical where they exist), refused to the tools.
    own_outputs: Vec<PathBuf>,
}

/// A skill folder: the path the model is told (a symlink stays a symlink)
/// and where it really is, which the prefix checks compare against.
#[derive(Clone, Debug)]
struct ReadOnlyFolder {
    given: PathBuf,
    canonical: PathBuf,
    /// The folder, opened once: its files are opened beneath it.
    dir: Beneath,
    /// The run's kept tool outputs rather than a skill folder.
    kept_outputs: bool,
}

/// A path the model gave that does not stay inside the workspace. The
/// message is written for the model and says how to fix the call.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PathError(pub String);

impl Workspace {
    /// A workspace rooted at `root`, which must exist; the root is kept in
    /// canonical form so later prefix checks compare like with like.
    pub fn new(root: &Path) -> io::Result<Self> {
        let root = root.canonicalize()?;
        Ok(Workspace {
            root_dir: Beneath::open(&root)?,
            root,
            read_only: Vec::new(),
            own_outputs: Vec::new(),
        })
    }

    /// Refuses `paths` (agentci's own outputs: files or folders, absolute,
    /// existing or not) to the tools, wherever they are.
    pub fn with_own_outputs<'p>(mut self, paths: impl IntoIterator<Item = &'p PathBuf>) -> Self {
        for path in paths {
            let path = canonical_as_far_as_exists(path);
            if !self.own_outputs.contains(&path) {
                self.own_outputs.push(path);
            }
        }
        self
    }

    /// Whether `abs` (as a walk found it, under the canonical root) is one
    /// of agentci's own outputs or inside one: walks leave them out. The
    /// kept outputs, readable on purpose, are not.
    pub fn is_own_output(&self, abs: &Path) -> bool {
        self.own_outputs.iter().any(|out| abs.starts_with(out))
            && !self.read_only.iter().any(|f| abs.starts_with(&f.canonical))
    }

    /// The opened folder `abs` (a path [`Workspace::resolve`] or
    /// [`Workspace::resolve_for_reading`] gave) lies beneath, and the path
    /// beneath it: what the tools open by.
    pub fn locate<'p>(&self, abs: &'p Path) -> io::Result<(&Beneath, &'p Path)> {
        let folder = self
            .read_only
            .iter()
            .filter(|f| abs.starts_with(&f.canonical))
            .max_by_key(|f| f.canonical.as_os_str().len());
        let (dir, base) = match folder {
            Some(f) => (&f.dir, &f.canonical),
            None => (&self.root_dir, &self.root),
        };
        let rest = abs
            .strip_prefix(base)
            .map_err(|_| io::Error::from_raw_os_error(libc::EXDEV))?;
        Ok((dir, rest))
    }

    /// Whether something exists at `abs` when looked up beneath the opened
    /// folder it belongs to, no symlink on the way: a walk that read a
    /// folder swapped for a symlink finds its names missing here.
    pub fn exists_beneath(&self, abs: &Path) -> bool {
        self.locate(abs)
            .and_then(|(dir, relative)| dir.stat(relative))
            .is_ok_and(|found| found.is_some())
    }

    /// The kept outputs folder at `dir` as the run registered it, opened.
    pub fn kept_outputs_dir(&self, dir: &Path) -> Option<&Beneath> {
        self.read_only
            .iter()
            .find(|f| f.kept_outputs && (f.given == dir || f.canonical == dir))
            .map(|f| &f.dir)
    }

    /// Adds a skill folder (absolute, existing) that the read-only tools may
    /// reach by its absolute path and that nothing may write to.
    pub fn with_skill_folder(self, dir: &Path) -> io::Result<Self> {
        self.with_read_only(dir, false)
    }

    /// Adds the run folder's kept outputs (absolute, existing): reachable
    /// like a skill folder, read-only, and named as what it is in refusals.
    pub fn with_kept_outputs(self, dir: &Path) -> io::Result<Self> {
        self.with_read_only(dir, true)
    }

    /// [`Workspace::with_kept_outputs`] for the folder the run opened
    /// before it started: its files are written and read through `opened`,
    /// whatever `dir` names later.
    pub fn with_kept_outputs_opened(mut self, dir: &Path, opened: Beneath) -> io::Result<Self> {
        let canonical = dir.canonicalize()?;
        if !self.read_only.iter().any(|f| f.canonical == canonical) {
            self.read_only.push(ReadOnlyFolder {
                given: dir.to_path_buf(),
                dir: opened,
                canonical,
                kept_outputs: true,
            });
        }
        Ok(self)
    }

    fn with_read_only(mut self, dir: &Path, kept_outputs: bool) -> io::Result<Self> {
        let canonical = dir.canonicalize()?;
        if !self.read_only.iter().any(|f| f.canonical == canonical) {
            self.read_only.push(ReadOnlyFolder {
                given: dir.to_path_buf(),
                dir: Beneath::open(&canonical)?,
                canonical,
                kept_outputs,
            });
        }
        Ok(self)
    }

    /// [`Workspace::resolve`] for tools that only read: an absolute path
    /// inside a skill folder is accepted too (and must stay inside it
    /// after symlinks are followed); any other path is a workspace path.
    pub fn resolve_for_reading(&self, path: &str) -> Result<PathBuf, PathError> {
        if !Path::new(path).is_absolute() || path.contains('\0') {
            return self.resolve_in_root(path);
        }
        let lexical = normalize(Path::new(path));
        let Some(folder) = self.skill_folder_of(&lexical) else {
            return self.resolve_in_root(path);
        };
        let rest = lexical
            .strip_prefix(&folder.given)
            .or_else(|_| lexical.strip_prefix(&folder.canonical))
            .map_err(|_| outside(path))?;
        let mut existing = folder.canonical.join(rest);
        let mut missing: Vec<OsString> = Vec::new();
        let canonical = loop {
            match existing.canonicalize() {
                Ok(found) => break found,
                Err(_) => {
                    let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                        return Err(outside(path));
                    };
                    missing.push(name);
                    if !existing.pop() {
                        return Err(outside(path));
                    }
                }
            }
        };
        if !canonical.starts_with(&folder.canonical) {
            return Err(PathError(format!(
                "path `{path}` leads out of the skill folder `{}` through a symlink; only \
                 files inside it can be read",
                folder.given.display()
            )));
        }
        let mut found = canonical;
        for name in missing.iter().rev() {
            found.push(name);
        }
        Ok(found)
    }

    /// The folder an `exec` command runs in (`cwd`): a folder of the
    /// workspace, or a skill folder or a folder inside one, by its absolute
    /// path or (for a skill inside the workspace) its relative one. Running
    /// a command in a skill folder writes nothing there by itself, and the
    /// sandbox keeps skill folders read-only for the command
    /// ([`crate::sandbox`]), so a skill's scripts may run where their
    /// instructions expect them to.
    pub fn resolve_cwd(&self, path: &str) -> Result<PathBuf, PathError> {
        let refused = match self.resolve(path) {
            Ok(found) => return Ok(found),
            Err(refused) => refused,
        };
        match self.resolve_for_reading(path) {
            Ok(found) if self.in_skill_folder(&found) => Ok(found),
            _ => Err(refused),
        }
    }

    /// Whether `abs` (canonical) lies in a skill folder (not the kept outputs).
    fn in_skill_folder(&self, abs: &Path) -> bool {
        self.read_only
            .iter()
            .any(|f| !f.kept_outputs && abs.starts_with(&f.canonical))
    }

    /// The skill folder `path` (absolute, lexical) is in, by either form.
    fn skill_folder_of(&self, path: &Path) -> Option<&ReadOnlyFolder> {
        self.read_only
            .iter()
            .find(|f| path.starts_with(&f.given) || path.starts_with(&f.canonical))
    }

    /// The refusal for a write into a read-only folder.
    fn read_only_error(&self, written: &str, folder: &ReadOnlyFolder) -> PathError {
        if folder.kept_outputs {
            return PathError(format!(
                "path `{written}` is inside `{}`, where agentci keeps tool outputs too long to \
                 show; it is read-only: page through it with `read` or `grep`, and write in the \
                 workspace instead",
                folder.given.display()
            ));
        }
        PathError(format!(
            "path `{written}` is inside the skill folder `{}`, which is read-only: skills are \
             read, never changed; write in the workspace instead",
            folder.given.display()
        ))
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path for `relative`, refusing anything that would end
    /// up outside the workspace or in a (read-only) skill folder. `""` and
    /// `"."` are the root itself.
    ///
    /// Existing symlinks are resolved, so the result of resolving a link
    /// inside the workspace is its (inside) target.
    pub fn resolve(&self, relative: &str) -> Result<PathBuf, PathError> {
        if Path::new(relative).is_absolute() {
            let lexical = normalize(Path::new(relative));
            if let Some(folder) = self.skill_folder_of(&lexical) {
                return Err(self.read_only_error(relative, folder));
            }
        }
        let path = self.resolve_in_root(relative)?;
        if let Some(folder) = self
            .read_only
            .iter()
            .find(|f| path.starts_with(&f.canonical))
        {
            return Err(self.read_only_error(relative, folder));
        }
        if let Some(git) = git_folder_of(&path, &self.root) {
            return Err(PathError(format!(
                "path `{relative}` is inside `{git}`, git's own files, which the tools only \
                 read: a line in its config or a hook would run commands; change the repository \
                 with the git commands the job allows through `exec`"
            )));
        }
        if path.file_name().is_some_and(is_startup_file) {
            return Err(PathError(format!(
                "path `{relative}` is a start-up file that shells, git or direnv run commands \
                 from, which the tools only read; put the setting in the project's own files"
            )));
        }
        Ok(path)
    }

    /// The workspace path for `relative`, skill folders aside.
    fn resolve_in_root(&self, relative: &str) -> Result<PathBuf, PathError> {
        if relative.contains('\0') {
            return Err(PathError(format!(
                "path `{}` contains a NUL byte; use a plain relative path",
                relative.escape_debug()
            )));
        }
        let lexical = self.normalize(relative)?;

        // Canonicalize the longest prefix that exists; the rest does not
        // exist yet (a file about to be written, say) and holds no `..`.
        let mut existing = self.root.join(&lexical);
        let mut missing: Vec<OsString> = Vec::new();
        let canonical = loop {
            match existing.canonicalize() {
                Ok(path) => break path,
                Err(_) => {
                    let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                        return Err(outside(relative));
                    };
                    missing.push(name);
                    if !existing.pop() || !existing.starts_with(&self.root) {
                        return Err(outside(relative));
                    }
                }
            }
        };
        if !canonical.starts_with(&self.root) {
            return Err(outside(relative));
        }
        // The first missing entry may still be a dangling symlink; writing
        // through it would create its target, possibly outside the root.
        if let Some(first) = missing.last() {
            let entry = canonical.join(first);
            if entry
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                return Err(PathError(format!(
                    "path `{relative}` goes through the broken symlink `{}`; \
                     remove it or use another path",
                    self.relative(&entry)
                )));
            }
        }
        let mut path = canonical;
        for name in missing.iter().rev() {
            path.push(name);
        }
        // agentci's own run folders (the live trace among them) are not the agent's to touch.
        if path.starts_with(self.root.join(RUN_FOLDERS)) {
            return Err(PathError(format!(
                "path `{relative}` is inside `{RUN_FOLDERS}/`, which holds agentci's own run \
                 files; it is not part of the workspace"
            )));
        }
        if let Some(out) = self.own_outputs.iter().find(|out| path.starts_with(out)) {
            return Err(PathError(format!(
                "path `{relative}` is agentci's own output `{}` (the run folder, trace, JUnit, \
                 patch or result the job names); it is not part of the workspace",
                self.relative(out)
            )));
        }
        Ok(path)
    }

    /// `abs` written relative to the root, with `/` separators, for output
    /// the model reads; the root itself is `.`. A path outside the root is
    /// returned as it is.
    pub fn relative(&self, abs: &Path) -> String {
        // A file of a skill folder outside the workspace is shown by the
        // folder's path as the prompt gives it, so the model can use it again.
        if !abs.starts_with(&self.root)
            && let Some(folder) = self
                .read_only
                .iter()
                .find(|f| abs.starts_with(&f.canonical))
            && let Ok(rest) = abs.strip_prefix(&folder.canonical)
        {
            // The folder itself is shown as given, without a trailing `/`.
            if rest.as_os_str().is_empty() {
                return folder.given.display().to_string();
            }
            return folder.given.join(rest).display().to_string();
        }
        match abs.strip_prefix(&self.root) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".to_string(),
            Ok(rest) => rest
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => abs.display().to_string(),
        }
    }

    /// `relative` with `.` and `..` folded away, or an error when it is
    /// absolute or climbs above the root.
    fn normalize(&self, relative: &str) -> Result<PathBuf, PathError> {
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        for component in Path::new(relative).components() {
            match component {
                Component::Normal(name) => parts.push(name),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(outside(relative));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(PathError(format!(
                        "path `{relative}` is absolute; use a path relative to the workspace root"
                    )));
                }
            }
        }
        Ok(parts.iter().collect())
    }
}

/// The `.git` (folder or file, at any depth) that `path` is or is inside,
/// relative to `root`.
fn git_folder_of(path: &Path, root: &Path) -> Option<String> {
    let rest = path.strip_prefix(root).ok()?;
    let mut seen = PathBuf::new();
    for component in rest.components() {
        seen.push(component);
        if component.as_os_str() == ".git" {
            return Some(seen.display().to_string());
        }
    }
    None
}

/// `path` with its longest existing prefix canonical (symlinks resolved)
/// and the rest as written, so it compares with resolved tool paths.
fn canonical_as_far_as_exists(path: &Path) -> PathBuf {
    let path = normalize(path);
    let mut existing = path.clone();
    let mut missing: Vec<OsString> = Vec::new();
    loop {
        if let Ok(found) = existing.canonicalize() {
            let mut found = found;
            found.extend(missing.iter().rev());
            return found;
        }
        match existing.file_name() {
            Some(name) => missing.push(name.to_os_string()),
            None => return path,
        }
        if !existing.pop() {
            return path;
        }
    }
}

fn outside(relative: &str) -> PathError {
    PathError(format!(
        "path `{relative}` is outside the workspace; use a path relative to the workspace root"
    ))
}

/// Lexically removes `.` and resolves `..` components (without touching the disk).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn root_and_dot_are_the_root() {
        let (_dir, ws) = workspace();
        assert_eq!(ws.resolve("").unwrap(), ws.root());
        assert_eq!(ws.resolve(".").unwrap(), ws.root());
        assert_eq!(ws.resolve("src/..").unwrap(), ws.root());
        assert_eq!(ws.relative(ws.root()), ".");
    }

    #[test]
    fn existing_and_missing_paths_resolve_inside() {
        let (_dir, ws) = workspace();
        assert_eq!(
            ws.resolve("src/lib.rs").unwrap(),
            ws.root().join("src/lib.rs")
        );
        assert_eq!(
            ws.resolve("./src/new/dir/file.rs").unwrap(),
            ws.root().join("src/new/dir/file.rs")
        );
        assert_eq!(ws.relative(&ws.root().join("src/lib.rs")), "src/lib.rs");
    }

    #[test]
    fn escapes_are_refused() {
        let (_dir, ws) = workspace();
        for bad in ["..", "../x", "src/../../x", "/etc/passwd", "a\0b"] {
            let err = ws.resolve(bad).unwrap_err().to_string();
            assert!(
                err.contains("relative") || err.contains("NUL"),
                "{bad}: {err}"
            );
        }
        assert!(
            ws.resolve("../x")
                .unwrap_err()
                .to_string()
                .contains("outside the workspace")
        );
    }

    #[test]
    fn symlinks_out_are_refused_and_in_are_followed() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("missing"), dir.path().join("dangling"))
            .unwrap();
        std::os::unix::fs::symlink("src", dir.path().join("inside")).unwrap();
        assert!(ws.resolve("out").is_err());
        assert!(ws.resolve("out/new.txt").is_err());
        assert!(ws.resolve("dangling").is_err());
        assert!(ws.resolve("dangling/x").is_err());
        assert_eq!(
            ws.resolve("inside/lib.rs").unwrap(),
            ws.root().join("src/lib.rs")
        );
    }

    #[test]
    fn skill_folders_are_readable_by_absolute_path_and_never_writable() {
        let (dir, ws) = workspace();
        let skills = tempfile::tempdir().unwrap();
        let skill = skills.path().canonicalize().unwrap().join("pdf");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::write(skill.join("reference.md"), "r").unwrap();
        let secret = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(secret.path(), skill.join("out")).unwrap();
        std::fs::create_dir_all(dir.path().join("skills/inner")).unwrap();
        let ws = ws
            .with_skill_folder(&skill)
            .unwrap()
            .with_skill_folder(&dir.path().join("skills/inner"))
            .unwrap();
        let file = format!("{}/reference.md", skill.display());
        assert_eq!(
            ws.resolve_for_reading(&file).unwrap(),
            skill.join("reference.md")
        );
        assert_eq!(ws.relative(&skill.join("reference.md")), file);
        // Writing tools resolve with `resolve`: refused, with the reason.
        for path in [file.clone(), format!("{}/new.md", skill.display())] {
            let err = ws.resolve(&path).unwrap_err().to_string();
            assert!(err.contains("read-only"), "{err}");
        }
        // A skill inside the workspace is read-only by its relative path too.
        let err = ws.resolve("skills/inner/SKILL.md").unwrap_err().to_string();
        assert!(err.contains("read-only"), "{err}");
        assert!(ws.resolve_for_reading("skills/inner/SKILL.md").is_ok());
        // Hostile paths: a link out of the skill folder, `..` out of it, a
        // folder that merely shares the prefix.
        let err = ws
            .resolve_for_reading(&format!("{}/out/x", skill.display()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("leads out of the skill folder"), "{err}");
        assert!(
            ws.resolve_for_reading(&format!("{}/../other", skill.display()))
                .is_err()
        );
        assert!(
            ws.resolve_for_reading(&format!("{}-evil/x", skill.display()))
                .is_err()
        );
        assert!(ws.resolve_for_reading("/etc/passwd").is_err());
    }

    #[test]
    fn normalizes_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("a/../../b")), PathBuf::from("../b"));
    }
}

#[cfg(test)]
mod protected_tests {
    use super::*;

    #[test]
    fn startup_files_are_read_only_at_any_depth() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".bashrc"), "").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        for written in [".bashrc", ".gitconfig", "sub/.envrc", "a/b/.zshrc"] {
            let err = ws.resolve(written).unwrap_err().to_string();
            assert!(err.contains("start-up file"), "{written}: {err}");
        }
        assert!(ws.resolve_for_reading(".bashrc").is_ok());
        assert!(ws.resolve("bashrc.txt").is_ok());
    }

    #[test]
    fn git_folders_are_read_only_and_own_outputs_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join("sub/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("out/outputs")).unwrap();
        let ws = Workspace::new(dir.path())
            .unwrap()
            .with_kept_outputs(&dir.path().join("out/outputs"))
            .unwrap()
            .with_own_outputs(&[dir.path().join("out"), dir.path().join("changes.patch")]);
        for written in [".git/config", "sub/.git/config", "sub/../.git/x", "wt/.git"] {
            let err = ws.resolve(written).unwrap_err().to_string();
            assert!(err.contains("git's own files"), "{written}: {err}");
            assert!(ws.resolve_for_reading(written).is_ok(), "{written}");
        }
        for own in ["out/x.txt", "out", "changes.patch"] {
            let err = ws.resolve(own).unwrap_err().to_string();
            assert!(err.contains("agentci's own output"), "{own}: {err}");
            assert!(ws.resolve_for_reading(own).is_err(), "{own}");
        }
        let kept = dir.path().join("out/outputs/tool-1.txt");
        assert!(ws.resolve_for_reading(&kept.display().to_string()).is_ok());
        assert!(ws.is_own_output(&ws.root().join("out/trace.jsonl")));
        assert!(!ws.is_own_output(&ws.root().join("out/outputs/tool-1.txt")));
        assert!(ws.resolve("src/.gitignore").is_ok());
    }
}
