//! Writing an evaluation's results for people and CI: JUnit XML
//! ([`junit`]), a Markdown summary ([`markdown`]) and, when asked, an HTML
//! report ([`html`]), an aligned table for a terminal ([`table`]), GitHub annotations and step outputs ([`github`]), and the pull request comment ([`comment`]). `results.json` is
//! [`super::results`]'s own. These writers only format what the results
//! say; they decide nothing.

pub mod comment;
pub mod github;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod table;

use std::path::{Path, PathBuf};

use super::results::Results;

/// A report that could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot create {}: {error}", .path.display())]
    Create {
        path: PathBuf,
        error: std::io::Error,
    },
    /// `results.json`, in its own words.
    #[error("{0}")]
    Results(String),
    #[error("cannot write JUnit XML: {0}")]
    Junit(String),
    #[error("cannot write {}: {error}", .path.display())]
    Write { path: PathBuf, error: String },
}

/// Write `results.json`, `junit.xml` and `summary.md` into `dir`.
pub fn write_all(results: &Results, dir: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(dir).map_err(|error| ReportError::Create {
        path: dir.to_path_buf(),
        error,
    })?;
    results
        .write(&dir.join("results.json"))
        .map_err(|e| ReportError::Results(e.to_string()))?;
    let xml = junit::to_xml(results)?;
    let write = |path: PathBuf, bytes: &[u8]| {
        // Rendered from results whose attempts' runs masked them.
        let bytes = crate::redact::Masked::from_masked_parts(bytes);
        crate::safe_file::replace(&path, &bytes, None).map_err(|e| ReportError::Write {
            error: e.to_string(),
            path,
        })
    };
    write(dir.join("junit.xml"), xml.as_bytes())?;
    write(
        dir.join("summary.md"),
        markdown::summary(results).as_bytes(),
    )
}
