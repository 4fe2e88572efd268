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

use std::path::Path;

use super::results::Results;

/// Write `results.json`, `junit.xml` and `summary.md` into `dir`.
pub fn write_all(results: &Results, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    results
        .write(&dir.join("results.json"))
        .map_err(|e| e.to_string())?;
    let xml = junit::to_xml(results)?;
    let junit_path = dir.join("junit.xml");
    crate::safe_file::replace(&junit_path, xml.as_bytes(), None)
        .map_err(|e| format!("cannot write {}: {e}", junit_path.display()))?;
    let summary = dir.join("summary.md");
    crate::safe_file::replace(&summary, markdown::summary(results).as_bytes(), None)
        .map_err(|e| format!("cannot write {}: {e}", summary.display()))
}
