//! agentci's own output folders (the run folder, `outputs/`, `checkpoint/`,
//! the folders of `outputs.*`, eval `--out` and `--html`), created and
//! opened by descriptor beneath their root, and the files written through
//! them.
//!
//! A workspace is set up by whoever wrote it: a pull request can commit
//! `.agentci`, `.agentci/runs` or `out/` as a symlink to any folder, and a
//! command the model runs can swap a folder for one during the run. So the
//! folders between a root and an output are made and opened one at a time,
//! each beneath the descriptor of the one before, and a symlink anywhere on
//! the way is refused with an error naming it ([`OutputFolderError::Link`]);
//! what it points to is never looked at, let alone written. The folder's
//! descriptor is then kept: every later write, replacement and deletion
//! goes through it, so a folder renamed or swapped for a link afterwards
//! cannot redirect them.
//!
//! The root itself is opened by path as the caller gives it: the caller
//! decides which root is trusted (the workspace, for folders inside it; a
//! folder the user named outside it). This module does not decide that.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};

use nix::sys::stat::SFlag;

use super::beneath::Beneath;
use super::{FileIdentity, MaskedStream};
use crate::redact::Masked;

/// Why an output folder could not be made or opened.
#[derive(Debug, thiserror::Error)]
pub enum OutputFolderError {
    /// A symlink sits on the way from the root to the folder.
    #[error(
        "{} is a symbolic link on the way to the output folder {}; agentci writes nothing \
         through a link a checkout could have planted, and has left what it points to untouched. \
         Fix: remove the link (if the repository commits it, `git rm` it), or send the outputs \
         to a folder outside the workspace with --out DIR",
        .link.display(),
        .folder.display()
    )]
    Link { link: PathBuf, folder: PathBuf },
    /// Something that is not a folder sits on the way.
    #[error(
        "{} is not a folder, so the output folder {} cannot be made there; remove it or choose \
         another output folder",
        .blocker.display(),
        .folder.display()
    )]
    NotAFolder { blocker: PathBuf, folder: PathBuf },
    #[error("cannot create the output folder {}: {source}", .folder.display())]
    Io { folder: PathBuf, source: io::Error },
}

/// An output folder, open: names in it are created, replaced and removed
/// through its descriptor, never through its path.
#[derive(Clone, Debug)]
pub struct OutputFolder {
    dir: Beneath,
    path: PathBuf,
}

impl OutputFolder {
    /// Creates `relative` beneath `root` one folder at a time, no symlink
    /// on the way, and opens it. `root` (absolute, existing) is trusted as
    /// given; `relative` must be plain names (`""` is the root itself).
    pub fn create(root: &Path, relative: &Path) -> Result<OutputFolder, OutputFolderError> {
        let path = root.join(relative);
        let io_error = |source| OutputFolderError::Io {
            folder: path.clone(),
            source,
        };
        let base = Beneath::open(root).map_err(io_error)?;
        match base.create_dirs(relative) {
            Ok(_) => {}
            Err(e) => return Err(explain(&base, root, relative, e)),
        }
        let dir = base
            .open_dir(relative)
            .map_err(|e| explain(&base, root, relative, e))?;
        Ok(OutputFolder {
            dir: Beneath::from_folder(&dir),
            path,
        })
    }

    /// The folder `dir` (absolute, `..`-free): when it lies inside `root`
    /// it is made beneath `root` with no link on the way (`root` is where
    /// untrusted content starts: the workspace, the current folder);
    /// otherwise it was named by the user outside it and is trusted as
    /// written ([`OutputFolder::trusted`]).
    pub fn beneath_or_trusted(root: &Path, dir: &Path) -> Result<OutputFolder, OutputFolderError> {
        match dir.strip_prefix(root) {
            Ok(relative) => OutputFolder::create(root, relative),
            Err(_) => OutputFolder::trusted(dir),
        }
    }

    /// The folder at `path`, trusted as written (a folder the user named):
    /// created with its parents when missing, then opened.
    pub fn trusted(path: &Path) -> Result<OutputFolder, OutputFolderError> {
        let io_error = |source| OutputFolderError::Io {
            folder: path.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(path).map_err(io_error)?;
        Ok(OutputFolder {
            dir: Beneath::open(path).map_err(io_error)?,
            path: path.to_path_buf(),
        })
    }

    /// The folder `relative` beneath this one, created when missing, no
    /// symlink on the way.
    pub fn child(&self, relative: &Path) -> Result<OutputFolder, OutputFolderError> {
        let path = self.path.join(relative);
        let dir = self
            .dir
            .create_dirs(relative)
            .map_err(|e| explain(&self.dir, &self.path, relative, e))?;
        Ok(OutputFolder {
            dir: Beneath::from_folder(&dir),
            path,
        })
    }

    /// The file `name` in this folder.
    pub fn file(&self, name: &OsStr) -> OutputFile {
        OutputFile {
            folder: self.clone(),
            name: name.to_os_string(),
        }
    }

    /// Where the folder was when it was opened (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder's descriptor, to open paths beneath it.
    pub fn beneath(&self) -> &Beneath {
        &self.dir
    }

    /// The names in the folder.
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        self.dir.folder().names()
    }

    /// Removes the file `name` (a symlink there is removed itself).
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        self.dir.folder().remove_file(name)
    }
}

/// A file in an output folder, written through the folder's descriptor.
#[derive(Clone, Debug)]
pub struct OutputFile {
    folder: OutputFolder,
    name: OsString,
}

impl OutputFile {
    /// The file at `path` in its folder, trusted as written (see
    /// [`OutputFolder::trusted`]); for writers given a bare path.
    pub fn trusted(path: &Path) -> Result<OutputFile, OutputFolderError> {
        let (folder, name) = split(path);
        Ok(OutputFolder::trusted(folder)?.file(name))
    }

    pub fn path(&self) -> PathBuf {
        self.folder.path.join(&self.name)
    }

    pub fn folder(&self) -> &OutputFolder {
        &self.folder
    }

    /// Replaces the file with `bytes` (a new file renamed over the name:
    /// a link or hard link there is replaced, never written through).
    pub fn replace(&self, bytes: &Masked<'_>, mode: Option<u32>) -> io::Result<()> {
        self.folder
            .dir
            .folder()
            .replace(&self.name, bytes.as_bytes(), mode)
    }

    /// An empty file in place of whatever was there, open for reading and
    /// writing, to stream into.
    pub fn create_stream(&self) -> io::Result<MaskedStream> {
        let file = self.folder.dir.folder().create_stream(&self.name)?;
        Ok(MaskedStream { file })
    }

    /// Which file the name holds now (a symlink counts as itself), or
    /// `None` when there is none.
    pub fn identity(&self) -> io::Result<Option<FileIdentity>> {
        Ok(self
            .folder
            .dir
            .folder()
            .stat(&self.name)?
            .map(|stat| FileIdentity::from_stat(&stat)))
    }
}

/// The folder and the name of `path`; a bare name is in the current folder.
pub fn split(path: &Path) -> (&Path, &OsStr) {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    (folder, path.file_name().unwrap_or(OsStr::new("")))
}

/// Why `relative` could not be made beneath `base`: the first symlink or
/// other non-folder on the way, named, or the error as it came.
fn explain(base: &Beneath, root: &Path, relative: &Path, error: io::Error) -> OutputFolderError {
    let folder = root.join(relative);
    let mut on_the_way = PathBuf::new();
    for component in relative.components() {
        let Component::Normal(name) = component else {
            continue;
        };
        on_the_way.push(name);
        match base.stat(&on_the_way) {
            Ok(Some(stat)) => match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
                SFlag::S_IFDIR => continue,
                SFlag::S_IFLNK => {
                    return OutputFolderError::Link {
                        link: root.join(&on_the_way),
                        folder,
                    };
                }
                _ => {
                    return OutputFolderError::NotAFolder {
                        blocker: root.join(&on_the_way),
                        folder,
                    };
                }
            },
            Ok(None) | Err(_) => break,
        }
    }
    OutputFolderError::Io {
        folder,
        source: error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn folders_are_made_beneath_the_root() {
        let root = tempfile::tempdir().unwrap();
        let folder = OutputFolder::create(root.path(), Path::new(".agentci/runs/r1")).unwrap();
        folder
            .file(OsStr::new("junit.xml"))
            .replace(&Masked::from_masked_parts(&b"<x/>"[..]), None)
            .unwrap();
        let text = std::fs::read_to_string(root.path().join(".agentci/runs/r1/junit.xml"));
        assert_eq!(text.unwrap(), "<x/>");
        let outputs = folder.child(Path::new("outputs")).unwrap();
        assert_eq!(outputs.path(), root.path().join(".agentci/runs/r1/outputs"));
        assert!(outputs.path().is_dir());
    }

    #[test]
    fn a_link_on_the_way_is_named_and_its_target_untouched() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".agentci")).unwrap();
        symlink(elsewhere.path(), root.path().join(".agentci/runs")).unwrap();
        let error = OutputFolder::create(root.path(), Path::new(".agentci/runs/r1")).unwrap_err();
        match error {
            OutputFolderError::Link { link, .. } => {
                assert_eq!(link, root.path().join(".agentci/runs"));
            }
            other => panic!("not a link error: {other}"),
        }
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_file_on_the_way_is_named() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("out"), "").unwrap();
        let error = OutputFolder::create(root.path(), Path::new("out/x")).unwrap_err();
        assert!(
            matches!(&error, OutputFolderError::NotAFolder { blocker, .. } if blocker == &root.path().join("out")),
            "{error}"
        );
    }

    #[test]
    fn a_folder_swapped_for_a_link_after_opening_does_not_redirect_writes() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let folder = OutputFolder::create(root.path(), Path::new("out")).unwrap();
        std::fs::rename(root.path().join("out"), root.path().join("moved")).unwrap();
        symlink(elsewhere.path(), root.path().join("out")).unwrap();
        let junit = folder.file(OsStr::new("junit.xml"));
        junit
            .replace(&Masked::from_masked_parts(&b"<x/>"[..]), None)
            .unwrap();
        let mut stream = junit.create_stream().unwrap();
        stream
            .write_masked(&Masked::from_masked_parts(&b"y"[..]))
            .unwrap();
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_to_string(root.path().join("moved/junit.xml")).unwrap(),
            "y"
        );
        assert_eq!(folder.names().unwrap(), vec![OsString::from("junit.xml")]);
    }
}
