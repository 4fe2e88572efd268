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

use std::ffi::OsStr;
use std::path::PathBuf;

use crate::safe_file::OutputFolder;

use super::results::Results;

/// A report that could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// `results.json`, in its own words.
    #[error("{0}")]
    Results(String),
    #[error("cannot write JUnit XML: {0}")]
    Junit(String),
    #[error("cannot write {}: {error}", .path.display())]
    Write { path: PathBuf, error: String },
}

/// Write `results.json`, `junit.xml` and `summary.md` into `dir`, opened
/// before the evaluation by descriptor (a link on the way was refused then).
pub fn write_all(results: &Results, dir: &OutputFolder) -> Result<(), ReportError> {
    results
        .write_to(&dir.file(OsStr::new("results.json")))
        .map_err(|e| ReportError::Results(e.to_string()))?;
    let xml = junit::to_xml(results)?;
    let write = |name: &str, bytes: &[u8]| {
        let out = dir.file(OsStr::new(name));
        // Rendered from results whose attempts' runs masked them.
        let bytes = crate::redact::Masked::from_masked_parts(bytes);
        out.replace(&bytes, None).map_err(|e| ReportError::Write {
            error: e.to_string(),
            path: out.path(),
        })
    };
    write("junit.xml", xml.as_bytes())?;
    write("summary.md", markdown::summary(results).as_bytes())
}
